/*
 * sampler/etl_samples.c - see etl_samples.h.
 */
#include "sampler/etl_samples.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"

static int name_is(const char *a, const char *b)
{
    if (!a || !b)
        return 0;
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/* samples and samples with a stack of every process instance */
static void count_samples(const hs_etl_trace *t, uint64_t *samples, uint64_t *with_stack)
{
    for (uint32_t i = 0; i < t->nsamples; i++) {
        const hs_etl_sample *s = &t->samples[i];
        if (s->process == HS_ETL_NONE || s->process >= t->nprocs)
            continue;
        samples[s->process]++;
        if (s->flags & HS_ETL_SAMPLE_STACK)
            with_stack[s->process]++;
    }
}

static int cmp_row(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const hs_etl_proc_row *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

size_t hs_etl_process_table(const hs_etl_trace *t, hs_etl_proc_row **rows)
{
    uint64_t *samples = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *samples);
    uint64_t *with_stack = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *with_stack);
    count_samples(t, samples, with_stack);
    hs_etl_proc_row *r = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *r);
    size_t n = 0;
    for (uint32_t i = 0; i < t->nprocs; i++) {
        if (!samples[i])
            continue;
        r[n].index = i;
        r[n].pid = t->procs[i].pid;
        r[n].name = t->procs[i].name ? t->procs[i].name : "?";
        r[n].samples = samples[i];
        r[n].with_stack = with_stack[i];
        n++;
    }
    hs_sort(r, n, sizeof *r, cmp_row, NULL);
    free(samples);
    free(with_stack);
    *rows = r;
    return n;
}

int hs_etl_pick_process(const hs_etl_trace *t, uint32_t pid, const char *name, uint32_t *index, uint32_t *matched,
                        char *err, size_t errlen)
{
    uint64_t *samples = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *samples);
    uint64_t *with_stack = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *with_stack);
    count_samples(t, samples, with_stack);
    int found = 0;
    for (uint32_t i = 0; i < t->nprocs; i++) {
        const hs_etl_process *pr = &t->procs[i];
        if (name ? !name_is(pr->name, name) : pr->pid != pid)
            continue;
        if (!found || samples[i] > samples[*index])
            *index = i;
        found++;
    }
    if (matched)
        *matched = (uint32_t)found;
    free(samples);
    free(with_stack);
    if (found)
        return 0;
    if (!name)
        snprintf(err, errlen, "the trace has no process with id %u (run 'hookscope report --etl FILE' for the "
                              "processes it has)", pid);
    else
        snprintf(err, errlen, "the trace has no process named '%s' (run 'hookscope report --etl FILE' for the "
                              "processes it has)", name);
    return -1;
}

/* ---- from trace records to the set's stacks ---------------------------------- */

typedef struct builder {
    const hs_etl_trace *t;
    uint32_t pid;
    const hs_codemap *own;
    char *(*map_path)(void *ctx, const char *nt_path);
    void *map_ctx;
    hs_sampleset *out;
    hs_etl_sample_stats *st;
    int32_t *image_module;       /* trace image -> the set's module, -1: not added yet */
    int32_t *jit_module;         /* trace JIT method -> the set's module, -1: not added yet */
    uint32_t *jit_gen;           /* trace JIT method -> earlier methods of its process at its start */
    bool *jit_used;              /* trace JIT method -> a function of its module already */
    uint64_t *frames;
    int32_t *mods;
    uint32_t cap;
} builder;

/* The set's module of trace image i, added on first use. */
static int32_t module_of(builder *b, uint32_t i)
{
    if (b->image_module[i] >= 0)
        return b->image_module[i];
    const hs_etl_image *img = &b->t->images[i];
    char *local = b->map_path && img->path ? b->map_path(b->map_ctx, img->path) : NULL;
    const char *path = local ? local : img->path ? img->path : img->name ? img->name : "?";
    uint32_t m = hs_sampleset_module(b->out, path, img->base,
                                     (uint32_t)(img->size > UINT32_MAX ? UINT32_MAX : img->size), img->timestamp,
                                     img->unload != HS_ETL_NEVER, false);
    hs_sampleset_module_identity(b->out, m, img->name, (img->flags & HS_ETL_IMAGE_KERNEL) != 0,
                                 (img->flags & HS_ETL_IMAGE_RSDS) ? img->pdb_guid : NULL, img->pdb_age,
                                 img->pdb_name);
    free(local);
    b->image_module[i] = (int32_t)m;
    return (int32_t)m;
}

