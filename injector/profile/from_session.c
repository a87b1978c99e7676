/*
 * injector/profile/from_session.c - a session, which the target can write,
 * into a profile (see from_session.h): every record copied and checked
 * through session_read.h, offsets and capacities from hookscope's own
 * layout.
 */
#include "injector/profile/from_session.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"
#include "injector/profile/session_read.h"

/* Distinct caller edges a session can hold: a program has fewer call
 * sites than this; more means records the agent did not write. */
#define EDGE_BUDGET (1u << 22)

typedef struct reader {
    const hs_session_src *s;
    const hs_session_header *L;
    hs_profile *p;
    hs_session_trust *t;
    uint32_t nmods, nfuncs;
    uint32_t *first, *count;     /* each module's functions [first, first + count) */
    hs_map edges;                /* (site, callee) -> index into p->edges */
    bool edges_full;
} reader;

static void collect_modules(reader *r)
{
    r->first = hs_xcalloc(r->nmods ? r->nmods : 1, sizeof *r->first);
    r->count = hs_xcalloc(r->nmods ? r->nmods : 1, sizeof *r->count);
    for (uint32_t i = 0; i < r->nmods; i++) {
        hs_module_rec m;
        /* the agent records a module with its base, size and path: a
         * record without them is past the real end (or scribbled over),
         * and so is every record after it; the functions in the modules
         * left out are then out of range */
        if (!hs_sr_module(r->s, i, &m, r->t)) {
            r->nmods = i;
            break;
        }
        if (!m.base || !m.size || !m.path[0]) {
            hs_sr_problem(r->t, "module %u has no base, size or path: %u modules left out", i, r->nmods - i);
            r->nmods = i;
            break;
        }
        r->first[i] = m.first_func;
        r->count[i] = m.n_funcs;
        char *path = hs_utf8_n(m.path, HS_PATH_LEN);
        uint32_t mi = hs_profile_add_module(r->p, path, m.base, m.size);
        hs_prof_module *d = &r->p->modules[mi];
        free(path);
        d->timestamp = m.timestamp;
        d->traced = (m.flags & (HS_MOD_HOOKED | HS_MOD_FAILED)) || m.pattern >= 0;
        d->main = (m.flags & HS_MOD_MAIN) != 0;
        d->late = (m.flags & HS_MOD_LATE) != 0;
        d->unloaded = (m.flags & HS_MOD_UNLOADED) != 0;
        d->agent = (m.flags & HS_MOD_AGENT) != 0;
        d->funcs_found = m.n_funcs;
        d->funcs_hooked = m.n_hooked;
        memcpy(d->skip_counts, m.skip_counts,
               sizeof d->skip_counts < sizeof m.skip_counts ? sizeof d->skip_counts : sizeof m.skip_counts);
        memcpy(d->patch_counts, m.patch_counts,
               sizeof d->patch_counts < sizeof m.patch_counts ? sizeof d->patch_counts : sizeof m.patch_counts);
        memcpy(d->entry_only_counts, m.entry_only_counts,
               sizeof d->entry_only_counts < sizeof m.entry_only_counts ? sizeof d->entry_only_counts
                                                                         : sizeof m.entry_only_counts);
        d->install_s = r->p->tsc_hz > 0 ? (double)m.install_ticks / r->p->tsc_hz : 0;
    }
}

/* The function records, in order, as far as they are what an agent
 * writes: each in the range of the module it names, a module's functions
 * one after the other by rising rva (its function list is sorted). At the
 * first record that is not, the table is cut (the functions from there
 * on, and whatever was counted for them, are left out): garbage past the
 * real end costs nothing then, however large the count that was written. */
