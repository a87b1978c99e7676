/*
 * hook/unwind/unwinder.c - the x64 unwinder (see unwinder.h).
 *
 * Unwind codes (UNWIND_INFO version 1 and 2), and what undoing each does:
 *
 *   0 PUSH_NONVOL      reg = [rsp]; rsp += 8
 *   1 ALLOC_LARGE      rsp += size (info 0: next slot * 8; info 1: next two slots)
 *   2 ALLOC_SMALL      rsp += info * 8 + 8
 *   3 SET_FPREG        rsp = frame register - frame offset * 16
 *   4 SAVE_NONVOL      reg = [frame base + next slot * 8]
 *   5 SAVE_NONVOL_FAR  reg = [frame base + next two slots]
 *   6 EPILOG (v2)      nothing (epilogues are recognised from the code)
 *   8 SAVE_XMM128      nothing here (xmm registers are not needed); 9 _FAR too
 *  10 PUSH_MACHFRAME   rip = [rsp (+8 with an error code)], rsp = [that + 24]
 *
 * In a prologue only the codes of instructions already executed (code
 * offset <= pc's offset) are undone. The frame base of the saves is the
 * frame register minus its offset once the frame register is set, else
 * rsp (the stack pointer does not move in a body without one).
 *
 * A step out of code with a function entry is planned (the epilogue
 * recognised in the code, or the codes that apply decoded, as operations
 * on the registers and the stack), then the plan is run: the same plan
 * run again later is the same step without the decoding.
 */
#include "hook/unwind/unwinder.h"

#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/search.h"
#include "hook/pe/unwind_info.h"

#define MAX_CHAIN 32
#define MAX_EMULATED 64


/* The stack as a walk sees it: the copy, and the values the emulated
 * code pushed (they may lie below the copy, or replace what it holds). */
#define MAX_OVERLAY 16
typedef struct view {
    const hs_uw_stack *st;
    uint64_t ov_addr[MAX_OVERLAY], ov_val[MAX_OVERLAY];
    int nov;
} view;

/* A value read from the stack: 0, or why not. (Inline: a plan's run is
 * little more than these reads.) */
static inline int stack_read(const view *vw, uint64_t addr, uint64_t *v)
{
    for (int i = vw->nov; i-- > 0;) {
        if (vw->ov_addr[i] == addr) {
            *v = vw->ov_val[i];
            return 0;
        }
    }
    const uint8_t *p;
    int err = hs_uw_stack_at(vw->st, addr, 8, &p);
    if (err)
        return err;
    memcpy(v, p, 8);
    return 0;
}

/* Up to `want` code bytes at pc, page by page so that the end of a
 * readable range only shortens the read; returns how many, *p pointing at
 * them (in buf, or where the environment's view has them). */
static size_t code_bytes(const hs_uw_env *env, uint64_t pc, uint8_t *buf, size_t want, const uint8_t **p)
{
    *p = env->view ? env->view(env->ctx, pc, want) : NULL;
    if (*p)
        return want;
    *p = buf;
    size_t got = 0;
    while (got < want) {
        uint64_t at = pc + got;
        size_t chunk = 4096 - (size_t)(at & 4095);
        if (chunk > want - got)
            chunk = want - got;
        if (env->read(env->ctx, at, buf + got, chunk) < 0)
            break;
        got += chunk;
    }
    return got;
}


/* The unwind info of one entry, read through the environment into a
 * buffer of its own (the decoded info points into it). */
typedef struct uinfo {
    hs_unwind u;
    uint8_t buf[4 + 256 * 2 + 12];
} uinfo;

