/*
 * hook/engine/sweep.c - linear decode of a function, the branches it contains and
 * the jump tables behind its indirect jumps.
 *
 * A linear sweep from the entry finds the real instruction starts (x64
 * compilers put no data between the instructions of a function: gcc and
 * clang emit jump tables into .rdata; MSVC's go after the code). Each
 * relative branch gives an edge; each indirect `jmp` is classified:
 *
 *   jmp [rip+x], jmp [reg+disp]        tail call through a pointer (no table)
 *   jmp reg, reg from a plain load,     tail call (function pointer, vtable slot,
 *     a register move or a call           call result): not a table
 *   jmp reg  <- add reg, B             table of int32 entries relative to B
 *              <- B = lea [rip+B]        (gcc/clang: B is the table itself;
 *              <- movsxd/mov reg,          MSVC: B is __ImageBase and the
 *                   [V + idx*4 + D]        load's displacement the table's RVA)
 *              <- V = lea [rip+V]
 *   jmp [V + idx*8 + D], or jmp reg <- mov reg, [V + idx*8 + D]
 *                                      table of absolute 64-bit pointers
 *                                      (32-bit code: [idx*4 + D], 32-bit
 *                                      pointers, as gcc and MSVC emit them)
 *   jmp reg <- lea reg, [rip+x]        a single known target
 *   anything else computed from an     unresolved table
 *     index register
 *
 * Table entries are read while they point inside the function (at most
 * 4096); each becomes an edge from the jmp to its target.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/vec.h"
#include "hook/engine/engine_int.h"

/* ---- general registers ------------------------------------------------- */

static const uint16_t gpr_names[16][5] = {
    { X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH },
    { X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH },
    { X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH },
    { X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH },
    { X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, 0 },
    { X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, 0 },
    { X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, 0 },
    { X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, 0 },
    { X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, 0 },
    { X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, 0 },
    { X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, 0 },
    { X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, 0 },
    { X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, 0 },
    { X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, 0 },
    { X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, 0 },
    { X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, 0 },
};

int hs__gpr(unsigned reg)
{
    if (reg == 0)
        return -1;
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 5; k++)
            if (gpr_names[r][k] == reg)
                return r;
    return -1;
}

/* ---- reading image bytes ----------------------------------------------- */

int hs__read(const hs_func_input *fn, uint64_t addr, void *out, size_t n)
{
    uint64_t lo = fn->addr - fn->gap_before, hi = fn->addr + fn->size + fn->gap_after;
    if (addr >= lo && addr <= hi && n <= hi - addr) {
        memcpy(out, fn->code + (int64_t)(addr - fn->addr), n);
        return 0;
    }
    if (fn->read)
        return fn->read(fn->read_ctx, addr, out, n);
    return -1;
}

static int add_edge(hs_engine *e, uint32_t src, uint32_t dst, uint8_t kind)
{
    if (hs_grow(&e->tgt, &e->tgt_cap, e->tgt_n, sizeof *e->tgt) < 0)
        return -1;
    e->tgt[e->tgt_n].src = src;
    e->tgt[e->tgt_n].dst = dst;
    e->tgt[e->tgt_n].kind = kind;
    e->tgt_n++;
    return 0;
}

/* ---- jump tables -------------------------------------------------------- */

static int writes_gpr(const hs_sinsn *s, int r)
{
    for (int k = 0; k < s->nops; k++)
        if (s->op[k].type == X86_OP_REG && (s->op[k].access & CS_AC_WRITE) && hs__gpr(s->op[k].reg) == r)
            return 1;
    return 0;
}

static int ends_flow(const hs_sinsn *s)
{
    return s->i.kind == HS_I_JMP || s->i.kind == HS_I_JMP_IND || s->i.kind == HS_I_RET ||
           s->i.kind == HS_I_TRAP;
}

/* Index of the last instruction before `k` that writes general register r,
 * in the same straight-line run of code (at most 24 instructions back, not
 * across a jmp/ret, which means the run is entered by a branch); -1 if
 * none is found; -2 if a call comes first that clobbers it. */