/* Methods k and i are of one process, assembly, generation (how many
 * methods of the process had the same start before: a range reused after
 * an unload; each reuse goes into a module of its own, so that two
 * functions never share an address in one module) and 4 GiB window (a
 * function's rva is 32-bit). */
static bool jit_same_module(const builder *b, uint32_t k, uint32_t i)
{
    const hs_etl_jit *x = &b->t->jits[k], *y = &b->t->jits[i];
    return x->pid == y->pid && b->jit_gen[k] == b->jit_gen[i] && x->start >> 32 == y->start >> 32 &&
           (x->module && y->module ? !strcmp(x->module, y->module) : x->module == y->module);
}

/* The set's module of JIT method i: one per assembly (named by its file
 * name and "[jit]", e.g. "mscorlib.dll[jit]", beside the NGen or IL image
 * of the same name; its path the assembly's as logged; "[jit]" alone for
 * code no module event names, the runtime's stubs), spanning its methods
 * in the process, each of which is one of its functions; "#2" and on for
 * the methods of a range reused after an unload. */
static int32_t jit_module_of(builder *b, uint32_t i)
{
    if (b->jit_module[i] >= 0)
        return b->jit_module[i];
    const hs_etl_trace *t = b->t;
    const hs_etl_jit *j = &t->jits[i];
    uint32_t gen = b->jit_gen[i];
    uint64_t lo = j->start, hi = j->start + j->size;
    for (uint32_t k = 0; k < t->njits; k++) {
        const hs_etl_jit *o = &t->jits[k];
        if (jit_same_module(b, k, i)) {
            lo = o->start < lo ? o->start : lo;
            hi = o->start + o->size > hi ? o->start + o->size : hi;
        }
    }
    char path[600], name[300];
    const char *file = j->module ? hs_basename(j->module) : "";
    snprintf(path, sizeof path, "%s%s%.0u", j->module ? j->module : "[jit]", gen ? "#" : "", gen ? gen + 1 : 0);
    snprintf(name, sizeof name, "%s[jit]%s%.0u", file, gen ? "#" : "", gen ? gen + 1 : 0);
    uint32_t m = hs_sampleset_module(b->out, path, lo, (uint32_t)(hi - lo > UINT32_MAX ? UINT32_MAX : hi - lo), 0,
                                     false, false);
    hs_sampleset_module_identity(b->out, m, name, false, NULL, 0, NULL);
    for (uint32_t k = 0; k < t->njits; k++)
        if (jit_same_module(b, k, i))
            b->jit_module[k] = (int32_t)m;
    return (int32_t)m;
}

/* The set's module of JIT method i, which becomes one of its functions
 * when a frame first falls in it (as a function a symbol file names is
 * added where a frame falls in it: two methods of one name are told apart
 * among those sampled). */
static int32_t jit_frame_module(builder *b, uint32_t i)
{
    int32_t m = jit_module_of(b, i);
    if (!b->jit_used[i]) {
        const hs_etl_jit *j = &b->t->jits[i];
        const hs_sample_module mod = hs_sampleset_module_at(b->out, (size_t)m);
        b->jit_used[i] = true;
        hs_sampleset_module_func(b->out, (uint32_t)m, (uint32_t)(j->start - mod.base), j->size, j->name);
    }
    return m;
}

/* Count n samples of this kind on thread tid with the stack st (NULL or
 * empty: none; then the instruction ip alone, if not 0), its frames'
 * images as mapped at time ts. A sample whose frames are hookscope's is
 * hookscope's; one whose frames are all hookscope's thread code is left
 * out. Returns the samples counted. */
