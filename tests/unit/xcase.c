/*
 * tests/unit/xcase.c - the differential case runner (see xcase.h).
 */
#include "tests/unit/xcase.h"

#include <capstone/capstone.h>
#include <stdio.h>
#include <string.h>

#include "agent/edgehash.h"
#include "hook/engine/count32.h"
#include "hook/engine/emit.h"

#define XC_CS_MODE (XR_BITS == 32 ? CS_MODE_32 : CS_MODE_64)

int xc_window_unsafe(const xc_func *f, const hs_plan *plan)
{
    static csh cs;
    static int opened;
    if (!opened) {
        if (cs_open(CS_ARCH_X86, XC_CS_MODE, &cs) != CS_ERR_OK)
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
        /* fs: is the host's TLS (in 32-bit code gs is, and fs the TEB) */
        if (ins[i].detail->x86.prefix[1] == (XR_BITS == 32 ? X86_PREFIX_GS : X86_PREFIX_FS))
            bad = 1;
        /* a call through a slot past the harness's code and data (an
         * import of a real module): its filler pointer leads to no code, so
         * both runs fault, at different points of the call */
        const cs_x86 *x = &ins[i].detail->x86;
        const cs_x86_op *m = &x->operands[0];   /* (32-bit code: a call [abs32] to an import
                                                    runs alike, both runs fault at its target) */
        if (ins[i].id == X86_INS_CALL && x->op_count == 1 && m->type == X86_OP_MEM &&
            m->mem.base == X86_REG_RIP) {
            uint64_t slot = ins[i].address + ins[i].size + (uint64_t)m->mem.disp;
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
    if (cs_open(CS_ARCH_X86, XC_CS_MODE, &cs) != CS_ERR_OK) {
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

/* The counting stub's world (xc_count): the function's count in a
 * counters block in XR_SCRATCH (XC_COUNTERS), the TLS slot or the
 * expansion slots' pointer in the TEB, the slow routine (`mov ecx,
 * counters; ret`, unless the case names another) in the trampoline
 * region. */
#define XC_EXPANSION (XR_SCRATCH + 0xD000)
#define XC_SLOW_OFF 0x8000u

static void poke(xr_input *in, uint64_t addr, uint64_t val)
{
    if (in->npoke < XR_MAX_POKE) {
        in->poke_addr[in->npoke] = addr;
        in->poke_val[in->npoke++] = val;
    }
}

/* Where the function's count is (its block, with edges). */
static uint32_t count_off(const xc_count *c)
{
    return (c->edge_slow ? XC_FBLOCK : 8) * XC_FIDX;
}

/* With edges: the block's caller slots up to the end of the edge table. */
#define XC_EDGES_FROM(c) (XC_COUNTERS + count_off(c) + 8)
#define XC_EDGES_TO (XC_COUNTERS + XC_EDGES_REL + 32 * XC_EDGES_CAP)

static void count_setup(xr_input *in, const xc_count *c, int v)
{
    uint64_t counters = v % 3 == 2 ? 0 : XC_COUNTERS;
    if (c->edge_slow) {
        in->zero_at = XC_EDGES_FROM(c);
        in->zero_len = (uint32_t)(XC_EDGES_TO - XC_EDGES_FROM(c));
        /* the caller (the return address at the entry) in the first slot
         * (v % 3 == 1: its count's low half about to carry), or in none */
        if (v % 3 != 2)
            poke(in, XC_EDGES_FROM(c), XR_RETPAD);
        if (v % 3 == 1)
            poke(in, XC_EDGES_FROM(c) + 8, 0xFFFFFFFFu);
        if (c->stack_slow && v % 3 == 1)
            poke(in, XC_COUNTERS + XC_COUNTDOWN_REL + 4 * XC_FIDX, 1);
    }
    if (c->tls < 64) {
        poke(in, XR_TEB + HS_TEB32_TLS_SLOTS + 4 * c->tls, counters);
    } else {
        poke(in, XR_TEB + HS_TEB32_TLS_EXPANSION, XC_EXPANSION);
        poke(in, XC_EXPANSION + 4 * (c->tls - 64), counters);
    }
    if (v % 3 == 1)
        poke(in, XC_COUNTERS + count_off(c), 0xFFFFFFFFu);
}

/* The count the hooked run `rt` kept against the original run's memory;
 * put the original bytes back into rt so that the rest compares. So too
 * the stack below the stack pointer at the entry that the original run
 * left as it was filled (xrun.h): the stub pushes there and its slow path
 * calls, on memory the function had not written, which it cannot read
 * before it writes it (where it does write, rt holds what it wrote). 0, or
 * -1 with why. */
static int count_check(const xc_count *c, const xr_result *ro, xr_result *rt, xc_out *out, char *why, size_t n)
{
    size_t at = (size_t)(XC_COUNTERS + count_off(c) - XR_SCRATCH);
    uint32_t b[2], a[2];
    memcpy(b, ro->scratch + at, 8);
    memcpy(a, rt->scratch + at, 8);
    uint64_t before = (uint64_t)b[1] << 32 | b[0], after = (uint64_t)a[1] << 32 | a[0];
    memcpy(rt->scratch + at, ro->scratch + at, 8);
    if (c->slow) {
        /* the ticks its slow routine added to the region header */
        size_t ex = (size_t)(XC_EXCLUDED - XR_SCRATCH);
        memcpy(b, ro->scratch + ex, 8);
        memcpy(a, rt->scratch + ex, 8);
        out->excluded += ((uint64_t)a[1] << 32 | a[0]) - ((uint64_t)b[1] << 32 | b[0]);
        memcpy(rt->scratch + ex, ro->scratch + ex, 8);
        if (c->stack_slow) {   /* (and, capturing, to its stack_ticks) */
            size_t st = (size_t)(XC_STACK_TICKS - XR_SCRATCH);
            memcpy(rt->scratch + st, ro->scratch + st, 8);
        }
    }
    for (size_t k = 0; k < (size_t)(XR_ENTRY_SP - XR_STACK); k++) {
        /* byte by byte: the function may have written part of a word
         * (fnstcw [esp+x] writes two bytes) */
        uint32_t fill = (uint32_t)(XR_STACK + (k & ~(size_t)3) + 0x100);
        if (ro->stack[k] == (uint8_t)(fill >> (8 * (k & 3))))
            rt->stack[k] = ro->stack[k];
    }
    out->counted += after - before;
    if (c->edge_slow) {
        /* every call counted with its caller: in the block's slots or the
         * table (what the counts grew by from the original run's memory,
         * which has them as they started); then the rest compares as it was */
        uint64_t edges = 0;
        size_t from = (size_t)(XC_EDGES_FROM(c) - XR_SCRATCH);
        size_t tab = (size_t)(XC_COUNTERS + XC_EDGES_REL - XR_SCRATCH);
        for (int run = 0; run < 2; run++) {
            const uint8_t *m = run ? ro->scratch : rt->scratch;
            uint64_t sum = 0, e;
            for (uint32_t k = 0; k < XC_INLINE; k++) {
                memcpy(&e, m + from + 16 * k + 8, 8);
                sum += e;
            }
            for (uint32_t i = 0; i < XC_EDGES_CAP; i++) {
                uint32_t callee;
                memcpy(&callee, m + tab + 32 * i + 8, 4);
                memcpy(&e, m + tab + 32 * i + 16, 8);
                sum += callee == XC_FIDX ? e : 0;
            }
            edges = run ? edges - sum : sum;
        }
        memcpy(rt->scratch + from, ro->scratch + from, (size_t)(XC_EDGES_TO - XC_EDGES_FROM(c)));
        out->edges += edges;
        if (edges != after - before) {
            snprintf(why, n, "%llu calls counted, %llu with their caller", (unsigned long long)(after - before),
                     (unsigned long long)edges);
            return -1;
        }
    }
    if (after - before != c->expect) {
        snprintf(why, n, "counted %llu (from %#llx to %#llx), expected %u", (unsigned long long)(after - before),
                 (unsigned long long)before, (unsigned long long)after, c->expect);
        return -1;
    }
    return 0;
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
    /* with the counting stub, the trampoline is its tail */
    uint8_t stub[HS_TRAMP_MAX + 512];
    hs_stub32 st = { 0, 0, 0, { 0 } };
    uint64_t tramp_at = T;
    if (o->count) {
        hs_count32 c = { .tls = o->count->tls, .count_off = count_off(o->count), .fidx = XC_FIDX,
                         .slow = o->count->slow ? o->count->slow : (uint32_t)(T + XC_SLOW_OFF) };
        if (o->count->edge_slow) {
            c.inline_edges = XC_INLINE;
            c.edges_cap = XC_EDGES_CAP;
            c.edges_rel = XC_EDGES_REL;
            c.edge_mix = hs_edge_mix(XC_FIDX);
            c.edge_mult = HS_EDGE_MULT;
            c.edge_slow = o->count->edge_slow;
        }
        if (o->count->edge_slow && o->count->stack_slow) {
            c.stack_every = XC_STACK_EVERY;
            c.countdown_rel = XC_COUNTDOWN_REL + 4 * XC_FIDX;
            c.stack_slow = o->count->stack_slow;
        }
        hs_skip_reason sw;
        if (hs_stub32_size_max(plan, o->count->edge_slow != 0, o->count->stack_slow != 0, 0) > sizeof stub ||
            !hs_stub32_emit(e, &fn, plan, hs_analyze_window(e), &c, (uint32_t)T, stub, sizeof stub, &st, &sw)) {
            snprintf(why, n, "no counting stub: %s", hs_skip_reason_name(sw));
            return XC_DIFFERENT;
        }
        tramp_at = T + st.tramp;
        memcpy(out->tramp_off, st.tramp_off, sizeof out->tramp_off);
    }
    if (o->plan_only)
        return xc_check_reloc(f, out, T, why, n) < 0 ? XC_DIFFERENT : XC_PLANNED;
    if (xc_window_unsafe(f, plan)) {
        snprintf(why, n, "window not executable by the harness");
        return XC_UNSAFE;
    }
    /* A far trampoline is entered through a relay near the code, as the
     * agent's stub would be: the patch itself is always rel32. */
    uint64_t dest = T + st.entry;
    uint64_t jmp_at = XR_A + (uint64_t)(int64_t)(plan->kind == HS_PATCH_SHORT_PAD ? plan->pad_off : 0) + 5;
    if (plan->kind != HS_PATCH_INT3 && plan->bits != 32 && !hs_rel32_fits(jmp_at, T))
        dest = XR_T_NEAR + XR_T_SZ - 16;
    uint8_t patch[HS_MAX_PATCH];
    if (hs_emit_patch(&fn, plan, dest, patch) < 0) {
        snprintf(why, n, "hs_emit_patch failed");
        return XC_DIFFERENT;
    }
    /* The patch range may hold original bytes past the window (between the
     * short jmp and a slot after the function): the original run has int3
     * there, so the patched run must too. */
    for (int k = 0; k < plan->patch_len && !o->whole; k++) {
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
        if (o->count)
            count_setup(&in, o->count, v);
        xr_result ro, rt;

        /* the original: padding before, the window (or all), int3 after it */
        size_t put = f->gap_before + (o->whole ? f->size + f->gap_after : plan->window_len);
        xr_reset_code();
        xr_put(XR_A - f->gap_before, f->bytes, put);
        xr_run(XR_A, &in, &ro);

        /* patched: the same bytes with the patch written, the trampoline */
        xr_reset_code();
        xr_put(XR_A - f->gap_before, f->bytes, put);
        xr_put(XR_A + (int64_t)plan->patch_off, patch, plan->patch_len);
        xr_reset_tramp(T);
        if (o->count) {
            static const uint8_t ret_counters[6] = { 0xB9, (uint8_t)XC_COUNTERS, (uint8_t)(XC_COUNTERS >> 8),
                                                     (uint8_t)(XC_COUNTERS >> 16), (uint8_t)(XC_COUNTERS >> 24),
                                                     0xC3 };   /* mov ecx, counters; ret */
            xr_put(T, stub, st.len);
            if (!o->count->slow)
                xr_put(T + XC_SLOW_OFF, ret_counters, sizeof ret_counters);
        } else {
            xr_put(T, out->tramp, out->tramp_len);
        }
        if (dest != T + st.entry) {
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
        xr_run(plan->kind == HS_PATCH_INT3 ? T + st.entry : XR_A, &in, &rt);

        /* a run that stopped inside the trampoline stopped at the copy of
         * an original instruction: compare it as that instruction */
        if (rt.at >= tramp_at && rt.at < tramp_at + out->tramp_len) {
            int oo = hs_tramp_to_orig(plan, out->tramp_off, (int)(rt.at - tramp_at));
            if (oo >= 0)
                rt.at = XR_A + (uint64_t)oo;
        }
        out->end_kind = ro.end;
        out->end_at = ro.at;
        char w[200];
        int d = o->count && count_check(o->count, &ro, &rt, out, w, sizeof w) < 0;
        if (!d)
            d = xr_compare(&ro, &rt, o->cmp_vec, w, sizeof w);
        xr_result_free(&ro);
        xr_result_free(&rt);
        if (d) {
            snprintf(why, n, "variant %d: %s", v, w);
            return XC_DIFFERENT;
        }
    }
    return XC_SAME;
}