static int read_uinfo(const hs_uw_env *env, uint64_t base, uint32_t rva, uinfo *ui)
{
    const uint8_t *h = env->view ? env->view(env->ctx, base + rva, 4) : NULL;
    if (!h) {
        if (env->read(env->ctx, base + rva, ui->buf, 4) < 0)
            return -1;
        h = ui->buf;
    }
    size_t len = hs_unwind_info_size(h[2]);
    /* without a handler or a chained entry, nothing follows the codes */
    if (!((h[0] >> 3) & (HS_UNW_CHAININFO | HS_UNW_EHANDLER | HS_UNW_UHANDLER)))
        len -= 12;
    const uint8_t *all = env->view ? env->view(env->ctx, base + rva, len) : NULL;
    if (!all) {
        /* (h may be gone with the view's last call: read it all again) */
        if (env->read(env->ctx, base + rva, ui->buf, len) < 0)
            return -1;
        all = ui->buf;
    }
    return hs_unwind_parse(all, len, &ui->u);
}

/* The operations of a plan (hs_uw_plan), in the order they run; `reg` is
 * the high 4 bits of op[i], `arg` arg[i]:
 *   POPS      reg (1..8) pops: [rsp] into the register of each 4 bits of
 *             arg, lowest first, rsp += 8 each (the value of a pop into
 *             rsp is dropped: an epilogue's rsp is what its pops leave)
 *   POP_RSP   rsp = [rsp] + 8 (PUSH_NONVOL of rsp, undone)
 *   ADD       rsp += arg
 *   SET_RSP   rsp = reg + (int32)arg
 *   FRAME     the frame base of the saves = reg + (int32)arg
 *   LOAD      reg = [frame base + arg]
 *   MACHFRAME rip = [rsp + arg], rsp = [rsp + arg + 24]: no return address
 *             to pop after the plan
 *   BAD       unwind data that cannot be followed: HS_UW_BAD
 */
enum { OP_POPS, OP_POP_RSP, OP_ADD, OP_SET_RSP, OP_FRAME, OP_LOAD, OP_MACHFRAME, OP_BAD };

/* Append an operation: 0, or -1 when the plan is full. */
static int plan_op(hs_uw_plan *p, int op, int reg, uint32_t arg)
{
    if (p->n == HS_UW_PLAN_OPS)
        return -1;
    p->op[p->n] = (uint8_t)(op | reg << 4);
    p->arg[p->n++] = arg;
    return 0;
}

/* A pop of reg, into the plan's last POPS while it has room. */
static int plan_pop(hs_uw_plan *p, int reg)
{
    uint8_t *last = p->n ? &p->op[p->n - 1] : NULL;
    if (last && (*last & 15) == OP_POPS && (*last >> 4) < 8) {
        int k = *last >> 4;
        p->arg[p->n - 1] |= (uint32_t)reg << (4 * k);
        *last = (uint8_t)(OP_POPS | (k + 1) << 4);
        return 0;
    }
    return plan_op(p, OP_POPS, 1, (uint32_t)reg);
}

static int plan_add(hs_uw_plan *p, uint64_t n)
{
    if (p->n && p->op[p->n - 1] == OP_ADD && n <= UINT32_MAX - p->arg[p->n - 1]) {
        p->arg[p->n - 1] += (uint32_t)n;
        return 0;
    }
    return plan_op(p, OP_ADD, 0, (uint32_t)n);
}

/* Run a plan's operations; `frame` and `machframe` carry over from one
 * part of a long step to the next. 0, or why the step cannot be done. */