static uint64_t add(builder *b, uint32_t tid, uint64_t ts, const hs_etl_stack *st, uint64_t ip, uint8_t kind,
                    uint64_t n)
{
    uint32_t depth = st ? hs_etl_stack_depth(st) : 0;
    if (depth + 1 > b->cap) {
        b->cap = depth + 1;
        b->frames = hs_xrealloc(b->frames, b->cap * sizeof *b->frames);
        b->mods = hs_xrealloc(b->mods, b->cap * sizeof *b->mods);
    }
    for (uint32_t d = 0; d < depth; d++)
        b->frames[d] = hs_etl_stack_frame(b->t, st, d);
    if (!depth && ip)
        b->frames[depth++] = ip;   /* no stack: the sampled instruction alone */
    int attr = HS_ATTR_PROGRAM;
    if (b->own && depth) {
        depth = hs_codemap_attribute(b->own, NULL, b->frames, depth, &attr);
        if (!depth)
            return 0;
    }
    for (uint32_t d = 0; d < depth; d++) {
        /* a return address points after its call */
        const hs_etl_image *img = hs_etl_image_at(b->t, b->pid, d ? b->frames[d] - 1 : b->frames[d], ts);
        const hs_etl_jit *jit = img ? NULL : hs_etl_jit_at(b->t, b->pid, d ? b->frames[d] - 1 : b->frames[d], ts);
        b->mods[d] = img ? module_of(b, (uint32_t)(img - b->t->images))
                         : jit ? jit_frame_module(b, (uint32_t)(jit - b->t->jits)) : -1;
    }
    uint32_t id = hs_sampleset_stack_in(b->out, tid, false, b->frames, b->mods, depth);
    uint8_t k = attr == HS_ATTR_HOOKSCOPE ? HS_SAMPLE_HOOKSCOPE : kind;
    hs_sampleset_count(b->out, id, k, n);
    if (kind == HS_SAMPLE_CPU)   /* --timeline (hookscope's sessions: a QPC clock), in the kind counted */
        hs_sampleset_time_kind(b->out, hs_sampleset_time(b->out, id, (int64_t)ts), k);
    b->st->by_kind[k] += n;
    if (!depth && kind == HS_SAMPLE_WAIT)
        b->st->wait_no_stack += n;
    if (!depth && kind == HS_SAMPLE_READY)
        b->st->ready_no_stack += n;
    return n;
}

/* ---- time off the CPU -------------------------------------------------------- */

/* Where a thread of the process stands, as its scheduling events tell. */
enum { SEEN_NOT, ON_CPU, OFF_CPU, ENDED };

typedef struct off_thread {
    uint32_t tid;
    uint8_t where;               /* SEEN_NOT, ON_CPU, OFF_CPU, ENDED */
    uint8_t kind;                /* OFF_CPU: HS_SAMPLE_WAIT or HS_SAMPLE_READY since `since` */
    uint64_t since;              /* switched in (ON_CPU); switched out, or readied when not seen
                                    before (OFF_CPU) */
    uint64_t ready_at;           /* a wait ended by a ReadyThread then (0: none) */
    uint64_t run_ticks, wait_ticks, ready_ticks;
} off_thread;

typedef struct off_cpu {
    builder *b;
    uint64_t origin;             /* the grid's origin: the trace's first event */
    uint64_t hz;                 /* event ticks per second */
    uint32_t interval;           /* 100 ns units */
    off_thread *threads;
    size_t n, cap;
    hs_map of;                   /* tid -> threads */
} off_cpu;

static off_thread *thread_state(off_cpu *o, uint32_t tid)
{
    uint32_t i = hs_map_get(&o->of, tid, 0);
    if (i != HS_MAP_NONE)
        return &o->threads[i];
    hs_xgrow(&o->threads, &o->cap, o->n + 1, sizeof *o->threads);
    off_thread *th = &o->threads[o->n];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    hs_map_xput(&o->of, tid, 0, (uint32_t)o->n++);
    return th;
}

/* Event ticks since the origin in 100 ns units (rounded down), without
 * overflow for any trace length. */
