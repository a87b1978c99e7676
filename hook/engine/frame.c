/*
 * hook/engine/frame.c - HS_ANALYZE_FULL: what a function does with its caller's
 * stack (how many incoming argument slots it touches, whether it takes
 * their address, spills varargs, probes the stack).
 *
 * The instructions of the sweep are followed along the control flow from
 * the entry (direct branches and resolved jump tables), with, for every
 * general register, what is known of its value:
 *
 *   STACK(o)   entry_rsp + o     (rsp itself starts as STACK(0))
 *   CONST(c)   the constant c    (for `mov eax, N; call __chkstk; sub rsp, rax`)
 *   unknown
 *
 * push/pop/sub/add/lea/mov/leave keep rsp and frame registers (rbp, or
 * rax/r11 in `mov rax, rsp; mov [rax+8], rbx` prologues) known. A memory
 * operand based on a STACK register at entry offset o >= 8 touches
 * incoming slot (o - 8) / 8: slots 0-3 are the home area, slot 4 is the
 * fifth argument. Every instruction is processed once, with the state of
 * the first path that reaches it (compilers keep rsp the same on every
 * path to an instruction).
 *
 * Jumps that leave the function are its exits (hs_analyze_exits): a tail
 * call leaves with rsp back at its entry value; a jump that keeps the
 * frame (into gcc's .cold part of the function) is followed with the same
 * state, through fn->part_at, as if that code were the function's own.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/search.h"
#include "hook/base/vec.h"
#include "hook/engine/engine_int.h"

enum { V_UNKNOWN = 0, V_STACK, V_CONST };

typedef struct rval {
    int32_t kind;
    int64_t v;
} rval;

typedef struct fstate {
    rval r[16];
} fstate;

typedef struct facts {
    int lost;            /* an rsp-based access when rsp was unknown */
    int max_slot;        /* highest incoming slot touched, -1 if none */
    int args_addr;       /* address of an incoming slot taken */
    int spill_r9;        /* r9 stored to slot 3 */
    int lea_home;        /* address of home slot 1..3 taken (va_start) */
    int uses_4k;         /* an immediate 0x1000 */
    int sub_rsp_reg;     /* rsp lowered by a register amount */
    int moves_rsp;       /* rsp left its entry value, or a call was made */
} facts;

typedef struct work {
    int idx;
    fstate st;
} work;

static int find_index(const hs_engine *e, uint32_t off)
{
    size_t lo = HS_LOWER_BOUND_U32(e->sw, e->sw_n, i.off, off);
    return lo < e->sw_n && e->sw[lo].i.off == off ? (int)lo : -1;
}

static int reg64(unsigned reg) { return hs__gpr(reg); }

static int is_reg64(unsigned reg)
{
    switch (reg) {
    case X86_REG_RAX: case X86_REG_RBX: case X86_REG_RCX: case X86_REG_RDX:
    case X86_REG_RSP: case X86_REG_RBP: case X86_REG_RSI: case X86_REG_RDI:
    case X86_REG_R8: case X86_REG_R9: case X86_REG_R10: case X86_REG_R11:
    case X86_REG_R12: case X86_REG_R13: case X86_REG_R14: case X86_REG_R15:
        return 1;
    }
    return 0;
}

static int cmp_edge(const void *a, const void *b)
{
    const hs_edge *x = a, *y = b;
    return x->src < y->src ? -1 : x->src > y->src;
}

