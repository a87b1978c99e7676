/*
 * agent/probes.c - the C side of the probes: what the entry stubs call
 * through the thunks in thunks.S when the fast path cannot do the work
 * (a thread without a region, an edge not yet in the table, an entry
 * stack to capture), and the unwind handler of the timing wrapper.
 *
 * All of it runs on the target's threads, in the middle of their calls:
 * no heap, no locks but the overflow region's, and the thread's TLS slot
 * points at the sink while anything here calls into the system, so that
 * hooked functions called on our behalf are neither counted nor recursive.
 */
#include <stddef.h>
#include <string.h>

#include "agent.h"
#include "suspend_win.h"

/* Read by wrapper.S. */
uint64_t hs_tsc_ns_mult;      /* ns = ticks * mult >> 32 */
volatile int64_t hs_untimed_frames; /* wrapper frames not on a shadow stack */

/* wrapper.S and the stubs hard-code these layouts */
_Static_assert(offsetof(hs_region_hdr, shadow_base) == 40, "shadow_base");
_Static_assert(offsetof(hs_region_hdr, shadow_top) == 48, "shadow_top");
_Static_assert(offsetof(hs_region_hdr, shadow_limit) == 56, "shadow_limit");
_Static_assert(offsetof(hs_region_hdr, time_dropped) == 64, "time_dropped");
_Static_assert(sizeof(hs_shadow_rec) == 64, "shadow rec");
_Static_assert(offsetof(hs_shadow_rec, func) == 48, "shadow func");
_Static_assert(offsetof(hs_time_rec, pending) == 48, "time pending");
_Static_assert(offsetof(hs_time_rec, hist) == 56, "time hist");
_Static_assert(offsetof(hs_wrap_desc, nslots) == 20, "desc");
_Static_assert(sizeof(hs_edge_rec) == 32, "edge rec");

static SRWLOCK overflow_lock = SRWLOCK_INIT;

static hs_region_hdr *region_of(uint64_t *counters)
{
    return (hs_region_hdr *)((char *)counters - g_hs.hdr->region_counters_off);
}

static hs_edge_rec *edges_of(uint64_t *counters)
{
    return (hs_edge_rec *)((char *)counters + (g_hs.hdr->region_edges_off - g_hs.hdr->region_counters_off));
}

/* Insert (site, fidx) into an edge table with `count`, or add to an
 * existing entry. Returns -1 when the table is too full to insert. */
static int edge_add(hs_edge_rec *t, uint32_t *used, uint64_t site, uint32_t fidx, uint64_t count)
{
    if (site == 0)
        return 0;   /* no caller: entered as a thread start */
    uint32_t cap = g_hs.hdr->region_edges_cap;
    uint32_t i = hs_edge_slot(site, fidx, cap);
    for (uint32_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
        if (t[i].site == site && t[i].callee == fidx) {
            t[i].count += count;
            return 0;
        }
        if (t[i].site == 0) {
            if (*used >= cap / 4 * 3)
                return -1;
            t[i].callee = fidx;
            t[i].count = count;
            MemoryBarrier();
            t[i].site = site;
            (*used)++;
            return 0;
        }
    }
    return -1;
}

/* Count a call (and its edge) in the shared overflow region. */
static void overflow_count(uint32_t fidx, uint64_t site, int count_call)
{
    hs_session_header *h = g_hs.hdr;
    uint64_t *ov = hs_region_counters(g_hs.view, h->max_threads);
    if (fidx >= h->n_functions)
        return;
    if (count_call) {
        InterlockedIncrement64((volatile LONG64 *)hs_fblock_at(h, ov, fidx));
        InterlockedIncrement64((volatile LONG64 *)&h->overflow_calls);
    }
    if ((h->options & HS_OPT_EDGES) && site) {
        AcquireSRWLockExclusive(&overflow_lock);
        hs_region_hdr *r = region_of(ov);
        if (edge_add(edges_of(ov), &r->edges_used, site, fidx, 1) < 0)
            r->edges_overflowed++;   /* lost: reported */
        ReleaseSRWLockExclusive(&overflow_lock);
    }
}

