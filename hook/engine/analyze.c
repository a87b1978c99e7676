/*
 * hook/engine/analyze.c - hs_analyze: can this entry be redirected, and how.
 *
 * Options are tried in order, the first that works is taken:
 *
 *   JMP32      `jmp rel32` over the first 5 bytes. The window is the
 *              instructions that cover them. A function shorter than that
 *              may end (ret/jmp) inside the 5 bytes when what follows up
 *              to byte 5 is padding (int3/nop).
 *   SHORT_PAD  `jmp rel8` over the first 2 bytes, to a `jmp rel32` in
 *              padding before the entry (hot-patch style, preferred at -5)
 *              or after a short function.
 *   INT3       one byte, only with HS_ANALYZE_ALLOW_INT3.
 *
 * Each option needs: every window instruction relocatable (relocate.c);
 * a relocated call's return address outside the patched bytes; branches
 * inside the window landing on window instruction starts; no branch from
 * the rest of the function (and no resolved jump-table entry) into the
 * patched bytes after the entry; and, when an instruction boundary lies
 * inside the patched bytes, no jump table we could not resolve.
 *
 * Cost: only the window is decoded, unless the byte prefilter finds a
 * possible branch into the patch or a table-like indirect jmp, or the
 * analysis is full; then the whole function is decoded (sweep.c), and the
 * same facts decide the patch either way, so HS_ANALYZE_FULL never hooks
 * fewer functions.
 */
#include <string.h>

#include "hook/engine/engine_int.h"

#define JMP32_LEN 5
#define JMP8_LEN 2

typedef struct window {
    int n;               /* instructions */
    int32_t len;         /* bytes */
    int term;            /* ends with ret/jmp */
} window;

static int is_terminator(const hs_insn *in)
{
    return in->kind == HS_I_JMP || in->kind == HS_I_JMP_IND || in->kind == HS_I_RET ||
           in->kind == HS_I_TRAP;
}

/* The smallest prefix of the decoded instructions that covers `need` bytes
 * (or ends the flow). */
static window pick_window(const hs_insn *w, int nw, int32_t need)
{
    window r = { 0, 0, 0 };
    while (r.n < nw && r.len < need) {
        r.len += w[r.n].len;
        r.term = is_terminator(&w[r.n]);
        r.n++;
        if (r.term)
            break;
    }
    return r;
}

/* Can the instructions of the window run from a trampoline when the patch
 * overwrites [0, patch_len)? */
static hs_skip_reason check_window(const hs_func_input *fn, const hs_insn *w, window win,
                                   int32_t patch_len)
{
    for (int i = 0; i < win.n; i++) {
        const hs_insn *in = &w[i];
        int32_t end = (int32_t)(in->off + in->len);
        switch (in->kind) {
        case HS_I_BAD:
        case HS_I_TRAP:
            return HS_SKIP_UNRELOCATABLE;
        case HS_I_CALL_IND:
            /* the return address is pushed before the target is read:
             * an operand that uses rsp would see it moved */
            if (in->rsp_mem)
                return HS_SKIP_UNRELOCATABLE;
            /* fall through */
        case HS_I_CALL:
            /* the callee returns to the original code right after the call:
             * those bytes must still be there */
            if (end < patch_len || i != win.n - 1)
                return HS_SKIP_UNRELOCATABLE;
            break;
        case HS_I_JMP:
        case HS_I_JCC:
        case HS_I_JCXZ_LOOP: {
            /* a target inside the window must be one of its instruction
             * starts (it is mapped into the trampoline); a target in
             * patched bytes past the window is gone */
            int64_t t = (int64_t)(in->target - fn->addr);
            if (t >= 0 && t < win.len) {
                int ok = 0;
                for (int k = 0; k < win.n; k++)
                    ok |= (int64_t)w[k].off == t;
                if (!ok)
                    return HS_SKIP_UNRELOCATABLE;
            } else if (t >= win.len && t < patch_len) {
                return HS_SKIP_UNRELOCATABLE;
            }
            break;
        }
        default:
            break;
        }
    }
    return HS_OK;
}

/* Bytes [win.len, patch_len) are overwritten without being relocated: only
 * allowed when the flow ended in the window and they are padding. */