static int find_def(const hs_engine *e, int k, int r)
{
    for (int j = k - 1; j >= 0 && j >= k - 24; j--) {
        const hs_sinsn *s = &e->sw[j];
        if (ends_flow(s))
            return -1;
        /* a call clobbers the volatile registers of the Windows x64 ABI */
        if ((s->i.kind == HS_I_CALL || s->i.kind == HS_I_CALL_IND) &&
            (r <= HS_RDX || (r >= HS_R8 && r <= HS_R11)))
            return -2;
        if (writes_gpr(s, r))
            return j;
    }
    return -1;
}

/* If the value of register r before instruction k comes from
 * `lea r, [rip+x]`, store x. When the straight-line run before k does not
 * set r, the nearest earlier write in address order is taken (a table base
 * hoisted out of a loop into a callee-saved register; pops are skipped,
 * they belong to epilogues that end other paths): only a guess, but
 * read_table validates it, since entries read from a wrong base do not
 * point into the function. */
static int lea_value(const hs_engine *e, int k, int r, uint64_t *v)
{
    int d = find_def(e, k, r);
    if (d == -1)
        for (int j = k - 1; j >= 0; j--)
            if (writes_gpr(&e->sw[j], r) && e->sw[j].i.id != X86_INS_POP) {
                d = j;
                break;
            }
    if (d < 0)
        return -1;
    const hs_sinsn *s = &e->sw[d];
    if (s->i.id == X86_INS_LEA && s->i.riprel) {
        *v = s->i.target;
        return 0;
    }
    return -1;
}

/* Does the jmp at k follow a frame teardown (pop, add/lea rsp, leave)? A
 * jump table runs inside the function's frame; a tail call after it. */
static int after_epilogue(const hs_engine *e, int k)
{
    if (k == 0)
        return 0;
    const hs_sinsn *p = &e->sw[k - 1];
    if (p->i.id == X86_INS_POP || p->i.id == X86_INS_LEAVE)
        return 1;
    if ((p->i.id == X86_INS_ADD || p->i.id == X86_INS_LEA) && p->nops >= 1 &&
        p->op[0].type == X86_OP_REG && hs__gpr(p->op[0].reg) == HS_RSP)
        return 1;
    return 0;
}

enum { TBL_NONE, TBL_TAILCALL, TBL_RESOLVED, TBL_UNRESOLVED };

/* Where a resolved table lies (its bytes are data, not code). */
typedef struct table_span {
    uint64_t addr;
    uint32_t bytes;
} table_span;

/* The number of entries of the table indexed by general register `r` in
 * the load at sweep index k: the bounds check `cmp r, N` followed by
 * `ja` (N + 1 entries) or `jae` (N) in the straight-line run before it,
 * also through one register move (`movsxd rax, ecx` after `cmp ecx, N`).
 * 0 when there is none to be seen: the table is then read while its
 * entries point into the function. */
static uint32_t table_bound(const hs_engine *e, int k, int r)
{
    int regs[2] = { r, -1 };
    int cc = -1;
    for (int j = k - 1; j >= 0 && j >= k - 24; j--) {
        const hs_sinsn *s = &e->sw[j];
        if (ends_flow(s) || s->i.kind == HS_I_CALL || s->i.kind == HS_I_CALL_IND)
            return 0;
        if (s->i.kind == HS_I_JCC) {
            if (cc < 0)
                cc = s->i.cc;
            continue;
        }
        if (s->i.id == X86_INS_CMP && s->nops == 2 && s->op[0].type == X86_OP_REG &&
            s->op[1].type == X86_OP_IMM) {
            int g = hs__gpr(s->op[0].reg);
            if (g >= 0 && (g == regs[0] || g == regs[1]) && s->op[1].val >= 0 && s->op[1].val < 4096) {
                if (cc == HS_CC_A)
                    return (uint32_t)s->op[1].val + 1;
                if (cc == HS_CC_AE)
                    return (uint32_t)s->op[1].val;
            }
            return 0;
        }
        if (writes_gpr(s, regs[0]) || (regs[1] >= 0 && writes_gpr(s, regs[1]))) {
            /* the index moved from another register (or widened in place) */
            int from = -1;
            if ((s->i.id == X86_INS_MOV || s->i.id == X86_INS_MOVSXD || s->i.id == X86_INS_MOVZX) &&
                s->nops == 2 && s->op[1].type == X86_OP_REG)
                from = hs__gpr(s->op[1].reg);
            if (from < 0 || regs[1] >= 0 || cc >= 0)
                return 0;
            regs[1] = from;
        }
    }
    return 0;
}

