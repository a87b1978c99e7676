/*
 * agent/patch.c - put patches in and take them out, with the other
 * threads frozen.
 *
 * Install: every entry of a module is patched under one freeze, with one
 * protection change per executable section; a thread stopped strictly
 * inside a patched window (not at its first byte, which simply runs the
 * new jump) is moved to the same instruction in the trampoline.
 *
 * Remove: the saved original bytes go back under one freeze; a thread
 * stopped at the start of a relocated instruction in a trampoline is moved
 * back to the original instruction. Threads elsewhere in stubs or
 * trampolines just run on: those stay allocated (they end by jumping back
 * into the function), and are only freed once hs_quiesce has seen no
 * thread in them.
 */
#include <string.h>

#include "agent.h"
#include "freeze_win.h"

typedef struct move_ctx {
    const hs_hooked *hooks;
    size_t n;
    int install;
} move_ctx;

/* Last hook whose entry is <= addr, or NULL. */
static const hs_hooked *hook_before(const move_ctx *m, uint64_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->hooks[mid].entry <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &m->hooks[lo - 1] : NULL;
}

static uint64_t move_thread(void *ud, uint64_t rip)
{
    const move_ctx *m = ud;
    if (m->install) {
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
    for (size_t i = 0; i < m->n; i++) {
        const hs_hooked *h = &m->hooks[i];
        if (rip >= h->tramp && rip < h->tramp + h->tramp_off[h->plan.n_insns]) {
            int o = hs_tramp_to_orig(&h->plan, h->tramp_off, (int)(rip - h->tramp));
            return o < 0 ? 0 : h->entry + (uint64_t)o;
        }
    }
    return 0;
}

int hs_patch_module(hs_mod_state *m, int install)
{
    if (m->unloaded || m->n_hooks == 0) {
        m->hooked = install && !m->unloaded;
        return 0;
    }
    hs_freeze fz;
    int rc = 0;
    if (hs_freeze_all(&fz) < 0)
        return -1;
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
    move_ctx mc = { m->hooks, m->n_hooks, install };
    g_hs.hdr->threads_moved += (uint32_t)hs_freeze_move(&fz, move_thread, &mc);
    g_hs.hdr->freezes++;
    hs_thaw(&fz);
    if (rc == 0)
        m->hooked = install;
    return rc;
}

/* Is some frozen thread running in the arena or in the agent's image? */
static uint64_t busy_probe(void *ud, uint64_t rip)
{
    int *busy = ud;
    uint64_t self_lo = (uint64_t)(uintptr_t)g_hs.self;
    const IMAGE_DOS_HEADER *dos = (const IMAGE_DOS_HEADER *)g_hs.self;
    const IMAGE_NT_HEADERS64 *nt = (const IMAGE_NT_HEADERS64 *)((const char *)g_hs.self + dos->e_lfanew);
    uint64_t self_hi = self_lo + nt->OptionalHeader.SizeOfImage;
    if (hs_arena_contains(&g_hs.arena, rip) || (rip >= self_lo && rip < self_hi))
        (*busy)++;
    return 0;
}

int hs_quiesce(DWORD timeout_ms)
{
    DWORD start = GetTickCount();
    for (;;) {
        hs_freeze fz;
        int busy = 0;
        if (hs_freeze_all(&fz) < 0)
            return -1;
        hs_freeze_move(&fz, busy_probe, &busy);
        busy += g_hs.in_slow;
        /* a wrapper frame still on a stack returns into the agent's code */
        busy += hs_live_wrapper_frames() != 0;
        hs_thaw(&fz);
        if (!busy)
            return 0;
        if (GetTickCount() - start > timeout_ms)
            return -1;
        Sleep(1);
    }
}
