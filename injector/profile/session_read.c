/*
 * injector/profile/session_read.c - reading the session, which the target
 * can write (from_session.h, session_read.h): the primitives, the header,
 * the module records, and the live readers (calls so far, own code).
 *
 * Every read goes through hs_sr_read(): bounded by the view's size, the
 * bytes copied out of the section (where they cannot be read, as zeros). Tables are read a chunk of
 * records at a time into a buffer of ours (hs_sr_table_at), and each
 * record is checked there, in the copy. Offsets, record sizes and
 * capacities come only from hookscope's own layout.
 */
#include "injector/profile/session_read.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/text.h"
#include "hook/base/util.h"

/* Bytes of records copied at a time. */
#define CHUNK (256u * 1024)

void hs_sr_problem(hs_session_trust *t, const char *fmt, ...)
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

/* Copy [off, off + len) of the view into dst (zeros where it cannot be
 * read); false when it is outside the view. */
bool hs_sr_read(const hs_session_src *s, uint64_t off, void *dst, uint64_t len)
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

void hs_sr_table_open(hs_sr_table *t, const hs_session_src *s, uint64_t off, uint32_t size, uint32_t n)
{
    free(t->buf);
    memset(t, 0, sizeof *t);
    t->s = s;
    t->off = off;
    t->size = size ? size : 1;
    t->n = n;
}

void hs_sr_table_close(hs_sr_table *t)
{
    free(t->buf);
    t->buf = NULL;
}

const void *hs_sr_table_at(hs_sr_table *t, uint32_t i)
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
    if (!hs_sr_read(t->s, t->off + (uint64_t)i * t->size, t->buf, (uint64_t)k * t->size))
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
    if (!hs_sr_read(s, 0, vp, sizeof *vp)) {
        free(vp);
        return;
    }
#define AGENT(f) memcpy((void *)&out->f, (const void *)&vp->f, sizeof out->f)
    AGENT(agent_state);
    AGENT(agent_error);
    AGENT(agent_base);
    AGENT(wrap_begin);
    AGENT(wrap_rsi);
    AGENT(wrap_gone);
    AGENT(wrap_end);
    AGENT(wrap_ret);
    AGENT(n_modules);
    AGENT(n_functions);
    AGENT(threads_used);
    AGENT(tls_index);
    AGENT(pattern_matched);
    AGENT(tsc_start);
    AGENT(stop_requested);
    AGENT(install_ticks_total);
    AGENT(install_step_ticks);
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
    AGENT(thread_cost_ticks);
    AGENT(thread_cost_count);
    AGENT(thread_cost_hist);
#undef AGENT
    clean_text(vp->error_text, out->error_text);
    free(vp);
}

void hs_sr_identity(const hs_session_src *s, hs_session_trust *t)
{
    struct {
        uint64_t magic;
        uint32_t version, header_size;
    } id;
    if (hs_sr_read(s, 0, &id, sizeof id) &&
        (id.magic != HS_SESSION_MAGIC || id.version != HS_SESSION_VERSION ||
         id.header_size != sizeof(hs_session_header)))
        hs_sr_problem(t, "%s", "the header's magic and version were overwritten");
}

uint32_t hs_sr_count(uint32_t n, uint32_t cap, const char *what, hs_session_trust *t)
{
    if (n > cap) {
        hs_sr_problem(t, "%s count %u is over the capacity %u", what, n, cap);
        return cap;
    }
    return n;
}

static uint32_t n_modules(const hs_session_src *s, hs_session_trust *t)
{
    uint32_t n = 0;
    hs_sr_read(s, offsetof(hs_session_header, n_modules), &n, sizeof n);
    return hs_sr_count(n, s->layout->max_modules, "module", t);
}

static uint32_t n_functions(const hs_session_src *s, hs_session_trust *t)
{
    uint32_t n = 0;
    hs_sr_read(s, offsetof(hs_session_header, n_functions), &n, sizeof n);
    return hs_sr_count(n, s->layout->max_functions, "function", t);
}

static uint32_t regions_used(int32_t used, uint32_t max)
{
    return used < 0 ? 0 : (uint32_t)used < max ? (uint32_t)used : max;
}

