/*
 * hook/unwind/unwind32.c - the x86 stack walker (see unwind32.h): one step
 * out of a frame by its epilogue, its prologue, its frame data, the ebp
 * chain or a scan, each checked against the stack copy and the code.
 */
#include "hook/unwind/unwind32.h"

#include "hook/base/bytes.h"

/* A way of stepping that does not apply here (the next one is tried). */
#define NOT_HERE (-1)

#define EPILOGUE_INSNS 16      /* instructions run forward at most to reach the ret */
#define PROLOGUE_INSNS 4       /* instructions before push ebp / mov ebp,esp that change neither */
#define FRAME_DATA_SLACK 8     /* slots above frame data's return address slot also tried */
#define SAVED_EBP_SLOTS 4      /* slots below a scanned return address where ebp may be saved */

typedef struct walk {
    const hs_uw32_env *env;
    const hs_uw_stack *st;
} walk;

/* The stack slot at addr: 0, or why not (below the copy: HS_UW_BAD;
 * beyond it: HS_UW_AT_BASE for a complete copy, else HS_UW_TRUNCATED). */
static int slot(const walk *w, uint64_t addr, uint32_t *v)
{
    const uint8_t *p;
    int err = hs_uw_stack_at(w->st, addr, 4, &p);
    if (err)
        return err;
    *v = hs_le32(p);
    if (w->env->shadow && *v == w->env->shadow->thunk)
        *v = hs_ret_shadow_true(w->env->shadow, (uint32_t)addr, *v);
    return 0;
}

static bool is_code(const walk *w, uint64_t addr)
{
    return addr <= UINT32_MAX && w->env->is_code(w->env->ctx, (uint32_t)addr);
}

/* Length of an instruction of a one-byte opcode and a ModRM operand,
 * from its ModRM byte m[0] (and SIB byte m[1]), opcode included. */
static size_t modrm_insn_len(const uint8_t *m)
{
    int mod = m[0] >> 6, rm = m[0] & 7;
    if (mod == 3)
        return 2;
    size_t len = 2 + (rm == 4);
    if (mod == 0)
        return rm == 5 || (rm == 4 && (m[1] & 7) == 5) ? len + 4 : len;
    return len + (mod == 1 ? 1 : 4);
}

/* Is a a return address: known code just after a call? The calls are
 * call rel32 (E8) to known code, and call r/m32 (FF /2) in each of its
 * encodings (a register, [disp32], [reg], [reg+disp8/32], with a SIB). */
static bool after_call(const walk *w, uint32_t a)
{
    uint8_t c[8];              /* c[i]: the byte at a - 7 + i */
    if (a < 7 || !is_code(w, a) || w->env->read(w->env->ctx, a - 7, c, sizeof c) < 0)
        return false;
    if (c[2] == 0xE8 && is_code(w, (uint64_t)(uint32_t)(a + hs_le32(c + 3))))
        return true;
    for (size_t len = 2; len <= 7; len++) {
        const uint8_t *m = c + 8 - len;    /* the ModRM byte of a call of that length */
        if (m[-1] == 0xFF && ((m[0] >> 3) & 7) == 2 && modrm_insn_len(m) == len)
            return true;
    }
    return false;
}

/* The caller's state from the return address at `at` (and the caller's
 * ebp): 0, or why the slot cannot be read. */
static int pop_return(const walk *w, uint64_t at, uint32_t ebp, hs_uw32_regs *out)
{
    uint32_t ret;
    int err = slot(w, at, &ret);
    if (err)
        return err;
    out->eip = ret;
    out->esp = (uint32_t)(at + 4);
    out->ebp = ebp;
    return 0;
}

static bool mov_ebp_esp(const uint8_t *c)
{
    return (c[0] == 0x89 && c[1] == 0xE5) || (c[0] == 0x8B && c[1] == 0xEC);
}

/* Length of an instruction at c (8 bytes) that changes no register but
 * a general one other than esp and ebp, and the flags, and writes no
 * memory: mov, add, or, and, sub, xor, cmp, test, lea into such a
 * register, mov r32,imm32, op r32,imm8, nop, xchg ax,ax. 0 if not one. */