static int tail_ok(hs_engine *e, const hs_func_input *fn, window win, int32_t patch_len, unsigned opts)
{
    if (win.len >= patch_len)
        return 1;
    if (!win.term)
        return 0;
    int32_t limit = (int32_t)fn->size;
    if (!(opts & HS_ANALYZE_NO_PADDING))
        limit += (int32_t)fn->gap_after;
    return hs__padding_run(e, fn, win.len, patch_len, limit);
}

static int has_interior_boundary(const hs_insn *w, window win, int32_t patch_len)
{
    for (int i = 1; i < win.n; i++)
        if ((int32_t)w[i].off < patch_len)
            return 1;
    return 0;
}

/* A slot for the 5-byte jmp of a SHORT_PAD patch: entry-relative start,
 * or INT32_MIN. The whole patch range [min(s,0), max(s+5,2)) must fit in
 * HS_MAX_PATCH bytes and s must be in reach of the rel8 at the entry. */
static int32_t find_pad_slot(hs_engine *e, const hs_func_input *fn)
{
    /* before the entry: -5 first (adjacent, classic hot-patch), then further */
    for (int32_t s = -JMP32_LEN; s >= JMP8_LEN - HS_MAX_PATCH; s--) {
        if ((uint32_t)-s > fn->gap_before)
            break;
        const uint8_t *p = fn->code + s;
        int simple = 1;
        for (int k = 0; k < JMP32_LEN; k++)
            if (p[k] != 0xCC && p[k] != 0x90)
                simple = 0;
        if (simple)
            return s;
        if (fn->gap_before <= 64 &&
            hs__padding_run(e, fn, -(int32_t)fn->gap_before, s + JMP32_LEN, 0))
            return s;
    }
    /* after the end of a short function */
    int32_t s = (int32_t)fn->size;
    if (s >= JMP8_LEN && s + JMP32_LEN <= HS_MAX_PATCH && fn->gap_after >= JMP32_LEN &&
        hs__padding_run(e, fn, s, s + JMP32_LEN, s + (int32_t)fn->gap_after))
        return s;
    return INT32_MIN;
}

/* Is any branch that does not belong to the window a branch into (0, patch_len)?
 * Uses e->tgt (filled by the sweep). */
static int branch_into(const hs_engine *e, int32_t win_len, int32_t patch_len)
{
    for (size_t k = 0; k < e->tgt_n; k++) {
        const hs_edge *g = &e->tgt[k];
        if ((g->kind == HS_I_JMP_IND || g->src >= (uint32_t)win_len) && g->dst > 0 &&
            g->dst < (uint32_t)patch_len)
            return 1;
    }
    return 0;
}

/* What a sweep says about a patch of `patch_len` bytes over window `win`:
 * HS_OK, HS_SKIP_BRANCH_INTO_PATCH or HS_SKIP_JUMP_TABLE. `cand`/`cand_i`:
 * the byte-level scans found a possible branch into it / a table-like jump. */
static hs_skip_reason sweep_refusal(const hs_engine *e, int swept_ok, const hs_indirect_info *ii,
                                    const hs_insn *w, window win, int32_t patch_len, int cand, int cand_i)
{
    if ((!swept_ok && cand) || branch_into(e, win.len, patch_len))
        return HS_SKIP_BRANCH_INTO_PATCH;
    if ((ii->n_unresolved > 0 || (!swept_ok && cand_i)) && has_interior_boundary(w, win, patch_len))
        return HS_SKIP_JUMP_TABLE;
    return HS_OK;
}