static int run_ops(const hs_uw_plan *p, const view *st, hs_uw_regs *regs, uint64_t *frame, int *machframe)
{
    for (int i = 0; i < p->n; i++) {
        int reg = p->op[i] >> 4, err;
        uint32_t arg = p->arg[i];
        uint64_t v, w;
        switch (p->op[i] & 15) {
        case OP_POPS:
            for (int k = 0; k < reg; k++, arg >>= 4) {
                if ((err = stack_read(st, regs->r[HS_RSP], &v)) != 0)
                    return err;
                if ((arg & 15) != HS_RSP)
                    regs->r[arg & 15] = v;
                regs->r[HS_RSP] += 8;
            }
            break;
        case OP_POP_RSP:
            if ((err = stack_read(st, regs->r[HS_RSP], &v)) != 0)
                return err;
            regs->r[HS_RSP] = v + 8;
            break;
        case OP_ADD:
            regs->r[HS_RSP] += arg;
            break;
        case OP_SET_RSP:
            regs->r[HS_RSP] = regs->r[reg] + (uint64_t)(int64_t)(int32_t)arg;
            break;
        case OP_FRAME:
            *frame = regs->r[reg] + (uint64_t)(int64_t)(int32_t)arg;
            break;
        case OP_LOAD:
            if ((err = stack_read(st, *frame + arg, &v)) != 0)
                return err;
            regs->r[reg] = v;
            break;
        case OP_MACHFRAME:
            v = regs->r[HS_RSP] + arg;
            if ((err = stack_read(st, v, &w)) != 0 || (err = stack_read(st, v + 24, &v)) != 0)
                return err;
            regs->rip = w;
            regs->r[HS_RSP] = v;
            *machframe = 1;
            break;
        default:
            return HS_UW_BAD;
        }
    }
    return 0;
}

static int step_leaf(const view *st, hs_uw_regs *regs);

/* A whole plan: its operations, then the return address. */
static int run_plan(const hs_uw_plan *p, const view *st, hs_uw_regs *regs)
{
    uint64_t frame = 0;
    int machframe = 0;
    int err = run_ops(p, st, regs, &frame, &machframe);
    return err || machframe ? err : step_leaf(st, regs);
}

/* Is pc in an epilogue of its function? If so, plan the rest of the
 * epilogue (then the return address is popped) and return 1. */
static int epilogue(const hs_uw_env *env, const hs_uw_entry *e, const hs_unwind *u, uint64_t pc,
                    hs_uw_plan *p)
{
    uint8_t buf[64];
    const uint8_t *c;
    size_t n = code_bytes(env, pc, buf, sizeof buf, &c);
    size_t i = 0;
    /* add rsp, imm8 / imm32, or lea rsp, [frame register + disp] */
    int base = -1;
    uint32_t disp = 0;
    if (n >= 4 && c[0] == 0x48 && c[1] == 0x83 && c[2] == 0xC4) {
        base = HS_RSP;
        disp = (uint32_t)(int32_t)(int8_t)c[3];
        i = 4;
    } else if (n >= 7 && c[0] == 0x48 && c[1] == 0x81 && c[2] == 0xC4) {
        base = HS_RSP;
        disp = hs_le32(c + 3);
        i = 7;
    } else if (n >= 3 && (c[0] == 0x48 || c[0] == 0x49) && c[1] == 0x8D && u->frame_reg) {
        uint8_t mod = c[2] >> 6, reg = (c[2] >> 3) & 7;
        uint8_t rm = (uint8_t)((c[2] & 7) | (c[0] & 1) << 3);
        if (reg != HS_RSP || rm != u->frame_reg || (c[2] & 7) == 4)
            return 0;
        base = rm;
        if (mod == 1 && n >= 4) {
            disp = (uint32_t)(int32_t)(int8_t)c[3];
            i = 4;
        } else if (mod == 2 && n >= 7) {
            disp = hs_le32(c + 3);
            i = 7;
        } else {
            return 0;
        }
    }
    /* pops */
    uint8_t popped[16];
    int npop = 0;
    while (i < n && npop < 16) {
        if (c[i] >= 0x58 && c[i] <= 0x5F) {
            popped[npop++] = (uint8_t)(c[i] - 0x58);
            i += 1;
        } else if (i + 1 < n && c[i] == 0x41 && c[i + 1] >= 0x58 && c[i + 1] <= 0x5F) {
            popped[npop++] = (uint8_t)(c[i + 1] - 0x58 + 8);
            i += 2;
        } else {
            break;
        }
    }
    /* the end: ret, or a jump out of the function (a tail call) */
    int end = 0;
    if (i < n && c[i] == 0xC3)
        end = 1;
    else if (i + 1 < n && c[i] == 0xF3 && c[i + 1] == 0xC3)
        end = 1;
    else if (i + 2 < n && c[i] == 0xC2)
        end = 1;
    else if ((i + 4 < n && c[i] == 0xE9) || (i + 1 < n && c[i] == 0xEB)) {
        int64_t rel = c[i] == 0xE9 ? (int32_t)hs_le32(c + i + 1) : (int8_t)c[i + 1];
        uint64_t target = pc + i + (c[i] == 0xE9 ? 5 : 2) + (uint64_t)rel;
        end = target < e->base + e->begin || target >= e->base + e->end;
    } else if (i + 1 < n && c[i] == 0xFF && c[i + 1] == 0x25) {
        end = 1;   /* jmp [rip+disp]: a tail call through a pointer */
    } else if (i + 2 < n && (c[i] & 0xF8) == 0x48 && c[i + 1] == 0xFF && ((c[i + 2] >> 3) & 7) == 4) {
        end = 1;   /* rex.w jmp indirect: the form epilogues use */
    }
    if (!end)
        return 0;
    /* at most 1 + 2 operations: they fit */
    p->n = 0;
    if (base >= 0)
        plan_op(p, OP_SET_RSP, base, disp);
    for (int k = 0; k < npop; k++)
        plan_pop(p, popped[k]);
    return 1;
}