static size_t neutral_len(const uint8_t *c)
{
    int mod = c[1] >> 6, reg = (c[1] >> 3) & 7, rm = c[1] & 7;
    switch (c[0]) {
    case 0x90:
        return 1;
    case 0x66:
        return c[1] == 0x90 ? 2 : 0;
    case 0x01: case 0x09: case 0x21: case 0x29: case 0x31: case 0x89:   /* op r/m32, r32 */
        return mod == 3 && rm != 4 && rm != 5 ? 2 : 0;
    case 0x83:                                                           /* op r32, imm8 */
        return mod == 3 && rm != 4 && rm != 5 ? 3 : 0;
    case 0x03: case 0x0B: case 0x23: case 0x2B: case 0x33: case 0x8B: case 0x8D:   /* op r32, r/m32 */
        return reg != 4 && reg != 5 && !(c[0] == 0x8D && mod == 3) ? modrm_insn_len(c + 1) : 0;
    case 0x39: case 0x3B: case 0x85:                                     /* cmp, test */
        return modrm_insn_len(c + 1);
    default:
        return c[0] >= 0xB8 && c[0] <= 0xBF && c[0] != 0xBC && c[0] != 0xBD ? 5 : 0;
    }
}

/* The first frame in an epilogue: the code at eip, run forward, only
 * restores registers and esp (or changes neither esp nor ebp), then
 * returns. Run it to the ret. */
static int by_epilogue(const walk *w, const hs_uw32_regs *r, hs_uw32_regs *out)
{
    uint64_t eip = r->eip, esp = r->esp;
    uint32_t ebp = r->ebp, v;
    for (int k = 0; k < EPILOGUE_INSNS; k++) {
        uint8_t c[8];
        if (!is_code(w, eip) || w->env->read(w->env->ctx, (uint32_t)eip, c, sizeof c) < 0)
            return NOT_HERE;
        if (c[0] >= 0x58 && c[0] <= 0x5F && c[0] != 0x5C) {          /* pop r32 (not esp) */
            if (slot(w, esp, &v) != 0)
                return NOT_HERE;
            if (c[0] == 0x5D)
                ebp = v;
            esp += 4;
            eip += 1;
        } else if (c[0] == 0xC9) {                                    /* leave */
            if (slot(w, ebp, &v) != 0)
                return NOT_HERE;
            esp = (uint64_t)ebp + 4;
            ebp = v;
            eip += 1;
        } else if ((c[0] == 0x89 && c[1] == 0xEC) || (c[0] == 0x8B && c[1] == 0xE5)) {   /* mov esp, ebp */
            esp = ebp;
            eip += 2;
        } else if (c[0] == 0x83 && c[1] == 0xC4) {                    /* add esp, imm8 */
            esp += (uint64_t)(int64_t)(int8_t)c[2];
            eip += 3;
        } else if (c[0] == 0x81 && c[1] == 0xC4) {                    /* add esp, imm32 */
            esp += (uint64_t)(int64_t)(int32_t)hs_le32(c + 2);
            eip += 6;
        } else if (c[0] == 0x8D && c[1] == 0x65) {                    /* lea esp, [ebp+disp8] */
            esp = (uint64_t)ebp + (uint64_t)(int64_t)(int8_t)c[2];
            eip += 3;
        } else if (c[0] == 0x8D && c[1] == 0xA5) {                    /* lea esp, [ebp+disp32] */
            esp = (uint64_t)ebp + (uint64_t)(int64_t)(int32_t)hs_le32(c + 2);
            eip += 6;
        } else if (c[0] == 0x8D && c[1] == 0x64 && c[2] == 0x24) {    /* lea esp, [esp+disp8] */
            esp += (uint64_t)(int64_t)(int8_t)c[3];
            eip += 4;
        } else if (neutral_len(c) != 0) {                             /* changes neither esp nor ebp */
            eip += neutral_len(c);
        } else if (c[0] == 0xEB) {                                    /* jmp rel8 */
            eip += 2 + (uint64_t)(int64_t)(int8_t)c[1];
        } else if (c[0] == 0xE9) {                                    /* jmp rel32 */
            eip += 5 + (uint64_t)(int64_t)(int32_t)hs_le32(c + 1);
        } else if (c[0] == 0xC3 || c[0] == 0xC2 || (c[0] == 0xF3 && c[1] == 0xC3)) {   /* ret */
            if (esp < r->esp || pop_return(w, esp, ebp, out) != 0)
                return NOT_HERE;
            return 0;
        } else {
            return NOT_HERE;
        }
        eip &= UINT32_MAX;
        if (esp < r->esp || esp > UINT32_MAX)
            return NOT_HERE;
    }
    return NOT_HERE;
}

