/*
 * injector/profile/from_session.c - sum the session's per-thread counters into a
 * profile (see from_session.h).
 */
#include "injector/profile/from_session.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hookscope/session.h"

/* Make [p, p+len) of the view readable before reading it (the caller's
 * commit, when it has one). */
static void (*commit_fn)(void *p, uint64_t len);

static void view_commit(void *p, uint64_t len)
{
    if (commit_fn && len)
        commit_fn(p, len);
}

static const hs_loc no_loc = { -1, -1, 0 };

static void collect_edges(const hs_session_header *h, char *base, uint32_t nfuncs, hs_profile *p)
{
    const hs_region_hdr *rh = (const hs_region_hdr *)base;
    /* the callers kept in the functions' blocks */
    uint64_t *c = (uint64_t *)(base + h->region_counters_off);
    uint32_t n = rh->committed_funcs < nfuncs ? rh->committed_funcs : nfuncs;
    for (uint32_t i = 0; i < n && h->region_fblock >= sizeof(hs_fblock); i++) {
        const hs_fblock *b = (const hs_fblock *)hs_fblock_at(h, c, i);
        for (int k = 0; k < HS_INLINE_EDGES; k++)
            if (b->edge[k].site && b->edge[k].count)
                hs_profile_add_edge(p, no_loc, i, b->edge[k].count, b->edge[k].site);
    }
    if (!rh->edges_used)
        return;
    const hs_edge_rec *t = (const hs_edge_rec *)(base + h->region_edges_off);
    view_commit((void *)t, (uint64_t)h->region_edges_cap * sizeof *t);
    for (uint32_t i = 0; i < h->region_edges_cap; i++) {
        if (!t[i].site || !t[i].count || t[i].callee >= nfuncs)
            continue;
        hs_profile_add_edge(p, no_loc, t[i].callee, t[i].count, t[i].site);
    }
}

/* One captured stack, before merging: frames in the region's pool. */
typedef struct raw_stack {
    uint32_t func, depth;
    int truncated;
    uint64_t count;
    const uint64_t *frames;
} raw_stack;

typedef struct raw_stacks {
    raw_stack *v;
    size_t n, cap;
} raw_stacks;

static void collect_stacks(const hs_session_header *h, char *base, uint32_t nfuncs, raw_stacks *out)
{
    const hs_region_hdr *rh = (const hs_region_hdr *)base;
    if (!rh->stacks_used)
        return;
    const hs_stack_rec *t = (const hs_stack_rec *)(base + h->region_stacks_off);
    const uint64_t *pool = (const uint64_t *)(base + h->region_frames_off);
    view_commit((void *)t, (uint64_t)h->region_stacks_cap * sizeof *t);
    view_commit((void *)pool, (uint64_t)h->region_frames_cap * 8);
    for (uint32_t i = 0; i < h->region_stacks_cap; i++) {
        const hs_stack_rec *s = &t[i];
        if (!s->hash || !s->count || s->func >= nfuncs || !s->depth ||
            (uint64_t)s->frames + s->depth > h->region_frames_cap)
            continue;
        hs_xgrow(&out->v, &out->cap, out->n + 1, sizeof *out->v);
        raw_stack *d = &out->v[out->n++];
        d->func = s->func;
        d->depth = s->depth;
        d->truncated = s->truncated;
        d->count = s->count;
        d->frames = pool + s->frames;
    }
}

static int cmp_raw_stack(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const raw_stack *x = a, *y = b;
    if (x->func != y->func)
        return x->func < y->func ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    for (uint32_t i = 0; i < x->depth; i++)
        if (x->frames[i] != y->frames[i])
            return x->frames[i] < y->frames[i] ? -1 : 1;
    return 0;
}

/* The same stack captured on several threads: one stack of the profile. */
static void add_stacks(raw_stacks *rs, hs_profile *p)
{
    hs_sort(rs->v, rs->n, sizeof *rs->v, cmp_raw_stack, NULL);
    for (size_t i = 0; i < rs->n;) {
        const raw_stack *s = &rs->v[i];
        uint64_t count = 0;
        int truncated = 0;
        size_t j = i;
        for (; j < rs->n && cmp_raw_stack(s, &rs->v[j], NULL) == 0; j++) {
            count += rs->v[j].count;
            truncated |= rs->v[j].truncated;
        }
        hs_prof_stack *d = hs_profile_add_stack(p, HS_STACK_ENTRY, s->func, count, s->depth);
        d->truncated = truncated != 0;
        d->addrs = hs_xmalloc((size_t)s->depth * 8);
        memcpy(d->addrs, s->frames, (size_t)s->depth * 8);
        i = j;
    }
}