/* Where planning the undoing of unwind codes stands: pc's UNWIND_INFO,
 * then its chained parents. */
typedef struct codes_cursor {
    uinfo ui;
    int64_t offset;            /* pc's offset in the function; -1 in a parent (all codes apply) */
    int i;                     /* the next code; -1: the frame base is not planned yet */
    int frame_at;              /* the FRAME of this UNWIND_INFO in the part being planned, while
                                  no LOAD needs it; else -1 */
    int depth;                 /* parents read */
} codes_cursor;

/* Plan BAD (the codes cannot be followed from here): 1, or 0 when the
 * plan is full (the next part plans it). */
static int plan_bad(hs_uw_plan *p)
{
    return plan_op(p, OP_BAD, 0, 0) == 0;
}

/* Plan the undoing of the unwind codes from k on, as much as fits in p:
 * 1 when all is planned, 0 when p is full (k is where the next part
 * starts). In a prologue only the codes of instructions already executed
 * (code offset <= pc's offset) are undone; the saves are relative to the
 * frame base as it is before an UNWIND_INFO's codes are undone. */
static int plan_codes(const hs_uw_env *env, const hs_uw_entry *e, codes_cursor *k, hs_uw_plan *p)
{
    k->frame_at = -1;          /* (a FRAME of an earlier part has run) */
    for (;;) {
        const hs_unwind *u = &k->ui.u;
        int in_prolog = k->offset >= 0 && k->offset < u->prolog_size;
        hs_unwind_code c;
        if (k->i < 0) {
            /* the frame base: the frame register less its offset once the
             * register is set, else rsp (dropped below if nothing loads
             * from it) */
            int set = 0;
            if (u->frame_reg) {
                set = !in_prolog;
                for (int i = 0; i < u->count_codes && !set; i += c.slots) {
                    if (hs_unwind_code_at(u, i, &c) < 0)
                        return plan_bad(p);
                    if (c.op == HS_UWOP_SET_FPREG && c.off <= k->offset)
                        set = 1;
                }
            }
            if (plan_op(p, OP_FRAME, set ? u->frame_reg : HS_RSP, set ? -(uint32_t)u->frame_off * 16 : 0) < 0)
                return 0;
            k->frame_at = p->n - 1;
            k->i = 0;
        }
        for (; k->i < u->count_codes; k->i += c.slots) {
            if (hs_unwind_code_at(u, k->i, &c) < 0)
                return plan_bad(p);
            if (in_prolog && c.off > k->offset)
                continue;
            int full = 0;
            switch (c.op) {
            case HS_UWOP_PUSH_NONVOL:
                full = c.info == HS_RSP ? plan_op(p, OP_POP_RSP, 0, 0) : plan_pop(p, c.info);
                break;
            case HS_UWOP_ALLOC_LARGE:
                full = plan_add(p, c.info ? c.arg : (uint64_t)c.arg * 8);
                break;
            case HS_UWOP_ALLOC_SMALL:
                full = plan_add(p, (uint64_t)c.info * 8 + 8);
                break;
            case HS_UWOP_SET_FPREG:
                full = plan_op(p, OP_SET_RSP, u->frame_reg, -(uint32_t)u->frame_off * 16);
                break;
            case HS_UWOP_SAVE_NONVOL:
            case HS_UWOP_SAVE_NONVOL_FAR:
                full = plan_op(p, OP_LOAD, c.info, c.op == HS_UWOP_SAVE_NONVOL ? c.arg * 8 : c.arg);
                k->frame_at = -1;
                break;
            case HS_UWOP_EPILOG:
            case HS_UWOP_SPARE:
            case HS_UWOP_SAVE_XMM128:
            case HS_UWOP_SAVE_XMM128_FAR:
                break;
            case HS_UWOP_PUSH_MACHFRAME:
                full = plan_op(p, OP_MACHFRAME, 0, c.info ? 8 : 0);
                break;
            default:
                return plan_bad(p);
            }
            if (full)
                return 0;
        }
        if (k->frame_at >= 0) {
            /* no save: the frame base is not needed (moved one by one: no
             * C runtime call, the agent runs this inside the target's calls) */
            for (int j = k->frame_at; j + 1 < p->n; j++) {
                uint32_t a = p->arg[j + 1];
                p->op[j] = p->op[j + 1];
                p->arg[j] = a;
            }
            p->n--;
            k->frame_at = -1;
        }
        if (!(u->flags & HS_UNW_CHAININFO))
            return 1;
        if (p->n == HS_UW_PLAN_OPS)
            return 0;          /* (room for BAD first: a failed read leaves k->ui unusable) */
        if (k->depth == MAX_CHAIN || read_uinfo(env, e->base, u->chained_unwind, &k->ui) < 0)
            return plan_bad(p);
        k->depth++;
        k->offset = -1;
        k->i = -1;
    }
}

