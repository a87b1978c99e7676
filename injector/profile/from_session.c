/*
 * injector/profile/from_session.c - read the session, which the target can
 * write, into a profile and for the live readers (see from_session.h).
 *
 * Every read goes through rd(): bounded by the view's size, the bytes
 * copied out of the section (pages the agent did not commit read as the
 * zeros they hold, without touching them). Tables are read
 * a chunk of records at a time into a buffer of ours (table_at), and each
 * record is checked there, in the copy. Offsets, record sizes and
 * capacities come only from hookscope's own layout.
 */
#include "injector/profile/from_session.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/text.h"
#include "hook/base/util.h"

/* Distinct caller edges a session can hold: a program has fewer call
 * sites than this; more means records the agent did not write. */
#define EDGE_BUDGET (1u << 22)
/* Bytes of records copied at a time. */
#define CHUNK (256u * 1024)

static void problem(hs_session_trust *t, const char *fmt, ...) HS_PRINTF(2, 3);
static void problem(hs_session_trust *t, const char *fmt, ...)
{
    if (!t)
        return;
    if (!t->problems++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->first, sizeof t->first, fmt, ap);
        va_end(ap);
    }
}

const char *hs_session_trust_line(const hs_session_trust *t, char *buf, size_t len)
{
    if (!t->problems)
        snprintf(buf, len, "%s", "");
    else if (t->problems == 1)
        snprintf(buf, len, "session corrupted by the target: %s", t->first);
    else
        snprintf(buf, len, "session corrupted by the target: %s (and %llu more problem%s)", t->first,
                 (unsigned long long)(t->problems - 1), t->problems == 2 ? "" : "s");
    return buf;
}

/* Copy [off, off + len) of the view into dst (zeros where the agent
 * committed nothing); false when it is outside the view. */
static bool rd(const hs_session_src *s, uint64_t off, void *dst, uint64_t len)
{
    if (off > s->size || len > s->size - off)
        return false;
    const char *p = (const char *)s->view + off;
    char *d = dst;
    while (len) {
        uint64_t run = len;
        int readable = s->committed ? s->committed(p, &run) : 1;
        if (!run || run > len)
            run = len;
        if (readable)
            memcpy(d, p, (size_t)run);
        else
            memset(d, 0, (size_t)run);
        p += run;
        d += run;
        len -= run;
    }
    return true;
}

/* A table of n records of `size` bytes at `off`, read a chunk at a time. */
typedef struct table {
    const hs_session_src *s;
    uint64_t off;
    uint32_t size, n;
    uint32_t first, have;        /* the records in buf */
    uint8_t *buf;
} table;

static void table_open(table *t, const hs_session_src *s, uint64_t off, uint32_t size, uint32_t n)
{
    free(t->buf);
    memset(t, 0, sizeof *t);
    t->s = s;
    t->off = off;
    t->size = size ? size : 1;
    t->n = n;
}

static void table_close(table *t)
{
    free(t->buf);
    t->buf = NULL;
}

/* Record i (a copy), or NULL when it cannot be read. */
static const void *table_at(table *t, uint32_t i)
{
    if (i >= t->n)
        return NULL;
    if (i >= t->first && i - t->first < t->have)
        return t->buf + (size_t)(i - t->first) * t->size;
    uint32_t per = CHUNK / t->size ? CHUNK / t->size : 1;
    uint32_t k = t->n - i < per ? t->n - i : per;
    if (!t->buf)
        t->buf = hs_xmalloc((size_t)per * t->size);
    t->have = 0;
    if (!rd(t->s, t->off + (uint64_t)i * t->size, t->buf, (uint64_t)k * t->size))
        return NULL;
    t->first = i;
    t->have = k;
    return t->buf;
}

/* ---- the header ------------------------------------------------------------------------ */

