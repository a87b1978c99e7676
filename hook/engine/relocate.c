/*
 * hook/engine/relocate.c - hs_emit_trampoline: the window's instructions, made to
 * run at another address, then a jump back to the original code.
 *
 * Per instruction kind:
 *   plain, ret, jmp reg      copied as they are
 *   [rip+disp32] operand     copied with the displacement rewritten for the
 *                            new address (the immediate after it, if any,
 *                            is untouched: rip-relative addressing is
 *                            relative to the end of the instruction, which
 *                            the copy keeps); `lea r, [rip+x]` out of reach
 *                            becomes `mov r, imm`; any other operand out of
 *                            reach fails with HS_SKIP_OUT_OF_RANGE
 *   jmp/jcc rel8/rel32       rel32 form, or j!cc over an absolute jmp
 *   jrcxz/jecxz/loop*        kept with rel8 = 2 over a short jmp that skips
 *                            a (rel32 or absolute) jmp to the target
 *   call rel32, call [m],    "push <original return address>; jmp target"
 *   call reg                 (push imm32 in 32-bit code; a call/pop thunk
 *                            or __x86.get_pc_thunk so gets the original
 *                            address, as position-dependent code expects).
 *                            The callee returns straight into the original
 *                            function, right after the call: that code is
 *                            covered by the function's .pdata, so unwinding
 *                            through the callee stays correct, and no return
 *                            address ever points into the trampoline, so the
 *                            trampoline can be dropped at unhook time without
 *                            stranding a thread that is still in the callee.
 *
 * 32-bit code (an engine of hs_engine_new_bits(32)): no operand is
 * RIP-relative, so absolute addresses ([disp32], push imm32) stay as they
 * are, and every rel32 reaches (the instruction pointer wraps at 4 GB).
 *
 * A branch whose target is an instruction of the window goes to that
 * instruction's copy in the trampoline (always in rel32 form, so the sizes
 * do not depend on where the copies land, and two passes fix the offsets).
 */
#include <string.h>

#include "hook/engine/engine_int.h"

int hs__reloc_max(const hs_insn *in)
{
    switch (in->kind) {
    case HS_I_JMP: return 14;
    case HS_I_JCC: return 16;
    case HS_I_JCXZ_LOOP: return in->len + 2 + 14;
    case HS_I_CALL: return 20 + 14;          /* push imm64 (20) + jmp */
    case HS_I_CALL_IND: return 20 + in->len;
    default: return in->len > 10 ? in->len : 10;   /* lea -> mov r64, imm64 */
    }
}

/* Index of the window instruction starting at entry-relative `t`, or -1. */
static int window_index(const hs_plan *plan, int64_t t)
{
    for (int i = 0; i < plan->n_insns; i++)
        if ((int64_t)plan->insn_off[i] == t)
            return i;
    return -1;
}

/* jmp to an absolute target, or to the copy of a window instruction. */
static void emit_jmp_to(hs_emit *em, int internal, uint64_t target)
{
    if (internal) {
        if (hs_emit_jmp_rel32(em, target) < 0)
            em->overflow = 1;   /* cannot happen: the trampoline is small */
    } else {
        hs_emit_jmp(em, target);
    }
}

/* Copy `in` with its rip-relative displacement rewritten for where the copy
 * runs, and optionally the ModRM reg field replaced. -1 if out of reach. */
static int emit_copy_rip(hs_emit *em, const hs_func_input *fn, const hs_insn *in, int new_reg)
{
    uint8_t b[16];
    memcpy(b, fn->code + in->off, in->len);
    if (new_reg >= 0 && in->modrm_off)
        b[in->modrm_off] = (uint8_t)((b[in->modrm_off] & ~0x38) | (new_reg << 3));
    if (in->riprel) {
        uint64_t next = hs_emit_pc(em) + in->len;
        if (!hs_rel32_fits(next, in->target))
            return -1;
        uint32_t d = (uint32_t)(in->target - next);
        b[in->disp_off] = (uint8_t)d;
        b[in->disp_off + 1] = (uint8_t)(d >> 8);
        b[in->disp_off + 2] = (uint8_t)(d >> 16);
        b[in->disp_off + 3] = (uint8_t)(d >> 24);
    }
    hs_emit_bytes(em, b, in->len);
    return 0;
}

/* `lea r, [rip+x]` whose x does not reach from the trampoline: load the
 * address as a constant instead (same result, no flags touched). Its
 * operands are decoded here (rarely needed: a window carries none). */
static int emit_lea_abs(hs_emit *em, hs_engine *e, const hs_func_input *fn, const hs_insn *in)
{
    hs_sinsn s;
    if (hs__decode(e, fn, (int32_t)in->off, (int32_t)(in->off + in->len), &s.i, &s) < 0 || s.nops != 2 ||
        s.op[0].type != X86_OP_REG)
        return -1;
    int r = hs__gpr(s.op[0].reg);
    if (r < 0)
        return -1;
    if (s.op[0].size == 8) {
        hs_emit_mov_reg_imm64(em, r, in->target);
    } else if (s.op[0].size == 4) {
        if (r >= 8)
            hs_emit_u8(em, 0x41);
        hs_emit_u8(em, (uint8_t)(0xB8 | (r & 7)));
        hs_emit_u32(em, (uint32_t)in->target);
    } else {
        return -1;
    }
    return 0;
}