/* A step out of code with a function entry: its epilogue, or its unwind
 * codes (pc's UNWIND_INFO, then its chained parents), planned and run, in
 * parts when one plan cannot hold them all. *p: the plan, whole when it
 * was one part. */
static int step_table(const hs_uw_env *env, const view *st, const hs_uw_entry *e, hs_uw_regs *regs,
                      hs_uw_plan *p)
{
    codes_cursor k;
    p->n = 0;
    p->whole = 0;
    if (read_uinfo(env, e->base, e->unwind, &k.ui) < 0)
        return HS_UW_BAD;
    k.offset = (int64_t)(regs->rip - (e->base + e->begin));
    if (k.offset >= k.ui.u.prolog_size && epilogue(env, e, &k.ui.u, regs->rip, p)) {
        p->whole = 1;
        return run_plan(p, st, regs);
    }
    k.i = -1;
    k.depth = 0;
    uint64_t frame = 0;
    int machframe = 0;
    for (int part = 0;; part++) {
        p->n = 0;
        int done = plan_codes(env, e, &k, p);
        int err = run_ops(p, st, regs, &frame, &machframe);
        if (err)
            return err;
        if (done) {
            p->whole = part == 0;
            break;
        }
    }
    return machframe ? 0 : step_leaf(st, regs);
}