/* Is this thread one that hookscope.exe started in the target? Its calls
 * (the exe's TLS callbacks run on it before its start routine) would not
 * happen untraced. */
static int injector_thread(void)
{
    uint32_t tid = (uint32_t)hs_teb_read(HS_TEB_THREAD_ID);
    for (int i = 0; i < 16; i++)
        if (g_hs.hdr->injector_tids[i] == tid)
            return 1;
    return hs_suspend_is_worker(tid);   /* the agent's own */
}

/* The caller's return address for an edge: a function tail-called by a
 * timed one sees the wrapper's return address; its real caller is the
 * wrapped function's, in the wrapper's frame (rbp is still the wrapper's). */
static uint64_t call_site(uint64_t entry_rsp, const hs_saved_regs *regs)
{
    uint64_t site = *(uint64_t *)entry_rsp;
    if (site == (uint64_t)(uintptr_t)hs_wrapper_ret)
        site = *(uint64_t *)(regs->rbp + 40);
    return site;
}

uint64_t *hs_on_slow(uint32_t fidx, uint64_t entry_rsp, const hs_saved_regs *regs)
{
    InterlockedIncrement(&g_hs.in_slow);
    hs_tls_set(g_hs.sink);
    if (injector_thread()) {
        InterlockedDecrement(&g_hs.in_slow);
        return g_hs.sink;   /* counts go to the sink from now on */
    }
    uint64_t *c = hs_region_acquire();
    if (!c)
        overflow_count(fidx, call_site(entry_rsp, regs), 1);
    hs_tls_set(c);
    InterlockedDecrement(&g_hs.in_slow);
    return c;
}

uint64_t *hs_on_edge(uint32_t fidx, uint64_t entry_rsp, const hs_saved_regs *regs)
{
    uint64_t *c = hs_tls_get();
    if (!c || c == g_hs.sink)
        return c;
    InterlockedIncrement(&g_hs.in_slow);
    hs_tls_set(g_hs.sink);
    uint64_t site = call_site(entry_rsp, regs);
    hs_region_hdr *r = region_of(c);
    hs_fblock *b = (hs_fblock *)hs_fblock_at(g_hs.hdr, c, fidx);
    for (int k = 0; k < HS_INLINE_EDGES; k++) {
        if (b->edge[k].site == 0 && site) {
            /* a free caller slot in the function's block (the stub found
             * no slot with this site) */
            b->edge[k].count = 1;
            MemoryBarrier();
            b->edge[k].site = site;
            goto done;
        }
    }
    if (edge_add(edges_of(c), &r->edges_used, site, fidx, 1) < 0) {
        r->edges_overflowed++;
        overflow_count(fidx, site, 0);
    }
done:
    hs_tls_set(c);
    InterlockedDecrement(&g_hs.in_slow);
    return c;
}

/* ---- entry stacks ---------------------------------------------------------- */

