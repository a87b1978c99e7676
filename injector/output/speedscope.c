/*
 * injector/output/speedscope.c - profile.speedscope.json: the stacks in
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json,
 * shipped as dist/release/file-format-schema.json in the speedscope npm
 * package):
 *
 *   {"$schema": "https://www.speedscope.app/file-format-schema.json",
 *    "exporter": "hookscope 0.1.0", "name": "burn.exe",
 *    "activeProfileIndex": 0,
 *    "shared": {"frames": [{"name": "main", "file": "burn.exe"}, ...]},
 *    "profiles": [
 *     {"type": "sampled", "name": "CPU samples, thread 10", "unit": "milliseconds",
 *      "startValue": 0, "endValue": 195,
 *      "samples": [[0, 1, 2], ...], "weights": [60, ...]}, ...]}
 *
 * Profiles, in this order: one per thread with CPU samples (by thread id),
 * one per thread with wait samples, the entry stacks of the hooks
 * ("hooked calls by entry stack"), and with --timeline one per thread
 * with calls on it (by thread id, "calls, thread N"). The first ones are
 * *sampled* profiles: each unique stack once, root first, weighted by how
 * often it was seen (samples; for entry stacks, captures: the calls
 * themselves when every call is captured). The hooks give counts per
 * unique stack, not a sequence of entries and exits in time; a sampled
 * profile with weights holds exactly what is known, and speedscope's Left
 * Heavy and Sandwich views sum the weights as they should. The
 * timeline's profiles are *evented*: each call the timeline kept opens
 * its function's frame at its start and closes it at its end, in
 * nanoseconds from the run's start (each rounded to the nanosecond, as
 * trace.json's), so speedscope's Time Order view shows the calls as they
 * ran. The events come in time order, a call opened after its caller and
 * closed before it; a call the depths and times do not place inside the
 * call open around it (its caller was dropped) closes that call first.
 * A thread's calls are held while its profile is written (24 bytes a
 * call), one thread at a time. At most HS_TIMELINE_VIEW_CALLS calls, the
 * first to begin (a browser opens no larger file). A profile's name says
 * what its thread's timeline lacks (speedscope shows the name above the
 * chart): the calls dropped (how many, why, when) and those left out
 * (how many, from when).
 * A sample stands for the sampling
 * interval, so CPU and wait samples weigh count x 1000 / rate_hz in
 * "milliseconds" (speedscope then shows times; "none", counts, where the
 * rate is unknown); entry stacks weigh their counts of calls ("none").
 *
 * Frames are functions (hs_frame_key): name the function as hs_func_label
 * names it ("module+0xoff" or "0xaddr" in no known function), file its
 * module.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/output/format.h"
#include "injector/output/stackset.h"
#include "injector/output/writers.h"

/* The thread ids with stacks of a kind, ascending, without repeats. */
static uint32_t *threads_of(const hs_profile *p, int kind, size_t *n)
{
    uint32_t *t = hs_xcalloc(p->nstacks + 1, sizeof *t);
    size_t k = 0;
    for (size_t i = 0; i < p->nstacks; i++)
        if (p->stacks[i].kind == kind && p->stacks[i].nframes)
            t[k++] = p->stacks[i].tid;
    *n = hs_u32_sort_unique(t, k);
    return t;
}

/* The stacks the profiles show, found once: those with frames, by kind
 * (CPU, wait, entry), CPU and wait by thread, each profile's in the
 * profile's order; and their frame ids, named in the order they are
 * written. */
typedef struct stack_lists {
    uint32_t *order;
    size_t n, at;                /* at: the next profile's first stack in order */
    uint32_t *ids;
    size_t nids, ids_cap, next_id;
} stack_lists;

typedef struct keyed_stack {
    uint64_t key;                /* kind's place << 32 | thread (0 for entry stacks) */
    uint32_t stack;
} keyed_stack;

static int cmp_keyed(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint64_t x = ((const keyed_stack *)a)->key, y = ((const keyed_stack *)b)->key;
    return x < y ? -1 : x > y;
}

