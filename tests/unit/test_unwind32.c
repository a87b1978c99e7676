/*
 * tests/unit/test_unwind32.c - the x86 stack walker (hook/unwind/unwind32.h)
 * on synthetic stacks, each case with the exact frames, how each was
 * found and why the walk stopped:
 *
 *   chain       three frames to a chain that ends with ebp 0 (at the
 *               copy's base, and below more stack than a scan reads); the
 *               same copy incomplete (truncated), and cut by the frame
 *               limit;
 *   prologue    a leaf at its `push ebp`, at its `mov ebp,esp`, at the
 *               hot-patch `mov edi,edi`, at an instruction between push
 *               and mov: the caller the chain would skip;
 *   epilogue    a leaf at `pop edi; pop esi; pop ebp; ret`, at the ret
 *               after `pop ebp`, at `leave; ret 8`, between leave and ret;
 *   frame data  a function without a frame pointer in the middle (ebp
 *               its own, the caller's saved below its return address, a
 *               stale return address in its locals), found exactly; the
 *               same function as the leaf, with an argument pushed, and
 *               in its prologue (its pushes run from its first byte);
 *   entry       the walk from a function's entry (its return address at
 *               [esp]) through a frame without a frame pointer; return
 *               thunks read through a shadow stack; a plan made and run
 *               again;
 *   fpo         FPO_DATA records decoded (hook/unwind/fpo32.h), and the
 *               walk with them; FrameData program strings of LLVM and
 *               MSVC, aligned and malformed ones;
 *   scribbled   a chain that points at itself, one that points outside
 *               the stack, a return address that does not follow a call:
 *               the scan finds the true caller, marked as a scan;
 *   calls       each encoding of a call before a return address, and a
 *               call rel32 to no known code (not a return address);
 *   unknown     eip outside known code.
 *
 * Built natively, for 64 and 32 bits; the 32-bit build also walks its own
 * stack (#if __i386__ below): gcc -O2 functions with and without a frame
 * pointer (per function: optimize("omit-frame-pointer") or not), the
 * frame data of the latter read from their prologues; the walk of the
 * stack copied at the deepest one gives exactly the return addresses each
 * function saw (__builtin_return_address), with frame data, with ebp
 * scribbled and restored from frame data, and scribbled where there is no
 * frame data (found by the scan); and real i686 mingw code (-O0 and -O2
 * -fno-omit-frame-pointer with frame pointers, -O2 without them and with
 * frame data read from its prologues: unwind32_cases.h), run natively and
 * stopped at every instruction of a chain of calls.
 */
#include <stdio.h>
#include <string.h>

#include "hook/unwind/fpo32.h"
#include "hook/unwind/unwind32.h"
#include "tests/unit/tap.h"

/* ---- a synthetic target ---------------------------------------------------- */

#define CODE 0x00401000u       /* the code: CODE_LEN bytes */
#define CODE_LEN 0x1000u
#define STK 0x0012E000u        /* the stack copy: STK_WORDS slots from STK */
#define STK_WORDS 512

#define CALLEE (CODE + 0x800)  /* what the calls of the code call */
/* return addresses: just after a call rel32 */
#define R1 (CODE + 0x105)
#define R2 (CODE + 0x205)
#define R3 (CODE + 0x305)
#define R4 (CODE + 0x405)
/* leaves */
#define PROLOG (CODE + 0x600)  /* push ebp; mov ebp,esp; sub esp,16 */
#define HOTPATCH (CODE + 0x620) /* mov edi,edi; push ebp; mov ebp,esp */
#define EPILOG (CODE + 0x640)  /* pop edi; pop esi; pop ebp; ret */
#define LEAVE (CODE + 0x660)   /* leave; ret 8 */
#define BODY (CODE + 0x680)    /* mov eax,[ebp+8]; push eax; ... (no epilogue ahead) */
#define NOT_AFTER_CALL (CODE + 0x705)
#define SCHEDULED (CODE + 0x6A0) /* push ebp; xor eax,eax; mov ebp,esp; ...; leave; add eax,edx; ret */
/* a function without a frame pointer: [FPO_BEGIN, FPO_END), a call returns to +0x15 */
#define FPO_BEGIN (CODE + 0x500)
#define FPO_END (CODE + 0x580)

typedef struct target {
    uint8_t code[CODE_LEN];
    uint32_t stack[STK_WORDS];
    int with_frame_data;
    /* frame data decoded from FPO_DATA records, when nfpo > 0 */
    hs_uw32_frame_data fpo[2];
    uint32_t fpo_end[2];
    int nfpo;
} target;

static bool t_is_code(void *ctx, uint32_t addr)
{
    (void)ctx;
    return addr >= CODE && addr - CODE < CODE_LEN;
}

static int t_read(void *ctx, uint32_t addr, void *buf, size_t len)
{
    const target *t = ctx;
    if (addr < CODE || addr - CODE > CODE_LEN || CODE_LEN - (addr - CODE) < len)
        return -1;
    memcpy(buf, t->code + (addr - CODE), len);
    return 0;
}

/* BODY's function has a frame pointer and two parameters; the one at
 * FPO_BEGIN none: 16 bytes of locals below ebx and ebp (saved first). */
static int t_frame_data(void *ctx, uint32_t pc, hs_uw32_frame_data *fd)
{
    const target *t = ctx;
    for (int i = 0; i < t->nfpo; i++) {
        if (pc >= t->fpo[i].begin && pc < t->fpo_end[i]) {
            *fd = t->fpo[i];
            return 1;
        }
    }
    if (!t->with_frame_data)
        return 0;
    memset(fd, 0, sizeof *fd);
    if (pc >= BODY && pc < BODY + 0x20) {
        fd->begin = BODY;
        fd->prolog = 3;
        fd->params = 8;
        fd->uses_ebp = true;
        return 1;
    }
    if (pc >= FPO_BEGIN && pc < FPO_END) {
        fd->begin = FPO_BEGIN;
        fd->prolog = 5;
        fd->locals = 16;
        fd->saved_regs = 8;
        fd->ebp_saved_at = 4;
        fd->params = 4;
        return 1;
    }
    return 0;
}

static void put(target *t, uint32_t at, const uint8_t *bytes, size_t n)
{
    memcpy(t->code + (at - CODE), bytes, n);
}

/* A call rel32 to CALLEE that returns to ret. */
static void put_call(target *t, uint32_t ret)
{
    uint8_t c[5] = { 0xE8 };
    uint32_t rel = CALLEE - ret;
    memcpy(c + 1, &rel, 4);
    put(t, ret - 5, c, 5);
}