static void collect_functions(reader *r)
{
    if (r->nfuncs && !r->nmods) {
        hs_sr_problem(r->t, "%u functions but no module", r->nfuncs);
        r->nfuncs = 0;
    }
    hs_sr_table ft = { 0 };
    hs_sr_table_open(&ft, r->s, r->L->funcs_off, r->L->func_rec_size, r->nfuncs);
    uint32_t prev_rva = 0;
    for (uint32_t i = 0; i < r->nfuncs; i++) {
        const hs_func_rec *f = hs_sr_table_at(&ft, i);
        uint32_t module = f ? f->module : 0;
        if (!f || module >= r->nmods || i < r->first[module] || i - r->first[module] >= r->count[module] ||
            (i > r->first[module] && f->rva <= prev_rva)) {
            if (f)
                hs_sr_problem(r->t, "function %u (module %u, rva 0x%x) is out of its module's order: %u functions "
                              "left out", i, module, f->rva, r->nfuncs - i);
            r->nfuncs = i;
            break;
        }
        prev_rva = f->rva;
        uint8_t skip = f->skip_reason, patch = f->patch_kind, eo = f->entry_only;
        if (skip >= HS_SKIP__COUNT || patch >= HS_PATCH__COUNT || eo >= HS_WRAP__COUNT) {
            hs_sr_problem(r->t, "function %u's skip reason, patch kind or entry-only reason (%u, %u, %u) is unknown", i,
                          skip, patch, eo);
            skip = skip < HS_SKIP__COUNT ? skip : 0;
            patch = patch < HS_PATCH__COUNT ? patch : 0;
            eo = eo < HS_WRAP__COUNT ? eo : 0;
        }
        uint32_t fi = hs_profile_add_func(r->p, module, f->rva, f->size, NULL);
        hs_prof_func *d = &r->p->funcs[fi];
        d->in_plan = true;
        d->hooked = (f->flags & HS_FUNC_HOOKED) != 0;
        d->wrapped = (f->flags & HS_FUNC_WRAPPED) != 0;
        d->skip = skip;
        d->patch = patch;
        d->entry_only = eo;
    }
    hs_sr_table_close(&ft);
    /* a module's functions as far as they were kept */
    for (uint32_t m = 0; m < r->nmods; m++) {
        hs_prof_module *d = &r->p->modules[m];
        uint32_t kept = r->first[m] >= r->nfuncs ? 0 : r->nfuncs - r->first[m];
        if (d->funcs_found > kept)
            d->funcs_found = kept;
        if (d->funcs_hooked > d->funcs_found)
            d->funcs_hooked = d->funcs_found;
    }
}

static void add_edge(reader *r, uint64_t site, uint32_t callee, uint64_t calls)
{
    uint32_t at = hs_map_get(&r->edges, site, callee);
    if (at != HS_MAP_NONE) {
        r->p->edges[at].calls += calls;
        return;
    }
    if (r->p->nedges >= EDGE_BUDGET) {
        if (!r->edges_full)
            hs_sr_problem(r->t, "more than %u distinct caller edges", EDGE_BUDGET);
        r->edges_full = true;
        return;
    }
    static const hs_loc no_loc = { -1, -1, 0 };
    hs_map_xput(&r->edges, site, callee, (uint32_t)r->p->nedges);
    hs_profile_add_edge(r->p, no_loc, callee, calls, site);
}

/* One region: its counters (and the callers kept beside them), its edge
 * table, its stacks, its durations. */
typedef struct raw_stack {
    uint32_t func, depth;
    int truncated;
    uint64_t count;
    uint64_t *frames;            /* a copy */
} raw_stack;

typedef struct raw_stacks {
    raw_stack *v;
    size_t n, cap;
} raw_stacks;

static void collect_counters(reader *r, uint64_t base, uint32_t n, bool thread, uint32_t tid)
{
    const hs_session_header *L = r->L;
    bool inline_edges = r->p->edges_on && L->region_fblock >= sizeof(hs_fblock);
    hs_sr_table ct = { 0 };
    hs_sr_table_open(&ct, r->s, base + L->region_counters_off, L->region_fblock, n);
    uint64_t calls = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *b = hs_sr_table_at(&ct, i);
        if (!b)
            break;
        uint64_t c;
        memcpy(&c, b, 8);
        r->p->funcs[i].calls += c;
        calls += c;
        if (inline_edges) {
            hs_fblock fb;
            memcpy(&fb, b, sizeof fb);
            for (int e = 0; e < HS_INLINE_EDGES; e++)
                if (fb.edge[e].site && fb.edge[e].count)
                    add_edge(r, fb.edge[e].site, i, fb.edge[e].count);
        }
    }
    hs_sr_table_close(&ct);
    /* with samples, calls per thread too (the calls of threads whose
     * region was reused are in the overflow region, with no thread) */
    if (r->p->sampling.on && thread && tid && calls)
        hs_profile_thread(r->p, tid)->calls += calls;
}

static void collect_edges(reader *r, uint64_t base, uint32_t k, const hs_region_hdr *rh)
{
    const hs_session_header *L = r->L;
    if (!rh->edges_used)
        return;
    if (rh->edges_used > L->region_edges_cap)
        hs_sr_problem(r->t, "region %u uses %u edge entries of %u", k, rh->edges_used, L->region_edges_cap);
    hs_sr_table et = { 0 };
    hs_sr_table_open(&et, r->s, base + L->region_edges_off, sizeof(hs_edge_rec), L->region_edges_cap);
    for (uint32_t i = 0; i < L->region_edges_cap; i++) {
        const hs_edge_rec *e = hs_sr_table_at(&et, i);
        if (!e)
            break;
        if (!e->site || !e->count)
            continue;
        if (e->callee >= r->nfuncs) {
            hs_sr_problem(r->t, "region %u's edge %u calls function %u, which does not exist", k, i, e->callee);
            continue;
        }
        add_edge(r, e->site, e->callee, e->count);
    }
    hs_sr_table_close(&et);
}