static void finish_plan(hs_engine *e, const hs_func_input *fn, hs_plan *plan, const hs_insn *w, window win)
{
    memcpy(e->win, w, (size_t)win.n * sizeof *w);
    plan->window_len = (uint8_t)win.len;
    plan->n_insns = (uint8_t)win.n;
    int tmax = 0;
    for (int i = 0; i < win.n; i++) {
        plan->insn_off[i] = (uint8_t)w[i].off;
        tmax += hs__reloc_max(&w[i]);
        if (w[i].kind == HS_I_CALL || w[i].kind == HS_I_CALL_IND)
            plan->flags |= HS_FN_HAS_CALL_IN_WINDOW;
    }
    plan->insn_off[win.n] = (uint8_t)win.len;
    tmax += 14;   /* jump back (absolute form at most) */
    plan->tramp_max = (uint16_t)tmax;
    if (win.term)
        plan->flags |= HS_FN_ENDS_IN_WINDOW;
    if (plan->patch_off + plan->patch_len > win.len && plan->kind == HS_PATCH_JMP32)
        plan->flags |= HS_FN_USES_PADDING;
    memcpy(plan->orig, fn->code + plan->patch_off, plan->patch_len);
}

const hs_insn *hs_analyze_window(const hs_engine *e)
{
    return e->win;
}