static void setup(target *t)
{
    memset(t, 0, sizeof *t);
    memset(t->code, 0xCC, sizeof t->code);
    static const uint8_t callee[] = { 0x55, 0x89, 0xE5, 0x5D, 0xC3 };
    static const uint8_t prolog[] = { 0x55, 0x8B, 0xEC, 0x83, 0xEC, 0x10 };
    static const uint8_t hotpatch[] = { 0x8B, 0xFF, 0x55, 0x8B, 0xEC };
    static const uint8_t epilog[] = { 0x5F, 0x5E, 0x5D, 0xC3 };
    static const uint8_t leave[] = { 0xC9, 0xC2, 0x08, 0x00 };
    static const uint8_t body[] = { 0x8B, 0x45, 0x08, 0x50, 0x03, 0x45, 0x0C, 0xC9, 0xC3 };
    static const uint8_t fpo_prolog[] = { 0x55, 0x53, 0x83, 0xEC, 0x10 };
    static const uint8_t not_call[] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };
    put(t, CALLEE, callee, sizeof callee);
    put(t, PROLOG, prolog, sizeof prolog);
    put(t, HOTPATCH, hotpatch, sizeof hotpatch);
    put(t, EPILOG, epilog, sizeof epilog);
    put(t, LEAVE, leave, sizeof leave);
    put(t, BODY, body, sizeof body);
    put(t, FPO_BEGIN, fpo_prolog, sizeof fpo_prolog);
    static const uint8_t scheduled[] = { 0x55, 0x31, 0xC0, 0x89, 0xE5, 0x50, 0xC9, 0x01, 0xD0, 0xC3 };
    put(t, SCHEDULED, scheduled, sizeof scheduled);
    put(t, NOT_AFTER_CALL - 7, not_call, sizeof not_call);
    put_call(t, R1);
    put_call(t, R2);
    put_call(t, R3);
    put_call(t, R4);
}

static void set(target *t, uint32_t addr, uint32_t v)
{
    t->stack[(addr - STK) / 4] = v;
}

/* Walk from (eip, esp, ebp) over the first `words` slots of the stack
 * (complete: they reach its base) and check the frames, how each was
 * found, and the stop. want/want_how end with 0 / any (n frames). */
static void check_env(const char *name, const hs_uw32_env *env, bool at_entry, target *t, uint32_t eip,
                      uint32_t esp, uint32_t ebp, size_t words, bool complete, uint32_t max, const uint32_t *want,
                      const uint8_t *want_how, uint32_t n, int want_stop)
{
    hs_uw_stack st = { STK, (const uint8_t *)t->stack, words * 4, complete };
    hs_uw32_regs regs = { eip, esp, ebp };
    uint32_t frames[16];
    uint8_t how[16];
    hs_uw_result res = at_entry ? hs_unwind32_walk_entry(env, &st, &regs, frames, how, max)
                                : hs_unwind32_walk(env, &st, &regs, frames, how, max);
    char got[400];
    size_t len = (size_t)snprintf(got, sizeof got, "stop %d, frames", res.stop);
    for (uint32_t i = 0; i < res.n && len < sizeof got; i++)
        len += (size_t)snprintf(got + len, sizeof got - len, " +0x%x(%d)", frames[i] - CODE, how[i]);
    int ok = res.n == n && res.stop == want_stop;
    for (uint32_t i = 0; ok && i < n; i++)
        ok = frames[i] == want[i] && how[i] == want_how[i];
    tap_check(ok, name, "%s", got);
}

static void check_walk(const char *name, target *t, uint32_t eip, uint32_t esp, uint32_t ebp, size_t words,
                       bool complete, uint32_t max, const uint32_t *want, const uint8_t *want_how, uint32_t n,
                       int want_stop)
{
    hs_uw32_env env = { t, t_is_code, t_read, t_frame_data, NULL, NULL, NULL };
    check_env(name, &env, false, t, eip, esp, ebp, words, complete, max, want, want_how, n, want_stop);
}

#define S(off) (STK + (off))
#define FRAMES(...) (const uint32_t[]){ __VA_ARGS__ }
#define HOW(...) (const uint8_t[]){ __VA_ARGS__ }
enum { CTX = HS_UW32_CONTEXT, EPI = HS_UW32_EPILOGUE, PRO = HS_UW32_PROLOGUE, FD = HS_UW32_FRAME_DATA,
       CHN = HS_UW32_CHAIN, SCN = HS_UW32_SCAN };

/* Callers' frames above S(0x30): [S(0x30)] = S(0x50), R2 above it; then
 * the chain's end: ebp 0, R3. */
static void callers(target *t)
{
    set(t, S(0x30), S(0x50));
    set(t, S(0x34), R2);
    set(t, S(0x50), 0);
    set(t, S(0x54), R3);
}

static void test_chain(void)
{
    target t;
    setup(&t);
    set(&t, S(0x10), S(0x30));
    set(&t, S(0x14), R1);
    callers(&t);
    const uint32_t *want = FRAMES(BODY, R1, R2, R3);
    const uint8_t *how = HOW(CTX, CHN, CHN, CHN);
    check_walk("unwind32/chain: three frames to ebp 0", &t, BODY, S(0), S(0x10), 64, true, 16, want, how, 4,
               HS_UW_END);
    check_walk("unwind32/chain: an incomplete copy", &t, BODY, S(0), S(0x10), 0x5C / 4, false, 16, want, how,
               4, HS_UW_TRUNCATED);
    check_walk("unwind32/chain: the frame limit", &t, BODY, S(0), S(0x10), 64, true, 2, want, how, 2,
               HS_UW_TRUNCATED);
    /* ebp 0, and more stack above than a scan reads: the end */
    check_walk("unwind32/chain: ebp 0 below more stack than a scan reads", &t, BODY, S(0), S(0x10), STK_WORDS, true,
               16, want, how, 4, HS_UW_END);
    /* a copy that ends inside the chain: the frame there is beyond it */
    check_walk("unwind32/chain: a copy that ends at a frame", &t, BODY, S(0), S(0x10), 0x30 / 4, false, 16,
               want, how, 2, HS_UW_TRUNCATED);
}

static void test_prologue(void)
{
    target t;
    setup(&t);
    /* at the push: the return address at [esp], ebp the caller's */
    set(&t, S(0x00), R1);
    callers(&t);
    check_walk("unwind32/prologue: at push ebp", &t, PROLOG, S(0), S(0x30), 64, true, 16,
               FRAMES(PROLOG, R1, R2, R3), HOW(CTX, PRO, CHN, CHN), 4, HS_UW_END);
    check_walk("unwind32/prologue: at the hot-patch mov edi,edi", &t, HOTPATCH, S(0), S(0x30), 64, true, 16,
               FRAMES(HOTPATCH, R1, R2, R3), HOW(CTX, PRO, CHN, CHN), 4, HS_UW_END);
    /* at the mov: the caller's ebp pushed at [esp], the return address above */
    setup(&t);
    set(&t, S(0x08), S(0x30));
    set(&t, S(0x0C), R1);
    callers(&t);
    check_walk("unwind32/prologue: at mov ebp,esp", &t, PROLOG + 1, S(0x08), S(0x30), 64, true, 16,
               FRAMES(PROLOG + 1, R1, R2, R3), HOW(CTX, PRO, CHN, CHN), 4, HS_UW_END);
    /* gcc -O2 -fno-omit-frame-pointer: push ebp; xor eax,eax; mov ebp,esp */
    check_walk("unwind32/prologue: an instruction between push ebp and mov ebp,esp", &t, SCHEDULED + 1, S(0x08),
               S(0x30), 64, true, 16, FRAMES(SCHEDULED + 1, R1, R2, R3), HOW(CTX, PRO, CHN, CHN), 4, HS_UW_END);
}