/* Read a table and add its entries as edges from the jmp at `src`.
 * esz 4: target = base + (signed ? sext : zext)(entry); esz 8: absolute.
 * `bound`: entries the bounds check allows (0: unknown). */
static int read_table(hs_engine *e, const hs_func_input *fn, uint32_t src, uint64_t table,
                      int esz, int is_signed, uint64_t base, uint32_t bound, table_span *span)
{
    int n = 0;
    uint32_t max = bound ? bound : 4096;
    for (uint32_t i = 0; i < max; i++) {
        uint64_t t;
        if (esz == 4) {
            uint8_t b[4];
            if (hs__read(fn, table + 4u * i, b, 4) < 0)
                break;
            uint32_t v = hs_le32(b);
            t = base + (is_signed ? (uint64_t)(int64_t)(int32_t)v : (uint64_t)v);
        } else {
            uint8_t b[8];
            if (hs__read(fn, table + 8u * i, b, 8) < 0)
                break;
            t = hs_le32(b) | (uint64_t)hs_le32(b + 4) << 32;
        }
        if (t < fn->addr || t >= fn->addr + fn->size)
            break;
        add_edge(e, src, (uint32_t)(t - fn->addr), HS_I_JMP_IND);
        n++;
    }
    span->addr = table;
    span->bytes = (uint32_t)n * (uint32_t)esz;
    return n > 0 ? TBL_RESOLVED : TBL_UNRESOLVED;
}

/* The addresses of code of `psz`-byte pointers (a 32-bit displacement
 * in 32-bit code is an address, not a signed offset). */
static uint64_t ptr_mask(int psz)
{
    return psz == 4 ? 0xFFFFFFFFu : ~(uint64_t)0;
}