hs_skip_reason hs_analyze(hs_engine *e, const hs_func_input *fn, unsigned opts, hs_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->bits = (uint8_t)e->bits;
    plan->stack_arg_slots = -1;
    e->exits_n = 0;
    plan->kind = HS_PATCH_NONE;

    if (!fn->code || fn->size == 0) {
        plan->reason = HS_SKIP_TOO_SHORT;
        return plan->reason;
    }

    /* 1. decode the window candidates: up to 5 bytes or the end of the flow */
    hs_insn w[HS_MAX_WINDOW_INSNS];
    int nw = 0, dec_fail = 0;
    int32_t pos = 0;
    while (pos < JMP32_LEN && nw < HS_MAX_WINDOW_INSNS && pos < (int32_t)fn->size) {
        if (hs__decode(e, fn, pos, (int32_t)fn->size, &w[nw], NULL) < 0) {
            dec_fail = 1;
            break;
        }
        pos += w[nw].len;
        if (is_terminator(&w[nw++]))
            break;
    }
    if (nw == 0) {
        plan->reason = HS_SKIP_UNDECODABLE;
        return plan->reason;
    }
    if (w[0].id == X86_INS_ENDBR64)
        plan->flags |= HS_FN_ENDBR;
    if (w[0].kind == HS_I_JMP_IND &&
        (w[0].riprel || (e->bits == 32 && fn->code[0] == 0xFF && fn->code[1] == 0x25)))
        plan->flags |= HS_FN_IMPORT_THUNK;   /* jmp [rip+x]; in 32-bit code jmp [abs32] */

    window wa = pick_window(w, nw, JMP32_LEN);
    window wb = pick_window(w, nw, JMP8_LEN);
    window wi = pick_window(w, nw, 1);
    /* a window that stopped short at a byte capstone could not decode */
    int undec_a = dec_fail && wa.len < JMP32_LEN && !wa.term;
    int undec_b = dec_fail && wb.len < JMP8_LEN && !wb.term;

    /* 2. branches into the patched bytes, tables */
    uint32_t scan_from = (uint32_t)wb.len;
    uint32_t last_b = 0, last_i = 0, last_b2 = 0;
    int cand_a = hs__scan_branches(fn, scan_from, fn->size, 0, JMP32_LEN, &last_b);
    int cand_b = cand_a ? hs__scan_branches(fn, scan_from, fn->size, 0, JMP8_LEN, &last_b2) : 0;
    int need_tables = has_interior_boundary(w, wa, JMP32_LEN) || has_interior_boundary(w, wb, JMP8_LEN);
    int cand_i = need_tables ? hs__scan_indirect(fn, scan_from, fn->size, &last_i) : 0;
    int full = (opts & HS_ANALYZE_FULL) != 0;

    /* a cheap linear look up to the last candidate first; when it finds
     * something in the way (perhaps data decoded as code), or when the
     * analysis is full, the whole function is decoded along its flow. A
     * patch is refused only when both say no, so that the full analysis
     * hooks exactly what the plain one does. */
    hs_skip_reason lin_a = HS_OK, lin_b = HS_OK, flow_a = HS_OK, flow_b = HS_OK;
    hs_indirect_info ii;
    memset(&ii, 0, sizeof ii);
    e->tgt_n = 0;
    e->sw_n = 0;
    int swept_ok = 1;
    if (cand_a || cand_i) {
        uint32_t upto = last_b > last_i ? last_b : last_i;
        swept_ok = hs__sweep_linear(e, fn, upto, &ii) == 0;
        lin_a = sweep_refusal(e, swept_ok, &ii, w, wa, JMP32_LEN, cand_a, cand_i);
        lin_b = sweep_refusal(e, swept_ok, &ii, w, wb, JMP8_LEN, cand_b, cand_i);
    }
    if (full || lin_a != HS_OK || lin_b != HS_OK) {
        swept_ok = hs__sweep(e, fn, &ii) == 0;
        flow_a = sweep_refusal(e, swept_ok, &ii, w, wa, JMP32_LEN, cand_a, cand_i);
        flow_b = sweep_refusal(e, swept_ok, &ii, w, wb, JMP8_LEN, cand_b, cand_i);
    }
    hs_skip_reason sw_a = lin_a == HS_OK ? HS_OK : flow_a;
    hs_skip_reason sw_b = lin_b == HS_OK ? HS_OK : flow_b;
    if (ii.n_indirect)
        plan->flags |= HS_FN_INDIRECT_JUMP;
    if (ii.n_tables)
        plan->flags |= HS_FN_JUMP_TABLE;
    if (ii.n_unresolved > 0 || (!swept_ok && cand_i))
        plan->flags |= HS_FN_UNRESOLVED_TABLE;
    for (size_t k = 0; k < e->tgt_n; k++)
        if (e->tgt[k].dst == 0 && e->tgt[k].kind != HS_I_CALL)
            plan->flags |= HS_FN_BRANCH_TO_ENTRY;

    if (full && e->bits == 64)
        hs__frame_analyze(e, fn, swept_ok, plan);
    else if (full)
        plan->flags |= HS_FN_NO_FRAME_INFO;   /* the frame analysis knows the x64 convention only */

    /* 3. JMP32 */
    hs_skip_reason ra;
    if (undec_a)
        ra = HS_SKIP_UNDECODABLE;
    else if ((ra = check_window(fn, w, wa, JMP32_LEN)) != HS_OK)
        ;
    else if (!tail_ok(e, fn, wa, JMP32_LEN, opts))
        ra = HS_SKIP_TOO_SHORT;
    else
        ra = sw_a;
    if (ra == HS_OK) {
        plan->kind = HS_PATCH_JMP32;
        plan->patch_off = 0;
        plan->patch_len = JMP32_LEN;
        finish_plan(e, fn, plan, w, wa);
        return plan->reason = HS_OK;
    }

    /* 4. SHORT_PAD */
    if (!(opts & HS_ANALYZE_NO_PADDING)) {
        hs_skip_reason rb;
        int32_t slot = INT32_MIN;
        if (undec_b)
            rb = HS_SKIP_UNDECODABLE;
        else if ((rb = check_window(fn, w, wb, JMP8_LEN)) != HS_OK)
            ;
        else if (!tail_ok(e, fn, wb, JMP8_LEN, opts))
            rb = HS_SKIP_TOO_SHORT;
        else if (sw_b != HS_OK)
            rb = sw_b;
        else if ((slot = find_pad_slot(e, fn)) == INT32_MIN)
            rb = HS_SKIP_TOO_SHORT;
        if (rb == HS_OK) {
            plan->kind = HS_PATCH_SHORT_PAD;
            plan->pad_off = (int16_t)slot;
            plan->patch_off = slot < 0 ? slot : 0;
            int32_t end = slot < 0 ? JMP8_LEN : slot + JMP32_LEN;
            plan->patch_len = (uint8_t)(end - plan->patch_off);
            finish_plan(e, fn, plan, w, wb);
            return plan->reason = HS_OK;
        }
    }

    /* 5. INT3 */
    if ((opts & HS_ANALYZE_ALLOW_INT3) && check_window(fn, w, wi, 1) == HS_OK) {
        plan->kind = HS_PATCH_INT3;
        plan->patch_off = 0;
        plan->patch_len = 1;
        finish_plan(e, fn, plan, w, wi);
        return plan->reason = HS_OK;
    }

    plan->kind = HS_PATCH_NONE;
    return plan->reason = ra;
}