static void test_epilogue(void)
{
    target t;
    setup(&t);
    /* pop edi; pop esi; pop ebp; ret: ebp already the function's own */
    set(&t, S(0x00), 0x1111);
    set(&t, S(0x04), 0x2222);
    set(&t, S(0x08), S(0x30));
    set(&t, S(0x0C), R1);
    callers(&t);
    check_walk("unwind32/epilogue: at pop edi; pop esi; pop ebp; ret", &t, EPILOG, S(0), 0xDEAD0000u, 64, true,
               16, FRAMES(EPILOG, R1, R2, R3), HOW(CTX, EPI, CHN, CHN), 4, HS_UW_END);
    /* at the ret after pop ebp: the return address at [esp] */
    check_walk("unwind32/epilogue: at the ret after pop ebp", &t, EPILOG + 3, S(0x0C), S(0x30), 64, true, 16,
               FRAMES(EPILOG + 3, R1, R2, R3), HOW(CTX, EPI, CHN, CHN), 4, HS_UW_END);
    /* leave; ret 8 */
    setup(&t);
    set(&t, S(0x10), S(0x30));
    set(&t, S(0x14), R1);
    callers(&t);
    check_walk("unwind32/epilogue: at leave; ret 8", &t, LEAVE, S(0), S(0x10), 64, true, 16,
               FRAMES(LEAVE, R1, R2, R3), HOW(CTX, EPI, CHN, CHN), 4, HS_UW_END);
    /* gcc -O2: leave; add eax,edx; ret, at the add (ebp the caller's) */
    check_walk("unwind32/epilogue: an instruction between leave and ret", &t, SCHEDULED + 7, S(0x14), S(0x30), 64,
               true, 16, FRAMES(SCHEDULED + 7, R1, R2, R3), HOW(CTX, EPI, CHN, CHN), 4, HS_UW_END);
}

/* BODY (a frame pointer, 8 bytes of parameters) called from the
 * function at FPO_BEGIN, which holds 7 in ebp; its frame from S(0x18)
 * up: BODY's parameters, 16 bytes of locals (a stale return address R4 in
 * them), ebx, ebp (the caller's, S(0x50)), the return address R2; then
 * the chain's end. Returns the return address into FPO_BEGIN's function. */
static uint32_t fpo_in_the_middle(target *t)
{
    uint32_t in_fpo = FPO_BEGIN + 0x15;
    put_call(t, in_fpo);
    set(t, S(0x10), 7);
    set(t, S(0x14), in_fpo);
    set(t, S(0x18), 1);
    set(t, S(0x1C), 2);
    set(t, S(0x24), R4);
    set(t, S(0x30), 0x3333);
    set(t, S(0x34), S(0x50));
    set(t, S(0x38), R2);
    set(t, S(0x50), 0);
    set(t, S(0x54), R3);
    return in_fpo;
}

static void test_frame_data(void)
{
    target t;
    setup(&t);
    uint32_t in_fpo = fpo_in_the_middle(&t);
    t.with_frame_data = 1;
    check_walk("unwind32/frame data: a frame without a frame pointer in the middle", &t, BODY + 3, S(0),
               S(0x10), 64, true, 16, FRAMES(BODY + 3, in_fpo, R2, R3), HOW(CTX, CHN, FD, CHN), 4, HS_UW_END);
    /* without the frame data the scan takes the stale return address */
    t.with_frame_data = 0;
    check_walk("unwind32/frame data: without it, a scan (the stale R4)", &t, BODY + 3, S(0), S(0x10), 64, true,
               16, FRAMES(BODY + 3, in_fpo, R4, R2, R3), HOW(CTX, CHN, SCN, SCN, CHN), 5, HS_UW_END);
    /* the same function as the leaf, an argument pushed (not in its
     * frame data): its return address one slot above where the frame
     * data says; at its first byte, the return address at [esp] */
    t.with_frame_data = 1;
    set(&t, S(0x1C), 0x55);
    check_walk("unwind32/frame data: the leaf, with an argument pushed", &t, in_fpo + 2, S(0x1C), 7, 64, true,
               16, FRAMES(in_fpo + 2, R2, R3), HOW(CTX, SCN, CHN), 3, HS_UW_END);
    /* in its prologue (push ebp; push ebx; sub esp,16), after the two
     * pushes (ebp 7: the caller's is where the push put it); at its
     * first byte */
    check_walk("unwind32/frame data: the leaf in its prologue", &t, FPO_BEGIN + 2, S(0x30), 7, 64, true, 16,
               FRAMES(FPO_BEGIN + 2, R2, R3), HOW(CTX, PRO, CHN), 3, HS_UW_END);
    set(&t, S(0x34), R2);
    check_walk("unwind32/frame data: the leaf at its first byte", &t, FPO_BEGIN, S(0x34), S(0x50), 64, true, 16,
               FRAMES(FPO_BEGIN, R2, R3), HOW(CTX, PRO, CHN), 3, HS_UW_END);
}

/* A keeper of one plan (hs_uw32_env's plan_get and plan_put). */
typedef struct keeper {
    target *t;
    uint32_t ret;              /* 0: none kept */
    hs_uw32_plan plan;
    int gets;                  /* plans given back */
} keeper;

static bool k_is_code(void *ctx, uint32_t addr)
{
    return t_is_code(((keeper *)ctx)->t, addr);
}

static int k_read(void *ctx, uint32_t addr, void *buf, size_t len)
{
    return t_read(((keeper *)ctx)->t, addr, buf, len);
}

static int k_frame_data(void *ctx, uint32_t pc, hs_uw32_frame_data *fd)
{
    return t_frame_data(((keeper *)ctx)->t, pc, fd);
}

static int k_plan_get(void *ctx, uint32_t ret, uint32_t callee_params, hs_uw32_plan *plan)
{
    keeper *k = ctx;
    if (!k->ret || ret != k->ret || callee_params != k->plan.callee_params)
        return 0;
    *plan = k->plan;
    k->gets++;
    return 1;
}

static void k_plan_put(void *ctx, uint32_t ret, const hs_uw32_plan *plan)
{
    keeper *k = ctx;
    k->ret = ret;
    k->plan = *plan;
}

/* From a function's entry (hs_unwind32_walk_entry): BODY entered from
 * the function at FPO_BEGIN (fpo_in_the_middle, before BODY's push ebp):
 * the return address at [esp], then the frame without a frame pointer
 * stepped out of with BODY's parameters from BODY's frame data; the same
 * with that return address replaced by a return thunk (the true one on
 * a shadow stack); with a keeper of plans, the plan made by the first
 * walk walks the second without frame data (which would take the stale
 * return address). */
