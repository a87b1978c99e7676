/*
 * tests/unit/session_fuzz.c - see session_fuzz.h.
 */
#include "tests/unit/session_fuzz.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hookscope/session.h"
#include "injector/output/writers.h"
#include "injector/profile/from_session.h"
#include "injector/profile/resolve.h"
#include "tests/unit/xorshift.h"

#define NMODS 2
#define NFUNCS 6
#define NTHREADS 3   /* regions 0..2 in use, and the overflow region */
#define DEPTH 8
#define TL_CAP 16    /* events in a region's timeline ring */

static hs_session_header layout;   /* hookscope's own copy */
static uint8_t *tmpl, *view;
static uint64_t size;

static void put_path(uint16_t *dst, const char *s)
{
    for (size_t i = 0; s[i]; i++)
        dst[i] = (uint8_t)s[i];
}

static uint8_t *region(uint8_t *v, uint32_t k)
{
    return v + layout.regions_off + (uint64_t)k * layout.region_size;
}

static void put_module(uint32_t i, uint64_t base, uint32_t size, uint32_t first, uint32_t n, uint32_t hooked,
                       uint32_t flags, int pattern, const char *path)
{
    hs_module_rec *m = hs_session_module(tmpl, i);
    m->base = base;
    m->size = size;
    m->first_func = first;
    m->n_funcs = n;
    m->n_hooked = hooked;
    m->flags = flags;
    m->pattern = pattern;
    put_path(m->path, path);
}