static void lists_make(const hs_profile *p, stack_lists *l)
{
    memset(l, 0, sizeof *l);
    keyed_stack *k = hs_xcalloc(p->nstacks + 1, sizeof *k);
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (!st->nframes)
            continue;
        if (st->kind == HS_STACK_CPU || st->kind == HS_STACK_WAIT)
            k[l->n++] = (keyed_stack){ (uint64_t)(st->kind == HS_STACK_WAIT) << 32 | st->tid, (uint32_t)i };
        else if (st->kind == HS_STACK_ENTRY)
            k[l->n++] = (keyed_stack){ 2ull << 32, (uint32_t)i };
    }
    hs_sort(k, l->n, sizeof *k, cmp_keyed, NULL);
    l->order = hs_xcalloc(l->n + 1, sizeof *l->order);
    for (size_t i = 0; i < l->n; i++)
        l->order[i] = k[i].stack;
    free(k);
}

/* A weight: a count, or ms_per x the count (in milliseconds). */
static void weight(FILE *out, uint64_t count, double ms_per)
{
    if (ms_per > 0)
        fprintf(out, "%.9g", (double)count * ms_per);
    else
        fprintf(out, "%llu", (unsigned long long)count);
}

static void profile(const hs_profile *p, FILE *out, hs_frametab *frames, stack_lists *l, int kind,
                    bool by_thread, uint32_t tid, const char *name, int *nprof)
{
    /* samples stand for the sampling interval each (where it is known);
     * entry stacks are counts of calls */
    double ms_per = kind != HS_STACK_ENTRY && p->sampling.rate_hz > 0 ? 1000.0 / p->sampling.rate_hz : 0;
    /* this profile's stacks: order[first, end) */
    size_t first = l->at, end = first;
    while (end < l->n && p->stacks[l->order[end]].kind == kind &&
           (!by_thread || p->stacks[l->order[end]].tid == tid))
        end++;
    l->at = end;
    uint64_t total = 0;
    for (size_t i = first; i < end; i++)
        total += p->stacks[l->order[i]].count;
    if (!out) {
        for (size_t i = first; i < end; i++) {
            const hs_prof_stack *st = &p->stacks[l->order[i]];
            hs_xgrow(&l->ids, &l->ids_cap, l->nids + st->nframes, sizeof *l->ids);
            for (uint32_t d = st->nframes; d-- > 0;)
                l->ids[l->nids++] = hs_frametab_add(frames, hs_frame_key(st->frames[d]));
        }
        return;
    }
    fprintf(out, "%s\n  {\"type\": \"sampled\", \"name\": ", (*nprof)++ ? "," : "");
    hs_json_quote(out, name);
    fprintf(out, ", \"unit\": \"%s\", \"startValue\": 0, \"endValue\": ", ms_per > 0 ? "milliseconds" : "none");
    weight(out, total, ms_per);
    fprintf(out, ",\n   \"samples\": [");
    for (size_t i = first; i < end; i++) {
        const hs_prof_stack *st = &p->stacks[l->order[i]];
        /* "[id, id, ...]" put together and written at once */
        char buf[4096];
        const char *open = i > first ? ",\n    [" : "\n    [";
        size_t n = strlen(open);
        memcpy(buf, open, n);
        for (uint32_t d = st->nframes; d-- > 0;) {
            if (n + HS_DEC_TEXT + 2 > sizeof buf) {
                if (n)
                    fwrite(buf, 1, n, out);
                n = 0;
            }
            n += hs_dec_text(l->ids[l->next_id++], buf + n);
            if (d) {
                buf[n++] = ',';
                buf[n++] = ' ';
            }
        }
        buf[n++] = ']';
        if (n)
            fwrite(buf, 1, n, out);
    }
    fprintf(out, "],\n   \"weights\": [");
    for (size_t i = first; i < end; i++) {
        if (i > first)
            fputs(", ", out);
        weight(out, p->stacks[l->order[i]].count, ms_per);
    }
    fprintf(out, "]}");
}

/* ---- the timeline's calls, as evented profiles ------------------------------ */

/* One call of a thread: its start and end (ns), its frame id, its depth. */
typedef struct tl_call {
    uint64_t t0, t1;
    uint32_t frame, depth;
} tl_call;

typedef struct tl_calls {
    const hs_profile *p;
    hs_frametab *frames;
    bool keep;                   /* false: only name the frames */
    uint64_t cut;                /* calls beginning at or after it (rdtsc) are left out, */
    uint64_t left;               /* these many of this thread's */
    tl_call *v;
    size_t n, cap;
} tl_calls;