static int resolve_indirect(hs_engine *e, const hs_func_input *fn, int k, table_span *span)
{
    const int psz = e->bits / 8;   /* an absolute pointer's bytes */
    const hs_sinsn *j = &e->sw[k];
    span->addr = 0;
    span->bytes = 0;
    if (j->nops < 1)
        return TBL_UNRESOLVED;
    const hs_op *o = &j->op[0];
    if (o->type == X86_OP_MEM) {
        if (o->reg == X86_REG_RIP || o->index == 0 || after_epilogue(e, k))
            return TBL_TAILCALL;
        uint64_t v = 0;
        if (o->scale != psz || (o->reg && lea_value(e, k, hs__gpr(o->reg), &v) < 0))
            return TBL_UNRESOLVED;
        return read_table(e, fn, j->i.off, (v + (uint64_t)o->val) & ptr_mask(psz), psz, 0, 0,
                          table_bound(e, k, hs__gpr(o->index)), span);
    }
    if (o->type != X86_OP_REG)
        return TBL_UNRESOLVED;
    if (after_epilogue(e, k))
        return TBL_TAILCALL;
    int r = hs__gpr(o->reg);
    int d = find_def(e, k, r);
    if (d < 0)
        return TBL_TAILCALL;   /* set by a call, or before what we see: a function pointer */
    const hs_sinsn *s = &e->sw[d];
    if (s->i.id == X86_INS_LEA && s->i.riprel) {
        uint64_t t = s->i.target;
        if (t >= fn->addr && t < fn->addr + fn->size)
            add_edge(e, j->i.off, (uint32_t)(t - fn->addr), HS_I_JMP_IND);
        return TBL_RESOLVED;
    }
    if ((s->i.id == X86_INS_MOV || s->i.id == X86_INS_MOVSXD) && s->nops == 2 &&
        s->op[1].type == X86_OP_MEM && s->op[1].index == 0)
        return TBL_TAILCALL;   /* a pointer loaded from a fixed slot */
    if (s->i.id == X86_INS_MOV && s->nops == 2 && s->op[1].type == X86_OP_REG)
        return TBL_TAILCALL;   /* a pointer passed in a register */
    if (s->i.id == X86_INS_MOV && s->nops == 2 && s->op[1].type == X86_OP_MEM && s->op[1].scale == psz &&
        s->op[1].size == psz) {
        uint64_t v = 0;
        if (s->op[1].reg && lea_value(e, d, hs__gpr(s->op[1].reg), &v) < 0)
            return TBL_UNRESOLVED;
        return read_table(e, fn, j->i.off, (v + (uint64_t)s->op[1].val) & ptr_mask(psz), psz, 0, 0,
                          table_bound(e, d, hs__gpr(s->op[1].index)), span);
    }
    if (s->i.id == X86_INS_ADD && s->nops == 2 && s->op[1].type == X86_OP_REG) {
        uint64_t base, v;
        int x = hs__gpr(s->op[1].reg);
        if (x < 0 || lea_value(e, d, x, &base) < 0)
            return TBL_UNRESOLVED;
        int l = find_def(e, d, r);
        if (l < 0)
            return TBL_UNRESOLVED;
        const hs_sinsn *ld = &e->sw[l];
        if ((ld->i.id != X86_INS_MOVSXD && ld->i.id != X86_INS_MOV) || ld->nops != 2 ||
            ld->op[1].type != X86_OP_MEM || ld->op[1].size != 4 || ld->op[1].scale != 4 ||
            ld->op[1].index == 0)
            return TBL_UNRESOLVED;
        v = 0;
        if (ld->op[1].reg && lea_value(e, l, hs__gpr(ld->op[1].reg), &v) < 0)
            return TBL_UNRESOLVED;
        return read_table(e, fn, j->i.off, v + (uint64_t)ld->op[1].val, 4,
                          ld->i.id == X86_INS_MOVSXD, base, table_bound(e, l, hs__gpr(ld->op[1].index)),
                          span);
    }
    return TBL_UNRESOLVED;
}

/* Every branch edge of the swept instructions (direct branches inside the
 * function, and the entries of the jump tables resolved) into e->tgt, and
 * what the indirect jumps are. */
static void collect_targets(hs_engine *e, const hs_func_input *fn, hs_indirect_info *ii)
{
    memset(ii, 0, sizeof *ii);
    e->tgt_n = 0;
    for (size_t k = 0; k < e->sw_n; k++) {
        const hs_insn *in = &e->sw[k].i;
        switch (in->kind) {
        case HS_I_JMP: case HS_I_JCC: case HS_I_JCXZ_LOOP: case HS_I_CALL:
            if (in->target >= fn->addr && in->target < fn->addr + fn->size)
                add_edge(e, in->off, (uint32_t)(in->target - fn->addr), in->kind);
            break;
        default:
            break;
        }
    }
    for (size_t k = 0; k < e->sw_n; k++) {
        if (e->sw[k].i.kind != HS_I_JMP_IND)
            continue;
        ii->n_indirect++;
        table_span span;
        switch (resolve_indirect(e, fn, (int)k, &span)) {
        case TBL_TAILCALL: ii->n_tailcalls++; break;
        case TBL_RESOLVED: ii->n_tables++; break;
        default: ii->n_unresolved++; break;
        }
    }
}

/* ---- the sweep ----------------------------------------------------------- */

/* e->map: per byte of the function */
enum { M_START = 1, M_BODY = 2 };

static int push_u32(uint32_t **a, size_t *n, size_t *cap, uint32_t v)
{
    if (hs_grow(a, cap, *n, sizeof **a) < 0)
        return -1;
    (*a)[(*n)++] = v;
    return 0;
}

static int cmp_key(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return *x < *y ? -1 : *x > *y;
}

/* Sort e->sw by offset: through an array of (offset, index) keys, so that
 * each (large) instruction record moves once; nothing to do when the flow
 * decoded them in order already. */