/* The session as an agent fills it. */
static void build(void)
{
    if (tmpl)
        return;
    hs_capacity c = { 4, 32, NTHREADS, (uint32_t)sizeof(hs_fblock), 16, 16, 128, 8, TL_CAP, 0 };
    memset(&layout, 0, sizeof layout);
    size = hs_session_layout(&layout, &c);
    layout.magic = HS_SESSION_MAGIC;
    layout.version = HS_SESSION_VERSION;
    layout.options = HS_OPT_EDGES | HS_OPT_STACKS | HS_OPT_TIME | HS_OPT_TIMELINE;
    layout.stack_depth = DEPTH;
    layout.stack_every = 1;
    layout.injector_pid = 1;
    layout.target_pid = 100;
    tmpl = hs_xcalloc(1, size);
    view = hs_xcalloc(1, size);
    hs_session_header *h = (hs_session_header *)tmpl;
    *h = layout;
    h->agent_state = HS_AGENT_READY;
    h->n_modules = NMODS;
    h->n_functions = NFUNCS;
    h->threads_used = NTHREADS;
    h->tsc_ns_mult = 1ull << 32;   /* a tick is a ns */
    h->tls_index = 5;
    h->agent_base = 0x7ffe00000000ull;
    h->injector_tids[0] = 4242;
    h->agent_tids[0] = 4343;
    snprintf(h->error_text, sizeof h->error_text, "%s", "");

    put_module(0, 0x140000000ull, 0x10000, 0, 4, 4, HS_MOD_MAIN | HS_MOD_HOOKED, 0, "C:\\t\\prog.exe");
    hs_module_rec *m = hs_session_module(tmpl, 0);
    m->arena_base = 0x13fff0000ull;
    m->arena_size = 0x1000;
    m->unwind_count = 12;
    m->unwind_table = 0x13fff0800ull;
    put_module(1, 0x7ff000000000ull, 0x20000, 4, 2, 1, HS_MOD_HOOKED | HS_MOD_LATE, 1, "C:\\t\\lib.dll");

    for (uint32_t i = 0; i < NFUNCS; i++) {
        hs_func_rec *f = hs_session_func(tmpl, i);
        f->module = i < 4 ? 0 : 1;
        f->rva = 0x1000 + i * 0x100;
        f->size = 0x80;
        if (i < 5) {
            f->flags = HS_FUNC_HOOKED | (i < 2 ? HS_FUNC_WRAPPED : 0);
            f->slot_off = i < 4 ? i * 0x40 : 0;
            f->slot_len = i < 4 ? 0x40 : 0;
            f->tramp_off = 0x20;
        } else {
            f->skip_reason = 1;
        }
    }
    for (uint32_t k = 0; k <= NTHREADS; k++) {
        uint8_t *r = region(tmpl, k);
        hs_region_hdr *rh = (hs_region_hdr *)r;
        rh->tid = 100 + k;
        rh->slot = k;
        rh->committed_funcs = NFUNCS;
        rh->edges_used = 2;
        rh->stacks_used = 2;
        rh->frames_used = 6;
        for (uint32_t i = 0; i < NFUNCS; i++) {
            hs_fblock *b = (hs_fblock *)(r + layout.region_counters_off + (uint64_t)i * layout.region_fblock);
            b->count = (uint64_t)(k + 1) * (i + 1);
            if (i == 1) {
                b->edge[0].site = 0x140001011ull;
                b->edge[0].count = 1;
            }
        }
        hs_edge_rec *e = (hs_edge_rec *)(r + layout.region_edges_off);
        e[3] = (hs_edge_rec){ 0x140001234ull, 2, 0, 5, 0 };
        e[9] = (hs_edge_rec){ 0x7ff000001000ull, 4, 0, 7, 0 };
        hs_stack_rec *s = (hs_stack_rec *)(r + layout.region_stacks_off);
        s[2] = (hs_stack_rec){ 1, 0, 3, 0, 2, 0, 0 };
        s[5] = (hs_stack_rec){ 2, 1, 3, 0, 1, 3, 0 };
        uint64_t *pool = (uint64_t *)(r + layout.region_frames_off);
        const uint64_t frames[6] = { 0x140001000ull, 0x140001110ull, 0x140001220ull,
                                     0x140001100ull, 0x140001210ull, 0x7ff000001050ull };
        memcpy(pool, frames, sizeof frames);
        hs_time_rec *t = (hs_time_rec *)(r + layout.region_time_off);
        for (int i = 0; i < 2; i++) {
            t[i].exits = 2;
            t[i].total = t[i].sum = 100;
            t[i].self = 50;
            t[i].min = 40;
            t[i].max = 60;
            t[i].hist[5] = 2;
        }
        /* the timeline: the thread named, then three calls (the ring's
         * address is the target's: the reader never follows it) */
        rh->tl_base = 0x30000;
        rh->tl_cap = TL_CAP;
        rh->tl_head = 4;
        hs_tl_event *ev = (hs_tl_event *)(r + layout.region_timeline_off);
        ev[0] = (hs_tl_event){ 100 + k, 0, 0, HS_TL_THREAD, 0 };
        ev[1] = (hs_tl_event){ 1000, 1100, 100, 1, 1 };
        ev[2] = (hs_tl_event){ 1200, 1260, 50, 0, 1 };
        ev[3] = (hs_tl_event){ 900, 1300, 400, 2, 0 };
        if (k == 0) {
            rh->shadow_base = 0x10000;
            rh->shadow_top = 0x10000 + sizeof(hs_shadow_rec);
            rh->shadow_limit = 0x20000;
            ((hs_shadow_rec *)(r + layout.region_shadow_off))[0].func = 1;
        }
    }
}

static int fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

static void apply(const uint8_t *data, size_t n)
{
    for (size_t at = 0; at + SESSION_PATCH_SIZE <= n; at += SESSION_PATCH_SIZE) {
        uint32_t off;
        uint16_t width, count;
        uint64_t value;
        memcpy(&off, data + at, 4);
        memcpy(&width, data + at + 4, 2);
        memcpy(&count, data + at + 6, 2);
        memcpy(&value, data + at + 8, 8);
        if (width != 1 && width != 2 && width != 4)
            width = 8;
        uint64_t o = off % size;
        for (uint32_t k = 0; k <= count % 1100u; k++, o += width)
            if (o + width <= size)
                memcpy(view + o, &value, width);   /* (little-endian host) */
    }
}

/* Does the patched view hold a value no agent writes, of the kinds the
 * reader always notices? */