static void collect_stacks(reader *r, uint64_t base, uint32_t k, const hs_region_hdr *rh, raw_stacks *out)
{
    const hs_session_header *L = r->L;
    if (!rh->stacks_used)
        return;
    if (rh->stacks_used > L->region_stacks_cap || rh->frames_used > L->region_frames_cap)
        hs_sr_problem(r->t, "region %u uses %u stacks of %u and %u frames of %u", k, rh->stacks_used,
                      L->region_stacks_cap, rh->frames_used, L->region_frames_cap);
    uint32_t max_depth = r->p->stack_depth < 256 ? r->p->stack_depth : 256;
    uint64_t frames_taken = 0;   /* the stacks of a region share its pool: their frames fit in it */
    hs_sr_table st = { 0 };
    hs_sr_table_open(&st, r->s, base + L->region_stacks_off, sizeof(hs_stack_rec), L->region_stacks_cap);
    for (uint32_t i = 0; i < L->region_stacks_cap; i++) {
        const hs_stack_rec *sr = hs_sr_table_at(&st, i);
        if (!sr)
            break;
        hs_stack_rec s = *sr;
        if (!s.hash || !s.count || !s.depth)
            continue;
        if (s.func >= r->nfuncs || s.depth > max_depth || s.frames > L->region_frames_cap ||
            s.depth > L->region_frames_cap - s.frames) {
            hs_sr_problem(r->t, "region %u's stack %u (function %u, %u frames at %u) does not fit", k, i, s.func,
                          s.depth, s.frames);
            continue;
        }
        if (frames_taken + s.depth > L->region_frames_cap) {
            hs_sr_problem(r->t, "region %u's stacks have more frames than its pool holds", k);
            break;
        }
        uint64_t *frames = hs_xmalloc((size_t)s.depth * 8);
        if (!hs_sr_read(r->s, base + L->region_frames_off + (uint64_t)s.frames * 8, frames, (uint64_t)s.depth * 8)) {
            free(frames);
            continue;
        }
        frames_taken += s.depth;
        hs_xgrow(&out->v, &out->cap, out->n + 1, sizeof *out->v);
        raw_stack *d = &out->v[out->n++];
        d->func = s.func;
        d->depth = s.depth;
        d->truncated = s.truncated != 0;
        d->count = s.count;
        d->frames = frames;
    }
    hs_sr_table_close(&st);
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
    for (size_t i = 0; i < rs->n; i++)
        free(rs->v[i].frames);
}

/* Durations, still in ticks, summed over the regions; and the calls still
 * open on the region's shadow stack. */