uint32_t hs_session_regions(const hs_session_src *s)
{
    /* (the count read alone, not the whole header: a drain asks thousands
     * of times a second) */
    int32_t used = 0;
    hs_sr_read(s, offsetof(hs_session_header, threads_used), &used, sizeof used);
    return regions_used(used, s->layout->max_threads);
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
        hs_sr_problem(t, "module %u's path is not terminated", i);
        m->path[HS_PATH_LEN - 1] = 0;
    }
    uint32_t cap = s->layout->max_functions;
    if (m->first_func > cap || m->n_funcs > cap - m->first_func) {
        hs_sr_problem(t, "module %u's functions [%u, +%u) are outside the function table", i, m->first_func,
                      m->n_funcs);
        m->first_func = m->n_funcs = m->n_hooked = 0;
    }
    if (m->n_hooked > m->n_funcs) {
        hs_sr_problem(t, "module %u has %u functions hooked of %u", i, m->n_hooked, m->n_funcs);
        m->n_hooked = m->n_funcs;
    }
    if (m->size && m->base + m->size < m->base) {
        hs_sr_problem(t, "module %u's range 0x%llx + 0x%x wraps around", i, (unsigned long long)m->base, m->size);
        m->size = 0;
    }
    if (m->arena_base && (m->arena_base + m->arena_size < m->arena_base ||
                          m->unwind_count > m->arena_size / 12 ||
                          m->unwind_count > 16 * (uint64_t)m->n_hooked + 64)) {
        hs_sr_problem(t, "module %u's code arena (0x%llx, %u bytes, %u unwind entries) cannot be", i,
                      (unsigned long long)m->arena_base, m->arena_size, m->unwind_count);
        m->arena_base = 0;
        m->arena_size = m->unwind_count = 0;
    }
}

bool hs_sr_module(const hs_session_src *s, uint32_t i, hs_module_rec *out, hs_session_trust *t)
{
    const hs_session_header *L = s->layout;
    if (i >= L->max_modules ||
        !hs_sr_read(s, L->modules_off + (uint64_t)i * L->module_rec_size, out, sizeof *out))
        return false;
    check_module(s, i, out, t);
    return true;
}

bool hs_session_module_at(const hs_session_src *s, uint32_t i, hs_module_rec *out)
{
    return hs_sr_module(s, i, out, NULL);
}

uint32_t hs_sr_regions(const hs_session_header *h)
{
    return regions_used(h->threads_used, h->max_threads);
}

bool hs_sr_region(const hs_session_src *s, uint32_t k, uint32_t nregions, uint64_t *base, hs_region_hdr *rh)
{
    const hs_session_header *L = s->layout;
    uint32_t region = k < nregions ? k : L->max_threads;
    *base = L->regions_off + (uint64_t)region * L->region_size;
    return hs_sr_read(s, *base, rh, sizeof *rh);
}

/* ---- while the target runs ------------------------------------------------------------------- */

/* --timeline: region k (of those in use) of a session with timelines:
 * the functions the session has now, the region's offset and its header
 * (copied); false when there is no such region. */
static bool timeline_region(const hs_session_src *s, uint32_t k, uint32_t *nfuncs, uint64_t *base, hs_region_hdr *rh)
{
    uint32_t nregions = hs_session_regions(s);
    *nfuncs = n_functions(s, NULL);
    return (s->layout->options & HS_OPT_TIMELINE) && k < nregions && hs_sr_region(s, k, nregions, base, rh);
}