static int step_leaf(const view *st, hs_uw_regs *regs)
{
    uint64_t ret;
    int err = stack_read(st, regs->r[HS_RSP], &ret);
    if (err)
        return err;
    regs->rip = ret;
    regs->r[HS_RSP] += 8;
    return 0;
}

/* Does a call end at `a`: is it a return address? The encodings a
 * compiler emits for calls: rel32, [rip+disp32], a register, [reg],
 * [reg+disp8], [reg+disp32] (with or without a SIB byte). */
static int after_call(const hs_uw_env *env, uint64_t a)
{
    hs_uw_entry e;
    uint8_t c[7];   /* c[i]: the byte at a - 7 + i */
    if (a < 7 || env->lookup(env->ctx, a, &e) == HS_UW_UNKNOWN || env->read(env->ctx, a - 7, c, 7) < 0)
        return 0;
    return c[2] == 0xE8 ||                                          /* call rel32 */
           (c[1] == 0xFF && (c[2] == 0x15 || (c[2] & 0xF8) == 0x90)) ||   /* [rip+d32], [reg+d32] */
           (c[0] == 0xFF && c[1] == 0x94) ||                        /* [sib+d32] */
           (c[5] == 0xFF && ((c[6] & 0xF8) == 0xD0 ||               /* reg */
                             ((c[6] & 0xF8) == 0x10 && (c[6] & 7) != 4 && (c[6] & 7) != 5))) ||   /* [reg] */
           (c[4] == 0xFF && ((c[5] & 0xF8) == 0x50 || c[5] == 0x14)) ||   /* [reg+d8], [sib] */
           (c[3] == 0xFF && c[4] == 0x54);                          /* [sib+d8] */
}

#define LEAF_SCAN 4   /* slots a leaf's pushes may hold above its return address */

/* A leaf: code of an image that no function entry covers, whose return
 * address is at [rsp] unless it pushed registers (mingw's ___chkstk_ms
 * pushes rcx and rax, and has no unwind data). A value that cannot be a
 * return address (a small integer, an address in the stack) is such a
 * push: the return address is the first slot above it that follows a
 * call. */
static int step_image_leaf(const hs_uw_env *env, const view *vw, hs_uw_regs *regs)
{
    uint64_t ret;
    int err = stack_read(vw, regs->r[HS_RSP], &ret);
    if (err)
        return err;
    const hs_uw_stack *st = vw->st;
    for (int k = 1; k <= LEAF_SCAN && (ret < 0x10000 || (ret >= st->lo && ret - st->lo < st->len)); k++) {
        uint64_t at = regs->r[HS_RSP] + 8 * (uint64_t)k, v;
        if (stack_read(vw, at, &v) != 0)
            break;
        if (after_call(env, v)) {
            regs->rip = v;
            regs->r[HS_RSP] = at + 8;
            return 0;
        }
        ret = v;
    }
    return step_leaf(vw, regs);
}

/* Length of a ModRM memory or register operand (after the opcode), or 0. */
static size_t modrm_len(const uint8_t *c, size_t n)
{
    if (n < 1)
        return 0;
    uint8_t mod = c[0] >> 6, rm = c[0] & 7;
    size_t len = 1;
    if (mod == 3)
        return 1;
    if (rm == 4) {
        if (n < 2)
            return 0;
        len++;
        if (mod == 0 && (c[1] & 7) == 5)
            len += 4;
    } else if (mod == 0 && rm == 5) {
        len += 4;              /* rip-relative */
    }
    if (mod == 1)
        len += 1;
    else if (mod == 2)
        len += 4;
    return len <= n ? len : 0;
}

/* Run generated code forward until it reaches code with unwind data (the
 * same frame, now in a described state: returns 0) or returns (the
 * caller's state: *returned = 1). Pushes go into the view's overlay, where
 * the unwind codes of the code reached (a wrapper that describes the
 * pushes its entry stub made) find them. */