static int emit_one(hs_emit *em, hs_engine *e, const hs_func_input *fn, const hs_plan *plan,
                    const hs_insn *in, const uint16_t *toff, hs_skip_reason *why)
{
    int64_t t = (int64_t)(in->target - fn->addr);
    int ti = (t >= 0 && t < plan->window_len) ? window_index(plan, t) : -1;
    int internal = ti >= 0;
    uint64_t dest = internal ? em->base + toff[ti] : in->target;
    if (!internal && t >= 0 && t < plan->window_len) {
        *why = HS_SKIP_UNRELOCATABLE;   /* into the middle of a window instruction */
        return -1;
    }

    switch (in->kind) {
    case HS_I_PLAIN:
    case HS_I_RET:
        hs_emit_bytes(em, fn->code + in->off, in->len);
        return 0;
    case HS_I_RIPREL:
    case HS_I_JMP_IND:
        if (emit_copy_rip(em, fn, in, -1) == 0)
            return 0;
        if (in->id == X86_INS_LEA && emit_lea_abs(em, e, fn, in) == 0)
            return 0;
        *why = HS_SKIP_OUT_OF_RANGE;
        return -1;
    case HS_I_JMP:
        emit_jmp_to(em, internal, dest);
        return 0;
    case HS_I_JCC:
        if (internal) {
            if (hs_emit_jcc_rel32(em, in->cc, dest) < 0)
                em->overflow = 1;
        } else {
            hs_emit_jcc(em, in->cc, dest);
        }
        return 0;
    case HS_I_JCXZ_LOOP: {
        /* jrcxz/loop taken -> +2 (the jmp to the target); not taken -> the
         * short jmp skips over it */
        hs_emit_bytes(em, fn->code + in->off, (size_t)in->len - 1u);
        hs_emit_u8(em, 2);
        uint64_t after_short = hs_emit_pc(em) + 2;
        int far = !internal && !hs_emit_reaches(em, after_short + 5, dest);
        hs_emit_u8(em, 0xEB);
        hs_emit_u8(em, far ? 14 : 5);
        emit_jmp_to(em, internal, dest);
        return 0;
    }
    case HS_I_CALL:
        hs_emit_push_addr(em, fn->addr + in->off + in->len);
        emit_jmp_to(em, internal, dest);
        return 0;
    case HS_I_CALL_IND:
        hs_emit_push_addr(em, fn->addr + in->off + in->len);
        if (emit_copy_rip(em, fn, in, 4) < 0) {   /* FF /2 -> FF /4 */
            *why = HS_SKIP_OUT_OF_RANGE;
            return -1;
        }
        return 0;
    default:
        *why = HS_SKIP_UNRELOCATABLE;
        return -1;
    }
}

size_t hs_emit_trampoline(hs_engine *e, const hs_func_input *fn, const hs_plan *plan, const hs_insn *window,
                          uint64_t tramp_addr, uint8_t *buf, size_t cap,
                          uint16_t tramp_off[HS_MAX_WINDOW_INSNS + 1], hs_skip_reason *why)
{
    hs_skip_reason dummy;
    if (!why)
        why = &dummy;
    *why = HS_OK;
    if (plan->reason != HS_OK || plan->n_insns == 0 || plan->n_insns > HS_MAX_WINDOW_INSNS) {
        *why = plan->reason != HS_OK ? plan->reason : HS_SKIP_UNRELOCATABLE;
        return 0;
    }

    hs_insn ins[HS_MAX_WINDOW_INSNS];
    int n = plan->n_insns;
    for (int i = 0; i < n; i++) {
        int32_t off = plan->insn_off[i], end = plan->insn_off[i + 1];
        if (window && window[i].off == (uint32_t)off && window[i].len == end - off)
            ins[i] = window[i];
        else if (hs__decode(e, fn, off, end, &ins[i], NULL) < 0 || ins[i].len != end - off) {
            *why = HS_SKIP_UNDECODABLE;
            return 0;
        }
    }

    uint16_t toff[HS_MAX_WINDOW_INSNS + 1];
    memset(toff, 0, sizeof toff);
    hs_emit em;
    for (int pass = 0; pass < 2; pass++) {
        if (e->bits == 32)
            hs_emit_init32(&em, buf, cap, (uint32_t)tramp_addr);
        else
            hs_emit_init(&em, buf, cap, tramp_addr);
        for (int i = 0; i < n; i++) {
            toff[i] = (uint16_t)em.len;
            if (emit_one(&em, e, fn, plan, &ins[i], toff, why) < 0)
                return 0;
        }
        const hs_insn *last = &ins[n - 1];
        int ends = last->kind == HS_I_JMP || last->kind == HS_I_JMP_IND || last->kind == HS_I_RET ||
                   last->kind == HS_I_CALL || last->kind == HS_I_CALL_IND;
        if (!ends)
            hs_emit_jmp(&em, fn->addr + plan->window_len);
        toff[n] = (uint16_t)em.len;
        if (em.overflow) {
            *why = HS_SKIP_NO_ARENA;
            return 0;
        }
    }
    if (tramp_off)
        memcpy(tramp_off, toff, sizeof toff);
    return em.len;
}

size_t hs_tramp_body_len(const uint8_t *tramp, uint64_t tramp_addr, size_t len, uint64_t back)
{
    /* jmp rel32 (E9), or jmp [rip+0] with the target after it (FF 25) */
    if (len >= 5 && tramp[len - 5] == 0xE9 &&
        tramp_addr + len + (uint64_t)(int64_t)(int32_t)hs_le32(tramp + len - 4) == back)
        return len - 5;
    if (len >= 14 && tramp[len - 14] == 0xFF && tramp[len - 13] == 0x25 && hs_le32(tramp + len - 12) == 0 &&
        hs_le64(tramp + len - 8) == back)
        return len - 14;
    return len;
}
