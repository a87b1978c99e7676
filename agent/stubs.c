/*
 * agent/stubs.c - the machine code each hooked function enters.
 *
 * Count stub, entered by the patched jump at the function's entry
 * (registers and stack exactly as the caller left them):
 *
 *   slow:   push  <fidx>                 ; the thread has no region yet
 *           call  [rip+slow_ptr]         ; hs_probe_slow: rcx = counters or 0
 *           lea   rsp, [rsp+8]
 *           jrcxz done                   ; counted in the overflow region
 *           jmp   count
 *   stub:   push  rcx
 *           push  rax
 *           mov   rcx, gs:[TlsSlots+8*tls]   ; this thread's counters
 *           jrcxz slow
 *   count:  mov   rax, [rcx+8*fidx]
 *           lea   rax, [rax+1]
 *           mov   [rcx+8*fidx], rax
 *   done:   pop   rax
 *           pop   rcx
 *   tramp:  <relocated window> ; jmp back into the function
 *   slow_ptr: dq hs_probe_slow
 *
 * Registers and flags are all preserved (jrcxz and lea do not touch the
 * flags); the counter is per thread, so a plain increment is exact.
 */
#include <string.h>

#include "agent.h"
#include "emit.h"

#define STUB_HEAD_MAX 64

size_t hs_stub_size_max(const hs_plan *plan)
{
    return STUB_HEAD_MAX + plan->tramp_max + 16;
}

/* mov rcx, gs:[disp32] */
static void emit_mov_rcx_gs(hs_emit *e, uint32_t disp)
{
    static const uint8_t op[5] = { 0x65, 0x48, 0x8B, 0x0C, 0x25 };
    hs_emit_bytes(e, op, sizeof op);
    hs_emit_u32(e, disp);
}

static void emit_jrcxz_to(hs_emit *e, uint64_t target)
{
    int64_t d = (int64_t)(target - (hs_emit_pc(e) + 2));
    hs_emit_u8(e, 0xE3);
    hs_emit_u8(e, (uint8_t)(int8_t)d);
}

static void emit_jmp8_to(hs_emit *e, uint64_t target)
{
    int64_t d = (int64_t)(target - (hs_emit_pc(e) + 2));
    hs_emit_u8(e, 0xEB);
    hs_emit_u8(e, (uint8_t)(int8_t)d);
}

size_t hs_stub_emit(uint8_t *buf, uint64_t addr, size_t cap, uint32_t fidx,
                    const hs_func_input *fn, const hs_plan *plan, hs_hooked *out,
                    hs_skip_reason *why)
{
    hs_emit e;
    hs_emit_init(&e, buf, cap, addr);
    const uint32_t disp = fidx * 8u;
    const DWORD tls = g_hs.tls;

    /* Lay out the fixed-size head first: the offsets do not depend on
     * the trampoline, so the slow block can refer forward to them. */
    const size_t slow_len = 5 + 6 + 5 + 2 + 2;      /* push, call, lea, jrcxz, jmp */
    const size_t load_len = tls < 64 ? 9 + 2 : 9 + 2 + 7 + 2;
    const uint64_t slow = addr;
    const uint64_t stub = slow + slow_len;
    const uint64_t count = stub + 2 + load_len;
    const uint64_t done = count + 7 + 4 + 7;
    const uint64_t tramp = done + 2;

    /* slow: */
    hs_emit_u8(&e, 0x68);                            /* push imm32 */
    hs_emit_u32(&e, fidx);
    hs_emit_u8(&e, 0xFF);                            /* call [rip+X] */
    hs_emit_u8(&e, 0x15);
    size_t call_disp_at = e.len;
    hs_emit_u32(&e, 0);                              /* patched below */
    static const uint8_t lea_rsp8[5] = { 0x48, 0x8D, 0x64, 0x24, 0x08 };
    hs_emit_bytes(&e, lea_rsp8, sizeof lea_rsp8);
    emit_jrcxz_to(&e, done);
    emit_jmp8_to(&e, count);

    /* stub: */
    hs_emit_u8(&e, 0x51);                            /* push rcx */
    hs_emit_u8(&e, 0x50);                            /* push rax */
    if (tls < 64) {
        emit_mov_rcx_gs(&e, HS_TEB_TLS_SLOTS + tls * 8);
        emit_jrcxz_to(&e, slow);
    } else {
        emit_mov_rcx_gs(&e, HS_TEB_TLS_EXPANSION);
        emit_jrcxz_to(&e, slow);
        static const uint8_t mov_rcx_rcx[3] = { 0x48, 0x8B, 0x89 };  /* mov rcx,[rcx+disp32] */
        hs_emit_bytes(&e, mov_rcx_rcx, sizeof mov_rcx_rcx);
        hs_emit_u32(&e, (tls - 64) * 8);
        emit_jrcxz_to(&e, slow);
    }
    /* count: */
    static const uint8_t ld[3] = { 0x48, 0x8B, 0x81 };   /* mov rax,[rcx+disp32] */
    static const uint8_t inc[4] = { 0x48, 0x8D, 0x40, 0x01 };  /* lea rax,[rax+1] */
    static const uint8_t st[3] = { 0x48, 0x89, 0x81 };   /* mov [rcx+disp32],rax */
    hs_emit_bytes(&e, ld, sizeof ld);
    hs_emit_u32(&e, disp);
    hs_emit_bytes(&e, inc, sizeof inc);
    hs_emit_bytes(&e, st, sizeof st);
    hs_emit_u32(&e, disp);
    /* done: */
    hs_emit_u8(&e, 0x58);                            /* pop rax */
    hs_emit_u8(&e, 0x59);                            /* pop rcx */
    if (e.overflow || hs_emit_pc(&e) != tramp) {
        *why = HS_SKIP_NO_ARENA;
        return 0;
    }

    /* tramp: */
    size_t tlen = hs_emit_trampoline(g_hs.engine, fn, plan, tramp, buf + e.len, cap - e.len,
                                     out->tramp_off, why);
    if (tlen == 0)
        return 0;
    e.len += tlen;

    /* slow_ptr: */
    while (e.len & 7)
        hs_emit_u8(&e, 0xCC);
    uint64_t ptr_at = hs_emit_pc(&e);
    hs_emit_u64(&e, (uint64_t)(uintptr_t)hs_probe_slow);
    if (e.overflow) {
        *why = HS_SKIP_NO_ARENA;
        return 0;
    }
    uint32_t rel = (uint32_t)(ptr_at - (addr + call_disp_at + 4));
    memcpy(buf + call_disp_at, &rel, 4);

    out->entry = fn->addr;
    out->stub = stub;
    out->tramp = tramp;
    out->fidx = fidx;
    out->plan = *plan;
    return e.len;
}
