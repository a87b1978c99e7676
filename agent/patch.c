/*
 * agent/patch.c - put patches in and take them out, with the other
 * threads frozen (hook/suspend/threads_win.h).
 *
 * Install: every entry of the given modules is patched under one freeze,
 * with one protection change per executable section; a thread stopped
 * strictly inside a patched window (not at its first byte, which simply
 * runs the new jump) is moved to the same instruction in the trampoline.
 *
 * Remove: the saved original bytes go back under one freeze; a thread
 * stopped at the start of a relocated instruction in a trampoline is moved
 * back to the original instruction. Threads elsewhere in stubs or
 * trampolines just run on: those stay allocated (they end by jumping back
 * into the function), and are only freed once hs_quiesce has seen no
 * thread in them.
 *
 * A freeze that cannot stop every thread within its budget changes
 * nothing: the modules stay as they were, and the session says why.
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "hook/base/search.h"
#include "hook/suspend/threads_win.h"

#define FREEZE_BUDGET_MS 10000
#define QUIESCE_FREEZE_MIN_MS 1000

/* Has any patch ever gone in? (Until then no thread can be in a stub.) */
static int patched_once;

typedef struct hook_key {
    const hs_mod_state *m;
    uint64_t addr;
} hook_key;

static bool entry_at_or_below(const void *ctx, size_t i)
{
    const hook_key *k = ctx;
    return k->m->hooks[i].entry <= k->addr;
}

/* Last hook whose entry is <= addr, or NULL. */
static const hs_hooked *hook_before(const hs_mod_state *m, uint64_t addr)
{
    hook_key k = { m, addr };
    size_t lo = hs_partition_point(m->n_hooks, &k, entry_at_or_below);
    return lo ? &m->hooks[lo - 1] : NULL;
}

/* Where a thread stopped at `rip` must continue once module m's patches
 * are in (install) or out; 0: where it is. */
static uint64_t move_target(const hs_mod_state *m, uint64_t rip, int install)
{
    if (install) {
        const hs_hooked *h = hook_before(m, rip);
        if (!h)
            return 0;
        uint64_t off = rip - h->entry;
        if (off == 0 || off >= h->plan.window_len)
            return 0;
        int t = hs_orig_to_tramp(&h->plan, h->tramp_off, (int)off);
        return t < 0 ? 0 : h->tramp + (uint64_t)t;
    }
    /* trampolines are not sorted like the entries: scan (rarely reached:
     * only for a thread that is in the arena at all) */
    if (!hs_arena_contains(&g_hs.arena, rip))
        return 0;
    for (size_t i = 0; i < m->n_hooks; i++) {
        const hs_hooked *h = &m->hooks[i];
        if (rip >= h->tramp && rip < h->tramp + h->tramp_off[h->plan.n_insns]) {
            int o = hs_tramp_to_orig(&h->plan, h->tramp_off, (int)(rip - h->tramp));
            return o < 0 ? 0 : h->entry + (uint64_t)o;
        }
    }
    return 0;
}

/* Why the last freeze failed (one line). */
static char freeze_why[200];

/* Suspend every other thread, within the budget; the counts go into the
 * session. Returns the number held, or -1 (nothing held; freeze_why says
 * why). */
static int freeze(hs_suspend_set *s, DWORD budget_ms, int test_stuck)
{
    hs_session_header *h = g_hs.hdr;
    hs_suspend_opts o = { CONTEXT_CONTROL, budget_ms, NULL, NULL, test_stuck };
    int n = hs_suspend_all(s, GetCurrentProcess(), &o);
    h->freeze_rounds += s->stats.attempts;
    h->freeze_timeouts += s->stats.timeouts;
    h->freeze_ms_total += s->stats.ms;
    if (s->stats.ms > h->freeze_ms_max)
        h->freeze_ms_max = s->stats.ms;
    if (s->stats.stuck_tid)
        h->freeze_stuck_tid = s->stats.stuck_tid;
    if (n < 0) {
        h->freeze_failures++;
        if (s->why == HS_SUSPEND_TIMEOUT && s->stats.stuck_tid)
            snprintf(freeze_why, sizeof freeze_why, "could not stop the target's threads within %lu ms "
                     "(%u tries; thread %lu never stopped)", (unsigned long)budget_ms, s->stats.attempts,
                     (unsigned long)s->stats.stuck_tid);
        else
            snprintf(freeze_why, sizeof freeze_why, "could not stop the target's threads within %lu ms "
                     "(%u tries; %s, error 0x%x; the slowest call: %s (pass %u), %u ms)",
                     (unsigned long)budget_ms, s->stats.attempts, hs_suspend_status_name(s->why), s->stats.error,
                     hs_suspend_slowest_name(s->stats.slowest_what), s->stats.slowest_pass, s->stats.slowest_ms);
        SetLastError(ERROR_TIMEOUT);
    } else {
        g_hs.hdr->freezes++;
    }
    return n;
}