/* A memory operand: record what it touches in the incoming area. */
static void note_mem(const fstate *st, const hs_op *o, int is_lea, int dst_reg, const hs_sinsn *s,
                     facts *f)
{
    if (o->reg == 0 || o->reg == X86_REG_RIP)
        return;
    int b = reg64(o->reg);
    if (b < 0)
        return;
    if (st->r[b].kind != V_STACK) {
        if (b == HS_RSP)
            f->lost = 1;
        return;
    }
    int64_t off = st->r[b].v + o->val;
    if (off < 8 && !o->index)
        return;
    if (is_lea) {
        /* a frame pointer may point anywhere; any other register holding
         * the address of an incoming slot lets the function walk them */
        if (dst_reg != HS_RBP && off >= 8)
            f->args_addr = 1;
        if (dst_reg != HS_RBP && off >= 0x10 && off <= 0x20)
            f->lea_home = 1;
        return;
    }
    if (o->index) {
        /* an indexed walk over the argument area: its extent is unknown */
        if (off >= 8)
            f->args_addr = 1;
        return;
    }
    int slot = (int)((off - 8) / 8);
    if (slot > f->max_slot)
        f->max_slot = slot;
    if (off == 0x20 && s->nops == 2 && s->op[1].type == X86_OP_REG && s->op[1].reg == X86_REG_R9)
        f->spill_r9 = 1;
}

/* Apply one instruction to the state (`next`: the one after it, or NULL). */
static void step(const hs_sinsn *s, const hs_sinsn *next, fstate *st, facts *f)
{
    unsigned id = s->i.id;
    rval *rsp = &st->r[HS_RSP];

    for (int j = 0; j < s->nops; j++) {
        if (s->op[j].type == X86_OP_IMM && s->op[j].val == 0x1000)
            f->uses_4k = 1;
        if (s->op[j].type == X86_OP_MEM)
            note_mem(st, &s->op[j], id == X86_INS_LEA,
                     (id == X86_INS_LEA && s->op[0].type == X86_OP_REG) ? reg64(s->op[0].reg) : -1, s, f);
    }

    const hs_op *d = s->nops >= 1 ? &s->op[0] : NULL;
    const hs_op *src = s->nops >= 2 ? &s->op[1] : NULL;
    int dr = d && d->type == X86_OP_REG ? reg64(d->reg) : -1;

    switch (id) {
    case X86_INS_PUSH:
    case X86_INS_PUSHFQ:
        if (rsp->kind == V_STACK)
            rsp->v -= 8;
        return;
    case X86_INS_POP:
    case X86_INS_POPFQ:
        if (rsp->kind == V_STACK)
            rsp->v += 8;
        if (dr >= 0 && dr != HS_RSP)
            st->r[dr].kind = V_UNKNOWN;
        return;
    case X86_INS_LEAVE:
        *rsp = st->r[HS_RBP];
        if (rsp->kind == V_STACK)
            rsp->v += 8;
        st->r[HS_RBP].kind = V_UNKNOWN;
        return;
    case X86_INS_CALL:
        /* the callee may clobber the volatile registers; keep rax for the
         * stack probe idiom `mov eax, N; call __chkstk; sub rsp, rax` */
        for (int r = 0; r < 16; r++)
            if (r <= HS_RDX || (r >= HS_R8 && r <= HS_R11))
                if (!(r == HS_RAX && next && next->i.id == X86_INS_SUB && next->nops == 2 &&
                      next->op[0].type == X86_OP_REG && next->op[0].reg == X86_REG_RSP))
                    st->r[r].kind = V_UNKNOWN;
        return;
    default:
        break;
    }

    if (dr < 0)
        return;   /* no general register written (memory destination) */
    if (!(d->access & CS_AC_WRITE) && id != X86_INS_LEA && id != X86_INS_MOV)
        return;   /* cmp, test: only read */

    rval nv = { V_UNKNOWN, 0 };
    int full = is_reg64(d->reg);
    if ((id == X86_INS_ADD || id == X86_INS_SUB) && src && full) {
        rval a = st->r[dr];
        int64_t amount = 0;
        int known = 0;
        if (src->type == X86_OP_IMM) {
            amount = src->val;
            known = 1;
        } else if (src->type == X86_OP_REG && reg64(src->reg) >= 0 &&
                   st->r[reg64(src->reg)].kind == V_CONST) {
            amount = st->r[reg64(src->reg)].v;
            known = 1;
        }
        if (dr == HS_RSP && id == X86_INS_SUB && src->type == X86_OP_REG)
            f->sub_rsp_reg = 1;
        if (known && (a.kind == V_STACK || a.kind == V_CONST)) {
            /* the machine's arithmetic: it wraps */
            nv = a;
            nv.v = (int64_t)(id == X86_INS_ADD ? (uint64_t)nv.v + (uint64_t)amount : (uint64_t)nv.v - (uint64_t)amount);
        }
    } else if (id == X86_INS_LEA && src && src->type == X86_OP_MEM && full) {
        int b = src->reg ? reg64(src->reg) : -1;
        if (b >= 0 && !src->index && st->r[b].kind == V_STACK) {
            nv.kind = V_STACK;
            nv.v = (int64_t)((uint64_t)st->r[b].v + (uint64_t)src->val);
        }
    } else if (id == X86_INS_MOV && src) {
        if (src->type == X86_OP_REG && full && is_reg64(src->reg)) {
            nv = st->r[reg64(src->reg)];
        } else if (src->type == X86_OP_IMM) {
            nv.kind = V_CONST;
            nv.v = full ? src->val : (int64_t)(uint32_t)src->val;
        }
    } else if (id == X86_INS_MOVABS && src && src->type == X86_OP_IMM) {
        nv.kind = V_CONST;
        nv.v = src->val;
    }
    st->r[dr] = nv;
}

