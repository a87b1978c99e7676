/*
 * injector/profile/from_etl.c - see from_etl.h.
 */
#include "injector/profile/from_etl.h"

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

int hs_etl_pick_process(const hs_etl_trace *t, uint32_t pid, const char *name, uint32_t *index, char *err,
                        size_t errlen)
{
    uint64_t *samples = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *samples);
    uint64_t *with_stack = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *with_stack);
    count_samples(t, samples, with_stack);
    int found = 0;
    for (uint32_t i = 0; i < t->nprocs; i++) {
        const hs_etl_process *pr = &t->procs[i];
        if (pid ? pr->pid != pid : !name_is(pr->name, name))
            continue;
        if (!found || samples[i] > samples[*index])
            *index = i;
        found = 1;
    }
    free(samples);
    free(with_stack);
    if (found)
        return 0;
    if (pid)
        snprintf(err, errlen, "the trace has no process with id %u (run 'hookscope report --etl FILE' for the "
                              "processes it has)", pid);
    else
        snprintf(err, errlen, "the trace has no process named '%s' (run 'hookscope report --etl FILE' for the "
                              "processes it has)", name);
    return -1;
}

/* One unique stack being gathered: thread and frames with their modules. */
typedef struct gather {
    hs_profile *p;
    const hs_etl_trace *t;
    int32_t *image_module;       /* per image of t: its module in p, -1 before it is used */
    char *(*map_path)(void *, const char *);
    void *map_ctx;
    hs_map stacks;               /* hash of (tid, frames) -> stack index in p */
} gather;

static int32_t module_for(gather *g, const hs_etl_image *img)
{
    uint32_t i = (uint32_t)(img - g->t->images);
    if (g->image_module[i] >= 0)
        return g->image_module[i];
    char *local = g->map_path && img->path ? g->map_path(g->map_ctx, img->path) : NULL;
    const char *path = local ? local : img->path ? img->path : img->name ? img->name : "?";
    uint32_t m = hs_profile_add_module(g->p, path, img->base, (uint32_t)(img->size > UINT32_MAX ? UINT32_MAX : img->size));
    hs_prof_module *d = &g->p->modules[m];
    free(local);
    if (img->name) {
        free(d->name);
        d->name = hs_xstrdup(img->name);
    }
    d->timestamp = img->timestamp;
    d->kernel = (img->flags & HS_ETL_IMAGE_KERNEL) != 0;
    d->unloaded = img->unload != HS_ETL_NEVER;
    if (img->flags & HS_ETL_IMAGE_RSDS) {
        d->pdb_known = true;
        memcpy(d->pdb_guid, img->pdb_guid, 16);
        d->pdb_age = img->pdb_age;
        d->pdb_name = hs_xstrdup(img->pdb_name ? img->pdb_name : "");
    }
    g->image_module[i] = (int32_t)m;
    return (int32_t)m;
}

static uint64_t stack_hash(uint32_t tid, const uint64_t *frames, uint32_t n)
{
    uint64_t h = 1469598103934665603ull ^ tid;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ frames[i]) * 1099511628211ull;
    return h;
}

static void add_sample(gather *g, uint32_t pid, const hs_etl_sample *s, uint64_t *frames, int32_t *mods,
                       uint32_t n)
{
    hs_profile *p = g->p;
    uint64_t h = stack_hash(s->tid, frames, n);
    size_t cursor = 0;
    uint32_t k;
    while (hs_map_next(&g->stacks, h, 0, &cursor, &k)) {
        hs_prof_stack *st = &p->stacks[k];
        if (st->tid == s->tid && st->nframes == n && !memcmp(st->addrs, frames, n * sizeof *frames)) {
            st->count++;
            return;
        }
    }
    (void)pid;
    hs_prof_stack *st = hs_profile_add_stack(p, HS_STACK_CPU, 0, 1, n);
    st->tid = s->tid;
    st->addrs = hs_xmalloc((n ? n : 1) * sizeof *st->addrs);
    st->addr_modules = hs_xmalloc((n ? n : 1) * sizeof *st->addr_modules);
    memcpy(st->addrs, frames, n * sizeof *frames);
    memcpy(st->addr_modules, mods, n * sizeof *mods);
    hs_map_xadd(&g->stacks, h, 0, (uint32_t)(p->nstacks - 1));
}

