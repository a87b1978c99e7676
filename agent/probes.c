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

#include "agent/agent.h"
#include "hook/suspend/threads_win.h"
#if HS_AGENT_X86
#include "hook/unwind/retshadow.h"
#endif

/* Read by wrapper.S. */
uint64_t hs_tsc_ns_mult;      /* ns = ticks * mult >> 32 */
volatile int64_t hs_untimed_frames; /* wrapper frames not on a shadow stack */

/* wrapper.S, time32.S (time_layout.inc) and the stubs hard-code these layouts */
_Static_assert(offsetof(hs_region_hdr, shadow_base) == 40, "shadow_base");
_Static_assert(offsetof(hs_region_hdr, shadow_top) == 48, "shadow_top");
_Static_assert(offsetof(hs_region_hdr, shadow_limit) == 56, "shadow_limit");
_Static_assert(offsetof(hs_region_hdr, time_dropped) == 64, "time_dropped");
_Static_assert(offsetof(hs_region_hdr, excluded) == 72, "excluded");
_Static_assert(sizeof(hs_shadow_rec) == 64, "shadow rec");
_Static_assert(offsetof(hs_shadow_rec, func) == 48, "shadow func");
_Static_assert(offsetof(hs_shadow_rec, excluded) == 56, "shadow excluded");
_Static_assert(offsetof(hs_region_hdr, stack_ticks) == 80, "stack_ticks");
_Static_assert(offsetof(hs_time_rec, unwinds) == 40, "time unwinds");
_Static_assert(offsetof(hs_time_rec, pending) == 48, "time pending");
_Static_assert(offsetof(hs_time_rec, active) == 56, "time active");
_Static_assert(offsetof(hs_time_rec, sum) == 64, "time sum");
_Static_assert(offsetof(hs_time_rec, hist) == 72, "time hist");
_Static_assert(offsetof(hs_wrap_desc, nslots) == 20, "desc");
_Static_assert(sizeof(hs_edge_rec) == 32, "edge rec");
_Static_assert(sizeof(hs_region_hdr) <= HS_REGION_AGENT_OFF, "region header");
_Static_assert(offsetof(hs_region_hdr, tl_base) == 88, "tl_base");
_Static_assert(offsetof(hs_region_hdr, tl_cap) == 96, "tl_cap");
_Static_assert(offsetof(hs_region_hdr, tl_head) == 104, "tl_head");
_Static_assert(offsetof(hs_region_hdr, tl_dropped) == 112, "tl_dropped");
_Static_assert(offsetof(hs_region_hdr, tl_drop_first) == 120, "tl_drop_first");
_Static_assert(offsetof(hs_region_hdr, tl_drop_last) == 128, "tl_drop_last");
_Static_assert(offsetof(hs_region_hdr, tl_tail) == 192, "tl_tail");
_Static_assert(offsetof(hs_region_hdr, tl_min_ticks) == 136, "tl_min_ticks");
_Static_assert(offsetof(hs_region_hdr, tl_depths) == 144, "tl_depths");
_Static_assert(offsetof(hs_region_hdr, tl_filtered) == 152, "tl_filtered");
_Static_assert(offsetof(hs_region_hdr, tl_wait_limit) == 160, "tl_wait_limit");
_Static_assert(sizeof(hs_tl_event) == 32, "timeline event");
_Static_assert(offsetof(hs_shadow_rec, t1) == 32, "shadow t1");
_Static_assert(offsetof(hs_shadow_rec, ret) == 40, "shadow ret");

/* Is this thread one that hookscope.exe or the agent started in the
 * target? Its calls (the exe's TLS callbacks run on it before its start
 * routine) would not happen untraced. */
int hs_hookscope_thread(void)
{
    uint32_t tid = (uint32_t)hs_teb_read(HS_TEB_THREAD_ID);
    for (int i = 0; i < 16; i++)
        if (g_hs.hdr->injector_tids[i] == tid)
            return 1;
    return hs_suspend_is_worker(tid);   /* the agent's own */
}