/* error_text as one line of valid UTF-8. */
static void clean_text(const char *in, char *out)
{
    char tmp[HS_ERROR_LEN * 2];
    size_t n = 0;
    while (n < HS_ERROR_LEN - 1 && in[n])
        n++;
    hs_ansi_to_utf8((const uint8_t *)in, n, tmp, HS_ERROR_LEN);
    for (char *c = tmp; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7F)
            *c = ' ';
    memcpy(out, tmp, HS_ERROR_LEN);
}

void hs_session_header_copy(const hs_session_src *s, hs_session_header *out)
{
    /* hookscope's own copy first; then only what the agent writes (or the
     * injector writes into the view while the target runs) is taken from
     * the view: a field not named here is never read from it */
    hs_session_header *vp = hs_xmalloc(sizeof *vp);
    *out = *s->layout;
    if (!rd(s, 0, vp, sizeof *vp)) {
        free(vp);
        return;
    }
#define AGENT(f) memcpy((void *)&out->f, (const void *)&vp->f, sizeof out->f)
    AGENT(agent_state);
    AGENT(agent_error);
    AGENT(agent_base);
    AGENT(n_modules);
    AGENT(n_functions);
    AGENT(threads_used);
    AGENT(tls_index);
    AGENT(pattern_matched);
    AGENT(tsc_start);
    AGENT(stop_requested);
    AGENT(install_ticks_total);
    AGENT(overflow_calls);
    AGENT(threads_moved);
    AGENT(freezes);
    AGENT(tsc_hz);
    AGENT(tsc_ns_mult);
    AGENT(injector_tids);
    AGENT(filter_matched);
    AGENT(regions_reused);
    AGENT(fn_service);
    AGENT(fn_request);
    AGENT(fn_answered);
    AGENT(fn_count);
    AGENT(agent_tids);
    AGENT(freeze_rounds);
    AGENT(freeze_timeouts);
    AGENT(freeze_failures);
    AGENT(freeze_ms_max);
    AGENT(freeze_ms_total);
    AGENT(freeze_stuck_tid);
    AGENT(end_watch);
    AGENT(end_seen);
    AGENT(end_code);
    AGENT(end_tid);
    AGENT(end_addr);
    AGENT(end_exit_code);
#undef AGENT
    clean_text(vp->error_text, out->error_text);
    free(vp);
}

/* The view's own identity, which nothing should change. */
static void check_identity(const hs_session_src *s, hs_session_trust *t)
{
    struct {
        uint64_t magic;
        uint32_t version, header_size;
    } id;
    if (rd(s, 0, &id, sizeof id) &&
        (id.magic != HS_SESSION_MAGIC || id.version != HS_SESSION_VERSION || id.header_size != sizeof(hs_session_header)))
        problem(t, "%s", "the header's magic and version were overwritten");
}

static uint32_t count_of(uint32_t n, uint32_t cap, const char *what, hs_session_trust *t)
{
    if (n > cap) {
        problem(t, "%s count %u is over the capacity %u", what, n, cap);
        return cap;
    }
    return n;
}

static uint32_t n_modules(const hs_session_src *s, hs_session_trust *t)
{
    uint32_t n = 0;
    rd(s, offsetof(hs_session_header, n_modules), &n, sizeof n);
    return count_of(n, s->layout->max_modules, "module", t);
}

static uint32_t n_functions(const hs_session_src *s, hs_session_trust *t)
{
    uint32_t n = 0;
    rd(s, offsetof(hs_session_header, n_functions), &n, sizeof n);
    return count_of(n, s->layout->max_functions, "function", t);
}

uint32_t hs_session_modules(const hs_session_src *s)
{
    return n_modules(s, NULL);
}

uint32_t hs_session_functions(const hs_session_src *s)
{
    return n_functions(s, NULL);
}