static void test_entry(void)
{
    target t;
    setup(&t);
    uint32_t in_fpo = fpo_in_the_middle(&t);
    t.with_frame_data = 1;
    hs_uw32_env env = { &t, t_is_code, t_read, t_frame_data, NULL, NULL, NULL };
    check_env("unwind32/entry: through a frame without a frame pointer", &env, true, &t, BODY, S(0x14), 7, 64,
              true, 16, FRAMES(BODY, in_fpo, R2, R3), HOW(CTX, PRO, FD, CHN), 4, HS_UW_END);
    const uint32_t thunk = CALLEE + 1;
    const uint32_t recs[2][2] = { { S(0x38), R2 }, { S(0x14), in_fpo } };   /* (slot, true return), oldest first */
    const hs_ret_shadow sh = { thunk, (const uint8_t *)recs, 2, 8, 0, 4 };
    set(&t, S(0x14), thunk);
    set(&t, S(0x38), thunk);
    env.shadow = &sh;
    check_env("unwind32/entry: return thunks read as the true returns", &env, true, &t, BODY, S(0x14), 7, 64, true,
              16, FRAMES(BODY, in_fpo, R2, R3), HOW(CTX, PRO, FD, CHN), 4, HS_UW_END);
    set(&t, S(0x14), in_fpo);
    set(&t, S(0x38), R2);
    keeper k = { &t, 0, { 0 }, 0 };
    hs_uw32_env kept = { &k, k_is_code, k_read, k_frame_data, NULL, k_plan_get, k_plan_put };
    check_env("unwind32/entry: a plan made", &kept, true, &t, BODY, S(0x14), 7, 64, true, 16,
              FRAMES(BODY, in_fpo, R2, R3), HOW(CTX, PRO, FD, CHN), 4, HS_UW_END);
    tap_check(k.ret == in_fpo && k.plan.callee_params == 8 && k.plan.ra_off == 0x20 && k.plan.ebp_saved_at == 4 &&
                  k.plan.params == 4 && k.gets == 0,
              "unwind32/entry: the plan of the frame without a frame pointer",
              "ret +0x%x, callee params %u, ra at +0x%x, ebp %u below, params %u, gets %d", k.ret - CODE,
              k.plan.callee_params, k.plan.ra_off, k.plan.ebp_saved_at, k.plan.params, k.gets);
    /* frame data that says its frame is on ebp (the chain fails, the
     * scan takes R4): not read */
    t.nfpo = 1;
    t.fpo[0] = (hs_uw32_frame_data){ .begin = FPO_BEGIN, .uses_ebp = true };
    t.fpo_end[0] = FPO_END;
    check_env("unwind32/entry: the plan run again, not the frame data", &kept, true, &t, BODY, S(0x14), 7, 64, true, 16,
              FRAMES(BODY, in_fpo, R2, R3), HOW(CTX, PRO, FD, CHN), 4, HS_UW_END);
    tap_check(k.gets == 1, "unwind32/entry: the plan was run", "gets %d", k.gets);
}

/* An FPO_DATA record: start, size, locals and parameters in dwords,
 * then prolog bytes, saved registers, fUseBP, cbFrame. */
static void fpo_record(uint8_t rec[16], uint32_t start, uint32_t size, uint32_t locals, uint16_t params, uint8_t prolog,
                       int regs, int use_bp, int frame)
{
    memcpy(rec, &start, 4);
    memcpy(rec + 4, &size, 4);
    memcpy(rec + 8, &locals, 4);
    memcpy(rec + 12, &params, 2);
    uint16_t bits = (uint16_t)(prolog | regs << 8 | use_bp << 12 | frame << 14);
    memcpy(rec + 14, &bits, 2);
}

static void test_fpo_records(void)
{
    uint8_t rec[16];
    hs_uw32_frame_data fd;
    uint32_t end = 0;
    fpo_record(rec, 0x1500, 0x80, 4, 1, 5, 2, 0, 0);
    int rc = hs_fpo32_decode(rec, sizeof rec, CODE - 0x1000, &fd, &end);
    tap_check(rc == 0 && fd.begin == FPO_BEGIN && end == FPO_END && fd.prolog == 5 && fd.locals == 16 &&
                  fd.saved_regs == 8 && fd.params == 4 && !fd.uses_ebp && fd.ebp_saved_at == 0,
              "unwind32/fpo: a record without a frame pointer", "rc %d: begin 0x%x end 0x%x prolog %u locals %u "
              "saved %u params %u uses_ebp %d", rc, fd.begin, end, fd.prolog, fd.locals, fd.saved_regs, fd.params,
              fd.uses_ebp);
    fpo_record(rec, 0x1680, 0x20, 0, 2, 3, 0, 1, 3);
    rc = hs_fpo32_decode(rec, sizeof rec, CODE - 0x1000, &fd, &end);
    tap_check(rc == 0 && fd.begin == BODY && end == BODY + 0x20 && fd.uses_ebp && fd.params == 8,
              "unwind32/fpo: a record with a frame pointer", "rc %d: begin 0x%x uses_ebp %d params %u", rc, fd.begin,
              fd.uses_ebp, fd.params);
    fpo_record(rec, 0x1680, 0x20, 0, 0, 0, 0, 0, 1);
    tap_check(hs_fpo32_decode(rec, sizeof rec, 0, &fd, &end) == -1 && hs_fpo32_decode(rec, 15, 0, &fd, &end) == -1,
              "unwind32/fpo: a trap frame and a short record are refused", "accepted");

    /* the frame data case above with the records decoded: the return
     * address by them; the caller's ebp (which FPO_DATA does not place)
     * by the scan's recovery */
    target t;
    setup(&t);
    uint32_t in_fpo = fpo_in_the_middle(&t);
    fpo_record(rec, 0x1500, 0x80, 4, 1, 5, 2, 0, 0);
    hs_fpo32_decode(rec, sizeof rec, CODE - 0x1000, &t.fpo[0], &t.fpo_end[0]);
    fpo_record(rec, 0x1680, 0x20, 0, 2, 3, 0, 1, 3);
    hs_fpo32_decode(rec, sizeof rec, CODE - 0x1000, &t.fpo[1], &t.fpo_end[1]);
    t.nfpo = 2;
    check_walk("unwind32/fpo: the frame without a frame pointer from its FPO record", &t, BODY + 3, S(0), S(0x10), 64,
               true, 16, FRAMES(BODY + 3, in_fpo, R2, R3), HOW(CTX, CHN, FD, SCN), 4, HS_UW_END);
}

