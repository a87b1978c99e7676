/*
 * agent/detour.c - detours (see agent.h): a function of a loaded DLL whose
 * entry jumps to a C function of the agent, which calls the original
 * through a trampoline. Made with the hook engine (its analysis, its
 * trampoline, its patch), patched and taken out under one freeze by
 * patch.c, as the hooks are.
 */
#include <string.h>

#include "agent/agent.h"
#include "hook/pe/functions.h"

#define JMP_ABS_LEN 14   /* jmp [rip+0]; dq target */

int hs_detour_prepare(hs_detour *d)
{
    HMODULE m = GetModuleHandleW(d->module);
    if (!m)
        return -1;
    uint8_t *entry = (uint8_t *)(void *)GetProcAddress(m, d->name);
    uint64_t base = (uint64_t)(uintptr_t)m, size = hs_pe_mapped_size(m, NULL);
    if (!entry || (uint64_t)(uintptr_t)entry < base || (uint64_t)(uintptr_t)entry >= base + size)
        return -1;   /* not there, or forwarded elsewhere */
    hs_pe pe;
    if (hs_pe_open_mapped(&pe, m, size) != HS_PE_OK)
        return -1;
    hs_pe_func *funcs = NULL;
    size_t n = 0;
    int rc = -1;
    if (hs_pe_functions(&pe, &funcs, &n) < 0)
        goto out;
    uint32_t rva = (uint32_t)((uint64_t)(uintptr_t)entry - base);
    const hs_pe_func *f = NULL;
    for (size_t i = 0; i < n && !f; i++)
        if (funcs[i].rva == rva && !(funcs[i].src & HS_SRC_FRAGMENT))
            f = &funcs[i];
    if (!f)
        goto out;
    hs_func_input in = { entry, base + rva, f->size, f->gap_before, f->gap_after, base, base + size, NULL, NULL,
                         NULL, NULL };
    hs_plan plan;
    if (hs_analyze(g_hs.engine, &in, 0, &plan) != HS_OK)
        goto out;
    size_t need = JMP_ABS_LEN + 2 + plan.tramp_max;
    uint8_t *at = hs_arena_alloc(&g_hs.arena, base, base + size, (need + 15) & ~(size_t)15);
    if (!at)
        goto out;
    hs_arena_protect(&g_hs.arena, 1);
    /* the stub: an absolute jump to the replacement (the agent may be out
     * of rel32 reach of the module; in 32-bit code rel32 reaches all) */
    uint64_t target = (uint64_t)(uintptr_t)d->fn;
#if HS_AGENT_X86
    uint32_t rel = (uint32_t)target - (uint32_t)(uintptr_t)(at + 5);
    at[0] = 0xE9;
    memcpy(at + 1, &rel, 4);
#else
    at[0] = 0xFF;
    at[1] = 0x25;
    memset(at + 2, 0, 4);
    memcpy(at + 6, &target, 8);
#endif
    uint8_t *tramp = at + 16;
    hs_skip_reason why = HS_OK;
    hs_hooked *h = &d->hook;
    memset(h, 0, sizeof *h);
    size_t len = hs_emit_trampoline(g_hs.engine, &in, &plan, hs_analyze_window(g_hs.engine),
                                    (uint64_t)(uintptr_t)tramp, tramp, plan.tramp_max, h->tramp_off, &why);
    hs_arena_protect(&g_hs.arena, 0);
    if (!len)
        goto out;
    FlushInstructionCache(GetCurrentProcess(), at, need);
    h->entry = base + rva;
    h->stub = (uint64_t)(uintptr_t)at;
    h->tramp = (uint64_t)(uintptr_t)tramp;
    h->plan = plan;
    h->fidx = UINT32_MAX;
    if (hs_emit_patch(&in, &plan, h->stub, h->patch) < 0)
        goto out;
    memset(&d->ms, 0, sizeof d->ms);
    d->ms.index = UINT32_MAX;
    d->ms.base = base;
    d->ms.size = size;
    d->ms.hooks = h;
    d->ms.n_hooks = 1;
    d->ms.range_lo[0] = h->entry + (int64_t)plan.patch_off;
    d->ms.range_hi[0] = d->ms.range_lo[0] + plan.patch_len;
    d->ms.n_ranges = 1;
    *d->orig = tramp;
    d->ready = 1;
    rc = 0;
out:
    free(funcs);
    hs_pe_close(&pe);
    return rc;
}


int hs_detours_patch(hs_detour *const *list, size_t n, int install)
{
    hs_mod_state *ms[HS_DETOURS_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n && k < HS_DETOURS_MAX; i++)
        if (list[i]->ready && list[i]->patched != install)
            ms[k++] = &list[i]->ms;
    if (!k)
        return 0;
    if (hs_patch_modules(ms, k, install) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (list[i]->ready)
            list[i]->patched = install;
    return 0;
}
