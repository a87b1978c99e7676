/*
 * tests/unit/xcase.c - the differential case runner (see xcase.h).
 */
#include "tests/unit/xcase.h"

#include <capstone/capstone.h>
#include <stdio.h>
#include <string.h>

#include "hook/engine/emit.h"

int xc_window_unsafe(const xc_func *f, const hs_plan *plan)
{
    static csh cs;
    static int opened;
    if (!opened) {
        if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
            return 1;
        cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
        opened = 1;
    }
    const uint8_t *code = f->bytes + f->gap_before;
    cs_insn *ins;
    size_t n = cs_disasm(cs, code, plan->window_len, XR_A, 0, &ins);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        switch (ins[i].id) {
        case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_INT: case X86_INS_INTO:
        case X86_INS_RDTSC: case X86_INS_RDTSCP: case X86_INS_RDRAND: case X86_INS_RDSEED:
        case X86_INS_CPUID: case X86_INS_XGETBV:
        case X86_INS_FXSAVE: case X86_INS_FXSAVE64: case X86_INS_XSAVE: case X86_INS_XSAVE64:
        case X86_INS_XSAVEOPT: case X86_INS_XSAVEC:
            bad = 1;
            break;
        default:
            break;
        }
        /* fs: is the host's TLS */
        if (ins[i].detail->x86.prefix[1] == X86_PREFIX_FS)
            bad = 1;
        /* a call through a slot past the harness's code and data (an
         * import of a real module): its filler pointer leads to no code, so
         * both runs fault, at different points of the call */
        const cs_x86 *x = &ins[i].detail->x86;
        if (ins[i].id == X86_INS_CALL && x->op_count == 1 && x->operands[0].type == X86_OP_MEM &&
            x->operands[0].mem.base == X86_REG_RIP) {
            uint64_t slot = ins[i].address + ins[i].size + (uint64_t)x->operands[0].mem.disp;
            if (slot < XR_CODE || slot >= XR_RD + XR_RD_SZ)
                bad = 1;
        }
    }
    cs_free(ins, n);
    return bad;
}

/* One instruction decoded at addr, with details; NULL if it does not decode. */
static cs_insn *decode_one(csh cs, const uint8_t *code, size_t len, uint64_t addr)
{
    cs_insn *ins;
    return cs_disasm(cs, code, len, addr, 1, &ins) == 1 ? ins : NULL;
}

/* The absolute address a RIP-relative memory operand reaches. */
static uint64_t rip_target(const cs_insn *ins, const cs_x86_op *op)
{
    return ins->address + ins->size + (uint64_t)op->mem.disp;
}

int xc_check_reloc(const xc_func *f, const xc_out *out, uint64_t tramp, char *why, size_t n)
{
    csh cs;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
        snprintf(why, n, "capstone does not open");
        return -1;
    }
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    const hs_plan *p = &out->plan;
    int rc = 0;
    for (int i = 0; i < p->n_insns && !rc; i++) {
        int o = p->insn_off[i], t = out->tramp_off[i];
        cs_insn *a = decode_one(cs, f->bytes + f->gap_before + o, (size_t)(p->window_len - o), XR_A + (uint64_t)o);
        cs_insn *b = t < (int)out->tramp_len
                         ? decode_one(cs, out->tramp + t, out->tramp_len - (size_t)t, tramp + (uint64_t)t)
                         : NULL;
        if (!a || !b) {
            snprintf(why, n, "instruction %d: %s does not decode", i, a ? "the copy" : "the original");
            rc = -1;
        } else if (a->id != b->id || a->detail->x86.op_count != b->detail->x86.op_count) {
            snprintf(why, n, "instruction %d: '%s %s' copied as '%s %s'", i, a->mnemonic, a->op_str, b->mnemonic,
                     b->op_str);
            rc = -1;
        } else {
            for (int k = 0; k < a->detail->x86.op_count && !rc; k++) {
                const cs_x86_op *x = &a->detail->x86.operands[k], *y = &b->detail->x86.operands[k];
                int same = x->type == y->type && x->size == y->size;
                if (same && x->type == X86_OP_REG)
                    same = x->reg == y->reg;
                else if (same && x->type == X86_OP_IMM)
                    same = x->imm == y->imm || a->detail->x86.op_count == 1;   /* a branch target moves */
                else if (same && x->type == X86_OP_MEM)
                    same = x->mem.base == y->mem.base && x->mem.index == y->mem.index &&
                           x->mem.scale == y->mem.scale && x->mem.segment == y->mem.segment &&
                           (x->mem.base == X86_REG_RIP ? rip_target(a, x) == rip_target(b, y)
                                                       : x->mem.disp == y->mem.disp);
                if (!same) {
                    snprintf(why, n, "instruction %d operand %d: '%s %s' copied as '%s %s'", i, k, a->mnemonic,
                             a->op_str, b->mnemonic, b->op_str);
                    rc = -1;
                }
            }
            if (!rc && memcmp(a->detail->x86.prefix, b->detail->x86.prefix, sizeof a->detail->x86.prefix)) {
                snprintf(why, n, "instruction %d: prefixes differ", i);
                rc = -1;
            }
        }
        if (a)
            cs_free(a, 1);
        if (b)
            cs_free(b, 1);
    }
    cs_close(&cs);
    return rc;
}