static uint64_t to_100ns(const off_cpu *o, uint64_t ts)
{
    uint64_t d = ts > o->origin ? ts - o->origin : 0;
    return d / o->hz * 10000000u + d % o->hz * 10000000u / o->hz;
}

/* A span of event ticks in seconds, rounded to the nearest 100 ns (so
 * that a reader of the report gets the same figure from any decoder). */
static double seconds_of(const off_cpu *o, uint64_t ticks)
{
    uint64_t units = ticks / o->hz * 10000000u + (ticks % o->hz * 10000000u + o->hz / 2) / o->hz;
    return (double)units / 1e7;
}

/* The grid's ticks in [a, b) (event ticks). */
static uint64_t grid_ticks(const off_cpu *o, uint64_t a, uint64_t b)
{
    uint64_t x = to_100ns(o, a), y = to_100ns(o, b), iv = o->interval;
    uint64_t first = (x + iv - 1) / iv, end = (y + iv - 1) / iv;
    return end > first ? end - first : 0;
}

/* A stretch [a, b) of this kind on th, with the stack of its end (NULL: none). */
static void stretch(off_cpu *o, off_thread *th, uint8_t kind, uint64_t a, uint64_t b, const hs_etl_stack *st)
{
    if (b <= a)
        return;
    if (kind == HS_SAMPLE_WAIT)
        th->wait_ticks += b - a;
    else
        th->ready_ticks += b - a;
    uint64_t n = grid_ticks(o, a, b);
    if (n)
        add(o->b, th->tid, b, st, 0, kind, n);
}

/* th's time off the CPU ends at ts (its switch-in, or the end of the trace). */
static void back_on(off_cpu *o, off_thread *th, uint64_t ts, const hs_etl_stack *st)
{
    if (th->where != OFF_CPU)
        return;
    if (th->ready_at) {
        stretch(o, th, HS_SAMPLE_WAIT, th->since, th->ready_at, st);
        stretch(o, th, HS_SAMPLE_READY, th->ready_at, ts, st);
    } else {
        stretch(o, th, th->kind, th->since, ts, st);
    }
}

static bool own_thread(const builder *b, uint32_t tid)
{
    return b->own && hs_codemap_own_thread(b->own, tid);
}

static void off_cpu_samples(builder *b, uint32_t index)
{
    const hs_etl_trace *t = b->t;
    off_cpu o = {.b = b, .origin = t->info.first_ts, .hz = t->info.clock_hz, .interval = b->st->interval};
    b->st->ready_events = t->nreadies > 0;
    b->st->off_cpu_known = t->nswitches > 0 && o.hz > 0;
    if (!b->st->off_cpu_known) {
        hs_sampleset_off_cpu_unknown(b->out);
        return;
    }
    for (uint32_t i = 0; i < t->nsched; i++) {
        const hs_etl_sched *e = &t->sched[i];
        const hs_etl_stack *st = (e->flags & HS_ETL_STACK_FOUND) ? &e->stack : NULL;
        bool mine = e->process == index && e->tid != 0 && !own_thread(b, e->tid);
        if (e->kind == HS_ETL_READY) {
            if (!mine)
                continue;
            off_thread *th = thread_state(&o, e->tid);
            if (th->where == SEEN_NOT) {
                th->where = OFF_CPU;
                th->kind = HS_SAMPLE_READY;
                th->since = e->ts;
                th->ready_at = 0;
            } else if (th->where == OFF_CPU && th->kind == HS_SAMPLE_WAIT && !th->ready_at) {
                th->ready_at = e->ts;
            }
            continue;
        }
        if (mine) {                              /* switched in */
            off_thread *th = thread_state(&o, e->tid);
            back_on(&o, th, e->ts, st);
            th->where = ON_CPU;
            th->since = e->ts;
        }
        if (e->other_process == index && e->other_tid != 0 && !own_thread(b, e->other_tid)) {
            off_thread *th = thread_state(&o, e->other_tid);   /* switched out */
            if (th->where == ON_CPU && e->ts > th->since)
                th->run_ticks += e->ts - th->since;
            if (e->sw.old_state == HS_ETL_THREAD_TERMINATED) {
                th->where = ENDED;
                continue;
            }
            th->where = OFF_CPU;
            th->kind = e->sw.old_state == HS_ETL_THREAD_WAITING || e->sw.old_state == HS_ETL_THREAD_TRANSITION
                           ? HS_SAMPLE_WAIT
                           : HS_SAMPLE_READY;
            th->since = e->ts;
            th->ready_at = 0;
        }
    }
    for (size_t i = 0; i < o.n; i++) {
        off_thread *th = &o.threads[i];
        if (th->where == ON_CPU && t->info.last_ts > th->since)
            th->run_ticks += t->info.last_ts - th->since;
        back_on(&o, th, t->info.last_ts, NULL);
        hs_sampleset_thread_states(b->out, th->tid, seconds_of(&o, th->run_ticks), seconds_of(&o, th->wait_ticks),
                                   seconds_of(&o, th->ready_ticks));
    }
    /* threads with CPU samples and no scheduling event: no time seen in any state */
    for (size_t i = 0; i < hs_sampleset_nthreads(b->out); i++) {
        hs_sample_thread th = hs_sampleset_thread_at(b->out, i);
        if (th.wait_s < 0)
            hs_sampleset_thread_states(b->out, th.tid, 0, 0, 0);
    }
    free(o.threads);
    hs_map_free(&o.of);
}