/* FrameData program strings: what the walker takes from each form */
static void test_fpo_programs(void)
{
    static const struct {
        const char *program;
        int rc;
        bool ebp;
        uint32_t at;
    } cases[] = {
        /* LLVM: no frame pointer; ebp not saved, saved 4 and 12 below the return address */
        { "$T0 .raSearch = $eip $T0 ^ = $esp $T0 4 + = ", 1, false, 0 },
        { "$T0 .raSearch = $eip $T0 ^ = $esp $T0 4 + = $ebp $T0 4 - ^ = ", 1, false, 4 },
        { "$T0 .raSearch = $eip $T0 ^ = $esp $T0 4 + = $ebx $T0 4 - ^ = $edi $T0 8 - ^ = "
          "$ebp $T0 12 - ^ = $esi $T0 16 - ^ =", 1, false, 12 },
        /* LLVM after `mov ebp,esp`, and MSVC's frame on ebp */
        { "$T0 $ebp 4 + = $eip $T0 ^ = $esp $T0 4 + = $ebp $T0 4 - ^ = ", 1, true, 0 },
        { "$T0 $ebp = $eip $T0 4 + ^ = $ebp $T0 ^ = $esp $T0 8 + = $L $T0 .cbSavedRegs - = "
          "$P $T0 8 + .cbParams + =", 1, true, 0 },
        /* .raSearchStart (breakpad's spelling), tabs and newlines */
        { "$T0\t.raSearchStart =\n$eip $T0 ^ = $ebp $T0 8 - ^ =", 1, false, 8 },
        /* MSVC's aligned frame: the return address above an unaligned T1 */
        { "$T1 .raSearch = $T0 $T1 4 - 8 @ = $ebp $T1 4 - ^ = $eip $T1 ^ = $esp $T1 4 + =", 1, false, 4 },
        /* eip read through an aligned value, at an offset, or never set */
        { "$T0 .raSearch 8 @ = $eip $T0 ^ =", 0, false, 0 },
        { "$T0 .raSearch = $eip $T0 4 + ^ =", 0, false, 0 },
        { "$T0 .raSearch = $esp $T0 4 + =", 0, false, 0 },
        /* malformed: a stack left over, an operator without operands, a
         * number that is not one, = onto a value, too deep, a long token */
        { "$T0 .raSearch = $eip $T0 ^ = 4", 0, false, 0 },
        { "^ $eip $T0 ^ =", 0, false, 0 },
        { "$T0 .raSearch 4x + = $eip $T0 ^ =", 0, false, 0 },
        { "4 4 = $eip .raSearch ^ =", 0, false, 0 },
        { "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 $eip .raSearch ^ =", 0, false, 0 },
        { "$T0 .raSearchxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = $eip $T0 ^ =", 0, false, 0 },
        { "", 0, false, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool ebp = false;
        uint32_t at = 0;
        int rc = hs_fpo32_program(cases[i].program, &ebp, &at);
        char name[64];
        snprintf(name, sizeof name, "unwind32/fpo program %zu", i);
        tap_check(rc == cases[i].rc && (!rc || (ebp == cases[i].ebp && at == cases[i].at)), name,
                  "\"%s\": rc %d uses_ebp %d ebp_saved_at %u (want %d %d %u)",
                  cases[i].program, rc, ebp, at, cases[i].rc, cases[i].ebp, cases[i].at);
    }
    tap_check(hs_fpo32_program(NULL, &(bool){ 0 }, &(uint32_t){ 0 }) == 0, "unwind32/fpo program: none",
              "a missing program read as one");
}

static void test_scribbled(void)
{
    target t;
    setup(&t);
    /* ebp's frame points at itself; above it, R2 and the caller's ebp
     * saved below it */
    set(&t, S(0x10), S(0x10));
    set(&t, S(0x14), R1);
    set(&t, S(0x20), S(0x50));
    set(&t, S(0x24), R2);
    set(&t, S(0x50), 0);
    set(&t, S(0x54), R3);
    check_walk("unwind32/scribbled: a chain that loops", &t, BODY, S(0), S(0x10), 64, true, 16,
               FRAMES(BODY, R1, R2, R3), HOW(CTX, CHN, SCN, CHN), 4, HS_UW_END);
    /* ebp outside the stack: the scan from esp */
    setup(&t);
    set(&t, S(0x08), R1);
    callers(&t);
    check_walk("unwind32/scribbled: ebp outside the stack", &t, BODY, S(0), 0x7FFF0000u, 64, true, 16,
               FRAMES(BODY, R1, R2, R3), HOW(CTX, SCN, SCN, CHN), 4, HS_UW_END);
    /* [ebp+4] in code but not after a call */
    setup(&t);
    set(&t, S(0x10), S(0x30));
    set(&t, S(0x14), NOT_AFTER_CALL);
    set(&t, S(0x18), R1);
    callers(&t);
    check_walk("unwind32/scribbled: a return address not after a call", &t, BODY, S(0), S(0x10), 64, true, 16,
               FRAMES(BODY, R1, R2, R3), HOW(CTX, SCN, CHN, CHN), 4, HS_UW_END);
}

static void test_calls(void)
{
    /* each encoding of a call before the return address at BODY's [ebp+4] */
    static const struct {
        const char *what;
        uint8_t bytes[7];
        int len;
        bool is_call;
    } calls[] = {
        { "call rel32", { 0xE8, 0xFB, 0xFE, 0xFF, 0xFF }, 5, true },   /* to CALLEE */
        { "call rel32 to no known code", { 0xE8, 0x00, 0x00, 0x00, 0x40 }, 5, false },
        { "call [disp32]", { 0xFF, 0x15, 0x00, 0x20, 0x40, 0x00 }, 6, true },
        { "call eax", { 0xFF, 0xD0 }, 2, true },
        { "call [esi]", { 0xFF, 0x16 }, 2, true },
        { "call [esi+8]", { 0xFF, 0x56, 0x08 }, 3, true },
        { "call [esi+0x100]", { 0xFF, 0x96, 0x00, 0x01, 0x00, 0x00 }, 6, true },
        { "call [eax+ecx*4]", { 0xFF, 0x14, 0x88 }, 3, true },
        { "call [esp+8]", { 0xFF, 0x54, 0x24, 0x08 }, 4, true },
        { "call [ebx*4+disp32]", { 0xFF, 0x14, 0x9D, 0x00, 0x20, 0x40, 0x00 }, 7, true },
        { "call [eax+ecx*4+0x100]", { 0xFF, 0x94, 0x88, 0x00, 0x01, 0x00, 0x00 }, 7, true },
        { "jmp [esi+8] (FF /4)", { 0xFF, 0x66, 0x08 }, 3, false },
        { "push [esi+8] (FF /6)", { 0xFF, 0x76, 0x08 }, 3, false },
    };
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        target t;
        setup(&t);
        uint32_t ret = CODE + 0x905;
        put(&t, ret - (uint32_t)calls[i].len, calls[i].bytes, (size_t)calls[i].len);
        set(&t, S(0x10), 0);
        set(&t, S(0x14), ret);
        char name[120];
        snprintf(name, sizeof name, "unwind32/calls: %s %s", calls[i].what,
                 calls[i].is_call ? "before a return address" : "is not a call");
        if (calls[i].is_call)
            check_walk(name, &t, BODY, S(0), S(0x10), 64, true, 16, FRAMES(BODY, ret), HOW(CTX, CHN), 2,
                       HS_UW_END);
        else
            check_walk(name, &t, BODY, S(0), S(0x10), 64, true, 16, FRAMES(BODY), HOW(CTX), 1, HS_UW_END);
    }
}

static void test_unknown(void)
{
    target t;
    setup(&t);
    check_walk("unwind32/unknown: eip outside known code", &t, 0x10000000u, S(0), S(0x10), 64, true, 16,
               FRAMES(0x10000000u), HOW(CTX), 1, HS_UW_UNKNOWN_PC);
}

#if defined(__i386__)
/* ---- the walker on this program's own stack (-m32) -------------------------- */

/* own_driver (frame pointer) -> own_a (frame pointer) -> own_b (none; ebp
 * saved, and scribbled when asked) -> own_c (frame pointer) -> own_d
 * (none, ebp untouched) -> own_capture (frame pointer), which copies the
 * stack from its esp up to own_driver's return address. Each function
 * keeps the return address it was called with: seen[0] is own_capture's,
 * seen[5] own_driver's. The frame data of the functions without a frame
 * pointer is read from their prologues (pushes, then sub esp), as a
 * compiler's FPO record would give it. */
