/*
 * agent/stubs.c - the machine code each hooked function enters.
 *
 * The patched jump at a function's entry lands on its stub, with the
 * registers and the stack exactly as the caller left them. The stub finds
 * the thread's counters through a TLS slot read straight from the TEB,
 * counts the call, then (by the session's options) counts the caller edge,
 * captures the entry stack every Nth call, and either falls into the
 * trampoline or enters the timing wrapper (agent/wrapper.S).
 *
 * Count-only stub (preserves every register and the flags: jrcxz and lea
 * do not touch them):
 *
 *   slow:   mov rax,(16 << 32) | fidx              ; no region yet
 *           call [rip+p_slow]                       ; hs_probe_slow: rcx = counters or 0
 *           jrcxz done_nowrap                       ; counted in the overflow region
 *           jmp count
 *   stub:   push rcx; push rax
 *           mov rcx, gs:[TlsSlots+8*tls]
 *           jrcxz slow
 *   count:  mov rax,[rcx+8*fidx]; lea rax,[rax+1]; mov [rcx+8*fidx],rax
 *   done:   pop rax; pop rcx
 *   tramp:  relocated window; jmp back
 *
 * With edges, stacks or timing the stub also saves rdx and may change
 * the arithmetic flags, which the x64 calling convention does not keep
 * across a call (and so are dead at a function's entry):
 *
 *   count:  ...
 *   edges:  the return address (through the frames of timing wrappers when
 *           it is the wrapper's own: a tail call from a timed function);
 *           compare it with the three caller slots of
 *           the function's block (same cache line as the count), then
 *           probe the thread's (return address, fidx) table; a hit is
 *           counted in place, a new caller calls hs_probe_edge
 *   stacks: sub dword [countdown+4*fidx],1; jns done
 *           mov dword [countdown+4*fidx],N-1; call hs_probe_stack
 *   done:   pop rdx; pop rax; pop rcx
 *   wrap:   push rbp; push rbx; mov rbp,desc; mov rbx,gs:[TLS slot]
 *           jmp [rip+p_wrapper]                      (timed functions)
 *   tramp:  ...
 *
 * The thunks in thunks.S save everything the C code could change.
 */
#include <string.h>

#include "agent/agent.h"
#include "hook/engine/emit.h"

#define MAX_LABELS 16
#define MAX_FIXUPS 32

/* A tiny assembler: labels and rel8/rel32 fixups over hs_emit. */
typedef struct asm_ctx {
    hs_emit e;
    int64_t label[MAX_LABELS];     /* buffer offset, -1 unknown */
    struct { size_t at; int label; int size; } fix[MAX_FIXUPS];
    int nfix;
    int bad;
} asm_ctx;

enum { L_SLOW, L_STUB, L_COUNT, L_EDGE_PROBE, L_EDGE_MISS, L_EDGE_NEXT, L_EDGE_DONE,
       L_EDGE_SLOW, L_DONE, L_DONE_NOWRAP, L_TRAMP, L_EDGE_INLINE_NEXT, L_WR_LOOP, L_WR_BAIL,
       L_WR_HAVE, L_SLOW_JMP };

static void place(asm_ctx *a, int l) { a->label[l] = (int64_t)a->e.len; }

static void rel(asm_ctx *a, int l, int size)
{
    if (a->nfix == MAX_FIXUPS) {
        a->bad = 1;
        return;
    }
    a->fix[a->nfix].at = a->e.len;
    a->fix[a->nfix].label = l;
    a->fix[a->nfix].size = size;
    a->nfix++;
    if (size == 1)
        hs_emit_u8(&a->e, 0);
    else
        hs_emit_u32(&a->e, 0);
}

static void op(asm_ctx *a, const void *bytes, size_t n) { hs_emit_bytes(&a->e, bytes, n); }

#define OP(a, ...) do { const uint8_t b_[] = { __VA_ARGS__ }; op((a), b_, sizeof b_); } while (0)

static void jrcxz(asm_ctx *a, int l) { OP(a, 0xE3); rel(a, l, 1); }
static void jmp32(asm_ctx *a, int l) { OP(a, 0xE9); rel(a, l, 4); }
static void jcc32(asm_ctx *a, int cc, int l) { OP(a, 0x0F, (uint8_t)(0x80 | cc)); rel(a, l, 4); }

