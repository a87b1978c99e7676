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
        return st->complete ? HS_UW_AT_BASE : HS_UW_TRUNCATED;
    memcpy(v, st->data + off, 8);
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

/* Is pc in an epilogue of its function? If so, finish the epilogue on
 * regs (and pop the return address) and return 1. */
static int epilogue(const hs_uw_env *env, const view *st, const hs_uw_entry *e, const hs_unwind *u,
                    hs_uw_regs *regs, int *err)
{
    uint8_t buf[64];
    const uint8_t *c;
    size_t n = code_bytes(env, regs->rip, buf, sizeof buf, &c);
    size_t i = 0;
    uint64_t rsp = regs->r[HS_RSP];
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
        if (reg != HS_RSP || rm != u->frame_reg || (c[2] & 7) == 4)
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
    regs->r[HS_RSP] = rsp + 8;
    *err = 0;
    return 1;
}

/* Undo the unwind codes of one UNWIND_INFO. `offset`: pc's offset in the
 * function, or -1 when all codes apply (a chained parent). Sets *machframe
 * when a machine frame gave rip and rsp. */
static int undo_codes(const view *st, const hs_unwind *u, int64_t offset, hs_uw_regs *regs, int *machframe)
{
    int in_prolog = offset >= 0 && offset < u->prolog_size;
    hs_unwind_code c;
    /* the frame base for the saves */
    uint64_t frame = regs->r[HS_RSP];
    if (u->frame_reg) {
        int set = !in_prolog;
        for (int i = 0; i < u->count_codes && !set; i += c.slots) {
            if (hs_unwind_code_at(u, i, &c) < 0)
                return HS_UW_BAD;
            if (c.op == HS_UWOP_SET_FPREG && c.off <= offset)
                set = 1;
        }
        if (set)
            frame = regs->r[u->frame_reg] - (uint64_t)u->frame_off * 16;
    }
    for (int i = 0; i < u->count_codes; i += c.slots) {
        if (hs_unwind_code_at(u, i, &c) < 0)
            return HS_UW_BAD;
        if (in_prolog && c.off > offset)
            continue;
        uint64_t v;
        int err;
        switch (c.op) {
        case HS_UWOP_PUSH_NONVOL:
            if ((err = stack_read(st, regs->r[HS_RSP], &v)) != 0)
                return err;
            regs->r[c.info] = v;
            regs->r[HS_RSP] += 8;
            break;
        case HS_UWOP_ALLOC_LARGE:
            regs->r[HS_RSP] += c.info ? c.arg : (uint64_t)c.arg * 8;
            break;
        case HS_UWOP_ALLOC_SMALL:
            regs->r[HS_RSP] += (uint64_t)c.info * 8 + 8;
            break;
        case HS_UWOP_SET_FPREG:
            regs->r[HS_RSP] = regs->r[u->frame_reg] - (uint64_t)u->frame_off * 16;
            break;
        case HS_UWOP_SAVE_NONVOL:
        case HS_UWOP_SAVE_NONVOL_FAR: {
            uint64_t at = frame + (c.op == HS_UWOP_SAVE_NONVOL ? (uint64_t)c.arg * 8 : c.arg);
            if ((err = stack_read(st, at, &v)) != 0)
                return err;
            regs->r[c.info] = v;
            break;
        }
        case HS_UWOP_EPILOG:
        case HS_UWOP_SPARE:
        case HS_UWOP_SAVE_XMM128:
        case HS_UWOP_SAVE_XMM128_FAR:
            break;
        case HS_UWOP_PUSH_MACHFRAME: {
            uint64_t at = regs->r[HS_RSP] + (c.info ? 8 : 0), rip, rsp;
            if ((err = stack_read(st, at, &rip)) != 0 || (err = stack_read(st, at + 24, &rsp)) != 0)
                return err;
            regs->rip = rip;
            regs->r[HS_RSP] = rsp;
            *machframe = 1;
            break;
        }
        default:
            return HS_UW_BAD;
        }
    }
    return 0;
}

static int step_table(const hs_uw_env *env, const view *st, const hs_uw_entry *e, hs_uw_regs *regs)
{
    uinfo ui;
    if (read_uinfo(env, e->base, e->unwind, &ui) < 0)
        return HS_UW_BAD;
    int64_t offset = (int64_t)(regs->rip - (e->base + e->begin));
    if (offset >= ui.u.prolog_size) {
        int err = 0;
        if (epilogue(env, st, e, &ui.u, regs, &err))
            return err;
    }
    int machframe = 0;
    int err = undo_codes(st, &ui.u, offset, regs, &machframe);
    for (int depth = 0; !err && (ui.u.flags & HS_UNW_CHAININFO); depth++) {
        if (depth == MAX_CHAIN || read_uinfo(env, e->base, ui.u.chained_unwind, &ui) < 0)
            return HS_UW_BAD;
        err = undo_codes(st, &ui.u, -1, regs, &machframe);
    }
    if (err)
        return err;
    if (!machframe) {
        uint64_t ret;
        if ((err = stack_read(st, regs->r[HS_RSP], &ret)) != 0)
            return err;
        regs->rip = ret;
        regs->r[HS_RSP] += 8;
    }
    return 0;
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

static int step(const hs_uw_env *env, view *vw, hs_uw_regs *regs)
{
    hs_uw_entry e;
    int kind = env->lookup(env->ctx, regs->rip, &e);
    if (kind == HS_UW_TABLE)
        return step_table(env, vw, &e, regs);
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
        uint64_t sp = regs.r[HS_RSP];
        int err = step(env, &vw, &regs);
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