#include <capstone/capstone.h>

#define WITH_FP __attribute__((noinline, noclone, optimize("no-omit-frame-pointer")))
#define WITHOUT_FP __attribute__((noinline, noclone, optimize("omit-frame-pointer")))
#define OWN_DEPTH 6

extern char __executable_start[], etext[];

static struct {
    uint32_t eip, esp, ebp;
    uint32_t len;
    uint8_t data[16384];
} own_copy;
static uint32_t seen[OWN_DEPTH];
static uint32_t own_top;               /* the copy ends here: own_driver's frame + 8 */
static volatile uint32_t own_scribble; /* own_b puts this in ebp when not 0 */

WITH_FP static int own_capture(int x)
{
    seen[0] = (uint32_t)__builtin_return_address(0);
    uint32_t eip, esp;
    __asm__ volatile("call 1f\n1: pop %0\n\tmov %%esp, %1" : "=r"(eip), "=r"(esp));
    own_copy.eip = eip;
    own_copy.esp = esp;
    own_copy.ebp = (uint32_t)__builtin_frame_address(0);
    own_copy.len = own_top - esp <= sizeof own_copy.data ? own_top - esp : 0;
    memcpy(own_copy.data, (const void *)esp, own_copy.len);
    return x + 1;
}

WITHOUT_FP static int own_d(int x)
{
    seen[1] = (uint32_t)__builtin_return_address(0);
    return own_capture(x * 3) + 1;
}

WITH_FP __attribute__((regparm(2))) static int own_c(int x, int y)
{
    seen[2] = (uint32_t)__builtin_return_address(0);
    return own_d(x + y) * 2;
}

WITHOUT_FP static int own_b(int x)
{
    seen[3] = (uint32_t)__builtin_return_address(0);
    if (own_scribble)
        __asm__ volatile("mov %0, %%ebp" : : "r"(own_scribble) : "ebp");
    return own_c(x, 5) + 3;
}

WITH_FP static int own_a(int x)
{
    seen[4] = (uint32_t)__builtin_return_address(0);
    return own_b(x - 1) ^ 1;
}

WITH_FP static int own_driver(int x)
{
    seen[5] = (uint32_t)__builtin_return_address(0);
    own_top = (uint32_t)__builtin_frame_address(0) + 8;
    return own_a(x) + 7;
}

/* Zero the stack the walk will run on: no return address left there by
 * earlier calls for a scan to find. */
__attribute__((noinline)) static void own_scrub(void)
{
    volatile uint8_t pad[32768];
    memset((void *)pad, 0, sizeof pad);
    __asm__ volatile("" : : "r"(pad) : "memory");
}

typedef struct own_func {
    const char *name;
    uint32_t begin, end;
    uint32_t params;
    bool fp;
    hs_uw32_frame_data fd;
} own_func;

/* Functions with their frame data, for the walker's frame_data callback. */
typedef struct own_target {
    own_func f[8];
    int n;
    const char *hidden;         /* the one whose frame data is not given (NULL: none) */
} own_target;

static bool own_is_code(void *ctx, uint32_t addr)
{
    (void)ctx;
    return addr >= (uint32_t)__executable_start && addr < (uint32_t)etext;
}

static int own_read(void *ctx, uint32_t addr, void *buf, size_t len)
{
    if (!own_is_code(ctx, addr) || (uint32_t)etext - addr < len)
        return -1;
    memcpy(buf, (const void *)addr, len);
    return 0;
}

static int own_frame_data(void *ctx, uint32_t pc, hs_uw32_frame_data *fd)
{
    const own_target *t = ctx;
    for (int i = 0; i < t->n; i++) {
        const own_func *f = &t->f[i];
        if (pc >= f->begin && pc < f->end && !(t->hidden && strcmp(f->name, t->hidden) == 0)) {
            *fd = f->fd;
            return 1;
        }
    }
    return 0;
}

/* The addresses of a function's instructions, from `code` (its bytes,
 * at address `at`) up to the ret or jmp past every branch into it: how
 * many (0 if no end was found within 1024 bytes). */
static size_t instructions32(csh cs, const uint8_t *code, uint32_t at, uint32_t *out, size_t max)
{
    cs_insn *insn;
    size_t n = cs_disasm(cs, code, 1024, at, 0, &insn), k = 0;
    uint32_t reach = at;
    for (size_t i = 0; i < n && k < max; i++) {
        const cs_insn *in = &insn[i];
        const cs_x86 *x = &in->detail->x86;
        uint32_t next = (uint32_t)(in->address + in->size);
        out[k++] = (uint32_t)in->address;
        if ((in->id == X86_INS_JMP || (in->id >= X86_INS_JAE && in->id <= X86_INS_JS)) && x->op_count == 1 &&
            x->operands[0].type == X86_OP_IMM && (uint32_t)x->operands[0].imm > reach &&
            (uint32_t)x->operands[0].imm < at + 1024)
            reach = (uint32_t)x->operands[0].imm;
        if ((in->id == X86_INS_RET || in->id == X86_INS_JMP) && next > reach) {
            cs_free(insn, n);
            return k;
        }
    }
    if (n)
        cs_free(insn, n);
    return 0;
}

/* A function's extent and frame data (its prologue's pushes and sub
 * esp), and the check that it has, or has not, the frame pointer it was
 * built with. 0, or -1. */
static int own_describe(csh cs, own_func *f, char *why, size_t len)
{
    uint32_t at[256];
    size_t k = instructions32(cs, (const uint8_t *)f->begin, f->begin, at, 256);
    if (!k) {
        snprintf(why, len, "%s: no end found", f->name);
        return -1;
    }
    cs_insn *insn;
    size_t n = cs_disasm(cs, (const uint8_t *)f->begin, at[k - 1] + 16 - f->begin, f->begin, k, &insn);
    f->end = n == k ? (uint32_t)(insn[k - 1].address + insn[k - 1].size) : 0;
    hs_uw32_frame_data *fd = &f->fd;
    memset(fd, 0, sizeof *fd);
    fd->begin = f->begin;
    fd->params = f->params;
    fd->uses_ebp = f->fp;
    uint32_t pushes = 0;
    for (size_t i = 0; i < n; i++) {
        const cs_insn *in = &insn[i];
        const cs_x86 *x = &in->detail->x86;
        if (in->id == X86_INS_PUSH && x->operands[0].type == X86_OP_REG) {
            pushes++;
            if (x->operands[0].reg == X86_REG_EBP)
                fd->ebp_saved_at = 4 * pushes;
            continue;
        }
        if (in->id == X86_INS_SUB && x->operands[0].type == X86_OP_REG && x->operands[0].reg == X86_REG_ESP &&
            x->operands[1].type == X86_OP_IMM) {
            fd->locals = (uint32_t)x->operands[1].imm;
            fd->prolog = (uint32_t)(in->address + in->size) - f->begin;
        } else {
            fd->prolog = (uint32_t)in->address - f->begin;
        }
        break;
    }
    fd->saved_regs = 4 * pushes;
    /* push ebp, then mov ebp,esp among the next instructions (the
     * scheduler may put one between) */
    int fp = 0;
    for (size_t i = 1; i < n && i < 4 && insn[0].id == X86_INS_PUSH &&
                       insn[0].detail->x86.operands[0].reg == X86_REG_EBP; i++)
        fp |= insn[i].id == X86_INS_MOV && insn[i].detail->x86.operands[0].reg == X86_REG_EBP &&
              insn[i].detail->x86.operands[1].type == X86_OP_REG && insn[i].detail->x86.operands[1].reg == X86_REG_ESP;
    if (n)
        cs_free(insn, n);
    if (!f->end) {
        snprintf(why, len, "%s: cannot decode it", f->name);
        return -1;
    }
    if (fp != f->fp) {
        snprintf(why, len, "%s %s a frame pointer", f->name, fp ? "has" : "lacks");
        return -1;
    }
    return 0;
}