static void add_exit(hs_engine *e, const hs_exit *x)
{
    if (hs_grow(&e->exits, &e->exits_cap, e->exits_n, sizeof *e->exits) == 0)
        e->exits[e->exits_n++] = *x;
}

static int32_t rsp_of(const fstate *st)
{
    const rval *r = &st->r[HS_RSP];
    if (r->kind == V_STACK && r->v > INT32_MIN && r->v <= INT32_MAX)
        return (int32_t)r->v;
    return HS_EXIT_RSP_UNKNOWN;
}

#define FOLLOW_MAX 512   /* instructions followed outside one function */

/* A jump out of the function that keeps its frame (into its .cold part):
 * follow that code along its flow from `target` with the state `st0`,
 * inside the piece of code that contains each target (fn->part_at), and
 * note what it touches of the incoming area. A path ends where it returns
 * into the function, returns, traps, or leaves with rsp back at its entry
 * value (an exit: a tail call). Returns 0, or -1 when it cannot be
 * followed (no part_at, a jump table, too much code). */
static int follow(hs_engine *e, const hs_func_input *fn, uint64_t target, const fstate *st0, facts *f)
{
    if (!fn->part_at)
        return -1;
    struct { uint64_t addr; fstate st; } wl[32];
    uint64_t seen[FOLLOW_MAX];
    int nw = 0, nseen = 0;
    wl[nw].addr = target;
    wl[nw++].st = *st0;
    while (nw > 0) {
        uint64_t a = wl[--nw].addr;
        fstate st = wl[nw].st;
        uint64_t lo, hi;
        if (fn->part_at(fn->part_ctx, a, &lo, &hi) < 0 || a < fn->image_lo || hi > fn->image_hi)
            return -1;
        for (;;) {
            if (a >= fn->addr && a < fn->addr + fn->size)
                break;   /* back in the function: its own analysis covers that */
            if (a >= hi)
                break;   /* ran past its piece: after a call that does not return */
            int dup = 0;
            for (int i = 0; i < nseen && !dup; i++)
                dup = seen[i] == a;
            if (dup)
                break;
            if (nseen == FOLLOW_MAX)
                return -1;
            seen[nseen++] = a;
            hs_sinsn s;
            /* entry-relative: the part may lie before the function */
            int64_t off = (int64_t)a - (int64_t)fn->addr, end = (int64_t)hi - (int64_t)fn->addr;
            if (off < INT32_MIN || end > INT32_MAX ||
                hs__decode(e, fn, (int32_t)off, (int32_t)end, &s.i, &s) < 0)
                return -1;
            step(&s, NULL, &st, f);
            const hs_insn *in = &s.i;
            int32_t rsp = rsp_of(&st);
            if (in->kind == HS_I_RET || in->kind == HS_I_TRAP)
                break;
            if (in->kind == HS_I_JMP_IND) {
                if (rsp != 0)
                    return -1;
                hs_exit x = { 0, in->riprel ? in->target : 0, 0, (int32_t)off };
                add_exit(e, &x);
                break;
            }
            if (in->kind == HS_I_JMP || in->kind == HS_I_JCC || in->kind == HS_I_JCXZ_LOOP) {
                uint64_t t = in->target;
                if (t >= fn->addr && t < fn->addr + fn->size) {
                    /* back into the function */
                } else if (rsp == 0) {
                    hs_exit x = { t, 0, 0, (int32_t)off };
                    add_exit(e, &x);
                } else if (rsp == HS_EXIT_RSP_UNKNOWN || nw == (int)(sizeof wl / sizeof wl[0])) {
                    return -1;
                } else {
                    wl[nw].addr = t;
                    wl[nw++].st = st;
                }
                if (in->kind == HS_I_JMP)
                    break;
            }
            a += in->len;
        }
    }
    return 0;
}