static int step_emulate(const hs_uw_env *env, view *vw, hs_uw_regs *regs, int *returned)
{
    *returned = 0;
    for (int k = 0; k < MAX_EMULATED; k++) {
        if (k > 0) {
            hs_uw_entry e;
            int kind = env->lookup(env->ctx, regs->rip, &e);
            if (kind == HS_UW_TABLE || kind == HS_UW_LEAF)
                return 0;
            if (kind != HS_UW_EMULATE)
                return HS_UW_BAD;
        }
        uint8_t buf[16];
        const uint8_t *c;
        size_t n = code_bytes(env, regs->rip, buf, sizeof buf, &c);
        if (n == 0)
            return HS_UW_BAD;
        size_t p = 0;
        int gs = 0;
        uint8_t rex = 0;
        if (c[0] == 0x65) {                 /* gs: */
            gs = 1;
            p = 1;
        }
        if (p < n && (c[p] & 0xF0) == 0x40)
            rex = c[p++];
        if (p >= n)
            return HS_UW_BAD;
        uint8_t op = c[p];
        uint8_t b = (uint8_t)((rex & 1) << 3);
        if (!gs && op >= 0x50 && op <= 0x57) {                      /* push r64 */
            if (vw->nov == MAX_OVERLAY)
                return HS_UW_BAD;
            regs->r[HS_RSP] -= 8;
            vw->ov_addr[vw->nov] = regs->r[HS_RSP];
            vw->ov_val[vw->nov++] = regs->r[(op - 0x50) | b];
            regs->rip += p + 1;
        } else if (!gs && op >= 0x58 && op <= 0x5F) {               /* pop r64 */
            uint64_t v;
            int err = stack_read(vw, regs->r[HS_RSP], &v);
            if (err)
                return err;
            regs->r[(op - 0x58) | b] = v;
            regs->r[HS_RSP] += 8;
            regs->rip += p + 1;
        } else if (!gs && op >= 0xB8 && op <= 0xBF && (rex & 8) && p + 9 <= n) {   /* mov r64, imm64 */
            uint64_t v;
            memcpy(&v, c + p + 1, 8);
            regs->r[(op - 0xB8) | b] = v;
            regs->rip += p + 9;
        } else if (op == 0x8B && (rex & 8)) {                       /* mov r64, r/m64 */
            size_t m = modrm_len(c + p + 1, n - p - 1);
            uint8_t reg = (uint8_t)(((c[p + 1] >> 3) & 7) | (rex & 4) << 1);
            if (!m || reg == HS_RSP)
                return HS_UW_BAD;
            /* the value loaded is not known: the frames above only need
             * rsp and the saved registers, which come from the stack */
            regs->r[reg] = 0;
            regs->rip += p + 1 + m;
        } else if (!gs && !rex && op == 0xE9 && n >= 5) {           /* jmp rel32 */
            regs->rip += 5 + (uint64_t)(int64_t)(int32_t)hs_le32(c + 1);
        } else if (!gs && !rex && op == 0xEB && n >= 2) {           /* jmp rel8 */
            regs->rip += 2 + (uint64_t)(int64_t)(int8_t)c[1];
        } else if (!gs && op == 0xFF && p + 6 <= n && c[p + 1] == 0x25) {   /* jmp [rip+disp32] */
            uint64_t slot = regs->rip + p + 6 + (uint64_t)(int64_t)(int32_t)hs_le32(c + p + 2), to;
            if (env->read(env->ctx, slot, &to, 8) < 0)
                return HS_UW_BAD;
            regs->rip = to;
        } else if (!gs && !rex && op == 0xC3) {                     /* ret */
            int err = step_leaf(vw, regs);
            if (!err)
                *returned = 1;
            return err;
        } else {
            return HS_UW_BAD;
        }
    }
    return HS_UW_BAD;
}