/* The first frame at a function's start: ahead of eip, `push ebp` (not
 * run yet: the return address at [esp]) or only `mov ebp,esp` (the push
 * ran: the caller's ebp at [esp], the return address above), with at
 * most PROLOGUE_INSNS instructions before them that change neither (the
 * hot-patch mov edi,edi, or one the scheduler put between the two). */
static int by_prologue(const walk *w, const hs_uw32_regs *r, hs_uw32_regs *out)
{
    uint64_t eip = r->eip;
    bool pushed = true;
    for (int k = 0;; k++) {
        uint8_t c[8];
        if (k > PROLOGUE_INSNS + 1 || !is_code(w, eip) || w->env->read(w->env->ctx, (uint32_t)eip, c, sizeof c) < 0)
            return NOT_HERE;
        if (mov_ebp_esp(c))
            break;
        size_t n = c[0] == 0x55 && pushed ? 1 : neutral_len(c);
        if (!n)
            return NOT_HERE;
        if (c[0] == 0x55)
            pushed = false;
        eip += n;
    }
    uint64_t at = r->esp;
    uint32_t ebp = r->ebp, ret;
    if (pushed) {
        int err = slot(w, at, &ebp);
        if (err)
            return err;
        at += 4;
    }
    if (slot(w, at, &ret) != 0 || !after_call(w, ret))
        return NOT_HERE;
    return pop_return(w, at, ebp, out);
}

/* Inside the prologue of a function with frame data (eip - begin <
 * prolog): the prologue run so far, from its first byte, pushes
 * registers and allocates (push r32, sub esp, mov r32,imm32, the hot-patch
 * mov edi,edi); the return address lies above what it pushed and
 * allocated, the caller's ebp where it pushed ebp. Once `mov ebp,esp`
 * ran, the chain holds instead. */
static int by_prologue_run(const walk *w, const hs_uw32_regs *r, const hs_uw32_frame_data *fd,
                           hs_uw32_regs *out)
{
    uint8_t c[64];
    uint32_t len = r->eip - fd->begin;
    if (len > sizeof c || (len && w->env->read(w->env->ctx, fd->begin, c, len) < 0))
        return NOT_HERE;
    uint32_t size = 0, ebp_pushed = 0;  /* bytes below the return address; with ebp pushed */
    for (uint32_t i = 0; i < len;) {
        if (c[i] >= 0x50 && c[i] <= 0x57) {                           /* push r32 */
            size += 4;
            if (c[i] == 0x55)
                ebp_pushed = size;
            i += 1;
        } else if (c[i] >= 0xB8 && c[i] <= 0xBF && c[i] != 0xBC) {    /* mov r32, imm32 (not esp) */
            i += 5;
        } else if (i + 1 < len && c[i] == 0x8B && c[i + 1] == 0xFF) { /* mov edi, edi */
            i += 2;
        } else if (i + 2 < len && c[i] == 0x83 && c[i + 1] == 0xEC && c[i + 2] < 0x80) {   /* sub esp, imm8 */
            size += c[i + 2];
            i += 3;
        } else if (i + 5 < len && c[i] == 0x81 && c[i + 1] == 0xEC && hs_le32(c + i + 2) < 0x1000000) {
            size += hs_le32(c + i + 2);                                 /* sub esp, imm32 */
            i += 6;
        } else {
            return NOT_HERE;   /* mov ebp,esp (the chain holds), or code not of a prologue */
        }
        if (i > len)
            return NOT_HERE;   /* eip is not at an instruction of it */
    }
    uint64_t at = (uint64_t)r->esp + size;
    uint32_t ret, ebp = r->ebp;
    int err = slot(w, at, &ret);
    if (err)
        return err;
    if (!after_call(w, ret))
        return NOT_HERE;
    if (ebp_pushed && (err = slot(w, at - ebp_pushed, &ebp)) != 0)
        return err;
    return pop_return(w, at, ebp, out);
}

/* A frame without a frame pointer that has frame data, past its
 * prologue: its return address lies above the parameters pushed for the
 * frame below (callee_params), its locals and its saved registers; a
 * push the frame data does not count moves it up a few slots (*how says
 * whether it was where the frame data said; when it was, *plan is the
 * step's: plan->ra_off and ebp_saved_at set, *planned true). */