/* Check module record m (a copy) and make it safe to use. */
static void check_module(const hs_session_src *s, uint32_t i, hs_module_rec *m, hs_session_trust *t)
{
    size_t len = 0;
    while (len < HS_PATH_LEN && m->path[len])
        len++;
    if (len == HS_PATH_LEN) {
        problem(t, "module %u's path is not terminated", i);
        m->path[HS_PATH_LEN - 1] = 0;
    }
    uint32_t cap = s->layout->max_functions;
    if (m->first_func > cap || m->n_funcs > cap - m->first_func) {
        problem(t, "module %u's functions [%u, +%u) are outside the function table", i, m->first_func, m->n_funcs);
        m->first_func = m->n_funcs = m->n_hooked = 0;
    }
    if (m->n_hooked > m->n_funcs) {
        problem(t, "module %u has %u functions hooked of %u", i, m->n_hooked, m->n_funcs);
        m->n_hooked = m->n_funcs;
    }
    if (m->size && m->base + m->size < m->base) {
        problem(t, "module %u's range 0x%llx + 0x%x wraps around", i, (unsigned long long)m->base, m->size);
        m->size = 0;
    }
    if (m->arena_base && (m->arena_base + m->arena_size < m->arena_base ||
                          m->unwind_count > m->arena_size / 12 ||
                          m->unwind_count > 16 * (uint64_t)m->n_hooked + 64)) {
        problem(t, "module %u's code arena (0x%llx, %u bytes, %u unwind entries) cannot be", i,
                (unsigned long long)m->arena_base, m->arena_size, m->unwind_count);
        m->arena_base = 0;
        m->arena_size = m->unwind_count = 0;
    }
}

static bool module_at(const hs_session_src *s, uint32_t i, hs_module_rec *out, hs_session_trust *t)
{
    const hs_session_header *L = s->layout;
    if (i >= L->max_modules ||
        !rd(s, L->modules_off + (uint64_t)i * L->module_rec_size, out, sizeof *out))
        return false;
    check_module(s, i, out, t);
    return true;
}

bool hs_session_module_at(const hs_session_src *s, uint32_t i, hs_module_rec *out)
{
    return module_at(s, i, out, NULL);
}

