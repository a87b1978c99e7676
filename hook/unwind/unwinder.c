/*
 * hook/unwind/unwinder.c - the x64 unwinder (see unwind.h).
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
 */
#include "hook/unwind/unwinder.h"

#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/search.h"

#define MAX_CHAIN 32
#define MAX_EMULATED 64

enum { UWOP_PUSH_NONVOL = 0, UWOP_ALLOC_LARGE, UWOP_ALLOC_SMALL, UWOP_SET_FPREG, UWOP_SAVE_NONVOL,
       UWOP_SAVE_NONVOL_FAR, UWOP_EPILOG, UWOP_SPARE, UWOP_SAVE_XMM128, UWOP_SAVE_XMM128_FAR,
       UWOP_PUSH_MACHFRAME };

#define UNW_FLAG_CHAININFO 4

/* The stack as a walk sees it: the copy, and the values the emulated
 * code pushed (they may lie below the copy, or replace what it holds). */
#define MAX_OVERLAY 16
typedef struct view {
    const hs_uw_stack *st;
    uint64_t ov_addr[MAX_OVERLAY], ov_val[MAX_OVERLAY];
    int nov;
} view;

/* A value read from the stack: 0, or why not. */
static int stack_read(const view *vw, uint64_t addr, uint64_t *v)
{
    for (int i = vw->nov; i-- > 0;) {
        if (vw->ov_addr[i] == addr) {
            *v = vw->ov_val[i];
            return 0;
        }
    }
    const hs_uw_stack *st = vw->st;
    if (addr < st->lo)
        return HS_UW_BAD;
    uint64_t off = addr - st->lo;
    if (off > st->len || st->len - off < 8)
        return st->complete ? HS_UW_END : HS_UW_TRUNCATED;
    memcpy(v, st->data + off, 8);
    return 0;
}

/* Up to `want` code bytes at pc, page by page so that the end of a
 * readable range only shortens the read; returns how many. */