static void collect_time(reader *r, uint64_t base, uint32_t k, const hs_region_hdr *rh, uint32_t n,
                         uint64_t mult, hs_time_rec *sum, uint64_t *open)
{
    const hs_session_header *L = r->L;
    hs_sr_table tt = { 0 };
    hs_sr_table_open(&tt, r->s, base + L->region_time_off, sizeof(hs_time_rec), n);
    for (uint32_t i = 0; i < n; i++) {
        const hs_time_rec *t = hs_sr_table_at(&tt, i);
        if (!t)
            break;
        hs_time_rec_merge(&sum[i], t, mult);
    }
    hs_sr_table_close(&tt);
    if (!rh->shadow_limit || rh->shadow_top <= rh->shadow_base)
        return;
    uint64_t n_open = (rh->shadow_top - rh->shadow_base) / sizeof(hs_shadow_rec);
    if (n_open > L->region_shadow_cap) {
        hs_sr_problem(r->t, "region %u has %llu timed calls open, its shadow stack holds %u", k,
                      (unsigned long long)n_open, L->region_shadow_cap);
        n_open = L->region_shadow_cap;
    }
    hs_sr_table sh = { 0 };
    hs_sr_table_open(&sh, r->s, base + L->region_shadow_off, sizeof(hs_shadow_rec), (uint32_t)n_open);
    for (uint32_t i = 0; i < n_open; i++) {
        const hs_shadow_rec *o = hs_sr_table_at(&sh, i);
        if (!o)
            break;
        if (o->func >= r->nfuncs)
            hs_sr_problem(r->t, "region %u's open call %u is of function %u, which does not exist", k, i, o->func);
        else
            open[o->func]++;
    }
    hs_sr_table_close(&sh);
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

void hs_profile_from_session(hs_profile *p, const hs_session_src *s, hs_session_trust *trust)
{
    hs_session_header h;
    hs_session_header_copy(s, &h);
    const hs_session_header *L = s->layout;
    reader r = { s, L, p, trust, 0, 0, NULL, NULL, { 0 }, false };
    hs_sr_identity(s, trust);
    /* functions first: a module is recorded before its functions */
    r.nfuncs = hs_sr_count(h.n_functions, L->max_functions, "function", trust);
    r.nmods = hs_sr_count(h.n_modules, L->max_modules, "module", trust);
    collect_modules(&r);
    collect_functions(&r);

    p->edges_on = (L->options & HS_OPT_EDGES) != 0;
    p->time_on = (L->options & HS_OPT_TIME) != 0;
    p->stack_depth = (L->options & HS_OPT_STACKS) ? L->stack_depth : 0;
    p->stack_every = L->stack_every;
    uint32_t nregions = hs_sr_regions(&h);
    p->threads = nregions;
    p->regions_reused = h.regions_reused;
    p->agent_tls_index = h.tls_index;
    p->overflow_calls = h.overflow_calls;

    raw_stacks rs = { 0 };
    hs_time_rec *tsum = p->time_on ? hs_xcalloc(r.nfuncs ? r.nfuncs : 1, sizeof *tsum) : NULL;
    uint64_t *open = p->time_on ? hs_xcalloc(r.nfuncs ? r.nfuncs : 1, sizeof *open) : NULL;
    for (uint32_t k = 0; k <= nregions; k++) {
        uint32_t region = k < nregions ? k : L->max_threads;
        uint64_t base;
        hs_region_hdr rh;
        if (!hs_sr_region(s, k, nregions, &base, &rh))
            continue;
        uint32_t n = rh.committed_funcs;
        if (n > L->max_functions) {
            hs_sr_problem(trust, "region %u has %u function counters of %u", region, n, L->max_functions);
            n = L->max_functions;
        }
        if (n > r.nfuncs)
            n = r.nfuncs;
        collect_counters(&r, base, n, k < nregions, rh.tid);
        if (p->edges_on)
            collect_edges(&r, base, region, &rh);
        if (p->stack_depth)
            collect_stacks(&r, base, region, &rh, &rs);
        if (p->time_on)
            collect_time(&r, base, region, &rh, n, h.tsc_ns_mult, tsum, open);
        p->edges_lost += k < nregions ? 0 : rh.edges_overflowed;
        p->stacks_dropped += rh.stacks_dropped;
        p->time_dropped += rh.time_dropped;
        p->stack_ticks += rh.stack_ticks;
    }
    for (uint32_t i = 0; i < r.nfuncs; i++)
        p->total_calls += p->funcs[i].calls;
    add_stacks(&rs, p);
    free(rs.v);
    if (p->time_on)
        time_to_profile(p, tsum, open, r.nfuncs);
    free(tsum);
    free(open);
    free(r.first);
    free(r.count);
    hs_map_free(&r.edges);
}

void hs_session_timeline_check(const hs_profile *p, hs_prof_timeline *tl, hs_session_trust *t)
{
    uint64_t timed = 0;
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].time)
            timed += p->funcs[i].time->calls;
    hs_prof_tl_thread sum = hs_timeline_totals(tl);
    /* (each term at most the timed calls: the sum cannot wrap; a wait is
     * for one call's room, and lasts --timeline-wait and one step more, a
     * second allowed for it) */
    bool waits_ok = sum.waits <= timed;
    for (size_t i = 0; i < tl->nthreads && waits_ok; i++)
        waits_ok = (double)tl->threads[i].wait_ticks <=
                   (double)tl->threads[i].waits * (tl->wait_ms + 1000.0) * (tl->tsc_hz / 1e3);
    if (sum.events <= timed && sum.filtered <= timed && sum.dropped_buffer <= timed &&
        sum.events + sum.filtered + sum.dropped_buffer <= timed && waits_ok)
        return;
    hs_sr_problem(t, "the timeline counts %llu calls kept, %llu left out and %llu dropped, and %llu waits for room "
                  "of %.0f ms, of %llu timed calls", (unsigned long long)sum.events, (unsigned long long)sum.filtered,
                  (unsigned long long)sum.dropped_buffer, (unsigned long long)sum.waits,
                  tl->tsc_hz > 0 ? (double)sum.wait_ticks * 1e3 / tl->tsc_hz : 0.0, (unsigned long long)timed);
    for (size_t i = 0; i < tl->nthreads; i++) {
        tl->threads[i].filtered = tl->threads[i].dropped_buffer = tl->threads[i].waits = tl->threads[i].wait_ticks = 0;
        tl->threads[i].drop_first = tl->threads[i].dropped_file ? tl->threads[i].drop_first : UINT64_MAX;
        tl->threads[i].drop_last = tl->threads[i].dropped_file ? tl->threads[i].drop_last : 0;
    }
}