/* call [rip + pointer slot k]; the slots follow the trampoline */
static void call_ptr(asm_ctx *a, int k, size_t *slot_fix)
{
    OP(a, 0xFF, 0x15);
    slot_fix[k] = a->e.len;
    hs_emit_u32(&a->e, 0);
}

/* L_EDGE_INLINE_NEXT is reused for each inline slot: resolve the fixups
 * that refer to it now, so the label can be placed again. */
static void fix_inline_next(asm_ctx *a)
{
    int64_t target = a->label[L_EDGE_INLINE_NEXT];
    for (int i = 0; i < a->nfix; i++) {
        if (a->fix[i].label != L_EDGE_INLINE_NEXT || a->fix[i].size != 4)
            continue;
        int32_t d = (int32_t)(target - (int64_t)(a->fix[i].at + 4));
        memcpy(a->e.buf + a->fix[i].at, &d, 4);
        a->fix[i].label = -1;   /* done */
    }
}

static int resolve(asm_ctx *a)
{
    if (a->bad || a->e.overflow)
        return -1;
    for (int i = 0; i < a->nfix; i++) {
        if (a->fix[i].label < 0)
            continue;   /* resolved early */
        int64_t target = a->label[a->fix[i].label];
        if (target < 0)
            return -1;
        int64_t d = target - (int64_t)(a->fix[i].at + (size_t)a->fix[i].size);
        if (a->fix[i].size == 1) {
            if (d < -128 || d > 127)
                return -1;
            a->e.buf[a->fix[i].at] = (uint8_t)(int8_t)d;
        } else {
            int32_t d32 = (int32_t)d;
            memcpy(a->e.buf + a->fix[i].at, &d32, 4);
        }
    }
    return 0;
}

/* The largest stub (edges, stacks and timing, an expansion TLS slot):
 * slow block 30, entry 23, count 18, edges 263 (the caller through
 * wrapper frames, three caller slots, then the hash table), stacks 40,
 * pops 3, wrapper entry and the no-region path 42, alignment 7, six
 * pointers 48: 474 bytes, then the trampoline. */
size_t hs_stub_size_max(const hs_plan *plan)
{
    return 480 + plan->tramp_max;
}

/* mov rax, (pushed << 32) | fidx: the thunks' argument (thunks.S) */
static void thunk_arg(asm_ctx *a, uint32_t fidx, uint8_t pushed)
{
    hs_emit_mov_reg_imm64(&a->e, HS_RAX, (uint64_t)pushed << 32 | fidx);
}

enum { P_SLOW, P_EDGE, P_STACK, P_WRAPPER, P_WRAPPER_RET, P_WRAPPER_RET2, P__COUNT };