/* Does the jump at sweep index k leave the function? A tail call (rsp
 * back at its entry value), or a jump whose target cannot be followed, is
 * recorded in e->exits; a direct jump that keeps the frame is followed. */
static void note_exit(hs_engine *e, const hs_func_input *fn, int k, const fstate *st, facts *f)
{
    const hs_insn *in = &e->sw[k].i;
    hs_exit x = { 0, 0, rsp_of(st), (int32_t)in->off };
    switch (in->kind) {
    case HS_I_JMP: case HS_I_JCC: case HS_I_JCXZ_LOOP:
        if (in->target >= fn->addr && in->target < fn->addr + fn->size)
            return;
        x.target = in->target;
        if (x.rsp != 0 && x.rsp != HS_EXIT_RSP_UNKNOWN) {
            if (follow(e, fn, in->target, st, f) < 0)
                f->lost = 1;
            return;
        }
        break;
    case HS_I_JMP_IND:
        /* a resolved jump table branches inside the function */
        for (size_t t = 0; t < e->tgt_n; t++)
            if (e->tgt[t].src == in->off && e->tgt[t].kind == HS_I_JMP_IND)
                return;
        if (in->riprel)
            x.slot = in->target;
        break;
    default:
        return;
    }
    add_exit(e, &x);
}

size_t hs_analyze_exits(const hs_engine *e, const hs_exit **out)
{
    *out = e->exits;
    return e->exits_n;
}

static int ends_path(const hs_insn *in)
{
    return in->kind == HS_I_JMP || in->kind == HS_I_JMP_IND || in->kind == HS_I_RET || in->kind == HS_I_TRAP;
}

/* Is rax read before it is written, from the entry (straight line)? */
static int rax_is_input(const hs_engine *e)
{
    for (size_t k = 0; k < e->sw_n && k < 32; k++) {
        const hs_sinsn *s = &e->sw[k];
        for (int j = 0; j < s->nops; j++) {
            const hs_op *o = &s->op[j];
            if (o->type == X86_OP_MEM && (reg64(o->reg) == HS_RAX || reg64(o->index) == HS_RAX))
                return 1;
            if (o->type == X86_OP_REG && reg64(o->reg) == HS_RAX && (o->access & CS_AC_READ) &&
                !(s->i.id == X86_INS_XOR && s->nops == 2 && s->op[1].type == X86_OP_REG &&
                  s->op[1].reg == s->op[0].reg))
                return 1;
        }
        for (int j = 0; j < s->nops; j++)
            if (s->op[j].type == X86_OP_REG && reg64(s->op[j].reg) == HS_RAX && (s->op[j].access & CS_AC_WRITE))
                return 0;
        if (ends_path(&s->i) || s->i.kind == HS_I_CALL || s->i.kind == HS_I_CALL_IND || s->i.kind == HS_I_JCC)
            return 0;
    }
    return 0;
}