/* Run the chain and walk the copy it made: exactly the return addresses
 * the functions saw, each found as `want_how` says. */
static void own_walk(const char *name, own_target *t, uint32_t scribble, const uint8_t *want_how)
{
    own_scribble = scribble;
    own_scrub();
    volatile int r = own_driver(1);
    (void)r;
    own_scribble = 0;
    hs_uw32_env env = { t, own_is_code, own_read, own_frame_data, NULL, NULL, NULL };
    hs_uw_stack st = { own_copy.esp, own_copy.data, own_copy.len, false };
    hs_uw32_regs regs = { own_copy.eip, own_copy.esp, own_copy.ebp };
    uint32_t frames[16];
    uint8_t how[16];
    hs_uw_result res = hs_unwind32_walk(&env, &st, &regs, frames, how, 16);
    char got[600];
    size_t len = (size_t)snprintf(got, sizeof got, "copy %u bytes, stop %d, frames", own_copy.len, res.stop);
    for (uint32_t i = 0; i < res.n && len < sizeof got; i++)
        len += (size_t)snprintf(got + len, sizeof got - len, " 0x%x(%d)", frames[i], how[i]);
    len += (size_t)snprintf(got + len, sizeof got - len, "; seen");
    for (int i = 0; i < OWN_DEPTH && len < sizeof got; i++)
        len += (size_t)snprintf(got + len, sizeof got - len, " 0x%x", seen[i]);
    int ok = own_copy.len > 0 && res.n == OWN_DEPTH + 1 && res.stop == HS_UW_TRUNCATED && frames[0] == own_copy.eip;
    for (int i = 0; ok && i < OWN_DEPTH; i++)
        ok = frames[i + 1] == seen[i] && how[i + 1] == want_how[i];
    tap_check(ok, name, "%s", got);
}

static void test_own_stack(void)
{
    own_target t = { .f = {
        { "own_capture", (uint32_t)own_capture, 0, 4, true, { 0 } },
        { "own_d", (uint32_t)own_d, 0, 4, false, { 0 } },
        { "own_c", (uint32_t)own_c, 0, 0, true, { 0 } },
        { "own_b", (uint32_t)own_b, 0, 4, false, { 0 } },
        { "own_a", (uint32_t)own_a, 0, 4, true, { 0 } },
        { "own_driver", (uint32_t)own_driver, 0, 4, true, { 0 } },
    }, .n = OWN_DEPTH };
    csh cs;
    if (cs_open(CS_ARCH_X86, CS_MODE_32, &cs) != CS_ERR_OK) {
        tap_fail("unwind32/own stack", "cs_open");
        return;
    }
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    char why[200] = "";
    int described = 1;
    for (int i = 0; i < OWN_DEPTH && described; i++)
        described = own_describe(cs, &t.f[i], why, sizeof why) == 0;
    cs_close(&cs);
    if (!described) {
        tap_fail("unwind32/own stack", "%s", why);
        return;
    }
    for (int i = 0; i < OWN_DEPTH; i++)
        tap_diag("%s at 0x%x-0x%x: prolog %u, locals %u, saved %u (ebp at %u), params %u%s", t.f[i].name,
                 t.f[i].begin, t.f[i].end, t.f[i].fd.prolog, t.f[i].fd.locals, t.f[i].fd.saved_regs,
                 t.f[i].fd.ebp_saved_at, t.f[i].fd.params, t.f[i].fp ? ", frame pointer" : "");
    /* seen[i] is found from the frame of the function below it */
    t.hidden = NULL;
    own_walk("unwind32/own stack: frame pointers and frame data", &t, 0, HOW(CHN, FD, CHN, FD, CHN, CHN));
    own_walk("unwind32/own stack: ebp scribbled, the caller's restored from the frame data", &t, 0xDEAD0000u,
             HOW(CHN, FD, CHN, FD, CHN, CHN));
    t.hidden = "own_b";
    own_walk("unwind32/own stack: ebp scribbled where there is no frame data: a scan", &t, 0xDEAD0000u,
             HOW(CHN, FD, CHN, SCN, CHN, CHN));
}

/* ---- real i686 code, stopped at every instruction (-m32) ---------------------
 * fixtures/unwind32_src.c built by i686-w64-mingw32-gcc with frame
 * pointers (unwind32_cases.h), laid out at XR_CODE and run natively
 * (xrun.h), called from a stub `call f; int3`, with an int3 put at each
 * instruction in turn. From every instruction reached, the walk gives
 * the return addresses of the calls that led there, exactly: each found
 * by decoding the caller's `call callee` (not by the walker), the last
 * the stub's; and none by the scan. With frame pointers no frame data
 * is given (the chain, prologues and epilogues alone); without them
 * (-O2), each function's frame data, read from its prologue. */
#include "hook/pe/pe.h"
#include "tests/unit/unwind32_cases.h"
#include "tests/unit/xrun.h"

#define DLL_BASE ((uint32_t)XR_CODE)
#define DLL_STUB ((uint32_t)XR_A + 0x100)

typedef struct dll_image {
    hs_pe pe;
} dll_image;

static uint32_t dll_image_size;

static bool dll_is_code(void *ctx, uint32_t addr)
{
    (void)ctx;
    return (addr >= DLL_BASE + 0x1000 && addr - DLL_BASE < dll_image_size) || (addr >= DLL_STUB && addr < DLL_STUB + 6);
}

static int dll_read(void *ctx, uint32_t addr, void *buf, size_t len)
{
    (void)ctx;
    if (addr < XR_CODE || addr - XR_CODE > XR_CODE_SZ || XR_CODE_SZ - (addr - XR_CODE) < len)
        return -1;
    memcpy(buf, (const void *)addr, len);
    return 0;
}

/* Run `entry` from the stub with an int3 at `stop`: 1 if it stopped there. */
static int dll_run_to(const dll_image *im, uint32_t entry, uint32_t stop, xr_result *r)
{
    uint8_t stub[6] = { 0xE8, 0, 0, 0, 0, 0xCC };
    uint32_t rel = entry - (DLL_STUB + 5);
    memcpy(stub + 1, &rel, 4);
    xr_put(DLL_STUB, stub, sizeof stub);
    uint8_t keep = im->pe.image[stop - DLL_BASE], cc = 0xCC;
    xr_put(stop, &cc, 1);
    xr_input in;
    xr_default_input(&in, 0);
    int rc = xr_run(DLL_STUB, &in, r);
    xr_put(stop, &keep, 1);
    return rc == 0 && r->end == XR_END_TRAP && r->at == stop;
}

