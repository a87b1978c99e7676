/*
 * agent/agent32.c - what the 32-bit (i686) agent has in place of the
 * x64-only files (agent.h: HS_AGENT_X86): the counting entry stubs of
 * hook/engine/count32.h (with caller edges when asked), entered from the
 * patched function and calling hs_probe_slow (thunks32.S) when the thread
 * has no counters yet, hs_probe_edge for a caller not yet counted,
 * hs_probe_stack every Nth call (the entry stack by the EBP chain); no
 * unwind info to register for them (x86 code has no table-driven
 * unwinding: a walker follows the EBP chain through the stubs, which
 * leave ebp alone); and the refusal of what it cannot do yet.
 */
#include <string.h>

#include "agent/agent.h"
#include "hook/unwind/ebpwalk.h"

size_t hs_stub_size_max(const hs_plan *plan)
{
    const uint32_t o = g_hs.hdr->options;
    return hs_stub32_size_max(plan, (o & HS_OPT_EDGES) != 0, (o & HS_OPT_STACKS) != 0);
}

size_t hs_stub_emit(uint8_t *buf, uint64_t addr, size_t cap, uint32_t fidx,
                    const hs_func_input *fn, const hs_plan *plan, const hs_insn *window, hs_hooked *out,
                    hs_skip_reason *why)
{
    const hs_session_header *h = g_hs.hdr;
    const int edges = (h->options & HS_OPT_EDGES) != 0, stacks = (h->options & HS_OPT_STACKS) != 0;
    const hs_count32 c = {
        .tls = g_hs.tls,
        .count_off = fidx * h->region_fblock,
        .fidx = fidx,
        .slow = (uint32_t)(uintptr_t)hs_probe_slow,
        .inline_edges = HS_INLINE_EDGES,
        .edges_cap = edges ? h->region_edges_cap : 0,
        .edges_rel = (uint32_t)(h->region_edges_off - h->region_counters_off),
        .edge_mix = hs_edge_mix(fidx),
        .edge_mult = HS_EDGE_MULT,
        .edge_slow = (uint32_t)(uintptr_t)hs_probe_edge,
        .stack_every = stacks ? (h->stack_every ? h->stack_every : 1) : 0,
        .countdown_rel = (uint32_t)(h->region_countdown_off - h->region_counters_off) + 4 * fidx,
        .stack_slow = (uint32_t)(uintptr_t)hs_probe_stack,
    };
    hs_stub32 st;
    size_t len = hs_stub32_emit(g_hs.engine, fn, plan, window, &c, (uint32_t)addr, buf, cap, &st, why);
    if (!len)
        return 0;
    out->entry = fn->addr;
    out->slot = addr;
    out->stub = addr + st.entry;
    out->tramp = addr + st.tramp;
    memcpy(out->tramp_off, st.tramp_off, sizeof out->tramp_off);
    out->fidx = fidx;
    out->plan = *plan;
    return len;
}

int hs_agent32_refuses(const hs_session_header *h)
{
    const uint32_t lacking = HS_OPT_TIME | HS_OPT_TIMELINE;
    if (!(h->options & lacking))
        return 0;
    hs_agent_fail(ERROR_NOT_SUPPORTED, "the 32-bit agent counts calls, caller edges and entry stacks only: "
                  "--time is not built for 32-bit targets yet");
    return -1;
}

/* ---- no unwind info for x86 stubs, no x64 stack walk or tail solving ---- */

size_t hs_unwind_space(size_t n_hooks)
{
    (void)n_hooks;
    return 0;
}

int hs_unwind_register(hs_mod_state *m, const hs_pe *pe, uint8_t *space, size_t size, uint64_t base)
{
    (void)m, (void)pe, (void)space, (void)size, (void)base;
    return 0;
}

void hs_unwind_unregister(hs_mod_state *m)
{
    (void)m;
}

/* The entry stack by the EBP chain (hook/unwind/ebpwalk.h: a caller
 * without a frame pointer hides its own caller). */
int hs_stackwalk(uint64_t *counters, uint64_t entry, uint64_t rsp, const hs_saved_regs *r, uint64_t *frames,
                 int max, int *truncated)
{
    (void)counters;
    return hs_ebp_walk((uint32_t)entry, (uint32_t)rsp, r->ebp, (uint32_t)hs_teb_read(HS_TEB_STACK_LIMIT),
                       (uint32_t)hs_teb_read(HS_TEB_STACK_BASE), frames, max, truncated);
}

void hs_stackwalk_forget(void)
{
}

int hs_tail_solve_module(hs_tail *t, uint64_t base)
{
    (void)t, (void)base;
    return 0;   /* only timed functions need it, and --time is refused */
}