static int by_frame_data(const walk *w, const hs_uw32_regs *r, const hs_uw32_frame_data *fd,
                         uint32_t callee_params, hs_uw32_regs *out, uint8_t *how, hs_uw32_plan *plan, bool *planned)
{
    if (r->eip - fd->begin < fd->prolog)
        return NOT_HERE;
    uint64_t at = (uint64_t)r->esp + callee_params + fd->locals + fd->saved_regs;
    for (int k = 0; k <= FRAME_DATA_SLACK; k++, at += 4) {
        uint32_t ret, ebp = r->ebp;
        int err = slot(w, at, &ret);
        if (err)
            return err;
        if (!after_call(w, ret))
            continue;
        if (fd->ebp_saved_at && (err = slot(w, at - fd->ebp_saved_at, &ebp)) != 0)
            return err;
        *how = k == 0 ? HS_UW32_FRAME_DATA : HS_UW32_SCAN;
        if (k == 0) {
            plan->ra_off = (uint32_t)(at - r->esp);
            plan->ebp_saved_at = fd->ebp_saved_at;
            *planned = true;
        }
        return pop_return(w, at, ebp, out);
    }
    return NOT_HERE;
}

/* The ebp chain: ebp in the copy, no lower than esp, and a return
 * address at [ebp+4] (a return address of 0 ends the walk). */
static int by_chain(const walk *w, const hs_uw32_regs *r, hs_uw32_regs *out)
{
    uint32_t ebp = r->ebp, saved, ret;
    if (ebp == 0 || ebp < r->esp || ebp % 4 != 0)
        return NOT_HERE;
    if (slot(w, ebp, &saved) != 0 || slot(w, (uint64_t)ebp + 4, &ret) != 0)
        return NOT_HERE;
    if (ret != 0 && !after_call(w, ret))
        return NOT_HERE;
    return pop_return(w, (uint64_t)ebp + 4, saved, out);
}

/* Could v be the frame pointer of the frame whose return address was
 * found at `at`: above it, aligned, and a return address (or 0) at
 * [v+4]? */
static bool frame_above(const walk *w, uint32_t v, uint64_t at)
{
    uint32_t ret;
    return v % 4 == 0 && v > at && slot(w, (uint64_t)v + 4, &ret) == 0 && (ret == 0 || after_call(w, ret));
}

/* The scan: the first slot from esp up that holds a return address. The
 * caller's ebp is the current one if it can be its frame pointer, else
 * one of the slots just below the return address, where a function
 * without a frame pointer that uses ebp saved it. */
static int by_scan(const walk *w, const hs_uw32_regs *r, hs_uw32_regs *out)
{
    uint64_t at = r->esp;
    for (int k = 0; k < HS_UW32_SCAN_SLOTS; k++, at += 4) {
        uint32_t v;
        int err = slot(w, at, &v);
        if (err)
            return err;
        if (!after_call(w, v))
            continue;
        uint32_t ebp = r->ebp;
        for (int j = 1; j <= SAVED_EBP_SLOTS && !frame_above(w, ebp, at); j++) {
            uint32_t saved;
            if (at - 4 * (uint64_t)j < r->esp || slot(w, at - 4 * (uint64_t)j, &saved) != 0)
                break;
            if (frame_above(w, saved, at))
                ebp = saved;
        }
        return pop_return(w, at, ebp, out);
    }
    return r->ebp == 0 ? HS_UW_AT_BASE : HS_UW_BAD;   /* (the walk ends there: AT_BASE becomes END) */
}

/* The frame data of the function holding pc: 1 with *fd, or 0. */
static bool frame_data_at(const walk *w, uint32_t pc, hs_uw32_frame_data *fd)
{
    return w->env->frame_data && w->env->frame_data(w->env->ctx, pc, fd) == 1;
}

/* One step from r to its caller: 0 with *r the caller's state and *how
 * how it was found, or why not (an hs_uw_stop). first: r is the thread's
 * own state (elsewhere r stands at a return address). *params: the bytes
 * of parameters of the frame below (its frame data's; 0 if none), which
 * this frame pushed; on return, this frame's own. *planned: the step is
 * *plan (hs_uw32_plan). */