static uint64_t hash_frames(uint32_t fidx, const uint64_t *f, int n)
{
    uint64_t h = 0xCBF29CE484222325ull ^ fidx;
    for (int i = 0; i < n; i++) {
        h ^= f[i];
        h *= 0x100000001B3ull;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

/* Walk the stack from the hooked function's entry: frame 0 is the entry
 * itself, then one return address per caller, with the unwind data of
 * each module (a frame without any is taken as a leaf). */
static int walk(uint64_t entry, uint64_t rsp, const hs_saved_regs *r, uint64_t *frames, int max,
                int *truncated)
{
    CONTEXT ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.ContextFlags = CONTEXT_FULL;
    ctx.Rip = entry;
    ctx.Rsp = rsp;
    ctx.Rbx = r->rbx;
    ctx.Rbp = r->rbp;
    ctx.Rsi = r->rsi;
    ctx.Rdi = r->rdi;
    ctx.R12 = r->r12;
    ctx.R13 = r->r13;
    ctx.R14 = r->r14;
    ctx.R15 = r->r15;
    const uint64_t lo = hs_teb_read(0x10), hi = hs_teb_read(0x08);  /* StackLimit, StackBase */
    const uint64_t agent_lo = (uint64_t)(uintptr_t)g_hs.self, agent_hi = agent_lo + g_hs.self_size;
    int n = 0;
    frames[n++] = entry;
    *truncated = 0;
    for (;;) {
        DWORD64 image = 0;
        PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(ctx.Rip, &image, NULL);
        if (rf) {
            PVOID handler_data;
            DWORD64 establisher;
            RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, ctx.Rip, rf, &ctx, &handler_data,
                             &establisher, NULL);
        } else {
            if (ctx.Rsp < lo || ctx.Rsp + 8 > hi)
                break;
            ctx.Rip = *(uint64_t *)ctx.Rsp;
            ctx.Rsp += 8;
        }
        /* Wine can leave junk after the last frame: stop at the first null
         * or at a stack pointer outside the stack */
        if (ctx.Rip == 0 || ctx.Rsp < lo || ctx.Rsp > hi)
            break;
        /* the timing wrapper's frames are folded into the hooked function
         * in every report: they do not count against the depth */
        if (ctx.Rip >= agent_lo && ctx.Rip < agent_hi)
            continue;
        if (n == max) {
            *truncated = 1;
            break;
        }
        frames[n++] = ctx.Rip;
    }
    return n;
}

/* Add `count` to the stack (fidx, frames) in region r's table, inserting
 * it if new. Returns -1 when the table or the frame pool is full. */
static int stack_add(hs_region_hdr *r, uint32_t fidx, const uint64_t *frames, int n, int truncated,
                     uint64_t count)
{
    const hs_session_header *h = g_hs.hdr;
    char *region = (char *)r;
    hs_stack_rec *tab = (hs_stack_rec *)(region + h->region_stacks_off);
    uint64_t *pool = (uint64_t *)(region + h->region_frames_off);
    uint32_t cap = h->region_stacks_cap;
    uint64_t hash = hash_frames(fidx, frames, n);
    uint32_t i = (uint32_t)(hash & (cap - 1));
    for (uint32_t k = 0; k < cap; k++, i = (i + 1) & (cap - 1)) {
        hs_stack_rec *s = &tab[i];
        if (s->hash == hash && s->func == fidx && s->depth == n &&
            memcmp(pool + s->frames, frames, (size_t)n * 8) == 0) {
            s->count += count;
            return 0;
        }
        if (s->hash == 0) {
            if (r->stacks_used >= cap / 4 * 3 || r->frames_used + (uint32_t)n > h->region_frames_cap)
                return -1;
            memcpy(pool + r->frames_used, frames, (size_t)n * 8);
            s->frames = r->frames_used;
            s->func = fidx;
            s->depth = (uint16_t)n;
            s->truncated = (uint16_t)truncated;
            s->count = count;
            MemoryBarrier();
            s->hash = hash;
            r->frames_used += (uint32_t)n;
            r->stacks_used++;
            return 0;
        }
    }
    return -1;
}

uint64_t *hs_on_stack(uint32_t fidx, uint64_t entry_rsp, const hs_saved_regs *regs)
{
    uint64_t *c = hs_tls_get();
    hs_session_header *h = g_hs.hdr;
    if (!c || c == g_hs.sink || fidx >= h->n_functions)
        return c;
    InterlockedIncrement(&g_hs.in_slow);
    hs_tls_set(g_hs.sink);
    const hs_func_rec *f = hs_session_func(g_hs.view, fidx);
    uint64_t entry = hs_session_module(g_hs.view, f->module)->base + f->rva;
    uint64_t frames[256];
    int max = h->stack_depth < 256 ? (int)h->stack_depth : 256, truncated;
    int n = walk(entry, entry_rsp, regs, frames, max, &truncated);

    hs_region_hdr *r = region_of(c);
    if (stack_add(r, fidx, frames, n, truncated, 1) < 0)
        r->stacks_dropped++;
    hs_tls_set(c);
    InterlockedDecrement(&g_hs.in_slow);
    return c;
}

/* ---- the wrapper's unwind handler -------------------------------------------- */

static uint32_t hist_bucket(uint64_t ticks)
{
    unsigned __int128 ns = ((unsigned __int128)ticks * hs_tsc_ns_mult) >> 32;
    if (ns >> 64)
        return HS_HIST_BUCKETS - 1;
    uint64_t v = (uint64_t)ns | 1;
    uint32_t b = 63 - (uint32_t)__builtin_clzll(v);
    return b < HS_HIST_BUCKETS ? b : HS_HIST_BUCKETS - 1;
}

/* Called for a wrapper frame while an exception or a longjmp unwinds
 * through it: the call ends here, by unwind. Records it like a return
 * (duration, self, histogram) and counts it in `unwinds`. */
/* If the wrapper frame `fr` is on the shadow stack of region r (counters
 * c), record its end by unwind and pop it; 1 when it was there. */
static int unwind_frame(hs_region_hdr *r, uint64_t *c, uint64_t fr)
{
    if (!r || !r->shadow_limit)
        return 0;
    hs_shadow_rec *base = (hs_shadow_rec *)(uintptr_t)r->shadow_base;
    hs_shadow_rec *top = (hs_shadow_rec *)(uintptr_t)r->shadow_top;
    for (hs_shadow_rec *s = top - 1; s >= base; s--) {
        if (s->frame == fr) {
            uint64_t dt = hs_rdtsc() - s->t0;
            const hs_wrap_desc *d = (const hs_wrap_desc *)(uintptr_t)s->desc;
            hs_time_rec *t = (hs_time_rec *)((char *)c + d->time_rel);
            t->exits++;
            t->unwinds++;
            t->total += dt;
            t->self += dt - s->child;
            if (dt > t->max)
                t->max = dt;
            if (t->min == 0 || dt < t->min)
                t->min = dt;
            t->hist[hist_bucket(dt)]++;
            if (s > base)
                s[-1].child += dt;
            r->shadow_top = (uint64_t)(uintptr_t)s;
            return 1;
        }
        if (s->frame > fr)
            break;   /* an older frame: ours is not on the shadow stack */
    }
    return 0;
}

/* Called for a wrapper frame while an exception or a longjmp unwinds
 * through it: the call ends here, by unwind. Records it like a return
 * (duration, self, histogram) and counts it in `unwinds`. A frame entered
 * during an earlier session of this agent (it stayed loaded for such
 * frames) is found in that session's region of the thread. */
EXCEPTION_DISPOSITION hs_wrapper_unwind(EXCEPTION_RECORD *rec, void *frame,
                                        CONTEXT *ctx __attribute__((unused)),
                                        void *dispatcher __attribute__((unused)))
{
    if (!(rec->ExceptionFlags & (EXCEPTION_UNWINDING | EXCEPTION_EXIT_UNWIND)))
        return ExceptionContinueSearch;
    uint64_t *c = hs_tls_get();
    uint64_t fr = (uint64_t)(uintptr_t)frame;
    int timed = unwind_frame(c && c != g_hs.sink ? region_of(c) : NULL, c, fr);
    for (size_t i = 0; !timed && i < hs_retired_count(); i++) {
        void *view;
        uint64_t *oc = hs_retired_counters(i, &view);
        if (oc)
            timed = unwind_frame((hs_region_hdr *)((char *)oc - ((hs_session_header *)view)->region_counters_off),
                                 oc, fr);
    }
    /* a frame entered without timing (no region, the sink, a full shadow
     * stack) was counted in hs_untimed_frames */
    if (!timed && hs_untimed_frames > 0)
        InterlockedDecrement64((volatile LONG64 *)&hs_untimed_frames);
    return ExceptionContinueSearch;
}

/* ---- reusing the region of a thread that is gone ---------------------------- */

/* Add everything region k counted to the overflow region, then clear k
 * for another thread. The thread that owned k has exited (nobody writes
 * k); called with layout_lock held. */
void hs_region_fold(uint32_t k)
{
    hs_session_header *h = g_hs.hdr;
    char *src = hs_session_region(g_hs.view, k);
    char *dst = hs_session_region(g_hs.view, h->max_threads);
    hs_region_hdr *sr = (hs_region_hdr *)src, *dr = (hs_region_hdr *)dst;
    uint32_t n = sr->committed_funcs < dr->committed_funcs ? sr->committed_funcs : dr->committed_funcs;
    uint64_t *sc = (uint64_t *)(src + h->region_counters_off), *dc = (uint64_t *)(dst + h->region_counters_off);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t c = *hs_fblock_at(h, sc, i);
        if (c)
            InterlockedAdd64((volatile LONG64 *)hs_fblock_at(h, dc, i), (LONG64)c);
    }
    if (h->options & HS_OPT_EDGES) {
        hs_edge_rec *se = (hs_edge_rec *)(src + h->region_edges_off);
        hs_edge_rec *de = (hs_edge_rec *)(dst + h->region_edges_off);
        AcquireSRWLockExclusive(&overflow_lock);
        for (uint32_t i = 0; i < n; i++) {
            const hs_fblock *b = (const hs_fblock *)hs_fblock_at(h, sc, i);
            for (int k = 0; k < HS_INLINE_EDGES; k++)
                if (b->edge[k].site && b->edge[k].count &&
                    edge_add(de, &dr->edges_used, b->edge[k].site, i, b->edge[k].count) < 0)
                    dr->edges_overflowed++;
        }
        for (uint32_t i = 0; i < h->region_edges_cap; i++)
            if (se[i].site && se[i].count && edge_add(de, &dr->edges_used, se[i].site, se[i].callee, se[i].count) < 0)
                dr->edges_overflowed++;
        ReleaseSRWLockExclusive(&overflow_lock);
        memset(se, 0, (size_t)h->region_edges_cap * sizeof *se);
    }
    if (h->options & HS_OPT_STACKS) {
        hs_stack_rec *ss = (hs_stack_rec *)(src + h->region_stacks_off);
        const uint64_t *pool = (const uint64_t *)(src + h->region_frames_off);
        for (uint32_t i = 0; i < h->region_stacks_cap; i++)
            if (ss[i].hash && stack_add(dr, ss[i].func, pool + ss[i].frames, ss[i].depth, ss[i].truncated,
                                        ss[i].count) < 0)
                dr->stacks_dropped += ss[i].count;
        memset(ss, 0, (size_t)h->region_stacks_cap * sizeof *ss);
        dr->stacks_dropped += sr->stacks_dropped;
    }
    if (h->options & HS_OPT_TIME) {
        hs_time_rec *st = (hs_time_rec *)(src + h->region_time_off);
        hs_time_rec *dt = (hs_time_rec *)(dst + h->region_time_off);
        for (uint32_t i = 0; i < n; i++) {
            if (!st[i].exits)
                continue;
            if (st[i].pending)
                st[i].hist[hist_bucket(st[i].pending)]++;
            if (!dt[i].exits || st[i].min < dt[i].min)
                dt[i].min = st[i].min;
            if (st[i].max > dt[i].max)
                dt[i].max = st[i].max;
            dt[i].exits += st[i].exits;
            dt[i].total += st[i].total;
            dt[i].self += st[i].self;
            dt[i].unwinds += st[i].unwinds;
            for (int b = 0; b < HS_HIST_BUCKETS; b++)
                dt[i].hist[b] += st[i].hist[b];
        }
        memset(st, 0, (size_t)sr->committed_funcs * sizeof *st);
        dr->time_dropped += sr->time_dropped;
    }
    memset(sc, 0, (size_t)sr->committed_funcs * h->region_fblock);
    if (h->options & HS_OPT_STACKS)
        memset(src + h->region_countdown_off, 0, (size_t)sr->committed_funcs * 4);
    dr->edges_overflowed += sr->edges_overflowed;
    sr->edges_used = 0;
    sr->edges_overflowed = 0;
    sr->stacks_used = 0;
    sr->frames_used = 0;
    sr->stacks_dropped = 0;
    sr->time_dropped = 0;
    sr->shadow_top = sr->shadow_base;
    InterlockedIncrement((volatile LONG *)&h->regions_reused);
}