static int sort_sw(hs_engine *e)
{
    size_t n = e->sw_n, k;
    for (k = 1; k < n && e->sw[k - 1].i.off < e->sw[k].i.off; k++)
        ;
    if (k >= n)
        return 0;
    if (e->keys_cap < n) {
        uint64_t *kk = realloc(e->keys, n * sizeof *kk);
        if (!kk)
            return -1;
        e->keys = kk;
        e->keys_cap = n;
    }
    if (e->sw2_cap < n) {
        hs_sinsn *ss = realloc(e->sw2, n * sizeof *ss);
        if (!ss)
            return -1;
        e->sw2 = ss;
        e->sw2_cap = n;
    }
    for (k = 0; k < n; k++)
        e->keys[k] = (uint64_t)e->sw[k].i.off << 32 | k;
    qsort(e->keys, n, sizeof *e->keys, cmp_key);
    for (k = 0; k < n; k++)
        e->sw2[k] = e->sw[(uint32_t)e->keys[k]];
    hs_sinsn *t = e->sw;
    size_t tc = e->sw_cap;
    e->sw = e->sw2;
    e->sw_cap = e->sw2_cap;
    e->sw2 = t;
    e->sw2_cap = tc;
    return 0;
}

/* Decode at `off` and append to e->sw, marking the map, unless the
 * instruction would reach past `end`. Returns 0, 1 (past `end`: not
 * taken), or -1 if it does not decode (or there is no memory). */
static int take(hs_engine *e, const hs_func_input *fn, uint32_t off, uint32_t end, hs_sinsn **out)
{
    if (hs_grow(&e->sw, &e->sw_cap, e->sw_n, sizeof *e->sw) < 0)
        return -1;
    hs_sinsn *s = &e->sw[e->sw_n];
    if (hs__decode(e, fn, (int32_t)off, (int32_t)fn->size, &s->i, s) < 0)
        return -1;
    if (off + s->i.len > end)
        return 1;
    e->sw_n++;
    e->map[off] |= M_START;
    for (uint32_t b = off + 1; b < off + s->i.len; b++)
        e->map[b] |= M_BODY;
    *out = s;
    return 0;
}

static int inside(const hs_func_input *fn, uint64_t a)
{
    return a >= fn->addr && a < fn->addr + fn->size;
}

/* Follow the flow from `off`: fall-through, and direct branches inside the
 * function (pushed as further work). The instruction after a call is left
 * for later (e->weak): a call that does not return may be followed by data. */
static int descend(hs_engine *e, const hs_func_input *fn, uint32_t off, int *indirect)
{
    while (off < fn->size && !(e->map[off] & M_START)) {
        hs_sinsn *s;
        if (take(e, fn, off, fn->size, &s) < 0)
            return -1;
        const hs_insn in = s->i;
        if (in.riprel && in.kind != HS_I_JMP && in.kind != HS_I_JCC && inside(fn, in.target))
            push_u32(&e->data, &e->data_n, &e->data_cap, (uint32_t)(in.target - fn->addr));
        switch (in.kind) {
        case HS_I_JMP: case HS_I_JCC: case HS_I_JCXZ_LOOP: case HS_I_CALL:
            if (inside(fn, in.target))
                push_u32(&e->work, &e->work_n, &e->work_cap, (uint32_t)(in.target - fn->addr));
            break;
        default:
            break;
        }
        if (in.kind == HS_I_JMP_IND)
            *indirect = 1;
        if (in.kind == HS_I_JMP || in.kind == HS_I_JMP_IND || in.kind == HS_I_RET || in.kind == HS_I_TRAP)
            return 0;
        if (in.kind == HS_I_CALL || in.kind == HS_I_CALL_IND) {
            push_u32(&e->weak, &e->weak_n, &e->weak_cap, off + in.len);
            return 0;
        }
        off += in.len;
    }
    return 0;
}

/* Is `off` (not yet decoded) in data: at or after a data start, with no
 * decoded instruction in between? */
static int in_data(const hs_engine *e, uint32_t off)
{
    for (size_t i = 0; i < e->data_n; i++) {
        uint32_t d = e->data[i];
        if (d > off)
            continue;
        uint32_t b = d;
        while (b <= off && e->map[b] == 0)
            b++;
        if (b > off)
            return 1;
    }
    return 0;
}