static int step(const walk *w, hs_uw32_regs *r, bool first, uint32_t *params, uint8_t *how, hs_uw32_plan *plan,
                bool *planned)
{
    /* a return address is the function's that made the call: the one
     * before it (a call to a function that does not return can be the
     * last instruction of its function) */
    hs_uw32_frame_data fd;
    bool have_fd = frame_data_at(w, first ? r->eip : r->eip - 1, &fd);
    uint32_t callee_params = *params;
    *params = have_fd ? fd.params : 0;
    hs_uw32_regs out = *r;
    int err = NOT_HERE;
    if (first && (err = by_epilogue(w, r, &out)) != NOT_HERE)
        *how = HS_UW32_EPILOGUE;
    else if (first && (err = by_prologue(w, r, &out)) != NOT_HERE)
        *how = HS_UW32_PROLOGUE;
    else if (have_fd && r->eip - fd.begin < fd.prolog && (err = by_prologue_run(w, r, &fd, &out)) != NOT_HERE)
        *how = HS_UW32_PROLOGUE;
    else if (have_fd && !fd.uses_ebp &&
             (err = by_frame_data(w, r, &fd, callee_params, &out, how, plan, planned)) != NOT_HERE)
        ;
    else if ((err = by_chain(w, r, &out)) != NOT_HERE)
        *how = HS_UW32_CHAIN;
    else if ((err = by_scan(w, r, &out)) == 0)
        *how = HS_UW32_SCAN;
    if (!err)
        *r = out;
    *planned = *planned && !err && !first;
    plan->callee_params = callee_params;
    plan->params = *params;
    return err;
}

/* The step of a plan (hs_uw32_plan) from the frame at return address
 * r->eip. */
static int run_plan(const walk *w, hs_uw32_regs *r, const hs_uw32_plan *plan, uint32_t *params, uint8_t *how)
{
    uint64_t at = (uint64_t)r->esp + plan->ra_off;
    uint32_t ebp = r->ebp;
    int err;
    if (plan->ebp_saved_at && (err = slot(w, at - plan->ebp_saved_at, &ebp)) != 0)
        return err;
    if ((err = pop_return(w, at, ebp, r)) != 0)
        return err;
    *params = plan->params;
    *how = HS_UW32_FRAME_DATA;
    return 0;
}

/* The step out of a function at its entry: its return address at [esp]
 * (*params: its frame data's parameters, pushed by its caller). */
static int step_entry(const walk *w, hs_uw32_regs *r, uint32_t *params, uint8_t *how)
{
    hs_uw32_frame_data fd;
    *params = frame_data_at(w, r->eip, &fd) ? fd.params : 0;
    *how = HS_UW32_PROLOGUE;
    return pop_return(w, r->esp, r->ebp, r);
}

static hs_uw_result walk_from(const hs_uw32_env *env, const hs_uw_stack *st, const hs_uw32_regs *start,
                              bool at_entry, uint32_t *frames, uint8_t *how, uint32_t max)
{
    hs_uw_result res = { 0, HS_UW_END, 0 };
    if (!max)
        return res;
    walk w = { env, st };
    hs_uw32_regs r = *start;
    uint32_t params = 0;
    uint8_t found = HS_UW32_CONTEXT;
    for (;;) {
        if (how)
            how[res.n] = found;
        frames[res.n++] = r.eip;
        if (!env->is_code(env->ctx, r.eip)) {
            res.stop = HS_UW_UNKNOWN_PC;
            res.unknown_pc = r.eip;
            return res;
        }
        uint32_t sp = r.esp, pc = r.eip;
        hs_uw32_plan plan;
        bool planned = false;
        int err;
        if (res.n == 1 && at_entry) {
            err = step_entry(&w, &r, &params, &found);
        } else if (res.n > 1 && env->plan_get && env->plan_get(env->ctx, pc, params, &plan)) {
            err = run_plan(&w, &r, &plan, &params, &found);   /* (r stands at a return address) */
        } else {
            err = step(&w, &r, res.n == 1, &params, &found, &plan, &planned);
            if (planned && env->plan_put)
                env->plan_put(env->ctx, pc, &plan);
        }
        if (err) {
            res.stop = err == HS_UW_AT_BASE ? HS_UW_END : err;
            return res;
        }
        if (r.eip == 0)
            return res;
        if (r.esp <= sp) {
            res.stop = HS_UW_BAD;
            return res;
        }
        if (res.n == max) {
            res.stop = HS_UW_TRUNCATED;
            return res;
        }
    }
}

hs_uw_result hs_unwind32_walk(const hs_uw32_env *env, const hs_uw_stack *st, const hs_uw32_regs *regs,
                              uint32_t *frames, uint8_t *how, uint32_t max)
{
    return walk_from(env, st, regs, false, frames, how, max);
}

hs_uw_result hs_unwind32_walk_entry(const hs_uw32_env *env, const hs_uw_stack *st, const hs_uw32_regs *regs,
                                    uint32_t *frames, uint8_t *how, uint32_t max)
{
    return walk_from(env, st, regs, true, frames, how, max);
}