/* One step; *p: its plan, whole only when the step is a table step. */
static int step(const hs_uw_env *env, view *vw, hs_uw_regs *regs, hs_uw_plan *p)
{
    hs_uw_entry e;
    int kind = env->lookup(env->ctx, regs->rip, &e);
    p->n = 0;
    p->whole = 0;
    if (kind == HS_UW_TABLE)
        return step_table(env, vw, &e, regs, p);
    if (kind == HS_UW_LEAF)
        return step_image_leaf(env, vw, regs);
    if (kind != HS_UW_EMULATE)
        return HS_UW_BAD;
    /* generated code: run it forward, then unwind from where it led */
    hs_uw_regs r = *regs;
    int returned = 0;
    int err = step_emulate(env, vw, &r, &returned);
    if (!err && !returned) {
        kind = env->lookup(env->ctx, r.rip, &e);
        err = kind == HS_UW_TABLE ? step_table(env, vw, &e, &r, p) : step_leaf(vw, &r);
        p->whole = 0;
    }
    if (!err)
        *regs = r;
    return err;
}

typedef struct pdata_key {
    const uint32_t *t;
    uint32_t rva;
} pdata_key;

static bool begins_at_or_below(const void *ctx, size_t i)
{
    const pdata_key *k = ctx;
    return k->t[i * 3] <= k->rva;
}

const uint32_t *hs_pdata_find(const uint32_t *table, size_t n, uint32_t rva)
{
    pdata_key k = { table, rva };
    size_t lo = hs_partition_point(n, &k, begins_at_or_below);
    if (!lo)
        return NULL;
    const uint32_t *e = &table[(lo - 1) * 3];
    return rva < e[1] ? e : NULL;
}

int hs_unwind_step_plan(const hs_uw_env *env, const hs_uw_stack *st, hs_uw_regs *regs, hs_uw_plan *plan)
{
    view vw;
    vw.st = st;
    vw.nov = 0;
    return step(env, &vw, regs, plan);
}

int hs_unwind_step(const hs_uw_env *env, const hs_uw_stack *st, hs_uw_regs *regs)
{
    hs_uw_plan p;
    return hs_unwind_step_plan(env, st, regs, &p);
}

int hs_unwind_run(const hs_uw_plan *plan, const hs_uw_stack *st, hs_uw_regs *regs)
{
    view vw;
    vw.st = st;
    vw.nov = 0;
    return run_plan(plan, &vw, regs);
}

hs_uw_result hs_unwind_walk(const hs_uw_env *env, const hs_uw_stack *st, const hs_uw_regs *start,
                            uint64_t *frames, uint32_t max)
{
    hs_uw_result res = { 0, HS_UW_END, 0 };
    if (!max)
        return res;
    view vw;
    vw.st = st;
    vw.nov = 0;
    hs_uw_regs regs = *start;
    hs_uw_plan plan;
    frames[res.n++] = regs.rip;
    hs_uw_entry e;
    if (env->lookup(env->ctx, regs.rip, &e) == HS_UW_UNKNOWN) {
        res.stop = HS_UW_UNKNOWN_PC;
        res.unknown_pc = regs.rip;
        return res;
    }
    for (;;) {
        uint64_t sp = regs.r[HS_RSP];
        int err = step(env, &vw, &regs, &plan);
        if (err) {
            res.stop = err == HS_UW_AT_BASE ? HS_UW_END : err;
            return res;
        }
        if (regs.rip == 0)
            return res;
        if (regs.r[HS_RSP] <= sp) {
            res.stop = HS_UW_BAD;
            return res;
        }
        if (env->lookup(env->ctx, regs.rip, &e) == HS_UW_UNKNOWN) {
            res.stop = HS_UW_UNKNOWN_PC;
            res.unknown_pc = regs.rip;
            return res;
        }
        if (res.n == max) {
            res.stop = HS_UW_TRUNCATED;
            return res;
        }
        frames[res.n++] = regs.rip;
    }
}