/* Durations, still in ticks, summed over the regions. */
static void collect_time(const hs_session_header *h, char *base, uint32_t n, hs_time_rec *sum,
                         uint64_t *open)
{
    const hs_time_rec *t = (const hs_time_rec *)(base + h->region_time_off);
    view_commit((void *)t, (uint64_t)n * sizeof *t);
    for (uint32_t i = 0; i < n; i++)
        hs_time_rec_merge(&sum[i], &t[i], h->tsc_ns_mult);
    /* calls still open on this thread's shadow stack */
    const hs_region_hdr *rh = (const hs_region_hdr *)base;
    if (rh->shadow_limit && rh->shadow_top > rh->shadow_base) {
        uint64_t n_open = (rh->shadow_top - rh->shadow_base) / sizeof(hs_shadow_rec);
        const hs_shadow_rec *sh = (const hs_shadow_rec *)(base + h->region_shadow_off);
        view_commit((void *)sh, n_open * sizeof *sh);
        for (uint64_t i = 0; i < n_open && i < h->region_shadow_cap; i++)
            if (sh[i].func < h->n_functions && sh[i].func < h->max_functions)
                open[sh[i].func]++;
    }
}

static void time_to_profile(hs_profile *p, const hs_time_rec *sum, const uint64_t *open, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (!sum[i].exits && !open[i])
            continue;
        hs_prof_time *t = hs_prof_time_of(p, i);
        t->calls = sum[i].exits;
        t->total_ns = hs_profile_ticks_ns(p, sum[i].total);
        t->sum_ns = hs_profile_ticks_ns(p, sum[i].sum);
        t->self_ns = hs_profile_ticks_ns(p, sum[i].self);
        t->min_ns = hs_profile_ticks_ns(p, sum[i].min);
        t->max_ns = hs_profile_ticks_ns(p, sum[i].max);
        t->unwinds = sum[i].unwinds;
        t->open = open[i];
        for (int b = 0; b < HS_HIST_BUCKETS && b < HS_PROF_HIST; b++)
            t->hist[b] = sum[i].hist[b];
    }
}

static void collect_modules(void *view, uint32_t nmods, hs_profile *p)
{
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = hs_session_module(view, i);
        char *path = hs_utf8_n(m->path, HS_PATH_LEN);
        uint32_t mi = hs_profile_add_module(p, path, m->base, m->size);
        hs_prof_module *d = &p->modules[mi];
        free(path);
        d->timestamp = m->timestamp;
        d->traced = (m->flags & (HS_MOD_HOOKED | HS_MOD_FAILED)) || m->pattern >= 0;
        d->main = (m->flags & HS_MOD_MAIN) != 0;
        d->late = (m->flags & HS_MOD_LATE) != 0;
        d->unloaded = (m->flags & HS_MOD_UNLOADED) != 0;
        d->agent = (m->flags & HS_MOD_AGENT) != 0;
        d->funcs_found = m->n_funcs;
        d->funcs_hooked = m->n_hooked;
        memcpy(d->skip_counts, m->skip_counts,
               sizeof d->skip_counts < sizeof m->skip_counts ? sizeof d->skip_counts : sizeof m->skip_counts);
        memcpy(d->patch_counts, m->patch_counts,
               sizeof d->patch_counts < sizeof m->patch_counts ? sizeof d->patch_counts : sizeof m->patch_counts);
        memcpy(d->entry_only_counts, m->entry_only_counts,
               sizeof d->entry_only_counts < sizeof m->entry_only_counts ? sizeof d->entry_only_counts
                                                                         : sizeof m->entry_only_counts);
        d->install_s = p->tsc_hz > 0 ? (double)m->install_ticks / p->tsc_hz : 0;
    }
}