static bool impossible(void)
{
    const hs_session_header *h = (const hs_session_header *)view;
    if (h->magic != HS_SESSION_MAGIC || h->version != HS_SESSION_VERSION ||
        h->header_size != sizeof(hs_session_header))
        return true;
    if (h->n_functions > layout.max_functions || h->n_modules > layout.max_modules)
        return true;
    for (uint32_t i = 0; i < h->n_modules; i++) {
        const hs_module_rec *m = (const hs_module_rec *)(view + layout.modules_off + i * sizeof(hs_module_rec));
        size_t len = 0;
        while (len < HS_PATH_LEN && m->path[len])
            len++;
        bool range_bad = m->first_func > layout.max_functions || m->n_funcs > layout.max_functions - m->first_func;
        if (len == HS_PATH_LEN || range_bad || m->n_hooked > m->n_funcs)
            return true;
    }
    int32_t used = h->threads_used;
    uint32_t n = used < 0 ? 0 : (uint32_t)used < NTHREADS ? (uint32_t)used : NTHREADS;
    for (uint32_t k = 0; k <= n; k++) {
        const hs_region_hdr *rh = (const hs_region_hdr *)region(view, k < n ? k : NTHREADS);
        if (rh->committed_funcs > layout.max_functions)
            return true;
    }
    return false;
}

static int check_profile(const hs_profile *p, char *why, size_t len)
{
    if (p->nmodules > layout.max_modules || p->nfuncs > layout.max_functions)
        return fail(why, len, "%zu modules, %zu functions", p->nmodules, p->nfuncs);
    for (size_t i = 0; i < p->nfuncs; i++) {
        const hs_prof_func *f = &p->funcs[i];
        if (f->module >= p->nmodules || f->skip >= HS_SKIP__COUNT || f->patch >= HS_PATCH__COUNT ||
            f->entry_only >= HS_WRAP__COUNT)
            return fail(why, len, "function %zu: module %u, skip %u, patch %u", i, f->module, f->skip, f->patch);
    }
    for (size_t i = 0; i < p->nedges; i++)
        if (p->edges[i].callee >= p->nfuncs)
            return fail(why, len, "edge %zu calls %u", i, p->edges[i].callee);
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *s = &p->stacks[i];
        if (s->nframes > DEPTH || s->func >= p->nfuncs || (s->nframes && !s->addrs))
            return fail(why, len, "stack %zu: %u frames, function %u", i, s->nframes, s->func);
    }
    return 0;
}

static int check_own(const hs_owncode *o, char *why, size_t len)
{
    if (o->nslots > layout.max_functions || o->narenas > layout.max_modules || o->nmodules > layout.max_modules ||
        o->ntids > 24)
        return fail(why, len, "%zu slots, %zu arenas, %zu modules, %zu threads", o->nslots, o->narenas,
                    o->nmodules, o->ntids);
    for (size_t i = 0; i < o->nslots; i++) {
        const hs_own_slot *s = &o->slots[i];
        bool in = false;
        for (size_t a = 0; a < o->narenas; a++)
            in |= s->lo >= o->arenas[a].base && s->hi <= o->arenas[a].base + o->arenas[a].size;
        if (!in || s->hi <= s->lo || s->tramp < s->lo || s->tramp >= s->hi || (i && s->lo < o->slots[i - 1].lo))
            return fail(why, len, "slot %zu [0x%llx, 0x%llx) is in no arena, or out of order", i,
                        (unsigned long long)s->lo, (unsigned long long)s->hi);
    }
    for (size_t a = 0; a < o->narenas; a++)
        if (o->arenas[a].ntable > o->arenas[a].size / 12)
            return fail(why, len, "arena %zu: %u unwind entries in %u bytes", a, o->arenas[a].ntable,
                        o->arenas[a].size);
    for (size_t i = 0; i < o->nmodules; i++)
        if (!o->modules[i].path)
            return fail(why, len, "module %zu has no path", i);
    return 0;
}