size_t hs_session_timeline_open(const hs_session_src *s, uint32_t k, hs_tl_event *out, size_t max,
                                hs_session_trust *t)
{
    const hs_session_header *L = s->layout;
    uint32_t nfuncs;
    uint64_t base;
    hs_region_hdr rh;
    if (!timeline_region(s, k, &nfuncs, &base, &rh) || !rh.shadow_limit || rh.shadow_top <= rh.shadow_base)
        return 0;
    uint64_t n = (rh.shadow_top - rh.shadow_base) / sizeof(hs_shadow_rec);
    if (n > L->region_shadow_cap) {
        hs_sr_problem(t, "region %u has %llu timed calls open, its shadow stack holds %u", k, (unsigned long long)n,
                      L->region_shadow_cap);
        n = L->region_shadow_cap;
    }
    size_t kept = 0;
    hs_sr_table sh = { 0 };
    hs_sr_table_open(&sh, s, base + L->region_shadow_off, sizeof(hs_shadow_rec), (uint32_t)n);
    for (uint32_t i = 0; i < n && kept < max; i++) {
        const hs_shadow_rec *o = hs_sr_table_at(&sh, i);
        if (!o)
            break;
        if (o->func >= nfuncs) {
            hs_sr_problem(t, "region %u's open call %u is of function %u, which does not exist", k, i, o->func);
            continue;
        }
        out[kept].t0 = o->t0;
        out[kept].t1 = out[kept].ticks = 0;
        out[kept].func = o->func;
        out[kept].depth = i;
        kept++;
    }
    hs_sr_table_close(&sh);
    return kept;
}

size_t hs_session_timeline_take(const hs_session_src *s, uint32_t k, hs_session_tl *st, hs_tl_event *out,
                                size_t max, hs_session_trust *t)
{
    const hs_session_header *L = s->layout;
    uint32_t nfuncs;
    uint64_t base;
    hs_region_hdr rh;
    if (!L->region_timeline_cap || !timeline_region(s, k, &nfuncs, &base, &rh))
        return 0;
    st->dropped = rh.tl_dropped;
    st->filtered = rh.tl_filtered;
    st->drop_first = rh.tl_drop_first;
    st->drop_last = rh.tl_drop_last;
    st->waits = rh.tl_waits;
    st->wait_ticks = rh.tl_wait_ticks;
    if (!rh.tl_base)
        return 0;   /* not timed yet */
    uint64_t cap = L->region_timeline_cap, head = rh.tl_head;
    if (head < st->tail || head - st->tail > cap) {
        hs_sr_problem(t, "region %u's timeline has %llu events written and %llu taken, in a ring of %llu", k,
                      (unsigned long long)head, (unsigned long long)st->tail, (unsigned long long)cap);
        if (head < st->tail)
            return 0;
        st->tail = head - cap;   /* the ring holds the last cap at most */
    }
    size_t n = 0;
    uint32_t funcs = 0;
    while (st->tail < head && n < max) {
        /* the ring's part from the tail to its end or the head */
        uint64_t at = st->tail & (cap - 1);
        uint64_t run = head - st->tail;
        if (run > cap - at)
            run = cap - at;
        if (run > max - n)
            run = max - n;
        if (!hs_sr_read(s, base + L->region_timeline_off + at * sizeof(hs_tl_event), out + n,
                        run * sizeof(hs_tl_event)))
            break;
        size_t kept = n;
        uint64_t used = 0;
        bool stop = false;
        for (; used < run; used++) {
            const hs_tl_event e = out[n + used];   /* (kept <= n + used: read before written) */
            if (e.func == HS_TL_THREAD) {
                if (kept > 0) {
                    stop = true;   /* the next take is the named thread's */
                    break;
                }
                st->tid = (uint32_t)e.t0;
                continue;
            }
            if (!st->tid) {
                hs_sr_problem(t, "region %u's timeline has calls before it names its thread", k);
                continue;
            }
            if (e.func >= nfuncs || e.t1 < e.t0 || e.ticks > e.t1 - e.t0 || e.depth >= L->region_shadow_cap) {
                hs_sr_problem(t, "region %u's timeline event %llu (function %u, depth %u) cannot be a call", k,
                              (unsigned long long)(st->tail + used), e.func, e.depth);
                continue;
            }
            if (e.func >= funcs)
                funcs = e.func + 1;
            out[kept++] = e;
        }
        st->tail += used;
        n = kept;
        if (stop)
            break;
    }
    /* the room taken back: the agent writes over it from now on */
    volatile uint64_t *tail = (volatile uint64_t *)((char *)s->view + base + offsetof(hs_region_hdr, tl_tail));
    *tail = st->tail;
    st->funcs = funcs;
    return n;
}