void hs_profile_from_session(hs_profile *p, void *view, void (*commit)(void *p, uint64_t len))
{
    commit_fn = commit;
    hs_session_header *h = view;
    uint32_t nmods = h->n_modules, nfuncs = h->n_functions;
    if (nmods > h->max_modules)
        nmods = h->max_modules;
    if (nfuncs > h->max_functions)
        nfuncs = h->max_functions;

    view_commit(hs_session_module(view, 0), (uint64_t)nmods * h->module_rec_size);
    view_commit(hs_session_func(view, 0), (uint64_t)nfuncs * h->func_rec_size);
    collect_modules(view, nmods, p);

    for (uint32_t i = 0; i < nfuncs; i++) {
        const hs_func_rec *f = hs_session_func(view, i);
        uint32_t fi = hs_profile_add_func(p, f->module < nmods ? f->module : 0, f->rva, f->size, NULL);
        hs_prof_func *d = &p->funcs[fi];
        d->in_plan = true;
        d->hooked = (f->flags & HS_FUNC_HOOKED) != 0;
        d->wrapped = (f->flags & HS_FUNC_WRAPPED) != 0;
        d->skip = f->skip_reason;
        d->patch = f->patch_kind;
        d->entry_only = f->entry_only;
    }

    /* every thread region, then the overflow region */
    int32_t used = h->threads_used;
    uint32_t nregions = used < 0 ? 0 : (uint32_t)used < h->max_threads ? (uint32_t)used : h->max_threads;
    p->threads = nregions;
    p->regions_reused = h->regions_reused;
    p->agent_tls_index = h->tls_index;
    p->overflow_calls = h->overflow_calls;
    for (uint32_t k = 0; k <= nregions; k++) {
        uint32_t region = k < nregions ? k : h->max_threads;
        char *base = hs_session_region(view, region);
        view_commit(base, h->region_counters_off);
        const hs_region_hdr *rh = (const hs_region_hdr *)base;
        uint32_t n = rh->committed_funcs < nfuncs ? rh->committed_funcs : nfuncs;
        uint64_t *c = hs_region_counters(view, region);
        view_commit((void *)c, (uint64_t)n * h->region_fblock);
        uint64_t calls = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t k_calls = *hs_fblock_at(h, c, i);
            p->funcs[i].calls += k_calls;
            calls += k_calls;
        }
        /* with samples, calls per thread too (the calls of threads whose
         * region was reused are in the overflow region, with no thread) */
        if (p->sampling.on && k < nregions && rh->tid && calls)
            hs_profile_thread(p, rh->tid)->calls += calls;
    }
    for (uint32_t i = 0; i < nfuncs; i++)
        p->total_calls += p->funcs[i].calls;

    p->edges_on = (h->options & HS_OPT_EDGES) != 0;
    p->time_on = (h->options & HS_OPT_TIME) != 0;
    p->stack_depth = (h->options & HS_OPT_STACKS) ? h->stack_depth : 0;
    p->stack_every = h->stack_every;
    raw_stacks rs = { 0 };
    hs_time_rec *tsum = p->time_on ? hs_xcalloc(nfuncs ? nfuncs : 1, sizeof *tsum) : NULL;
    uint64_t *open = p->time_on ? hs_xcalloc(nfuncs ? nfuncs : 1, sizeof *open) : NULL;
    for (uint32_t k = 0; k <= nregions; k++) {
        uint32_t region = k < nregions ? k : h->max_threads;
        char *base = hs_session_region(view, region);
        const hs_region_hdr *rh = (const hs_region_hdr *)base;
        if (p->edges_on)
            collect_edges(h, base, nfuncs, p);
        if (p->stack_depth)
            collect_stacks(h, base, nfuncs, &rs);
        if (p->time_on)
            collect_time(h, base, rh->committed_funcs < nfuncs ? rh->committed_funcs : nfuncs, tsum, open);
        p->edges_lost += k < nregions ? 0 : rh->edges_overflowed;
        p->stacks_dropped += rh->stacks_dropped;
        p->time_dropped += rh->time_dropped;
    }
    add_stacks(&rs, p);
    free(rs.v);
    if (p->time_on)
        time_to_profile(p, tsum, open, nfuncs);
    free(tsum);
    free(open);
}