/* Read the view with every reader; check. */
static int read_all(bool clean, bool named, char *why, size_t len)
{
    hs_session_src src = { &layout, view, size, NULL };
    hs_session_trust trust = { 0, "" };
    bool expect = impossible();
    hs_profile *p = hs_profile_new();
    p->tsc_hz = 1e9;
    hs_profile_from_session(p, &src, &trust);
    int rc = check_profile(p, why, len);
    if (!rc && expect && !trust.problems)
        rc = fail(why, len, "%s", "an impossible value went unnoticed");
    if (!rc && clean) {
        char line[300];
        if (trust.problems)
            rc = fail(why, len, "the clean session has problems: %s", hs_session_trust_line(&trust, line, sizeof line));
        else if (p->nmodules != NMODS || p->nfuncs != NFUNCS || p->total_calls != 210 || p->nedges != 3 ||
                 p->nstacks != 2 || p->threads != NTHREADS || p->funcs[1].calls != 20 || !p->funcs[1].time ||
                 p->funcs[1].time->calls != 8 || p->funcs[1].time->open != 1 || p->edges[0].calls != 4)
            rc = fail(why, len, "clean session read wrong: %zu modules, %zu functions, %llu calls, %zu edges, "
                                "%zu stacks, %u threads", p->nmodules, p->nfuncs,
                      (unsigned long long)p->total_calls, p->nedges, p->nstacks, p->threads);
    }
    hs_session_header h;
    hs_session_header_copy(&src, &h);
    if (!rc && (memchr(h.error_text, 0, sizeof h.error_text) == NULL || h.max_functions != layout.max_functions ||
                h.regions_off != layout.regions_off))
        rc = fail(why, len, "%s", "the header copy is not hookscope's layout with a terminated text");
    uint64_t calls = hs_session_live_calls(&src, NULL);
    if (!rc && clean && calls != 210)
        rc = fail(why, len, "live calls %llu", (unsigned long long)calls);
    /* the timelines, as the drain takes them */
    int32_t used = ((const hs_session_header *)view)->threads_used;
    uint32_t nreg = used < 0 ? 0 : (uint32_t)used < NTHREADS ? (uint32_t)used : NTHREADS;
    for (uint32_t k = 0; k < nreg && !rc; k++) {
        hs_session_tl st;
        memset(&st, 0, sizeof st);
        hs_session_trust tt = { 0, "" };
        hs_tl_event ev[TL_CAP];
        size_t got = 0, n;
        for (int take = 0; take < 4 && (n = hs_session_timeline_take(&src, k, &st, ev, TL_CAP, &tt)) > 0; take++) {
            uint32_t funcs = 0;
            for (size_t i = 0; i < n && !rc; i++) {
                if (ev[i].func >= layout.max_functions || ev[i].t1 < ev[i].t0 || ev[i].ticks > ev[i].t1 - ev[i].t0 ||
                    ev[i].depth >= layout.region_shadow_cap)
                    rc = fail(why, len, "region %u's timeline event %zu: function %u, depth %u", k, i, ev[i].func,
                              ev[i].depth);
                if (ev[i].func >= funcs)
                    funcs = ev[i].func + 1;
            }
            if (!rc && st.funcs != funcs)
                rc = fail(why, len, "region %u's take names functions below %u, its events %u", k, st.funcs, funcs);
            got += n;
        }
        if (!rc && got > (size_t)TL_CAP * 4)
            rc = fail(why, len, "region %u's timeline gave %zu events", k, got);
        if (!rc && clean && (got != 3 || st.tid != 100 + k || tt.problems))
            rc = fail(why, len, "clean timeline of region %u read wrong: %zu events, thread %u", k, got, st.tid);
        /* the calls open at the end */
        n = hs_session_timeline_open(&src, k, ev, TL_CAP, &tt);
        for (size_t i = 0; i < n && !rc; i++)
            if (ev[i].func >= layout.max_functions || ev[i].depth >= layout.region_shadow_cap ||
                (i && ev[i].depth <= ev[i - 1].depth))
                rc = fail(why, len, "region %u's open call %zu: function %u, depth %u", k, i, ev[i].func, ev[i].depth);
        if (!rc && n > layout.region_shadow_cap)
            rc = fail(why, len, "region %u: %zu open calls", k, n);
        if (!rc && clean && n != (k == 0 ? 1u : 0u))
            rc = fail(why, len, "clean region %u has %zu open calls", k, n);
    }
    hs_owncode o;
    memset(&o, 0, sizeof o);
    uint64_t sig = 0;
    if (hs_session_owncode(&src, &o, &sig) > 0 && !rc) {
        rc = check_own(&o, why, len);
        if (!rc && clean && (o.nslots != 4 || o.narenas != 1 || o.nmodules != 2 || o.ntids != 2))
            rc = fail(why, len, "own code read wrong: %zu slots", o.nslots);
    }
    hs_owncode_free(&o);
    /* the sampler's read of a thread's return addresses (a 32-bit target's
     * timed calls): at most what it asked for, whatever the records say */
    for (uint32_t tid = 0; tid < 8 && !rc; tid++) {
        hs_true_return ret[4];
        size_t nret = hs_session_true_returns(&src, tid, ret, 4);
        if (nret > 4)
            rc = fail(why, len, "thread %u: %zu true returns of 4 asked", tid, nret);
    }
    hs_module_rec m;
    for (uint32_t i = 0; i < hs_session_modules(&src); i++)
        if (hs_session_module_at(&src, i, &m) && memchr(m.path, 0, sizeof m.path) == NULL && !rc)
            rc = fail(why, len, "module %u's path copy is not terminated", i);
    if (!rc && named) {
        /* what the run does next: name everything, write the reports */
        hs_profile_resolve(p, NULL);
        hs_profile_count_samples(p);
        for (int i = 0; hs_writers[i] && !rc; i++) {
            if (hs_writers[i]->wanted && !hs_writers[i]->wanted(p))
                continue;
            char *buf = NULL;
            size_t n = 0;
            FILE *f = open_memstream(&buf, &n);
            hs_writers[i]->write(p, f);
            fclose(f);
            free(buf);
        }
    }
    hs_profile_free(p);
    return rc;
}