/* The caller's return address for an edge: a function tail-called by a
 * timed one sees the wrapper's return address; its real caller is the
 * wrapped function's, in the wrapper's frame (rbp is still the wrapper's),
 * or, when that function was itself tail-called by a timed one, further
 * out (as the stubs do). 0 when the frames leave the thread's stack. (The
 * 32-bit agent has no wrapper: the return address is the caller, or the
 * return thunk of the timed call that tail-jumped here.) */
static uint64_t call_site(uint64_t *counters, uint64_t entry_rsp, const hs_saved_regs *regs)
{
    uint64_t site = *(uintptr_t *)(uintptr_t)entry_rsp;
#if HS_AGENT_X86
    /* a timed function's tail jump: its slot holds the return thunk */
    hs_ret_shadow shadow;
    (void)regs;
    hs_time32_shadow(counters, &shadow);
    site = hs_ret_shadow_true(&shadow, (uint32_t)entry_rsp, (uint32_t)site);
#else
    (void)counters;
    uint64_t frame = regs->rbp;
    const uint64_t lo = hs_teb_read(HS_TEB_STACK_LIMIT), hi = hs_teb_read(HS_TEB_STACK_BASE);
    while (site == (uint64_t)(uintptr_t)hs_wrapper_ret) {
        if (frame < lo || frame + 48 > hi)
            return 0;
        site = *(uint64_t *)(frame + 40);
        frame = *(uint64_t *)(frame + 32);
    }
#endif
    return site;
}

uint64_t *hs_on_slow(uint32_t fidx, uint64_t entry_rsp, const hs_saved_regs *regs)
{
    InterlockedIncrement(&g_hs.in_slow);
    hs_tls_set(g_hs.sink);
    if (hs_hookscope_thread()) {
        InterlockedDecrement(&g_hs.in_slow);
        return g_hs.sink;   /* counts go to the sink from now on */
    }
    uint64_t t0 = hs_rdtsc();
    uint64_t *c = hs_region_acquire();
    if (!c)
        hs_overflow_count(fidx, call_site(NULL, entry_rsp, regs), 1);
    hs_thread_cost(HS_THREAD_REGION, t0);
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
    uint64_t site = call_site(c, entry_rsp, regs);
    hs_region_hdr *r = hs_region_of(c);
    hs_fblock *b = (hs_fblock *)hs_fblock_at(g_hs.hdr, c, fidx);
    /* (a free caller slot in the function's block: the stub found no slot
     * with this site) */
    if ((!site || !hs_inline_edge_add(b, site, 1)) &&
        hs_edge_add(hs_edges_of(c), &r->edges_used, hs_edges_listed_of(c), site, fidx, 1) < 0) {
        r->edges_overflowed++;
        hs_overflow_count(fidx, site, 0);
    }
    hs_tls_set(c);
    InterlockedDecrement(&g_hs.in_slow);
    return c;
}

/* ---- entry stacks ---------------------------------------------------------- */

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
    int n = hs_stackwalk(c, entry, entry_rsp, regs, frames, max, &truncated);

    hs_region_hdr *r = hs_region_of(c);
    if (hs_stack_add(r, fidx, frames, n, truncated, 1) < 0)
        r->stacks_dropped++;
    hs_tls_set(c);
    InterlockedDecrement(&g_hs.in_slow);
    return c;
}

/* ---- --timeline: a full ring ------------------------------------------------- */

/* --timeline: the events the injector has taken from region r's ring.
 * It stores tl_tail as one 64-bit value; the 32-bit agent reads that in
 * two halves and might see it half written, so it reads the low half
 * alone and widens it from the head (written by this thread only), as
 * head - tail never exceeds the ring's size (below 2^32). */
static uint64_t tl_tail(const hs_region_hdr *r)
{
#if HS_AGENT_X86
    const uint32_t lo = *(volatile const uint32_t *)&r->tl_tail;
    return r->tl_head - (uint32_t)((uint32_t)r->tl_head - lo);
#else
    return *(volatile const uint64_t *)&r->tl_tail;
#endif
}