/* The return address of caller's first `call callee` (rel32), 0 if none. */
static uint32_t dll_call_site(csh cs, uint32_t caller, uint32_t callee)
{
    uint32_t at[256];
    size_t n = instructions32(cs, (const uint8_t *)caller, caller, at, 256);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *c = (const uint8_t *)at[i];
        if (c[0] == 0xE8 && at[i] + 5 + (uint32_t)(c[1] | c[2] << 8 | c[3] << 16 | (uint32_t)c[4] << 24) == callee)
            return at[i] + 5;
    }
    return 0;
}

/* path[0] is called from the stub, path[i] from path[i - 1]; stopped at
 * every instruction of the last, the walk gives the return addresses of
 * those calls. */
static void dll_walk_every(csh cs, dll_image *im, const char *opt, const char *const *path, int depth,
                           own_target *fdata)
{
    char name[160];
    int len = snprintf(name, sizeof name, "unwind32/i686 %s:", opt);
    for (int i = 0; i < depth; i++)
        len += snprintf(name + len, sizeof name - (size_t)len, " %s%s", i ? "-> " : "", path[i]);
    snprintf(name + len, sizeof name - (size_t)len, ", from every instruction");
    uint32_t fn[8], want[8];
    want[depth] = DLL_STUB + 5;
    for (int i = 0; i < depth; i++) {
        uint32_t rva = hs_pe_export_rva(&im->pe, path[i]);
        fn[i] = rva ? DLL_BASE + rva : 0;
        if (!rva) {
            tap_fail(name, "%s is not exported", path[i]);
            return;
        }
    }
    /* want[k]: the return address k frames up from the stopped function */
    for (int i = 1; i < depth; i++) {
        want[depth - i] = dll_call_site(cs, fn[i - 1], fn[i]);
        if (!want[depth - i]) {
            tap_fail(name, "%s does not call %s", path[i - 1], path[i]);
            return;
        }
    }
    uint32_t at[256];
    size_t n = instructions32(cs, (const uint8_t *)fn[depth - 1], fn[depth - 1], at, 256), reached = 0;
    hs_uw32_env env = { im, dll_is_code, dll_read, NULL, NULL, NULL, NULL };
    if (fdata) {
        env.ctx = fdata;
        env.frame_data = own_frame_data;
    }
    for (size_t i = 0; i < n; i++) {
        xr_result r;
        if (!dll_run_to(im, fn[0], at[i], &r)) {
            xr_result_free(&r);
            continue;
        }
        reached++;
        uint32_t esp = (uint32_t)r.gpr[HS_RSP];
        hs_uw_stack st = { esp, r.stack + (esp - XR_STACK), XR_STACK + XR_STACK_SZ - esp, false };
        hs_uw32_regs regs = { at[i], esp, (uint32_t)r.gpr[HS_RBP] };
        uint32_t frames[16];
        uint8_t how[16];
        hs_uw_result res = hs_unwind32_walk(&env, &st, &regs, frames, how, 16);
        xr_result_free(&r);
        int ok = res.n > (uint32_t)depth;
        for (int k = 1; ok && k <= depth; k++)
            ok = frames[k] == want[k] && how[k] != HS_UW32_SCAN;
        if (!ok) {
            char got[300];
            size_t gl = 0;
            for (uint32_t k = 0; k < res.n && gl < sizeof got; k++)
                gl += (size_t)snprintf(got + gl, sizeof got - gl, " +0x%x(%d)", frames[k] - DLL_BASE, how[k]);
            tap_fail(name, "at %s+0x%x: frames%s; want +0x%x first", path[depth - 1], at[i] - fn[depth - 1], got,
                     want[1] - DLL_BASE);
            return;
        }
    }
    tap_diag("%s: %zu of %zu instructions reached", name, reached, n);
    tap_check(n > 0 && reached * 10 >= n * 8, name, "%zu of %zu instructions reached", reached, n);
}

static void test_i686_code(void)
{
    if (xr_init() < 0) {
        tap_fail("unwind32/i686", "cannot map the test regions");
        return;
    }
    csh cs;
    if (cs_open(CS_ARCH_X86, CS_MODE_32, &cs) != CS_ERR_OK) {
        tap_fail("unwind32/i686", "cs_open");
        return;
    }
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    static const char *const leaf[] = { "leaf_add" };
    static const char *const saves[] = { "saves_regs" };
    static const char *const to_saves[] = { "chain3", "pushes_args", "saves_regs" };
    static const char *const to_leaf[] = { "chain3", "pushes_args", "saves_regs", "leaf_add" };
    for (size_t d = 0; d < sizeof uw32_dlls / sizeof *uw32_dlls; d++) {
        dll_image im;
        memset(&im, 0, sizeof im);
        char name[80];
        snprintf(name, sizeof name, "unwind32/i686 %s: layout", uw32_dlls[d].opt);
        if (hs_pe_load_file(&im.pe, uw32_dlls[d].dll, uw32_dlls[d].size) != HS_PE_OK || im.pe.bits != 32 ||
            im.pe.image_size > XR_CODE_SZ / 4) {
            tap_fail(name, "cannot lay out the DLL");
            continue;
        }
        xr_reset_code();
        xr_put(DLL_BASE, im.pe.image, im.pe.image_size);
        dll_image_size = (uint32_t)im.pe.image_size;
        /* without frame pointers: every function's frame data, read from
         * its prologue; mingw's callers store arguments in their own
         * frames (no pushes: parameters 0) */
        own_target fd = { .n = 0 };
        own_target *fdata = NULL;
        if (strcmp(uw32_dlls[d].opt, "-O2") == 0) {
            char why[200] = "";
            for (size_t i = 0; i < sizeof to_leaf / sizeof *to_leaf && !why[0]; i++) {
                own_func *f = &fd.f[fd.n++];
                f->name = to_leaf[i];
                f->begin = DLL_BASE + hs_pe_export_rva(&im.pe, f->name);
                f->params = 0;
                f->fp = false;
                own_describe(cs, f, why, sizeof why);
            }
            if (why[0]) {
                tap_fail(name, "%s", why);
                hs_pe_close(&im.pe);
                continue;
            }
            fdata = &fd;
        }
        dll_walk_every(cs, &im, uw32_dlls[d].opt, leaf, 1, fdata);
        dll_walk_every(cs, &im, uw32_dlls[d].opt, saves, 1, fdata);
        dll_walk_every(cs, &im, uw32_dlls[d].opt, to_saves, 3, fdata);
        dll_walk_every(cs, &im, uw32_dlls[d].opt, to_leaf, 4, fdata);
        hs_pe_close(&im.pe);
    }
    cs_close(&cs);
}
#endif

int main(void)
{
    test_chain();
    test_prologue();
    test_epilogue();
    test_frame_data();
    test_entry();
    test_fpo_records();
    test_fpo_programs();
    test_scribbled();
    test_calls();
    test_unknown();
#if defined(__i386__)
    test_own_stack();
    test_i686_code();
#endif
    return tap_status();
}