int session_fuzz_clean(char *why, size_t len)
{
    build();
    memcpy(view, tmpl, size);
    return read_all(true, true, why, len);
}

int session_fuzz_one(const uint8_t *data, size_t n, char *why, size_t len)
{
    build();
    memcpy(view, tmpl, size);
    apply(data, n);
    /* naming and writing cost more: every eighth input, and the clean one */
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = h * 31 + data[i];
    return read_all(false, h % 8 == 0, why, len);
}

static uint64_t next(uint64_t *s)
{
    return xorshift64(s);
}

size_t session_fuzz_random(uint64_t *seed, uint8_t *out, size_t cap)
{
    build();
    /* the fields an agent writes that the reader depends on */
    const uint64_t mod0 = layout.modules_off, func0 = layout.funcs_off;
    const uint64_t r0 = layout.regions_off;
    const uint64_t fields[] = {
        offsetof(hs_session_header, n_modules), offsetof(hs_session_header, n_functions),
        offsetof(hs_session_header, threads_used), offsetof(hs_session_header, magic),
        offsetof(hs_session_header, error_text) + HS_ERROR_LEN - 8, offsetof(hs_session_header, tsc_ns_mult),
        offsetof(hs_session_header, agent_base), offsetof(hs_session_header, injector_tids),
        mod0 + offsetof(hs_module_rec, first_func), mod0 + offsetof(hs_module_rec, n_funcs),
        mod0 + offsetof(hs_module_rec, n_hooked), mod0 + offsetof(hs_module_rec, base),
        mod0 + offsetof(hs_module_rec, size), mod0 + offsetof(hs_module_rec, path),
        mod0 + offsetof(hs_module_rec, arena_base), mod0 + offsetof(hs_module_rec, arena_size),
        mod0 + offsetof(hs_module_rec, unwind_count),
        mod0 + sizeof(hs_module_rec) + offsetof(hs_module_rec, first_func),
        func0 + offsetof(hs_func_rec, module), func0 + offsetof(hs_func_rec, skip_reason),
        func0 + offsetof(hs_func_rec, slot_off), func0 + offsetof(hs_func_rec, slot_len),
        func0 + sizeof(hs_func_rec) * 4 + offsetof(hs_func_rec, module),
        r0 + offsetof(hs_region_hdr, committed_funcs), r0 + offsetof(hs_region_hdr, edges_used),
        r0 + offsetof(hs_region_hdr, stacks_used), r0 + offsetof(hs_region_hdr, frames_used),
        r0 + offsetof(hs_region_hdr, shadow_top), r0 + offsetof(hs_region_hdr, shadow_base),
        r0 + offsetof(hs_region_hdr, shadow_limit), r0 + layout.region_edges_off + 3 * sizeof(hs_edge_rec) + 8,
        r0 + layout.region_stacks_off + 2 * sizeof(hs_stack_rec) + 8,
        r0 + layout.region_stacks_off + 2 * sizeof(hs_stack_rec) + 12,
        r0 + layout.region_stacks_off + 5 * sizeof(hs_stack_rec) + 24,
        r0 + layout.region_shadow_off + offsetof(hs_shadow_rec, func),
        r0 + layout.region_counters_off + 8,
    };
    const uint64_t values[] = { 0, 1, 2, 3, 5, 7, 8, 31, 32, 33, 127, 128, 129, 256, 257, 0x7F, 0x80, 0xFF,
                                0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFFull,
                                0x8000000000000000ull, 0x100000000ull, size, size + 1, size - 1,
                                0x4141414141414141ull };
    size_t n = 0, patches = 1 + next(seed) % 8;
    for (size_t i = 0; i < patches && n + SESSION_PATCH_SIZE <= cap; i++) {
        uint64_t r = next(seed);
        uint32_t off;
        if (r % 10 < 7) {
            off = (uint32_t)fields[next(seed) % (sizeof fields / sizeof *fields)];
            /* another module, function or region */
            if (off >= r0 && next(seed) % 2)
                off += (uint32_t)((next(seed) % (NTHREADS + 1)) * layout.region_size);
        } else {
            off = (uint32_t)(next(seed) % size);
        }
        uint16_t width = (uint16_t)(1u << (next(seed) % 4));
        uint16_t count = (uint16_t)(next(seed) % 4 == 0 ? next(seed) % 1100 : 0);
        uint64_t value = next(seed) % 4 == 0 ? next(seed) : values[next(seed) % (sizeof values / sizeof *values)];
        memcpy(out + n, &off, 4);
        memcpy(out + n + 4, &width, 2);
        memcpy(out + n + 6, &count, 2);
        memcpy(out + n + 8, &value, 8);
        n += SESSION_PATCH_SIZE;
    }
    return n;
}

