/*
 * injector/collect.c - sum the session's per-thread counters (see collect.h).
 */
#include "collect.h"

#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hookscope/session.h"
#include "util.h"

/* Make sure our view of [p, p+len) is accessible before reading it.
 * Pages the agent committed are shared; committing in our view too is
 * harmless and covers systems where commit state is per view. */
static void view_commit(void *p, uint64_t len)
{
    if (!len)
        return;
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(HS_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + len + HS_PAGE - 1) & ~(uintptr_t)(HS_PAGE - 1);
    VirtualAlloc((void *)lo, hi - lo, MEM_COMMIT, PAGE_READWRITE);
}

static void add_edge(hs_results *r, uint64_t site, uint32_t callee, uint64_t count)
{
    r->edges = hs_xrealloc(r->edges, (r->nedges + 1) * sizeof *r->edges);
    r->edges[r->nedges].site = site;
    r->edges[r->nedges].callee = callee;
    r->edges[r->nedges].calls = count;
    r->nedges++;
}

static void collect_edges(const hs_session_header *h, char *base, uint32_t nfuncs, hs_results *r)
{
    const hs_region_hdr *rh = (const hs_region_hdr *)base;
    /* the callers kept in the functions' blocks */
    uint64_t *c = (uint64_t *)(base + h->region_counters_off);
    uint32_t n = rh->committed_funcs < nfuncs ? rh->committed_funcs : nfuncs;
    for (uint32_t i = 0; i < n && h->region_fblock >= sizeof(hs_fblock); i++) {
        const hs_fblock *b = (const hs_fblock *)hs_fblock_at(h, c, i);
        for (int k = 0; k < HS_INLINE_EDGES; k++)
            if (b->edge[k].site && b->edge[k].count)
                add_edge(r, b->edge[k].site, i, b->edge[k].count);
    }
    if (!rh->edges_used)
        return;
    const hs_edge_rec *t = (const hs_edge_rec *)(base + h->region_edges_off);
    view_commit((void *)t, (uint64_t)h->region_edges_cap * sizeof *t);
    for (uint32_t i = 0; i < h->region_edges_cap; i++) {
        if (!t[i].site || !t[i].count || t[i].callee >= nfuncs)
            continue;
        add_edge(r, t[i].site, t[i].callee, t[i].count);
    }
}

static int cmp_edge(const void *a, const void *b)
{
    const hs_res_edge *x = a, *y = b;
    if (x->callee != y->callee)
        return x->callee < y->callee ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* The same (site, callee) counted by several threads: add them up. */
static void merge_edges(hs_results *r)
{
    if (!r->nedges)
        return;
    qsort(r->edges, r->nedges, sizeof *r->edges, cmp_edge);
    size_t w = 0;
    for (size_t i = 0; i < r->nedges; i++) {
        if (w && r->edges[w - 1].site == r->edges[i].site && r->edges[w - 1].callee == r->edges[i].callee)
            r->edges[w - 1].calls += r->edges[i].calls;
        else
            r->edges[w++] = r->edges[i];
    }
    r->nedges = w;
}

static void collect_stacks(const hs_session_header *h, char *base, uint32_t nfuncs, hs_results *r)
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
        r->stacks = hs_xrealloc(r->stacks, (r->nstacks + 1) * sizeof *r->stacks);
        hs_res_stack *d = &r->stacks[r->nstacks++];
        d->func = s->func;
        d->depth = s->depth;
        d->truncated = s->truncated;
        d->count = s->count;
        d->frames = hs_xmalloc((size_t)s->depth * 8);
        memcpy(d->frames, pool + s->frames, (size_t)s->depth * 8);
    }
}

static int cmp_stack(const void *a, const void *b)
{
    const hs_res_stack *x = a, *y = b;
    if (x->func != y->func)
        return x->func < y->func ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    for (uint32_t i = 0; i < x->depth; i++)
        if (x->frames[i] != y->frames[i])
            return x->frames[i] < y->frames[i] ? -1 : 1;
    return 0;
}

/* The same stack captured on several threads: add them up. */
static void merge_stacks(hs_results *r)
{
    if (!r->nstacks)
        return;
    qsort(r->stacks, r->nstacks, sizeof *r->stacks, cmp_stack);
    size_t w = 0;
    for (size_t i = 0; i < r->nstacks; i++) {
        if (w && cmp_stack(&r->stacks[w - 1], &r->stacks[i]) == 0) {
            r->stacks[w - 1].count += r->stacks[i].count;
            r->stacks[w - 1].truncated |= r->stacks[i].truncated;
            free(r->stacks[i].frames);
        } else {
            r->stacks[w++] = r->stacks[i];
        }
    }
    r->nstacks = w;
}

/* As the wrapper buckets: floor(log2(ticks * mult >> 32)), at most 39. */
static int hist_bucket(uint64_t ticks, uint64_t mult)
{
    unsigned __int128 ns = ((unsigned __int128)ticks * mult) >> 32;
    if (ns >> 64)
        return 39;
    uint64_t v = (uint64_t)ns | 1;
    int b = 63 - __builtin_clzll(v);
    return b < 39 ? b : 39;
}