/* ---- into a profile ---------------------------------------------------------------------- */

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
        if (!module_at(r->s, i, &m, r->t)) {
            r->nmods = i;
            break;
        }
        if (!m.base || !m.size || !m.path[0]) {
            problem(r->t, "module %u has no base, size or path: %u modules left out", i, r->nmods - i);
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
        problem(r->t, "%u functions but no module", r->nfuncs);
        r->nfuncs = 0;
    }
    table ft = { 0 };
    table_open(&ft, r->s, r->L->funcs_off, r->L->func_rec_size, r->nfuncs);
    uint32_t prev_rva = 0;
    for (uint32_t i = 0; i < r->nfuncs; i++) {
        const hs_func_rec *f = table_at(&ft, i);
        uint32_t module = f ? f->module : 0;
        if (!f || module >= r->nmods || i < r->first[module] || i - r->first[module] >= r->count[module] ||
            (i > r->first[module] && f->rva <= prev_rva)) {
            if (f)
                problem(r->t, "function %u (module %u, rva 0x%x) is out of its module's order: %u functions "
                              "left out", i, module, f->rva, r->nfuncs - i);
            r->nfuncs = i;
            break;
        }
        prev_rva = f->rva;
        uint8_t skip = f->skip_reason, patch = f->patch_kind, eo = f->entry_only;
        if (skip >= HS_SKIP__COUNT || patch >= HS_PATCH__COUNT || eo >= HS_WRAP__COUNT) {
            problem(r->t, "function %u's skip reason, patch kind or entry-only reason (%u, %u, %u) is unknown", i,
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
    table_close(&ft);
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
            problem(r->t, "more than %u distinct caller edges", EDGE_BUDGET);
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
    table ct = { 0 };
    table_open(&ct, r->s, base + L->region_counters_off, L->region_fblock, n);
    uint64_t calls = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *b = table_at(&ct, i);
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
    table_close(&ct);
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
        problem(r->t, "region %u uses %u edge entries of %u", k, rh->edges_used, L->region_edges_cap);
    table et = { 0 };
    table_open(&et, r->s, base + L->region_edges_off, sizeof(hs_edge_rec), L->region_edges_cap);
    for (uint32_t i = 0; i < L->region_edges_cap; i++) {
        const hs_edge_rec *e = table_at(&et, i);
        if (!e)
            break;
        if (!e->site || !e->count)
            continue;
        if (e->callee >= r->nfuncs) {
            problem(r->t, "region %u's edge %u calls function %u, which does not exist", k, i, e->callee);
            continue;
        }
        add_edge(r, e->site, e->callee, e->count);
    }
    table_close(&et);
}

static void collect_stacks(reader *r, uint64_t base, uint32_t k, const hs_region_hdr *rh, raw_stacks *out)
{
    const hs_session_header *L = r->L;
    if (!rh->stacks_used)
        return;
    if (rh->stacks_used > L->region_stacks_cap || rh->frames_used > L->region_frames_cap)
        problem(r->t, "region %u uses %u stacks of %u and %u frames of %u", k, rh->stacks_used,
                L->region_stacks_cap, rh->frames_used, L->region_frames_cap);
    uint32_t max_depth = r->p->stack_depth < 256 ? r->p->stack_depth : 256;
    uint64_t frames_taken = 0;   /* the stacks of a region share its pool: their frames fit in it */
    table st = { 0 };
    table_open(&st, r->s, base + L->region_stacks_off, sizeof(hs_stack_rec), L->region_stacks_cap);
    for (uint32_t i = 0; i < L->region_stacks_cap; i++) {
        const hs_stack_rec *sr = table_at(&st, i);
        if (!sr)
            break;
        hs_stack_rec s = *sr;
        if (!s.hash || !s.count || !s.depth)
            continue;
        if (s.func >= r->nfuncs || s.depth > max_depth || s.frames > L->region_frames_cap ||
            s.depth > L->region_frames_cap - s.frames) {
            problem(r->t, "region %u's stack %u (function %u, %u frames at %u) does not fit", k, i, s.func,
                    s.depth, s.frames);
            continue;
        }
        if (frames_taken + s.depth > L->region_frames_cap) {
            problem(r->t, "region %u's stacks have more frames than its pool holds", k);
            break;
        }
        uint64_t *frames = hs_xmalloc((size_t)s.depth * 8);
        if (!rd(r->s, base + L->region_frames_off + (uint64_t)s.frames * 8, frames, (uint64_t)s.depth * 8)) {
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
    table_close(&st);
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
    table tt = { 0 };
    table_open(&tt, r->s, base + L->region_time_off, sizeof(hs_time_rec), n);
    for (uint32_t i = 0; i < n; i++) {
        const hs_time_rec *t = table_at(&tt, i);
        if (!t)
            break;
        hs_time_rec_merge(&sum[i], t, mult);
    }
    table_close(&tt);
    if (!rh->shadow_limit || rh->shadow_top <= rh->shadow_base)
        return;
    uint64_t n_open = (rh->shadow_top - rh->shadow_base) / sizeof(hs_shadow_rec);
    if (n_open > L->region_shadow_cap) {
        problem(r->t, "region %u has %llu timed calls open, its shadow stack holds %u", k,
                (unsigned long long)n_open, L->region_shadow_cap);
        n_open = L->region_shadow_cap;
    }
    table sh = { 0 };
    table_open(&sh, r->s, base + L->region_shadow_off, sizeof(hs_shadow_rec), (uint32_t)n_open);
    for (uint32_t i = 0; i < n_open; i++) {
        const hs_shadow_rec *o = table_at(&sh, i);
        if (!o)
            break;
        if (o->func >= r->nfuncs)
            problem(r->t, "region %u's open call %u is of function %u, which does not exist", k, i, o->func);
        else
            open[o->func]++;
    }
    table_close(&sh);
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

/* The regions in use: every thread region handed out, then the shared
 * overflow region (index max_threads). */
static uint32_t regions_in_use(const hs_session_header *h)
{
    int32_t used = h->threads_used;
    return used < 0 ? 0 : (uint32_t)used < h->max_threads ? (uint32_t)used : h->max_threads;
}

void hs_profile_from_session(hs_profile *p, const hs_session_src *s, hs_session_trust *trust)
{
    hs_session_header h;
    hs_session_header_copy(s, &h);
    const hs_session_header *L = s->layout;
    reader r = { s, L, p, trust, 0, 0, NULL, NULL, { 0 }, false };
    check_identity(s, trust);
    /* functions first: a module is recorded before its functions */
    r.nfuncs = count_of(h.n_functions, L->max_functions, "function", trust);
    r.nmods = count_of(h.n_modules, L->max_modules, "module", trust);
    collect_modules(&r);
    collect_functions(&r);

    p->edges_on = (L->options & HS_OPT_EDGES) != 0;
    p->time_on = (L->options & HS_OPT_TIME) != 0;
    p->stack_depth = (L->options & HS_OPT_STACKS) ? L->stack_depth : 0;
    p->stack_every = L->stack_every;
    uint32_t nregions = regions_in_use(&h);
    p->threads = nregions;
    p->regions_reused = h.regions_reused;
    p->agent_tls_index = h.tls_index;
    p->overflow_calls = h.overflow_calls;

    raw_stacks rs = { 0 };
    hs_time_rec *tsum = p->time_on ? hs_xcalloc(r.nfuncs ? r.nfuncs : 1, sizeof *tsum) : NULL;
    uint64_t *open = p->time_on ? hs_xcalloc(r.nfuncs ? r.nfuncs : 1, sizeof *open) : NULL;
    for (uint32_t k = 0; k <= nregions; k++) {
        uint32_t region = k < nregions ? k : L->max_threads;
        uint64_t base = L->regions_off + (uint64_t)region * L->region_size;
        hs_region_hdr rh;
        if (!rd(s, base, &rh, sizeof rh))
            continue;
        uint32_t n = rh.committed_funcs;
        if (n > L->max_functions) {
            problem(trust, "region %u has %u function counters of %u", region, n, L->max_functions);
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

/* ---- while the target runs ------------------------------------------------------------------- */

/* Bytes of counters one progress reading copies at most. */
#define LIVE_BUDGET (64u << 20)

uint64_t hs_session_live_calls(const hs_session_src *s)
{
    const hs_session_header *L = s->layout;
    hs_session_header h;
    hs_session_header_copy(s, &h);
    uint32_t nfuncs = n_functions(s, NULL), nregions = regions_in_use(&h);
    uint64_t calls = 0;
    uint8_t *buf = NULL;
    size_t per = CHUNK / L->region_fblock;
    uint64_t budget = LIVE_BUDGET;
    for (uint32_t k = 0; k <= nregions; k++) {
        uint32_t region = k < nregions ? k : L->max_threads;
        uint64_t base = L->regions_off + (uint64_t)region * L->region_size;
        hs_region_hdr rh;
        if (!rd(s, base, &rh, sizeof rh))
            continue;
        uint32_t n = rh.committed_funcs < nfuncs ? rh.committed_funcs : nfuncs;
        if (n && !buf)
            buf = hs_xmalloc(per * L->region_fblock);
        for (uint32_t i = 0; i < n; i += (uint32_t)per) {
            uint32_t m = n - i < per ? n - i : (uint32_t)per;
            if ((uint64_t)m * L->region_fblock > budget)
                break;
            budget -= (uint64_t)m * L->region_fblock;
            if (!rd(s, base + L->region_counters_off + (uint64_t)i * L->region_fblock, buf,
                    (uint64_t)m * L->region_fblock))
                break;
            for (uint32_t j = 0; j < m; j++) {
                uint64_t c;
                memcpy(&c, buf + (size_t)j * L->region_fblock, 8);
                calls += c;
            }
        }
    }
    free(buf);
    return calls;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xFF51AFD7ED558CCDull;
}

static int cmp_slot(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint64_t x = ((const hs_own_slot *)a)->lo, y = ((const hs_own_slot *)b)->lo;
    return x < y ? -1 : x > y;
}

int hs_session_owncode(const hs_session_src *s, hs_owncode *o, uint64_t *signature)
{
    hs_session_header h;
    hs_session_header_copy(s, &h);
    uint32_t nmods = n_modules(s, NULL), nfuncs = n_functions(s, NULL);
    hs_module_rec *mods = hs_xcalloc(nmods ? nmods : 1, sizeof *mods);
    for (uint32_t i = 0; i < nmods; i++)
        if (!module_at(s, i, &mods[i], NULL)) {
            nmods = i;
            break;
        }
    uint64_t sig = mix(mix(h.agent_base, nmods), nfuncs);
    for (uint32_t i = 0; i < nmods; i++)
        sig = mix(mix(mix(sig, mods[i].arena_base), mods[i].unwind_count),
                  (uint64_t)mods[i].n_hooked << 32 | mods[i].flags);
    for (int i = 0; i < 16; i++)
        sig = mix(sig, h.injector_tids[i]);
    for (int i = 0; i < 8; i++)
        sig = mix(sig, h.agent_tids[i]);
    if (sig == *signature) {
        free(mods);
        return 0;
    }
    *signature = sig;

    memset(o, 0, sizeof *o);
    o->agent_base = h.agent_base;
    for (uint32_t i = 0; i < nmods; i++) {
        if ((mods[i].flags & HS_MOD_AGENT) && mods[i].base == h.agent_base)
            o->agent_size = mods[i].size;
        o->narenas += mods[i].arena_base != 0;
    }
    o->arenas = hs_xcalloc(o->narenas ? o->narenas : 1, sizeof *o->arenas);
    o->narenas = 0;
    /* each hooked function's slot, within its module's arena (the modules'
     * functions do not overlap: no more are looked at than there are) */
    size_t cap = 0;
    uint64_t visited = 0;
    table ft = { 0 };
    table_open(&ft, s, s->layout->funcs_off, s->layout->func_rec_size, nfuncs);
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = &mods[i];
        if (!m->arena_base)
            continue;
        hs_own_arena *a = &o->arenas[o->narenas++];
        a->base = m->arena_base;
        a->size = m->arena_size;
        a->table = m->unwind_table;
        a->ntable = m->unwind_count;
        if (visited + m->n_funcs > nfuncs)
            continue;
        visited += m->n_funcs;
        for (uint32_t f = m->first_func; f < m->first_func + m->n_funcs && f < nfuncs; f++) {
            const hs_func_rec *r = table_at(&ft, f);
            if (!r)
                break;
            if (!r->slot_len || r->slot_off > m->arena_size || r->slot_len > m->arena_size - r->slot_off ||
                r->tramp_off >= r->slot_len)
                continue;
            hs_xgrow(&o->slots, &cap, o->nslots + 1, sizeof *o->slots);
            hs_own_slot *sl = &o->slots[o->nslots++];
            sl->lo = m->arena_base + r->slot_off;
            sl->hi = sl->lo + r->slot_len;
            sl->tramp = sl->lo + r->tramp_off;
            sl->entry = m->base + r->rva;
            sl->desc = (r->flags & HS_FUNC_WRAPPED) ? sl->lo : 0;
        }
    }
    table_close(&ft);
    hs_sort(o->slots, o->nslots, sizeof *o->slots, cmp_slot, NULL);
    o->modules = hs_xcalloc(nmods ? nmods : 1, sizeof *o->modules);
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = &mods[i];
        if (!m->base || !m->size)
            continue;
        hs_own_module *d = &o->modules[o->nmodules++];
        d->base = m->base;
        d->size = m->size;
        d->unloaded = (m->flags & HS_MOD_UNLOADED) != 0;
        d->agent = (m->flags & HS_MOD_AGENT) != 0;
        d->path = hs_utf8_n(m->path, HS_PATH_LEN);
    }
    for (int i = 0; i < 16; i++)
        if (h.injector_tids[i])
            o->tids[o->ntids++] = h.injector_tids[i];
    for (int i = 0; i < 8; i++)
        if (h.agent_tids[i])
            o->tids[o->ntids++] = h.agent_tids[i];
    free(mods);
    return 1;
}