static void patch(session_seed *s, uint64_t off, uint16_t width, uint16_t count, uint64_t value)
{
    if (s->size + SESSION_PATCH_SIZE > sizeof s->data)
        return;
    uint32_t o = (uint32_t)off;
    memcpy(s->data + s->size, &o, 4);
    memcpy(s->data + s->size + 4, &width, 2);
    memcpy(s->data + s->size + 6, &count, 2);
    memcpy(s->data + s->size + 8, &value, 8);
    s->size += SESSION_PATCH_SIZE;
}

size_t session_fuzz_seeds(session_seed *out, size_t cap)
{
    build();
    const uint64_t H = 0, M = layout.modules_off, F = layout.funcs_off, R = layout.regions_off;
    const uint64_t ALL = ~0ull;
    size_t n = 0;
#define SEED(nm) (n < cap ? (out[n] = (session_seed){ nm, { 0 }, 0 }, &out[n++]) : &out[cap - 1])
    session_seed *s;
    s = SEED("n_functions-huge");
    patch(s, H + offsetof(hs_session_header, n_functions), 4, 0, 0xFFFFFFFF);
    s = SEED("n_modules-huge");
    patch(s, H + offsetof(hs_session_header, n_modules), 4, 0, 0x7FFFFFFF);
    s = SEED("threads_used-negative");
    patch(s, H + offsetof(hs_session_header, threads_used), 4, 0, 0xFFFFFFFF);
    s = SEED("threads_used-huge");
    patch(s, H + offsetof(hs_session_header, threads_used), 4, 0, 0x7FFFFFFF);
    s = SEED("magic-overwritten");
    patch(s, H + offsetof(hs_session_header, magic), 8, 0, 0);
    s = SEED("header-scribbled");
    patch(s, H, 8, 1099, 0x4141414141414141ull);
    s = SEED("error_text-unterminated");
    patch(s, H + offsetof(hs_session_header, error_text), 8, HS_ERROR_LEN / 8 - 1, ALL);
    s = SEED("module-path-unterminated");
    patch(s, M + offsetof(hs_module_rec, path), 2, HS_PATH_LEN - 1, 'A');
    s = SEED("module-functions-wrap");
    patch(s, M + offsetof(hs_module_rec, first_func), 4, 0, 0xFFFFFFF0);
    patch(s, M + offsetof(hs_module_rec, n_funcs), 4, 0, 0x20);
    s = SEED("module-hooked-over-found");
    patch(s, M + offsetof(hs_module_rec, n_hooked), 4, 0, 0xFFFFFFFF);
    s = SEED("module-range-wraps");
    patch(s, M + offsetof(hs_module_rec, base), 8, 0, 0xFFFFFFFFFFFFFF00ull);
    s = SEED("module-arena-unwind-huge");
    patch(s, M + offsetof(hs_module_rec, unwind_count), 4, 0, 0xFFFFFFFF);
    patch(s, M + offsetof(hs_module_rec, arena_size), 4, 0, 0xFFFFFFFF);
    s = SEED("module-arena-wraps");
    patch(s, M + offsetof(hs_module_rec, arena_base), 8, 0, 0xFFFFFFFFFFFFF000ull);
    patch(s, M + offsetof(hs_module_rec, arena_size), 4, 0, 0x2000);
    s = SEED("function-module-missing");
    patch(s, F + offsetof(hs_func_rec, module), 4, 0, 0x7FFFFFFF);
    s = SEED("function-reasons-unknown");
    patch(s, F + offsetof(hs_func_rec, skip_reason), 4, 0, 0xFFFFFFFF);
    s = SEED("function-slot-outside-arena");
    patch(s, F + offsetof(hs_func_rec, slot_off), 4, 0, 0xFFFFFF00);
    patch(s, F + sizeof(hs_func_rec) + offsetof(hs_func_rec, slot_len), 2, 0, 0xFFFF);
    s = SEED("region-counters-huge");
    patch(s, R + offsetof(hs_region_hdr, committed_funcs), 4, 0, 0xFFFFFFFF);
    s = SEED("region-edge-callee-past-end");
    patch(s, R + layout.region_edges_off + 3 * sizeof(hs_edge_rec) + offsetof(hs_edge_rec, callee), 4, 0,
          0xFFFFFFFF);
    s = SEED("region-edges-every-slot");
    patch(s, R + layout.region_edges_off, 8, 16 * 4 - 1, 0x140001234ull);
    s = SEED("region-stack-frames-past-end");
    patch(s, R + layout.region_stacks_off + 2 * sizeof(hs_stack_rec) + offsetof(hs_stack_rec, frames), 4, 0,
          0xFFFFFFF0);
    s = SEED("region-stack-depth-huge");
    patch(s, R + layout.region_stacks_off + 5 * sizeof(hs_stack_rec) + offsetof(hs_stack_rec, depth), 2, 0, 0xFFFF);
    s = SEED("region-stack-function-past-end");
    patch(s, R + layout.region_stacks_off + 2 * sizeof(hs_stack_rec) + offsetof(hs_stack_rec, func), 4, 0,
          0x80000000);
    s = SEED("region-shadow-top-huge");
    patch(s, R + offsetof(hs_region_hdr, shadow_top), 8, 0, ALL);
    s = SEED("region-shadow-function-past-end");
    patch(s, R + layout.region_shadow_off + offsetof(hs_shadow_rec, func), 4, 0, 0xFFFFFFFF);
    s = SEED("region-time-counts-huge");
    patch(s, R + layout.region_time_off, 8, sizeof(hs_time_rec) / 8 * 2 - 1, ALL);
    s = SEED("regions-all-ones");
    patch(s, R, 8, 1099, ALL);
    patch(s, R + layout.region_size, 8, 1099, ALL);
#undef SEED
    return n;
}