void hs_profile_from_etl(const hs_etl_trace *t, uint32_t index, const char *trace_path,
                         char *(*map_path)(void *ctx, const char *nt_path), void *map_ctx, hs_profile *p)
{
    const hs_etl_process *pr = &t->procs[index];
    p->command = hs_xstrdup("etl");
    p->target_path = hs_xstrdup(pr->name ? pr->name : "?");
    p->pid = pr->pid;
    p->stop = HS_STOP_RECORDED;
    p->exited = pr->end != HS_ETL_NEVER && (pr->flags & HS_ETL_SEEN_END);
    p->exit_code = pr->exit_status;
    uint64_t t0 = pr->start ? pr->start : t->info.first_ts;
    uint64_t t1 = pr->end != HS_ETL_NEVER ? pr->end : t->info.last_ts;
    p->wall_s = hs_etl_seconds(t, t1) - hs_etl_seconds(t, t0);
    hs_profile_warn(p, "read from %s", trace_path);
    if (t->info.events_lost || t->info.buffers_lost || t->info.buffers_events_lost || t->info.buffers_buffer_lost)
        hs_profile_warn(p, "the trace lost events: %u events and %u buffers by its header; %u buffers flagged "
                           "events lost, %u flagged buffers lost",
                        t->info.events_lost, t->info.buffers_lost, t->info.buffers_events_lost,
                        t->info.buffers_buffer_lost);

    gather g;
    memset(&g, 0, sizeof g);
    g.p = p;
    g.t = t;
    g.map_path = map_path;
    g.map_ctx = map_ctx;
    g.image_module = hs_xmalloc((t->nimages ? t->nimages : 1) * sizeof *g.image_module);
    for (uint32_t i = 0; i < t->nimages; i++)
        g.image_module[i] = -1;

    uint32_t cap = 256;
    uint64_t *frames = hs_xmalloc(cap * sizeof *frames);
    int32_t *mods = hs_xmalloc(cap * sizeof *mods);
    hs_prof_sampling *sp = &p->sampling;
    sp->on = true;
    snprintf(sp->backend, sizeof sp->backend, "etw");
    sp->cpu_s = -1;
    sp->lost = t->info.events_lost;
    for (uint32_t i = 0; i < t->nsamples; i++) {
        const hs_etl_sample *s = &t->samples[i];
        if (s->process != index)
            continue;
        uint32_t n = hs_etl_depth(s);
        if (n + 1 > cap) {
            cap = n + 1;
            frames = hs_xrealloc(frames, cap * sizeof *frames);
            mods = hs_xrealloc(mods, cap * sizeof *mods);
        }
        if (!n) {
            frames[0] = s->ip;   /* no stack: the sampled instruction alone */
            n = 1;
        } else {
            for (uint32_t d = 0; d < n; d++)
                frames[d] = hs_etl_frame(t, s, d);
        }
        for (uint32_t d = 0; d < n; d++) {
            /* a return address points after its call */
            const hs_etl_image *img = hs_etl_image_at(t, pr->pid, d ? frames[d] - 1 : frames[d], s->ts);
            mods[d] = img ? module_for(&g, img) : -1;
        }
        add_sample(&g, pr->pid, s, frames, mods, n);
        sp->samples++;
        hs_prof_thread *th = hs_profile_thread(p, s->tid);
        th->cpu_samples++;
    }
    sp->threads = (uint32_t)p->nthreads_list;
    free(frames);
    free(mods);
    free(g.image_module);
    hs_map_free(&g.stacks);
}