/* Bytes of counters one progress reading copies at most. */
#define LIVE_BUDGET (64u << 20)

uint64_t hs_session_live_calls(const hs_session_src *s, uint64_t *stack_ticks)
{
    const hs_session_header *L = s->layout;
    hs_session_header h;
    hs_session_header_copy(s, &h);
    uint32_t nfuncs = n_functions(s, NULL), nregions = hs_sr_regions(&h);
    uint64_t calls = 0;
    uint8_t *buf = NULL;
    size_t per = CHUNK / L->region_fblock;
    uint64_t budget = LIVE_BUDGET, stacks = 0;
    for (uint32_t k = 0; k <= nregions; k++) {
        uint64_t base;
        hs_region_hdr rh;
        if (!hs_sr_region(s, k, nregions, &base, &rh))
            continue;
        stacks += rh.stack_ticks;
        uint32_t n = rh.committed_funcs < nfuncs ? rh.committed_funcs : nfuncs;
        if (n && !buf)
            buf = hs_xmalloc(per * L->region_fblock);
        for (uint32_t i = 0; i < n; i += (uint32_t)per) {
            uint32_t m = n - i < per ? n - i : (uint32_t)per;
            if ((uint64_t)m * L->region_fblock > budget)
                break;
            budget -= (uint64_t)m * L->region_fblock;
            if (!hs_sr_read(s, base + L->region_counters_off + (uint64_t)i * L->region_fblock, buf,
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
    if (stack_ticks)
        *stack_ticks = stacks;
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
        if (!hs_sr_module(s, i, &mods[i], NULL)) {
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
    /* the timing wrapper's addresses, as far as they lie in the agent */
    uint64_t wrap[5] = { h.wrap_begin, h.wrap_rsi, h.wrap_gone, h.wrap_end, h.wrap_ret };
    bool wrap_ok = o->agent_size != 0;
    for (int i = 0; i < 5; i++)
        wrap_ok = wrap_ok && wrap[i] >= o->agent_base && wrap[i] - o->agent_base < o->agent_size;
    if (wrap_ok) {
        o->wrap_begin = h.wrap_begin;
        o->wrap_rsi = h.wrap_rsi;
        o->wrap_gone = h.wrap_gone;
        o->wrap_end = h.wrap_end;
        o->wrap_ret = h.wrap_ret;
    }
    o->arenas = hs_xcalloc(o->narenas ? o->narenas : 1, sizeof *o->arenas);
    o->narenas = 0;
    /* each hooked function's slot, within its module's arena (the modules'
     * functions do not overlap: no more are looked at than there are) */
    size_t cap = 0;
    uint64_t visited = 0;
    hs_sr_table ft = { 0 };
    hs_sr_table_open(&ft, s, s->layout->funcs_off, s->layout->func_rec_size, nfuncs);
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
            const hs_func_rec *r = hs_sr_table_at(&ft, f);
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
    hs_sr_table_close(&ft);
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

size_t hs_session_true_returns(const hs_session_src *s, uint32_t tid, hs_true_return *out, size_t cap)
{
    const hs_session_header *L = s->layout;
    if (!L->region_shadow_cap || !tid)
        return 0;
    for (uint64_t k = 0; k <= L->max_threads; k++) {
        const uint64_t region = L->regions_off + k * L->region_size;
        hs_region_hdr r;
        if (!hs_sr_read(s, region, &r, sizeof r) || r.tid != tid)
            continue;
        if (r.shadow_top < r.shadow_base)
            return 0;
        uint64_t n = (r.shadow_top - r.shadow_base) / sizeof(hs_shadow_rec);
        if (n > L->region_shadow_cap)
            n = L->region_shadow_cap;
        size_t got = 0;
        for (uint64_t i = n > cap ? n - cap : 0; i < n; i++) {
            hs_shadow_rec rec;
            if (!hs_sr_read(s, region + L->region_shadow_off + i * sizeof rec, &rec, sizeof rec))
                break;
            if (rec.ret && rec.frame)
                out[got++] = (hs_true_return){ rec.frame, rec.ret };
        }
        return got;
    }
    return 0;
}