static void collect_time(const hs_session_header *h, char *base, uint32_t n, hs_results *r)
{
    if (!r->time)
        r->time = hs_xcalloc(r->nfuncs, sizeof *r->time);
    const hs_time_rec *t = (const hs_time_rec *)(base + h->region_time_off);
    view_commit((void *)t, (uint64_t)n * sizeof *t);
    for (uint32_t i = 0; i < n; i++) {
        if (!t[i].exits)
            continue;
        hs_res_time *d = &r->time[i];
        if (!d->exits || t[i].min < d->min)
            d->min = t[i].min;
        if (t[i].max > d->max)
            d->max = t[i].max;
        d->exits += t[i].exits;
        d->total += t[i].total;
        d->sum += t[i].sum;
        d->self += t[i].self;
        d->unwinds += t[i].unwinds;
        for (int b = 0; b < HS_HIST_BUCKETS && b < 40; b++)
            d->hist[b] += t[i].hist[b];
        if (t[i].pending)   /* the wrapper files each duration one exit late */
            d->hist[hist_bucket(t[i].pending, h->tsc_ns_mult)]++;
    }
    /* calls still open on this thread's shadow stack */
    const hs_region_hdr *rh = (const hs_region_hdr *)base;
    if (rh->shadow_limit && rh->shadow_top > rh->shadow_base) {
        uint64_t n_open = (rh->shadow_top - rh->shadow_base) / sizeof(hs_shadow_rec);
        const hs_shadow_rec *sh = (const hs_shadow_rec *)(base + h->region_shadow_off);
        view_commit((void *)sh, n_open * sizeof *sh);
        for (uint64_t i = 0; i < n_open && i < h->region_shadow_cap; i++)
            if (sh[i].func < r->nfuncs)
                r->time[sh[i].func].open++;
    }
}

int hs_collect(void *view, hs_results *r)
{
    hs_session_header *h = view;
    uint32_t nmods = h->n_modules, nfuncs = h->n_functions;
    if (nmods > h->max_modules)
        nmods = h->max_modules;
    if (nfuncs > h->max_functions)
        nfuncs = h->max_functions;

    view_commit(hs_session_module(view, 0), (uint64_t)nmods * h->module_rec_size);
    view_commit(hs_session_func(view, 0), (uint64_t)nfuncs * h->func_rec_size);

    r->mods = hs_xcalloc(nmods, sizeof *r->mods);
    r->nmods = nmods;
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = hs_session_module(view, i);
        hs_res_module *d = &r->mods[i];
        d->path = hs_utf8_n(m->path, HS_PATH_LEN);
        d->name = hs_basename(d->path);
        d->base = m->base;
        d->size = m->size;
        d->timestamp = m->timestamp;
        d->flags = m->flags;
        d->traced = (m->flags & (HS_MOD_HOOKED | HS_MOD_FAILED)) || m->pattern >= 0;
        d->found = m->n_funcs;
        d->hooked = m->n_hooked;
        d->pattern = m->pattern;
        d->status = m->status;
        memcpy(d->skip_counts, m->skip_counts, sizeof d->skip_counts);
        memcpy(d->patch_counts, m->patch_counts, sizeof d->patch_counts);
        memcpy(d->entry_only_counts, m->entry_only_counts, sizeof d->entry_only_counts);
        d->install_s = r->tsc_hz > 0 ? (double)m->install_ticks / r->tsc_hz : 0;
    }

    r->funcs = hs_xcalloc(nfuncs, sizeof *r->funcs);
    r->nfuncs = nfuncs;
    for (uint32_t i = 0; i < nfuncs; i++) {
        const hs_func_rec *f = hs_session_func(view, i);
        hs_res_func *d = &r->funcs[i];
        d->module = f->module < nmods ? f->module : 0;
        d->rva = f->rva;
        d->size = f->size;
        d->skip = f->skip_reason;
        d->kind = f->patch_kind;
        d->entry_only = f->entry_only;
        d->flags = f->flags;
    }

    /* every thread region, then the overflow region */
    int32_t used = h->threads_used;
    uint32_t nregions = used < 0 ? 0 : (uint32_t)used < h->max_threads ? (uint32_t)used : h->max_threads;
    r->threads = nregions;
    r->regions_reused = h->regions_reused;
    r->tls_index = h->tls_index;
    r->overflow_calls = h->overflow_calls;
    for (uint32_t k = 0; k <= nregions; k++) {
        uint32_t region = k < nregions ? k : h->max_threads;
        char *base = hs_session_region(view, region);
        view_commit(base, h->region_counters_off);
        const hs_region_hdr *rh = (const hs_region_hdr *)base;
        uint32_t n = rh->committed_funcs;
        if (n > nfuncs)
            n = nfuncs;
        uint64_t *c = hs_region_counters(view, region);
        view_commit((void *)c, (uint64_t)n * h->region_fblock);
        for (uint32_t i = 0; i < n; i++)
            r->funcs[i].calls += *hs_fblock_at(h, c, i);
    }
    for (uint32_t i = 0; i < nfuncs; i++)
        r->total_calls += r->funcs[i].calls;

    r->edges_on = (h->options & HS_OPT_EDGES) != 0;
    r->time_on = (h->options & HS_OPT_TIME) != 0;
    r->stack_depth = (h->options & HS_OPT_STACKS) ? h->stack_depth : 0;
    r->stack_every = h->stack_every;
    for (uint32_t k = 0; k <= nregions; k++) {
        uint32_t region = k < nregions ? k : h->max_threads;
        char *base = hs_session_region(view, region);
        const hs_region_hdr *rh = (const hs_region_hdr *)base;
        if (r->edges_on)
            collect_edges(h, base, nfuncs, r);
        if (r->stack_depth)
            collect_stacks(h, base, nfuncs, r);
        if (r->time_on)
            collect_time(h, base, rh->committed_funcs < nfuncs ? rh->committed_funcs : nfuncs, r);
        r->edges_lost += k < nregions ? 0 : rh->edges_overflowed;
        r->stacks_dropped += rh->stacks_dropped;
        r->time_dropped += rh->time_dropped;
    }
    merge_edges(r);
    merge_stacks(r);
    return 0;
}