int xc_diff(hs_engine *e, const xc_func *f, const xc_opts *o, xc_out *out, char *why, size_t n)
{
    memset(out, 0, sizeof *out);
    why[0] = 0;
    uint64_t T = o->tramp ? o->tramp : XR_T_NEAR;
    hs_func_input fn = {
        .code = f->bytes + f->gap_before,
        .addr = XR_A,
        .size = f->size,
        .gap_before = f->gap_before,
        .gap_after = f->gap_after,
        .image_lo = XR_CODE,
        .image_hi = XR_RD + XR_RD_SZ,
    };
    hs_plan *plan = &out->plan;
    if (hs_analyze(e, &fn, o->analyze_opts, plan) != HS_OK) {
        snprintf(why, n, "not hooked: %s", hs_skip_reason_name(plan->reason));
        return XC_NOT_HOOKED;
    }
    /* from the window the analysis kept, as the agent emits; decoded again,
     * the same trampoline */
    uint8_t again[HS_TRAMP_MAX];
    uint16_t again_off[HS_MAX_WINDOW_INSNS + 1];
    hs_skip_reason again_why;
    out->tramp_len = hs_emit_trampoline(e, &fn, plan, hs_analyze_window(e), T, out->tramp, sizeof out->tramp,
                                        out->tramp_off, &out->tramp_why);
    size_t again_len = hs_emit_trampoline(e, &fn, plan, NULL, T, again, sizeof again, again_off, &again_why);
    if (again_len != out->tramp_len || again_why != out->tramp_why || memcmp(again, out->tramp, again_len) ||
        (again_len && memcmp(again_off, out->tramp_off, sizeof again_off))) {
        snprintf(why, n, "the trampoline from the analyzed window (%zu bytes, %s) is not the one decoded "
                 "again (%zu bytes, %s)", out->tramp_len, hs_skip_reason_name(out->tramp_why), again_len,
                 hs_skip_reason_name(again_why));
        return XC_DIFFERENT;
    }
    if (out->tramp_len == 0) {
        snprintf(why, n, "no trampoline: %s", hs_skip_reason_name(out->tramp_why));
        return XC_NO_TRAMP;
    }
    if (o->plan_only)
        return xc_check_reloc(f, out, T, why, n) < 0 ? XC_DIFFERENT : XC_PLANNED;
    if (xc_window_unsafe(f, plan)) {
        snprintf(why, n, "window not executable by the harness");
        return XC_UNSAFE;
    }
    /* A far trampoline is entered through a relay near the code, as the
     * agent's stub would be: the patch itself is always rel32. */
    uint64_t dest = T;
    uint64_t jmp_at = XR_A + (uint64_t)(int64_t)(plan->kind == HS_PATCH_SHORT_PAD ? plan->pad_off : 0) + 5;
    if (plan->kind != HS_PATCH_INT3 && !hs_rel32_fits(jmp_at, T))
        dest = XR_T_NEAR + XR_T_SZ - 16;
    uint8_t patch[HS_MAX_PATCH];
    if (hs_emit_patch(&fn, plan, dest, patch) < 0) {
        snprintf(why, n, "hs_emit_patch failed");
        return XC_DIFFERENT;
    }
    /* The patch range may hold original bytes past the window (between the
     * short jmp and a slot after the function): the original run has int3
     * there, so the patched run must too. */
    for (int k = 0; k < plan->patch_len; k++) {
        int off = plan->patch_off + k;
        int keep = off < plan->window_len;
        if (plan->kind == HS_PATCH_JMP32)
            keep |= off < 5;
        if (plan->kind == HS_PATCH_SHORT_PAD)
            keep |= off < 2 || (off >= plan->pad_off && off < plan->pad_off + 5);
        if (!keep)
            patch[k] = 0xCC;
    }

    int nv = o->nvariants ? o->nvariants : 3;
    for (int v = 0; v < nv; v++) {
        xr_input in;
        xr_default_input(&in, v);
        if (o->tweak)
            o->tweak(&in, v, o->ctx);
        xr_result ro, rt;

        /* the original: padding before, the window, int3 after it */
        xr_reset_code();
        xr_put(XR_A - f->gap_before, f->bytes, f->gap_before + plan->window_len);
        xr_run(XR_A, &in, &ro);

        /* patched: the same bytes with the patch written, the trampoline */
        xr_reset_code();
        xr_put(XR_A - f->gap_before, f->bytes, f->gap_before + plan->window_len);
        xr_put(XR_A + (int64_t)plan->patch_off, patch, plan->patch_len);
        xr_reset_tramp(T);
        xr_put(T, out->tramp, out->tramp_len);
        if (dest != T) {
            uint8_t relay[16];
            hs_emit em;
            hs_emit_init(&em, relay, sizeof relay, dest);
            hs_emit_jmp_abs(&em, T);
            if (T != XR_T_NEAR)
                xr_reset_tramp(XR_T_NEAR);
            xr_put(dest, relay, em.len);
        }
        /* an int3 patch is redirected by a vectored handler in the agent:
         * here the run starts at the trampoline directly */
        xr_run(plan->kind == HS_PATCH_INT3 ? T : XR_A, &in, &rt);

        /* a run that stopped inside the trampoline stopped at the copy of
         * an original instruction: compare it as that instruction */
        if (rt.at >= T && rt.at < T + out->tramp_len) {
            int oo = hs_tramp_to_orig(plan, out->tramp_off, (int)(rt.at - T));
            if (oo >= 0)
                rt.at = XR_A + (uint64_t)oo;
        }
        out->end_kind = ro.end;
        out->end_at = ro.at;
        char w[200];
        int d = xr_compare(&ro, &rt, o->cmp_vec, w, sizeof w);
        xr_result_free(&ro);
        xr_result_free(&rt);
        if (d) {
            snprintf(why, n, "variant %d: %s", v, w);
            return XC_DIFFERENT;
        }
    }
    return XC_SAME;
}