/* Write module m's patches (install) or its original bytes. 0 or -1. */
static int write_patches(const hs_mod_state *m, int install)
{
    int rc = 0;
    for (int s = 0; s < m->n_ranges; s++) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < m->n_hooks; i++) {
            const hs_hooked *h = &m->hooks[i];
            uint64_t p = h->entry + (int64_t)h->plan.patch_off;
            if (p >= m->range_lo[s] && p < m->range_hi[s]) {
                if (p < lo)
                    lo = p;
                if (p + h->plan.patch_len > hi)
                    hi = p + h->plan.patch_len;
            }
        }
        if (lo >= hi)
            continue;
        DWORD old;
        if (!VirtualProtect((void *)(uintptr_t)lo, hi - lo, PAGE_EXECUTE_READWRITE, &old)) {
            rc = -1;
            continue;
        }
        for (size_t i = 0; i < m->n_hooks; i++) {
            const hs_hooked *h = &m->hooks[i];
            uint64_t p = h->entry + (int64_t)h->plan.patch_off;
            if (p >= lo && p < hi)
                memcpy((void *)(uintptr_t)p, install ? h->patch : h->plan.orig, h->plan.patch_len);
        }
        DWORD ignored;
        VirtualProtect((void *)(uintptr_t)lo, hi - lo, old, &ignored);
        FlushInstructionCache(GetCurrentProcess(), (void *)(uintptr_t)lo, hi - lo);
    }
    return rc;
}

int hs_patch_modules(hs_mod_state *const *mods, size_t n, int install)
{
    size_t todo = 0;
    for (size_t k = 0; k < n; k++) {
        hs_mod_state *m = mods[k];
        if (m->unloaded || m->n_hooks == 0)
            m->hooked = install && !m->unloaded;
        else if (m->hooked != install)
            todo++;
    }
    if (!todo)
        return 0;
    /* (the tests of the failure path make the modules' install freeze fail) */
    int stuck = 0;
    for (size_t k = 0; k < n && install; k++)
        stuck |= (g_hs.hdr->options & HS_OPT_TEST_STUCK_FREEZE) && mods[k]->index != UINT32_MAX;
    hs_suspend_set fz;
    if (freeze(&fz, FREEZE_BUDGET_MS, stuck) < 0) {
        hs_agent_fail(ERROR_TIMEOUT, "%s", freeze_why);
        SetLastError(ERROR_TIMEOUT);
        return -1;
    }
    int rc = 0;
    for (size_t k = 0; k < n; k++) {
        hs_mod_state *m = mods[k];
        if (m->unloaded || m->n_hooks == 0 || m->hooked == install)
            continue;
        if (write_patches(m, install) < 0) {
            rc = -1;
            continue;
        }
        m->hooked = install;
        if (install)
            patched_once = 1;
    }
    for (size_t i = 0; i < fz.n; i++) {
        uint64_t rip = hs_context_ip(&fz.t[i].ctx);
        for (size_t k = 0; k < n; k++) {
            uint64_t to = mods[k]->unloaded ? 0 : move_target(mods[k], rip, install);
            if (to && to != rip) {
                if (hs_suspend_set_rip(&fz, i, to) == 0)
                    g_hs.hdr->threads_moved++;
                break;
            }
        }
    }
    hs_resume_all(&fz);
    if (rc < 0)
        SetLastError(ERROR_ACCESS_DENIED);
    return rc;
}

int hs_patch_module(hs_mod_state *m, int install)
{
    return hs_patch_modules(&m, 1, install);
}

int hs_own_code(uint64_t addr)
{
    uint64_t self_lo = (uint64_t)(uintptr_t)g_hs.self;
    return hs_arena_contains(&g_hs.arena, addr) || (addr >= self_lo && addr < self_lo + g_hs.self_size);
}

int hs_quiesce(DWORD timeout_ms)
{
    DWORD t0 = GetTickCount();
    LONG slow = 0;
    uint64_t frames = 0;
    DWORD tid = 0;
    for (;;) {
        /* a wrapper frame still on a stack returns into the agent's code */
        slow = g_hs.in_slow + hs_ending_busy() + hs_backtrace_busy();
        frames = hs_live_wrapper_frames();
        tid = 0;
        int frozen = 1;
        if (!slow && !frames && patched_once) {
            DWORD spent = GetTickCount() - t0;
            DWORD left = spent < timeout_ms ? timeout_ms - spent : 0;
            hs_suspend_set fz;
            frozen = freeze(&fz, left > QUIESCE_FREEZE_MIN_MS ? left : QUIESCE_FREEZE_MIN_MS, 0) >= 0;
            for (size_t i = 0; frozen && i < fz.n && !tid; i++)
                if (hs_own_code(hs_context_ip(&fz.t[i].ctx)))
                    tid = fz.t[i].tid;
            hs_resume_all(&fz);
        }
        if (!slow && !frames && !tid && frozen)
            return 0;
        if (GetTickCount() - t0 > timeout_ms)
            break;
        Sleep(1);
    }
    /* (timed calls still open are no failure: the agent stays for them) */
    if (!slow && !frames && !tid)
        hs_agent_fail(WAIT_TIMEOUT, "%s", freeze_why);
    else if (!frames)
        hs_agent_fail(WAIT_TIMEOUT, "threads still ran hookscope's code %lu ms after the hooks were taken "
                      "out (in its probes: %ld; thread %lu in a stub)",
                      (unsigned long)timeout_ms, (long)slow, (unsigned long)tid);
    return -1;
}