void hs__frame_analyze(hs_engine *e, const hs_func_input *fn, int complete, hs_plan *plan)
{
    facts f = { 0, -1, 0, 0, 0, 0, 0, 0 };
    size_t n = e->sw_n;
    e->exits_n = 0;

    /* scratch: visited flags + a worklist of (index, state) */
    size_t need = n + (e->tgt_n + 1) * sizeof(work);
    if (need > e->frame_cap) {
        void *p = realloc(e->frame_scratch, need);
        if (!p) {
            plan->flags |= HS_FN_NO_FRAME_INFO | HS_FN_MOVES_RSP;
            plan->stack_arg_slots = -1;
            return;
        }
        e->frame_scratch = p;
        e->frame_cap = need;
    }
    if (e->tgt_n)   /* (qsort wants a buffer even for no element) */
        qsort(e->tgt, e->tgt_n, sizeof *e->tgt, cmp_edge);
    work *wl = e->frame_scratch;
    uint8_t *visited = (uint8_t *)(wl + e->tgt_n + 1);
    memset(visited, 0, n);

    size_t nw = 0;
    if (n > 0) {
        memset(&wl[0], 0, sizeof wl[0]);
        wl[0].idx = 0;
        wl[0].st.r[HS_RSP].kind = V_STACK;
        nw = 1;
    }
    while (nw > 0) {
        work w = wl[--nw];
        int k = w.idx;
        while (k >= 0 && k < (int)n && !visited[k]) {
            visited[k] = 1;
            const hs_insn *in = &e->sw[k].i;
            step(&e->sw[k], k + 1 < (int)n ? &e->sw[k + 1] : NULL, &w.st, &f);
            if (in->kind == HS_I_CALL || in->kind == HS_I_CALL_IND ||
                (in->kind != HS_I_RET && (w.st.r[HS_RSP].kind != V_STACK || w.st.r[HS_RSP].v != 0)))
                f.moves_rsp = 1;
            note_exit(e, fn, k, &w.st, &f);
            /* branch targets inside the function get the state after the
             * branch (a relative branch does not change registers) */
            size_t lo = HS_LOWER_BOUND_U32(e->tgt, e->tgt_n, src, in->off);
            for (size_t t = lo; t < e->tgt_n && e->tgt[t].src == in->off; t++) {
                const hs_edge *g = &e->tgt[t];
                if (g->kind == HS_I_CALL)
                    continue;
                int ti = find_index(e, g->dst);
                if (ti >= 0 && !visited[ti] && nw < e->tgt_n + 1) {
                    wl[nw].idx = ti;
                    wl[nw].st = w.st;
                    nw++;
                }
            }
            if (ends_path(in))
                break;
            /* the next instruction (data or an overlap may come between) */
            uint32_t next = in->off + in->len;
            if (k + 1 < (int)n && e->sw[k + 1].i.off == next)
                k++;
            else
                k = find_index(e, next);
        }
    }

    if (rax_is_input(e) && (f.uses_4k || f.sub_rsp_reg))
        plan->flags |= HS_FN_STACK_PROBE;
    if (f.args_addr)
        plan->flags |= HS_FN_ARGS_ADDRESS;
    /* va_start in a function with fewer than 4 named arguments: the
     * variadic register arguments (at least r9) are spilled to their home
     * slots and the address of the first of them is taken */
    if (f.lea_home && f.spill_r9)
        plan->flags |= HS_FN_VARARGS;
    if (f.moves_rsp || f.lost)
        plan->flags |= HS_FN_MOVES_RSP;
    if (f.lost || !complete || (plan->flags & HS_FN_UNRESOLVED_TABLE)) {
        plan->flags |= HS_FN_NO_FRAME_INFO;
        plan->stack_arg_slots = -1;
    } else {
        plan->stack_arg_slots = f.max_slot + 1 > 4 ? f.max_slot + 1 : 4;
    }
}