size_t hs_stub_emit(uint8_t *buf, uint64_t addr, size_t cap, uint32_t fidx,
                    const hs_func_input *fn, const hs_plan *plan, const hs_insn *window, hs_hooked *out,
                    hs_skip_reason *why)
{
    const hs_session_header *h = g_hs.hdr;
    const int edges = (h->options & HS_OPT_EDGES) != 0;
    const int stacks = (h->options & HS_OPT_STACKS) != 0;
    const int wrapped = out->desc != 0;
    const int plain = !edges && !stacks && !wrapped;
    const uint8_t pushed = plain ? 16 : 24;           /* bytes the stub pushed */
    const DWORD tls = g_hs.tls;
    const uint32_t cdisp = fidx * h->region_fblock;          /* the function's block */
    /* the region's parts, relative to the counters the TLS slot points at */
    const int32_t edges_rel = (int32_t)(h->region_edges_off - h->region_counters_off);
    const int32_t cd_rel = (int32_t)(h->region_countdown_off - h->region_counters_off) + (int32_t)(fidx * 4u);
    size_t slot_fix[P__COUNT] = { 0 };

    asm_ctx a;
    a.nfix = 0;   /* (the fixups are not cleared: only the first nfix are read) */
    a.bad = 0;
    for (int i = 0; i < MAX_LABELS; i++)
        a.label[i] = -1;
    hs_emit_init(&a.e, buf, cap, addr);

    /* slow: the thread has no region yet (placed before the entry so that
     * the flag-free jrcxz reaches it) */
    place(&a, L_SLOW);
    thunk_arg(&a, fidx, pushed);
    call_ptr(&a, P_SLOW, slot_fix);
    if (plain) {
        jrcxz(&a, L_DONE_NOWRAP);                       /* flags untouched */
    } else {
        OP(&a, 0x48, 0x85, 0xC9);                       /* test rcx,rcx */
        jcc32(&a, HS_CC_E, L_DONE_NOWRAP);
    }
    place(&a, L_SLOW_JMP);
    jmp32(&a, L_COUNT);

    /* stub: */
    place(&a, L_STUB);
    OP(&a, 0x51, 0x50);                                 /* push rcx; push rax */
    if (!plain)
        OP(&a, 0x52);                                   /* push rdx */
    if (tls < 64) {
        OP(&a, 0x65, 0x48, 0x8B, 0x0C, 0x25);           /* mov rcx, gs:[disp32] */
        hs_emit_u32(&a.e, HS_TEB_TLS_SLOTS + tls * 8);
        jrcxz(&a, L_SLOW);
    } else {
        OP(&a, 0x65, 0x48, 0x8B, 0x0C, 0x25);
        hs_emit_u32(&a.e, HS_TEB_TLS_EXPANSION);
        jrcxz(&a, L_SLOW);
        OP(&a, 0x48, 0x8B, 0x89);                       /* mov rcx,[rcx+disp32] */
        hs_emit_u32(&a.e, (tls - 64) * 8);
        jrcxz(&a, L_SLOW);
    }

    /* count: */
    place(&a, L_COUNT);
    OP(&a, 0x48, 0x8B, 0x81);                           /* mov rax,[rcx+disp32] */
    hs_emit_u32(&a.e, cdisp);
    OP(&a, 0x48, 0x8D, 0x40, 0x01);                     /* lea rax,[rax+1] */
    OP(&a, 0x48, 0x89, 0x81);                           /* mov [rcx+disp32],rax */
    hs_emit_u32(&a.e, cdisp);

    if (edges) {
        uint32_t bits = 0;
        while ((1u << bits) < h->region_edges_cap)
            bits++;
        OP(&a, 0x48, 0x8B, 0x44, 0x24, pushed);         /* mov rax,[rsp+pushed]: return address */
        if (h->options & HS_OPT_TIME) {
            /* tail-called by a timed function: the caller is the one the
             * wrapper's frame returns to (rbp is that frame: the function
             * restored it before its tail jump); if that wrapper's function
             * was itself reached by a tail jump from a timed one, the next
             * frame out (its saved rbp) holds it, and so on. A frame outside
             * the thread's stack ends the walk with no caller. */
            OP(&a, 0x48, 0x3B, 0x05);                   /* cmp rax,[rip+p_wrapper_ret] */
            slot_fix[P_WRAPPER_RET] = a.e.len;
            hs_emit_u32(&a.e, 0);
            jcc32(&a, HS_CC_NE, L_WR_HAVE);
            OP(&a, 0x48, 0x89, 0xEA);                   /* mov rdx,rbp */
            place(&a, L_WR_LOOP);
            OP(&a, 0x65, 0x48, 0x3B, 0x14, 0x25, 0x10, 0x00, 0x00, 0x00); /* cmp rdx,gs:[0x10] StackLimit */
            jcc32(&a, HS_CC_B, L_WR_BAIL);
            OP(&a, 0x65, 0x48, 0x3B, 0x14, 0x25, 0x08, 0x00, 0x00, 0x00); /* cmp rdx,gs:[0x8] StackBase */
            jcc32(&a, HS_CC_AE, L_WR_BAIL);
            OP(&a, 0x48, 0x8B, 0x42, 0x28);             /* mov rax,[rdx+40]: its return address */
            OP(&a, 0x48, 0x8B, 0x52, 0x20);             /* mov rdx,[rdx+32]: its caller's rbp */
            OP(&a, 0x48, 0x3B, 0x05);                   /* cmp rax,[rip+p_wrapper_ret] */
            slot_fix[P_WRAPPER_RET2] = a.e.len;
            hs_emit_u32(&a.e, 0);
            jcc32(&a, HS_CC_E, L_WR_LOOP);
            jmp32(&a, L_WR_HAVE);
            place(&a, L_WR_BAIL);
            OP(&a, 0x31, 0xC0);                         /* xor eax,eax */
            place(&a, L_WR_HAVE);
        }
        OP(&a, 0x48, 0x85, 0xC0);                       /* test rax,rax: 0 when entered as a */
        jcc32(&a, HS_CC_E, L_EDGE_DONE);                /* thread start (0 marks empty slots) */
        /* the block's three caller slots first: the same cache line */
        for (int k = 0; k < HS_INLINE_EDGES; k++) {
            OP(&a, 0x48, 0x3B, 0x81);                   /* cmp rax,[rcx+block+8+16k] */
            hs_emit_u32(&a.e, cdisp + 8 + 16 * (uint32_t)k);
            jcc32(&a, HS_CC_NE, L_EDGE_INLINE_NEXT);
            OP(&a, 0x48, 0xFF, 0x81);                   /* inc qword [rcx+block+16+16k] */
            hs_emit_u32(&a.e, cdisp + 16 + 16 * (uint32_t)k);
            jmp32(&a, L_EDGE_DONE);
            place(&a, L_EDGE_INLINE_NEXT);
            fix_inline_next(&a);
        }
        OP(&a, 0x48, 0x89, 0xC2);                       /* mov rdx,rax */
        OP(&a, 0x48, 0x81, 0xF2);                       /* xor rdx,imm32 */
        hs_emit_u32(&a.e, hs_edge_mix(fidx));
        OP(&a, 0x48, 0x69, 0xD2);                       /* imul rdx,rdx,imm32 */
        hs_emit_u32(&a.e, HS_EDGE_MULT);
        OP(&a, 0x48, 0xC1, 0xEA, (uint8_t)(64 - bits)); /* shr rdx,64-bits */
        OP(&a, 0x48, 0xC1, 0xE2, 0x05);                 /* shl rdx,5 */
        place(&a, L_EDGE_PROBE);
        OP(&a, 0x48, 0x3B, 0x84, 0x11);                 /* cmp rax,[rcx+rdx+edges] */
        hs_emit_u32(&a.e, (uint32_t)edges_rel);
        jcc32(&a, HS_CC_NE, L_EDGE_MISS);
        OP(&a, 0x81, 0xBC, 0x11);                       /* cmp dword [rcx+rdx+edges+8],fidx */
        hs_emit_u32(&a.e, (uint32_t)(edges_rel + 8));
        hs_emit_u32(&a.e, fidx);
        jcc32(&a, HS_CC_NE, L_EDGE_NEXT);
        OP(&a, 0x48, 0xFF, 0x84, 0x11);                 /* inc qword [rcx+rdx+edges+16] */
        hs_emit_u32(&a.e, (uint32_t)(edges_rel + 16));
        jmp32(&a, L_EDGE_DONE);
        place(&a, L_EDGE_MISS);
        OP(&a, 0x48, 0x83, 0xBC, 0x11);                 /* cmp qword [rcx+rdx+edges],0 */
        hs_emit_u32(&a.e, (uint32_t)edges_rel);
        OP(&a, 0x00);
        jcc32(&a, HS_CC_E, L_EDGE_SLOW);
        place(&a, L_EDGE_NEXT);
        OP(&a, 0x48, 0x83, 0xC2, 0x20);                 /* add rdx,32 */
        OP(&a, 0x48, 0x81, 0xE2);                       /* and rdx,imm32 */
        hs_emit_u32(&a.e, h->region_edges_cap * 32u - 1u);
        jmp32(&a, L_EDGE_PROBE);
        place(&a, L_EDGE_SLOW);                          /* a new (site, callee): C inserts it */
        thunk_arg(&a, fidx, pushed);
        call_ptr(&a, P_EDGE, slot_fix);
        place(&a, L_EDGE_DONE);
        /* the jumps here stay inside the body's unwind range: a jump to its
         * very end would read as an epilogue's tail call to a stack walker */
        if (!stacks)
            OP(&a, 0x90);
    }

    if (stacks) {
        OP(&a, 0x83, 0xA9);                             /* sub dword [rcx+cd],1 */
        hs_emit_u32(&a.e, (uint32_t)cd_rel);
        OP(&a, 0x01);
        jcc32(&a, HS_CC_NS, L_DONE);
        OP(&a, 0xC7, 0x81);                             /* mov dword [rcx+cd],every-1 */
        hs_emit_u32(&a.e, (uint32_t)cd_rel);
        hs_emit_u32(&a.e, (h->stack_every ? h->stack_every : 1) - 1);
        thunk_arg(&a, fidx, pushed);
        call_ptr(&a, P_STACK, slot_fix);
        /* its return address stays inside the body's unwind range: one at
         * its end would be in the undescribed pops, which only a walker
         * that runs code forward can unwind */
        OP(&a, 0x90);
    }

    /* done: */
    place(&a, L_DONE);
    if (!plain)
        OP(&a, 0x5A);                                   /* pop rdx */
    OP(&a, 0x58, 0x59);                                 /* pop rax; pop rcx */
    if (wrapped) {
        OP(&a, 0x55, 0x53);                             /* push rbp; push rbx */
        hs_emit_mov_reg_imm64(&a.e, HS_RBP, out->desc); /* mov rbp,desc */
        OP(&a, 0x65, 0x48, 0x8B, 0x1C, 0x25);           /* mov rbx, gs:[disp32]: counters */
        if (tls < 64) {
            hs_emit_u32(&a.e, HS_TEB_TLS_SLOTS + tls * 8);
        } else {
            hs_emit_u32(&a.e, HS_TEB_TLS_EXPANSION);
            OP(&a, 0x48, 0x8B, 0x9B);                   /* mov rbx,[rbx+disp32] */
            hs_emit_u32(&a.e, (tls - 64) * 8);
        }
        OP(&a, 0xFF, 0x25);                             /* jmp [rip+p_wrapper] */
        slot_fix[P_WRAPPER] = a.e.len;
        hs_emit_u32(&a.e, 0);
        /* done_nowrap: no region for this thread: run the function untimed */
        place(&a, L_DONE_NOWRAP);
        OP(&a, 0x5A, 0x58, 0x59);                       /* pop rdx; pop rax; pop rcx */
        jmp32(&a, L_TRAMP);
    } else {
        a.label[L_DONE_NOWRAP] = a.label[L_DONE];
    }

    /* tramp: */
    place(&a, L_TRAMP);
    if (a.e.overflow || resolve(&a) < 0) {
        *why = HS_SKIP_NO_ARENA;
        return 0;
    }
    uint64_t tramp = hs_emit_pc(&a.e);
    size_t tlen = hs_emit_trampoline(g_hs.engine, fn, plan, window, tramp, buf + a.e.len, cap - a.e.len,
                                     out->tramp_off, why);
    if (tlen == 0)
        return 0;
    a.e.len += tlen;

    /* pointers to the agent's thunks (the agent may be farther than 2 GB) */
    while (a.e.len & 7)
        hs_emit_u8(&a.e, 0xCC);
    const uint64_t targets[P__COUNT] = {
        (uint64_t)(uintptr_t)hs_probe_slow, (uint64_t)(uintptr_t)hs_probe_edge,
        (uint64_t)(uintptr_t)hs_probe_stack, (uint64_t)(uintptr_t)hs_wrapper,
        (uint64_t)(uintptr_t)hs_wrapper_ret, (uint64_t)(uintptr_t)hs_wrapper_ret,
    };
    for (int k = 0; k < P__COUNT; k++) {
        uint64_t at = hs_emit_pc(&a.e);
        hs_emit_u64(&a.e, targets[k]);
        if (slot_fix[k]) {
            int32_t d = (int32_t)(at - (addr + slot_fix[k] + 4));
            memcpy(buf + slot_fix[k], &d, 4);
        }
    }
    if (a.e.overflow) {
        *why = HS_SKIP_NO_ARENA;
        return 0;
    }
    out->entry = fn->addr;
    out->slot = addr;
    out->slow_jmp = addr + (uint64_t)a.label[L_SLOW_JMP];
    out->done = addr + (uint64_t)a.label[L_DONE];
    out->pushed = pushed;
    out->stub = addr + (uint64_t)a.label[L_STUB];
    out->tramp = tramp;
    out->fidx = fidx;
    out->plan = *plan;
    return a.e.len;
}