/* --timeline: region r's ring is full (the injector has not taken its
 * events yet). Wait for room, up to --timeline-wait (as the agent read it
 * at its start; the region's tl_wait_limit only says to wait), in steps
 * of a millisecond (the injector takes events every 2 ms), unless the last
 * wait gave up and the injector has taken nothing since (its drain
 * stopped or stuck: one wait, not one a call), or the injector no longer
 * takes events (timeline_wait_ms 0). The ticks waited are counted and
 * added to the thread's `excluded`, so the durations of the calls open
 * around this one leave them out (its own is counted already). LastError
 * is kept. Returns 1 when the ring has room. Called by the timing wrapper
 * (wrapper.S, which keeps the registers a caller may still use) and by
 * its unwind handler; on 32-bit targets by the return probes (time32.S). */
int hs_timeline_room(hs_region_hdr *r)
{
    if (!r->tl_wait_limit || !g_hs.hdr->timeline_wait_ms || (r->tl_wait_stuck && r->tl_wait_stuck == tl_tail(r) + 1))
        return 0;
    DWORD err = GetLastError();
    uint64_t t0 = hs_rdtsc();
    int room;
    r->tl_waits++;
    while (!(room = r->tl_head - tl_tail(r) < r->tl_cap)) {
        if (hs_rdtsc() - t0 >= g_hs.tl_wait_ticks || !g_hs.hdr->timeline_wait_ms) {
            r->tl_wait_stuck = tl_tail(r) + 1;
            break;
        }
        Sleep(1);
    }
    uint64_t waited = hs_rdtsc() - t0;
    r->tl_wait_ticks += waited;
    r->excluded += waited;
    SetLastError(err);
    return room;
}

/* ---- the wrapper's unwind handler -------------------------------------------- */

/* (x64 only: the timing wrapper, wrapper.S, needs the x64 unwind data) */
#if !HS_AGENT_X86

/* --timeline: the call of shadow record s, which ended at t1 after `ticks`
 * of its own, into region r's ring (as wrapper.S writes it), or counted
 * dropped when the ring is full and stays full (hs_timeline_room), or
 * filtered (too short, too deep). */
static void timeline_event(hs_region_hdr *r, const hs_shadow_rec *s, uint64_t t1, uint64_t ticks)
{
    if (!r->tl_base)
        return;
    uint32_t depth = (uint32_t)(s - (const hs_shadow_rec *)(uintptr_t)r->shadow_base);
    if (ticks < r->tl_min_ticks || depth >= r->tl_depths) {
        r->tl_filtered++;
        return;
    }
    if (r->tl_head - r->tl_tail >= r->tl_cap && !hs_timeline_room(r)) {
        if (r->tl_dropped++ == 0 || s->t0 < r->tl_drop_first)
            r->tl_drop_first = s->t0;
        if (t1 > r->tl_drop_last)
            r->tl_drop_last = t1;
        return;
    }
    hs_tl_event *e = (hs_tl_event *)(uintptr_t)r->tl_base + (r->tl_head & (r->tl_cap - 1));
    e->t0 = s->t0;
    e->t1 = t1;
    e->ticks = ticks;
    e->func = s->func;
    e->depth = depth;
    hs_tl_head_advance(&r->tl_head);
}

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
            uint64_t t1 = hs_rdtsc();
            uint64_t dt = t1 - s->t0 - (r->excluded - s->excluded);
            timeline_event(r, s, t1, dt);
            /* records above were left by a longjmp that did not unwind */
            for (hs_shadow_rec *a = s + 1; a < top; a++)
                ((hs_time_rec *)((char *)c + ((const hs_wrap_desc *)(uintptr_t)a->desc)->time_rel))->active--;
            const hs_wrap_desc *d = (const hs_wrap_desc *)(uintptr_t)s->desc;
            hs_time_rec *t = (hs_time_rec *)((char *)c + d->time_rel);
            t->exits++;
            t->unwinds++;
            t->sum += dt;
            if (--t->active == 0)
                t->total += dt;
            t->self += dt - s->child;
            if (dt > t->max)
                t->max = dt;
            if (t->min == 0 || dt < t->min)
                t->min = dt;
            t->hist[hs_hist_bucket(dt, hs_tsc_ns_mult)]++;
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
    int timed = unwind_frame(c && c != g_hs.sink ? hs_region_of(c) : NULL, c, fr);
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
#endif