static int take_calls(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n)
{
    (void)tid;
    (void)open;
    tl_calls *c = ctx;
    const hs_prof_timeline *t = c->p->timeline;
    for (uint32_t i = 0; i < n; i++) {
        hs_loc l = { (int32_t)t->func_map[ev[i].func], -1, 0 };
        uint32_t frame = hs_frametab_add(c->frames, hs_frame_key(l));
        if (!c->keep)
            continue;
        if (ev[i].t0 >= c->cut) {
            c->left++;
            continue;
        }
        hs_xgrow(&c->v, &c->cap, c->n + 1, sizeof *c->v);
        c->v[c->n++] = (tl_call){ hs_timeline_ns(t, ev[i].t0), hs_timeline_ns(t, ev[i].t1), frame, ev[i].depth };
    }
    return 0;
}

static int cmp_call(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const tl_call *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static bool has_calls(const hs_profile *p)
{
    if (!p->timeline)
        return false;
    hs_prof_tl_thread sum = hs_timeline_totals(p->timeline);
    return sum.events + sum.open > 0;
}

static void event(FILE *out, bool *first, char type, uint32_t frame, uint64_t at)
{
    fprintf(out, "%s{\"type\": \"%c\", \"frame\": %u, \"at\": %llu}", *first ? "\n    " : ",\n    ", type, frame,
            (unsigned long long)at);
    *first = false;
}

/* One evented profile per thread of the timeline with calls (by id); with
 * out NULL only the frames are named. 0, or -1 after printing why. */
static int evented(const hs_profile *p, FILE *out, hs_frametab *frames, int *nprof)
{
    if (!has_calls(p))
        return 0;
    const hs_prof_timeline *t = p->timeline;
    char err[400] = "";   /* (a writer's own failure sets none: said by the caller) */
    tl_calls c = { p, frames, out != NULL, UINT64_MAX, 0, NULL, 0, 0 };
    if (!out) {
        if (hs_timeline_read(t, p->nfuncs, take_calls, &c, NULL, err, sizeof err) == 0)
            return 0;
        if (err[0])
            hs_err("%s", err);
        return -1;
    }
    uint64_t kept, total;
    if (hs_timeline_cutoff(t, p->nfuncs, HS_TIMELINE_VIEW_CALLS, &c.cut, &kept, &total, err, sizeof err) != 0) {
        if (err[0])
            hs_err("%s", err);
        return -1;
    }
    uint32_t *tids = hs_xcalloc(t->nthreads + 1, sizeof *tids);
    for (size_t i = 0; i < t->nthreads; i++)
        tids[i] = t->threads[i].tid;
    size_t ntids = hs_u32_sort_unique(tids, t->nthreads);
    tl_call **open = NULL;
    size_t open_cap = 0;
    int rc = 0;
    for (size_t i = 0; i < ntids && !rc; i++) {
        c.n = 0;
        c.left = 0;
        if (hs_timeline_read_thread(t, p->nfuncs, tids[i], take_calls, &c, NULL, err, sizeof err) != 0) {
            if (err[0])
                hs_err("%s", err);
            rc = -1;
            break;
        }
        if (!c.n)
            continue;
        hs_sort(c.v, c.n, sizeof *c.v, cmp_call, NULL);
        uint64_t end = 0;
        for (size_t k = 0; k < c.n; k++)
            end = c.v[k].t1 > end ? c.v[k].t1 : end;
        char name[400];   /* (the longest name takes ~330 bytes) */
        size_t len = (size_t)snprintf(name, sizeof name, "calls, thread %u", tids[i]);
        const char *open_paren = " (";
        for (size_t k = 0; k < t->nthreads; k++) {
            const hs_prof_tl_thread *th = &t->threads[k];
            uint64_t dropped = th->dropped_buffer + th->dropped_file;
            if (th->tid != tids[i] || !dropped)
                continue;
            len += (size_t)snprintf(name + len, sizeof name - len,
                                    "%s%llu calls dropped from %.3f to %.3f ms: %llu for a full buffer, %llu past "
                                    "--timeline-max", open_paren, (unsigned long long)dropped,
                                    (double)hs_timeline_ns(t, th->drop_first) / 1e6,
                                    (double)hs_timeline_ns(t, th->drop_last) / 1e6,
                                    (unsigned long long)th->dropped_buffer, (unsigned long long)th->dropped_file);
            open_paren = "; ";
        }
        if (c.left)
            len += (size_t)snprintf(name + len, sizeof name - len,
                                    "%s%llu calls from %.3f ms on left out: a browser opens no larger file",
                                    open_paren, (unsigned long long)c.left, (double)hs_timeline_ns(t, c.cut) / 1e6);
        if (c.left || open_paren[0] == ';')
            snprintf(name + len, sizeof name - len, ")");
        fprintf(out, "%s\n  {\"type\": \"evented\", \"name\": \"%s\", \"unit\": \"nanoseconds\", "
                     "\"startValue\": %llu, \"endValue\": %llu,\n   \"events\": [",
                (*nprof)++ ? "," : "", name, (unsigned long long)c.v[0].t0, (unsigned long long)end);
        bool first = true;
        size_t depth = 0;
        hs_xgrow(&open, &open_cap, c.n, sizeof *open);
        for (size_t k = 0; k < c.n; k++) {
            const tl_call *e = &c.v[k];
            /* close what does not hold this call */
            while (depth && (open[depth - 1]->depth >= e->depth || open[depth - 1]->t1 < e->t1)) {
                depth--;
                event(out, &first, 'C', open[depth]->frame, open[depth]->t1);
            }
            event(out, &first, 'O', e->frame, e->t0);
            open[depth++] = &c.v[k];
        }
        while (depth) {
            depth--;
            event(out, &first, 'C', open[depth]->frame, open[depth]->t1);
        }
        fputs("]}", out);
    }
    free(open);
    free(c.v);
    free(tids);
    return rc;
}

bool hs_speedscope_wanted(const hs_profile *p)
{
    return hs_stacks_total(p, HS_STACK_CPU) || hs_stacks_total(p, HS_STACK_WAIT) ||
           hs_stacks_total(p, HS_STACK_ENTRY) || has_calls(p);
}

/* The profiles, in order; with out NULL only the frames are named (in
 * the order the profiles use them). 0, or -1 after printing why (the
 * timeline's file could not be read). */
static int profiles(const hs_profile *p, FILE *out, hs_frametab *frames, stack_lists *l)
{
    int nprof = 0;
    l->at = 0;
    for (int kind = HS_STACK_CPU; kind <= HS_STACK_WAIT; kind++) {
        size_t nt;
        uint32_t *tids = threads_of(p, kind, &nt);
        for (size_t i = 0; i < nt; i++) {
            char name[64];
            snprintf(name, sizeof name, "%s samples, thread %u", kind == HS_STACK_CPU ? "CPU" : "wait", tids[i]);
            profile(p, out, frames, l, kind, true, tids[i], name, &nprof);
        }
        free(tids);
    }
    if (hs_stacks_total(p, HS_STACK_ENTRY)) {
        char policy[128], name[200];
        hs_fmt_stack_policy(p, policy, sizeof policy);
        snprintf(name, sizeof name, "hooked calls by entry stack (captured at %s)", policy);
        profile(p, out, frames, l, HS_STACK_ENTRY, false, 0, name, &nprof);
    }
    return evented(p, out, frames, &nprof);
}

int hs_write_speedscope(const hs_profile *p, FILE *out)
{
    hs_frametab frames = { 0 };
    stack_lists lists;
    lists_make(p, &lists);
    int rc = profiles(p, NULL, &frames, &lists);
    fprintf(out, "{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
                 " \"exporter\": \"hookscope %s\", \"name\": ",
            HOOKSCOPE_VERSION);
    hs_json_quote(out, hs_basename(p->target_path ? p->target_path : "?"));
    fprintf(out, ", \"activeProfileIndex\": 0,\n \"shared\": {\"frames\": [");
    for (size_t i = 0; i < frames.n; i++) {
        char buf[600];
        hs_loc l = frames.v[i];
        int32_t m = hs_loc_module(p, l);
        fprintf(out, "%s\n  {\"name\": ", i ? "," : "");
        hs_json_quote(out, hs_loc_format(p, l, false, false, buf, sizeof buf));
        if (m >= 0) {
            fprintf(out, ", \"file\": ");
            hs_json_quote(out, p->modules[m].name);
        }
        fputc('}', out);
    }
    fprintf(out, "]},\n \"profiles\": [");
    if (!rc)
        rc = profiles(p, out, &frames, &lists);
    fprintf(out, "]}\n");
    hs_frametab_free(&frames);
    free(lists.order);
    free(lists.ids);
    return rc || ferror(out) ? -1 : 0;
}