uint64_t hs_etl_samples(const hs_etl_trace *t, uint32_t index, const hs_codemap *own,
                        char *(*map_path)(void *ctx, const char *nt_path), void *map_ctx, hs_sampleset *out,
                        hs_etl_sample_stats *stats)
{
    hs_etl_sample_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->interval = t->sample_interval ? t->sample_interval : 10000;
    if (index >= t->nprocs)
        return 0;
    builder b = { t, t->procs[index].pid, own, map_path, map_ctx, out, stats, NULL, NULL, NULL, NULL, NULL, NULL, 256 };
    b.image_module = hs_xmalloc((t->nimages ? t->nimages : 1) * sizeof *b.image_module);
    for (uint32_t i = 0; i < t->nimages; i++)
        b.image_module[i] = -1;
    b.jit_module = hs_xmalloc((t->njits ? t->njits : 1) * sizeof *b.jit_module);
    b.jit_gen = hs_xcalloc(t->njits ? t->njits : 1, sizeof *b.jit_gen);
    b.jit_used = hs_xcalloc(t->njits ? t->njits : 1, sizeof *b.jit_used);
    hs_map starts = {0};
    for (uint32_t i = 0; i < t->njits; i++) {
        b.jit_module[i] = -1;
        uint32_t n = hs_map_get(&starts, t->jits[i].start, t->jits[i].pid);
        b.jit_gen[i] = n == HS_MAP_NONE ? 0 : n + 1;
        hs_map_put(&starts, t->jits[i].start, t->jits[i].pid, b.jit_gen[i]);
    }
    hs_map_free(&starts);
    b.frames = hs_xmalloc(b.cap * sizeof *b.frames);
    b.mods = hs_xmalloc(b.cap * sizeof *b.mods);
    uint64_t added = 0;
    for (uint32_t i = 0; i < t->nsamples; i++) {
        const hs_etl_sample *s = &t->samples[i];
        if (s->process != index || own_thread(&b, s->tid))
            continue;
        added += add(&b, s->tid, s->ts, (s->flags & HS_ETL_SAMPLE_STACK) ? &s->stack : NULL, s->ip, HS_SAMPLE_CPU,
                     1);
    }
    uint64_t before = stats->by_kind[HS_SAMPLE_WAIT] + stats->by_kind[HS_SAMPLE_READY] +
                      stats->by_kind[HS_SAMPLE_HOOKSCOPE];
    off_cpu_samples(&b, index);
    added += stats->by_kind[HS_SAMPLE_WAIT] + stats->by_kind[HS_SAMPLE_READY] +
             stats->by_kind[HS_SAMPLE_HOOKSCOPE] - before;
    free(b.frames);
    free(b.mods);
    free(b.image_module);
    free(b.jit_module);
    free(b.jit_gen);
    free(b.jit_used);
    return added;
}