/* The first data start in [a, b), or b. */
static uint32_t data_in(const hs_engine *e, uint32_t a, uint32_t b)
{
    uint32_t r = b;
    for (size_t i = 0; i < e->data_n; i++)
        if (e->data[i] >= a && e->data[i] < r)
            r = e->data[i];
    return r;
}

int hs__sweep_linear(hs_engine *e, const hs_func_input *fn, uint32_t upto, hs_indirect_info *ii)
{
    int rc = 0;
    e->sw_n = 0;
    if (upto > fn->size)
        upto = fn->size;
    uint32_t pos = 0;
    while (pos < upto) {
        if (hs_grow(&e->sw, &e->sw_cap, e->sw_n, sizeof *e->sw) < 0) {
            rc = -1;
            break;
        }
        hs_sinsn *s = &e->sw[e->sw_n];
        if (hs__decode(e, fn, (int32_t)pos, (int32_t)fn->size, &s->i, s) < 0) {
            rc = -1;
            break;
        }
        e->sw_n++;
        pos += s->i.len;
    }
    collect_targets(e, fn, ii);
    return rc;
}

int hs__sweep(hs_engine *e, const hs_func_input *fn, hs_indirect_info *ii)
{
    int rc = 0;
    e->sw_n = 0;
    e->tgt_n = 0;
    e->work_n = e->weak_n = e->data_n = 0;
    memset(ii, 0, sizeof *ii);
    if (fn->size > e->map_cap) {
        uint8_t *m = realloc(e->map, fn->size);
        if (!m)
            return -1;
        e->map = m;
        e->map_cap = fn->size;
    }
    memset(e->map, 0, fn->size);
    push_u32(&e->work, &e->work_n, &e->work_cap, 0);
    int indirect = 0;      /* an indirect jump was decoded since the tables were last read */
    for (;;) {
        while (e->work_n > 0)
            if (descend(e, fn, e->work[--e->work_n], &indirect) < 0)
                rc = -1;
        /* the jump tables of what is new: their entries are more flow, the
         * tables themselves data */
        if (indirect) {
            indirect = 0;
            if (sort_sw(e) < 0)
                rc = -1;
            for (size_t k = 0; k < e->sw_n; k++) {
                if (e->sw[k].i.kind != HS_I_JMP_IND)
                    continue;
                table_span span;
                e->tgt_n = 0;
                if (resolve_indirect(e, fn, (int)k, &span) == TBL_RESOLVED && span.bytes &&
                    inside(fn, span.addr))
                    push_u32(&e->data, &e->data_n, &e->data_cap, (uint32_t)(span.addr - fn->addr));
                for (size_t t = 0; t < e->tgt_n; t++)
                    if (!(e->map[e->tgt[t].dst] & M_START))
                        push_u32(&e->work, &e->work_n, &e->work_cap, e->tgt[t].dst);
            }
            e->tgt_n = 0;
            if (e->work_n > 0)
                continue;
        }
        /* then what follows calls, unless it is data */
        while (e->weak_n > 0) {
            uint32_t off = e->weak[--e->weak_n];
            if (off < fn->size && !(e->map[off] & M_START) && !in_data(e, off))
                push_u32(&e->work, &e->work_n, &e->work_cap, off);
        }
        if (e->work_n == 0)
            break;
    }
    /* what the flow does not reach (exception landing pads, or data): decoded
     * linearly up to the first data start in it */
    for (uint32_t a = 0; a < fn->size;) {
        if (e->map[a]) {
            a++;
            continue;
        }
        uint32_t b = a;
        while (b < fn->size && e->map[b] == 0)
            b++;
        uint32_t stop = data_in(e, a, b);
        for (uint32_t pos = a; pos < stop;) {
            hs_sinsn *s;
            int t = take(e, fn, pos, b, &s);
            if (t < 0)
                rc = -1;
            if (t != 0)
                break;   /* undecodable, or runs into decoded code: not code */
            pos += s->i.len;
        }
        a = b;
    }
    if (sort_sw(e) < 0)
        rc = -1;
    collect_targets(e, fn, ii);
    return rc;
}