static size_t code_bytes(const hs_uw_env *env, uint64_t pc, uint8_t *buf, size_t want)
{
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


/* The unwind info of one entry: header, codes, and the chained entry. */
typedef struct uinfo {
    uint8_t version, flags, prolog, count, frame_reg, frame_off;
    uint8_t codes[512];
    uint32_t chain_begin, chain_end, chain_unwind;
} uinfo;

static int read_uinfo(const hs_uw_env *env, uint64_t base, uint32_t rva, uinfo *u)
{
    uint8_t h[4];
    if (env->read(env->ctx, base + rva, h, 4) < 0)
        return -1;
    u->version = h[0] & 7;
    u->flags = h[0] >> 3;
    u->prolog = h[1];
    u->count = h[2];
    u->frame_reg = h[3] & 15;
    u->frame_off = h[3] >> 4;
    if (u->version != 1 && u->version != 2)
        return -1;
    size_t clen = (size_t)u->count * 2;
    if (clen && env->read(env->ctx, base + rva + 4, u->codes, clen) < 0)
        return -1;
    if (u->flags & UNW_FLAG_CHAININFO) {
        uint8_t c[12];
        size_t at = 4 + (size_t)((u->count + 1) & ~1) * 2;
        if (env->read(env->ctx, base + rva + at, c, 12) < 0)
            return -1;
        u->chain_begin = hs_le32(c);
        u->chain_end = hs_le32(c + 4);
        u->chain_unwind = hs_le32(c + 8);
    }
    return 0;
}

/* Slots an unwind code takes (the code's own included). */
static int code_slots(const uinfo *u, uint8_t op, uint8_t info)
{
    switch (op) {
    case UWOP_ALLOC_LARGE: return info ? 3 : 2;
    case UWOP_SAVE_NONVOL: return 2;
    case UWOP_SAVE_NONVOL_FAR: return 3;
    case UWOP_EPILOG: return u->version == 2 ? 1 : 2;   /* v1: the old SAVE_XMM */
    case UWOP_SPARE: return 3;                          /* v1: the old SAVE_XMM_FAR */
    case UWOP_SAVE_XMM128: return 2;
    case UWOP_SAVE_XMM128_FAR: return 3;
    default: return 1;
    }
}

/* Is pc in an epilogue of its function? If so, finish the epilogue on
 * regs (and pop the return address) and return 1. */
static int epilogue(const hs_uw_env *env, const view *st, const hs_uw_entry *e, const uinfo *u,
                    hs_uw_regs *regs, int *err)
{
    uint8_t c[64];
    size_t n = code_bytes(env, regs->rip, c, sizeof c);
    size_t i = 0;
    uint64_t rsp = regs->r[HS_R_RSP];
    /* add rsp, imm8 / imm32, or lea rsp, [frame register + disp] */
    if (n >= 4 && c[0] == 0x48 && c[1] == 0x83 && c[2] == 0xC4) {
        rsp += (uint64_t)(int64_t)(int8_t)c[3];
        i = 4;
    } else if (n >= 7 && c[0] == 0x48 && c[1] == 0x81 && c[2] == 0xC4) {
        rsp += (uint64_t)(int64_t)(int32_t)hs_le32(c + 3);
        i = 7;
    } else if (n >= 3 && (c[0] == 0x48 || c[0] == 0x49) && c[1] == 0x8D && u->frame_reg) {
        uint8_t mod = c[2] >> 6, reg = (c[2] >> 3) & 7;
        uint8_t rm = (uint8_t)((c[2] & 7) | (c[0] & 1) << 3);
        if (reg != HS_R_RSP || rm != u->frame_reg || (c[2] & 7) == 4)
            return 0;
        if (mod == 1 && n >= 4) {
            rsp = regs->r[rm] + (uint64_t)(int64_t)(int8_t)c[3];
            i = 4;
        } else if (mod == 2 && n >= 7) {
            rsp = regs->r[rm] + (uint64_t)(int64_t)(int32_t)hs_le32(c + 3);
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
        uint64_t target = regs->rip + i + (c[i] == 0xE9 ? 5 : 2) + (uint64_t)rel;
        end = target < e->base + e->begin || target >= e->base + e->end;
    } else if (i + 1 < n && c[i] == 0xFF && c[i + 1] == 0x25) {
        end = 1;   /* jmp [rip+disp]: a tail call through a pointer */
    } else if (i + 2 < n && (c[i] & 0xF8) == 0x48 && c[i + 1] == 0xFF && ((c[i + 2] >> 3) & 7) == 4) {
        end = 1;   /* rex.w jmp indirect: the form epilogues use */
    }
    if (!end)
        return 0;
    for (int k = 0; k < npop; k++) {
        uint64_t v;
        if ((*err = stack_read(st, rsp, &v)) != 0)
            return 1;
        regs->r[popped[k]] = v;
        rsp += 8;
    }
    uint64_t ret;
    if ((*err = stack_read(st, rsp, &ret)) != 0)
        return 1;
    regs->rip = ret;
    regs->r[HS_R_RSP] = rsp + 8;
    *err = 0;
    return 1;
}

/* Undo the unwind codes of one UNWIND_INFO. `offset`: pc's offset in the
 * function, or -1 when all codes apply (a chained parent). Sets *machframe
 * when a machine frame gave rip and rsp. */
static int undo_codes(const view *st, const uinfo *u, int64_t offset, hs_uw_regs *regs, int *machframe)
{
    int in_prolog = offset >= 0 && offset < u->prolog;
    /* the frame base for the saves */
    uint64_t frame = regs->r[HS_R_RSP];
    if (u->frame_reg) {
        int set = !in_prolog;
        for (int i = 0; i < u->count && !set;) {
            uint8_t off = u->codes[i * 2], op = u->codes[i * 2 + 1] & 15, info = u->codes[i * 2 + 1] >> 4;
            if (op == UWOP_SET_FPREG && off <= offset)
                set = 1;
            i += code_slots(u, op, info);
        }
        if (set)
            frame = regs->r[u->frame_reg] - (uint64_t)u->frame_off * 16;
    }
    for (int i = 0; i < u->count;) {
        uint8_t off = u->codes[i * 2], op = u->codes[i * 2 + 1] & 15, info = u->codes[i * 2 + 1] >> 4;
        int slots = code_slots(u, op, info);
        if (i + slots > u->count)
            return HS_UW_BAD;
        if (in_prolog && off > offset) {
            i += slots;
            continue;
        }
        const uint8_t *next = &u->codes[(i + 1) * 2];
        uint64_t v;
        int err;
        switch (op) {
        case UWOP_PUSH_NONVOL:
            if ((err = stack_read(st, regs->r[HS_R_RSP], &v)) != 0)
                return err;
            regs->r[info] = v;
            regs->r[HS_R_RSP] += 8;
            break;
        case UWOP_ALLOC_LARGE:
            regs->r[HS_R_RSP] += info ? hs_le32(next) : (uint64_t)hs_le16(next) * 8;
            break;
        case UWOP_ALLOC_SMALL:
            regs->r[HS_R_RSP] += (uint64_t)info * 8 + 8;
            break;
        case UWOP_SET_FPREG:
            regs->r[HS_R_RSP] = regs->r[u->frame_reg] - (uint64_t)u->frame_off * 16;
            break;
        case UWOP_SAVE_NONVOL:
        case UWOP_SAVE_NONVOL_FAR: {
            uint64_t at = frame + (op == UWOP_SAVE_NONVOL ? (uint64_t)hs_le16(next) * 8 : hs_le32(next));
            if ((err = stack_read(st, at, &v)) != 0)
                return err;
            regs->r[info] = v;
            break;
        }
        case UWOP_EPILOG:
        case UWOP_SPARE:
        case UWOP_SAVE_XMM128:
        case UWOP_SAVE_XMM128_FAR:
            break;
        case UWOP_PUSH_MACHFRAME: {
            uint64_t at = regs->r[HS_R_RSP] + (info ? 8 : 0), rip, rsp;
            if ((err = stack_read(st, at, &rip)) != 0 || (err = stack_read(st, at + 24, &rsp)) != 0)
                return err;
            regs->rip = rip;
            regs->r[HS_R_RSP] = rsp;
            *machframe = 1;
            break;
        }
        default:
            return HS_UW_BAD;
        }
        i += slots;
    }
    return 0;
}

static int step_table(const hs_uw_env *env, const view *st, const hs_uw_entry *e, hs_uw_regs *regs)
{
    uinfo u;
    if (read_uinfo(env, e->base, e->unwind, &u) < 0)
        return HS_UW_BAD;
    int64_t offset = (int64_t)(regs->rip - (e->base + e->begin));
    if (offset >= u.prolog) {
        int err = 0;
        if (epilogue(env, st, e, &u, regs, &err))
            return err;
    }
    int machframe = 0;
    int err = undo_codes(st, &u, offset, regs, &machframe);
    for (int depth = 0; !err && (u.flags & UNW_FLAG_CHAININFO); depth++) {
        if (depth == MAX_CHAIN || read_uinfo(env, e->base, u.chain_unwind, &u) < 0)
            return HS_UW_BAD;
        err = undo_codes(st, &u, -1, regs, &machframe);
    }
    if (err)
        return err;
    if (!machframe) {
        uint64_t ret;
        if ((err = stack_read(st, regs->r[HS_R_RSP], &ret)) != 0)
            return err;
        regs->rip = ret;
        regs->r[HS_R_RSP] += 8;
    }
    return 0;
}

static int step_leaf(const view *st, hs_uw_regs *regs)
{
    uint64_t ret;
    int err = stack_read(st, regs->r[HS_R_RSP], &ret);
    if (err)
        return err;
    regs->rip = ret;
    regs->r[HS_R_RSP] += 8;
    return 0;
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
        uint8_t c[16];
        size_t n = code_bytes(env, regs->rip, c, sizeof c);
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
            regs->r[HS_R_RSP] -= 8;
            vw->ov_addr[vw->nov] = regs->r[HS_R_RSP];
            vw->ov_val[vw->nov++] = regs->r[(op - 0x50) | b];
            regs->rip += p + 1;
        } else if (!gs && op >= 0x58 && op <= 0x5F) {               /* pop r64 */
            uint64_t v;
            int err = stack_read(vw, regs->r[HS_R_RSP], &v);
            if (err)
                return err;
            regs->r[(op - 0x58) | b] = v;
            regs->r[HS_R_RSP] += 8;
            regs->rip += p + 1;
        } else if (!gs && op >= 0xB8 && op <= 0xBF && (rex & 8) && p + 9 <= n) {   /* mov r64, imm64 */
            uint64_t v;
            memcpy(&v, c + p + 1, 8);
            regs->r[(op - 0xB8) | b] = v;
            regs->rip += p + 9;
        } else if (op == 0x8B && (rex & 8)) {                       /* mov r64, r/m64 */
            size_t m = modrm_len(c + p + 1, n - p - 1);
            uint8_t reg = (uint8_t)(((c[p + 1] >> 3) & 7) | (rex & 4) << 1);
            if (!m || reg == HS_R_RSP)
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

static int step(const hs_uw_env *env, view *vw, hs_uw_regs *regs)
{
    hs_uw_entry e;
    int kind = env->lookup(env->ctx, regs->rip, &e);
    if (kind == HS_UW_TABLE)
        return step_table(env, vw, &e, regs);
    if (kind == HS_UW_LEAF)
        return step_leaf(vw, regs);
    if (kind != HS_UW_EMULATE)
        return HS_UW_BAD;
    /* generated code: run it forward, then unwind from where it led */
    hs_uw_regs r = *regs;
    int returned = 0;
    int err = step_emulate(env, vw, &r, &returned);
    if (!err && !returned) {
        kind = env->lookup(env->ctx, r.rip, &e);
        err = kind == HS_UW_TABLE ? step_table(env, vw, &e, &r) : step_leaf(vw, &r);
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

int hs_unwind_step(const hs_uw_env *env, const hs_uw_stack *st, hs_uw_regs *regs)
{
    view vw;
    vw.st = st;
    vw.nov = 0;
    return step(env, &vw, regs);
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
    frames[res.n++] = regs.rip;
    hs_uw_entry e;
    if (env->lookup(env->ctx, regs.rip, &e) == HS_UW_UNKNOWN) {
        res.stop = HS_UW_UNKNOWN_PC;
        res.unknown_pc = regs.rip;
        return res;
    }
    for (;;) {
        uint64_t sp = regs.r[HS_R_RSP];
        int err = step(env, &vw, &regs);
        if (err) {
            res.stop = err;
            return res;
        }
        if (regs.rip == 0)
            return res;
        if (regs.r[HS_R_RSP] <= sp) {
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
