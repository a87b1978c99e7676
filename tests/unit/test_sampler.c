/*
 * tests/unit/test_sampler.c - the sampler's portable parts, natively, on
 * synthetic targets (test_sampler_unwind.c runs real compiled code):
 *
 *   unwinder    a machine frame, a chained entry, a stack copy that ends
 *               (truncated) or reaches the stack base (the end), a leaf
 *               without an entry, and hookscope's generated code: the
 *               undescribed pops of an entry stub and its jump into the
 *               trampoline, and a timed stub's entry into the wrapper,
 *               whose unwind data describes the stub's two pushes;
 *   code map    attribution: agent frames dropped, stub and trampoline
 *               frames become the hooked function, a sample in the timing
 *               wrapper gets the function whose descriptor it holds;
 *               images replaced and swept away;
 *   classifier  CPU or wait with an exact cycle counter and with thread
 *               times in 10 ms steps, for a busy thread, a sleeping one
 *               (whose clock the sampler itself nudges), one that runs a
 *               known share, a busy thread that is sometimes not
 *               scheduled, two burners with a known split, a thread whose
 *               final clock is lost; and a busy thread's clock readings
 *               recorded under Wine at 200 Hz, replayed;
 *   sample set  interning, counts, the merge into a profile (stack order,
 *               threads, modules, run figures).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/unwind/unwinder.h"
#include "injector/profile/from_samples.h"
#include "sampler/codemap.h"
#include "sampler/sampler.h"
#include "sampler/suspend/classify.h"
#include "tests/unit/tap.h"
#include "tests/unit/xorshift.h"

/* ---- a synthetic target: memory regions ------------------------------------- */

typedef struct region {
    uint64_t addr;
    uint8_t *data;
    size_t len;
} region;

typedef struct target {
    region r[16];
    int n;
    int reads;
} target;

static uint8_t *add_region(target *t, uint64_t addr, size_t len)
{
    region *r = &t->r[t->n++];
    r->addr = addr;
    r->len = len;
    r->data = calloc(1, len);
    return r->data;
}

static void free_target(target *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->r[i].data);
    t->n = 0;
}

static int target_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    target *t = ctx;
    t->reads++;
    for (int i = 0; i < t->n; i++) {
        region *r = &t->r[i];
        if (addr >= r->addr && addr - r->addr <= r->len && r->len - (addr - r->addr) >= len) {
            memcpy(buf, r->data + (addr - r->addr), len);
            return 0;
        }
    }
    return -1;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* A PE32+ image of `size` bytes at base, its .pdata at rva 0x200 with
 * `n` entries (begin, end, unwind). Returns the image bytes. */
static uint8_t *make_image(target *t, uint64_t base, uint32_t size, const uint32_t *pdata, int n)
{
    uint8_t *im = add_region(t, base, size);
    im[0] = 'M';
    im[1] = 'Z';
    put32(im + 0x3C, 0x80);
    put32(im + 0x80, 0x00004550);
    uint8_t *fh = im + 0x84, *oh = fh + 20;
    put16(fh, 0x8664);
    put32(fh + 4, 0x12345678);
    put16(fh + 16, 0xF0);           /* SizeOfOptionalHeader; no sections */
    put16(oh, 0x20B);
    put32(oh + 56, size);
    put32(oh + 108, 16);
    put32(oh + 112 + 3 * 8, 0x200);
    put32(oh + 112 + 3 * 8 + 4, (uint32_t)n * 12);
    memcpy(im + 0x200, pdata, (size_t)n * 12);
    return im;
}

/* UNWIND_INFO at p: version 1, flags, prolog size, codes (pairs), frame */
static void put_unwind(uint8_t *p, uint8_t flags, uint8_t prolog, const uint8_t *codes, int ncodes, uint8_t frame)
{
    p[0] = (uint8_t)(1 | flags << 3);
    p[1] = prolog;
    p[2] = (uint8_t)ncodes;
    p[3] = frame;
    if (ncodes)
        memcpy(p + 4, codes, (size_t)ncodes * 2);
}

#define CODE(off, op, info) (off), (uint8_t)((op) | (info) << 4)

/* ---- unwinder ---------------------------------------------------------------- */

#define IMG 0x140000000ull
#define STK 0x7000000ull

typedef struct stackbuf {
    uint64_t w[512];
} stackbuf;

static hs_uw_stack stack_at(stackbuf *sb, size_t words, bool complete)
{
    hs_uw_stack st = { STK, (const uint8_t *)sb->w, words * 8, complete };
    return st;
}

static void test_unwinder(void)
{
    /* image: f_mach (machine frame) @0x1000, f_chain (fragment chained to
     * f_parent) @0x1100, f_parent @0x1200, a leaf at 0x1300 (no entry) */
    target t = { 0 };
    uint32_t pdata[] = { 0x1000, 0x1010, 0x3000, 0x1100, 0x1110, 0x3020, 0x1200, 0x1280, 0x3040 };
    uint8_t *im = make_image(&t, IMG, 0x4000, pdata, 3);
    const uint8_t mach[] = { CODE(0, 10, 0) };
    put_unwind(im + 0x3000, 0, 0, mach, 1, 0);
    /* f_chain: no codes of its own, chained to f_parent (push rbx; sub rsp,0x20) */
    put_unwind(im + 0x3020, 4, 0, NULL, 0, 0);
    put32(im + 0x3024, 0x1200);
    put32(im + 0x3028, 0x1280);
    put32(im + 0x302C, 0x3040);
    const uint8_t parent[] = { CODE(5, 2, 3), CODE(1, 0, HS_RBX) };
    put_unwind(im + 0x3040, 0, 5, parent, 2, 0);
    memset(im + 0x1000, 0x90, 0x400);   /* nops: no epilogue anywhere */
    hs_codemap *cm = hs_codemap_new(target_read, &t);
    tap_check(hs_codemap_add_image(cm, IMG, 0x4000, "t.exe", false) != NULL, "uw/image", "headers not read");
    hs_uw_env env = hs_codemap_env(cm);

    stackbuf sb;
    memset(&sb, 0, sizeof sb);
    /* machine frame: [rsp] rip, +8 cs, +16 flags, +24 rsp */
    sb.w[0] = IMG + 0x1304;
    sb.w[3] = STK + 0x100;
    hs_uw_regs r;
    memset(&r, 0, sizeof r);
    r.rip = IMG + 0x1004;
    r.r[HS_RSP] = STK;
    hs_uw_stack st = stack_at(&sb, 512, false);
    int err = hs_unwind_step(&env, &st, &r);
    tap_check(!err && r.rip == IMG + 0x1304 && r.r[HS_RSP] == STK + 0x100, "uw/machine frame",
              "err %d rip %llx rsp %llx", err, (unsigned long long)r.rip, (unsigned long long)r.r[HS_RSP]);

    /* chained: in the fragment, the parent's codes apply in full */
    memset(&sb, 0, sizeof sb);
    sb.w[4] = 0xBB;                 /* saved rbx */
    sb.w[5] = IMG + 0x1010;         /* return address */
    memset(&r, 0, sizeof r);
    r.rip = IMG + 0x1104;
    r.r[HS_RSP] = STK;
    err = hs_unwind_step(&env, &st, &r);
    tap_check(!err && r.rip == IMG + 0x1010 && r.r[HS_RSP] == STK + 48 && r.r[HS_RBX] == 0xBB,
              "uw/chained entry", "err %d rip %llx rsp %llx rbx %llx", err, (unsigned long long)r.rip,
              (unsigned long long)r.r[HS_RSP], (unsigned long long)r.r[HS_RBX]);

    /* a leaf without an entry: the return address is at rsp */
    memset(&r, 0, sizeof r);
    sb.w[0] = IMG + 0x1208;
    r.rip = IMG + 0x1300;
    r.r[HS_RSP] = STK;
    err = hs_unwind_step(&env, &st, &r);
    tap_check(!err && r.rip == IMG + 0x1208 && r.r[HS_RSP] == STK + 8, "uw/leaf", "err %d", err);

    /* a walk through the parent into a leaf caller, the copy ending early:
     * truncated; the same copy marked as reaching the stack base: the end */
    memset(&sb, 0, sizeof sb);
    sb.w[4] = 0xBB;
    sb.w[5] = IMG + 0x1304;         /* parent returns into the leaf region */
    uint64_t frames[16];
    memset(&r, 0, sizeof r);
    r.rip = IMG + 0x1240;
    r.r[HS_RSP] = STK;
    hs_uw_stack short_st = stack_at(&sb, 6, false);
    hs_uw_result res = hs_unwind_walk(&env, &short_st, &r, frames, 16);
    tap_check(res.n == 2 && frames[1] == IMG + 0x1304 && res.stop == HS_UW_TRUNCATED, "uw/truncated copy",
              "%u frames, stop %d", res.n, res.stop);
    short_st.complete = true;
    res = hs_unwind_walk(&env, &short_st, &r, frames, 16);
    tap_check(res.n == 2 && res.stop == HS_UW_END, "uw/stack base reached", "%u frames, stop %d", res.n, res.stop);
    /* frame limit */
    res = hs_unwind_walk(&env, &st, &r, frames, 1);
    tap_check(res.n == 1 && res.stop == HS_UW_TRUNCATED, "uw/frame limit", "%u frames, stop %d", res.n, res.stop);
    /* a return address into no known code ends the walk */
    sb.w[5] = 0xDEAD0000;
    res = hs_unwind_walk(&env, &st, &r, frames, 16);
    tap_check(res.n == 1 && res.stop == HS_UW_UNKNOWN_PC && res.unknown_pc == 0xDEAD0000, "uw/unknown caller",
              "%u frames, stop %d", res.n, res.stop);
    hs_codemap_free(cm);
    free_target(&t);
}

/* hookscope's generated code: an arena with one slot, as agent/stubs.c
 * lays it out, and the agent with its wrapper */
#define ARENA 0x150000000ull
#define AGENT 0x180000000ull
#define FN (IMG + 0x1200)            /* the hooked function */

typedef struct own_fixture {
    target t;
    hs_codemap *cm;
    uint64_t stub, done, nowrap, tramp, wrap;
} own_fixture;

static void own_setup(own_fixture *o)
{
    memset(o, 0, sizeof *o);
    target *t = &o->t;
    /* the image: FN with push rbx; sub rsp,0x20 (prolog 5) */
    uint32_t pdata[] = { 0x1200, 0x1280, 0x3040 };
    uint8_t *im = make_image(t, IMG, 0x4000, pdata, 1);
    /* the window: a 5-byte nop, then push rbx @6, sub rsp,0x20 @10 */
    const uint8_t fcodes[] = { CODE(10, 2, 3), CODE(6, 0, HS_RBX) };
    put_unwind(im + 0x3040, 0, 10, fcodes, 2, 0);
    memset(im + 0x1000, 0x90, 0x400);
    /* the agent: hs_wrapper at 0x1000 with the stub's pushes at offset 0:
     * push rbp @0, push rbx @0, push rsi @1 */
    uint32_t apdata[] = { 0x1000, 0x1100, 0x2000 };
    uint8_t *ag = make_image(t, AGENT, 0x4000, apdata, 1);
    const uint8_t wcodes[] = { CODE(1, 0, HS_RSI), CODE(0, 0, HS_RBX), CODE(0, 0, HS_RBP) };
    put_unwind(ag + 0x2000, 0, 1, wcodes, 3, 0);
    memset(ag + 0x1000, 0x90, 0x100);
    /* the arena: one slot [0x100, 0x200): slow [0x100,0x110) described,
     * stub body [0x110,0x120) described (3 pushes), then at done 0x120:
     * pop rdx; pop rax; pop rcx; push rbp; push rbx; mov rbp,imm64;
     * mov rbx,gs:[0x1480]; jmp [rip+X] (-> wrapper); at nowrap: pop rdx;
     * pop rax; pop rcx; jmp tramp; tramp at 0x180 (described, no codes:
     * the window performs no prologue instruction); the unwind table at 0x400 */
    uint8_t *a = add_region(t, ARENA, 0x1000);
    o->stub = ARENA + 0x110;
    o->done = ARENA + 0x120;
    uint8_t *p = a + 0x120;
    *p++ = 0x5A; *p++ = 0x58; *p++ = 0x59;                 /* pops */
    *p++ = 0x55; *p++ = 0x53;                               /* push rbp; push rbx */
    *p++ = 0x48; *p++ = 0xBD;                               /* mov rbp, imm64 (the descriptor) */
    uint64_t desc = ARENA + 0x100 - 32;
    memcpy(p, &desc, 8);
    p += 8;
    const uint8_t gsload[] = { 0x65, 0x48, 0x8B, 0x1C, 0x25, 0x80, 0x14, 0x00, 0x00 };
    memcpy(p, gsload, sizeof gsload);
    p += sizeof gsload;
    o->wrap = ARENA + (uint64_t)(p - a);
    *p++ = 0xFF; *p++ = 0x25;                               /* jmp [rip+disp32] */
    uint32_t disp = (uint32_t)(0x1F0 - ((p - a) + 4));
    put32(p, disp);
    p += 4;
    uint64_t wrapper = AGENT + 0x1000;
    memcpy(a + 0x1F0, &wrapper, 8);
    o->nowrap = ARENA + (uint64_t)(p - a);
    *p++ = 0x5A; *p++ = 0x58; *p++ = 0x59;
    *p++ = 0xE9;                                            /* jmp tramp */
    put32(p, (uint32_t)(0x180 - ((p - a) + 4)));
    o->tramp = ARENA + 0x180;
    memset(a + 0x180, 0x90, 8);
    a[0x188] = 0xE9;                                        /* jmp back into the body */
    put32(a + 0x189, (uint32_t)((FN + 5) - (ARENA + 0x18D)));
    uint32_t table[] = { 0x100, 0x110, 0x400, 0x110, 0x120, 0x410, 0x180, 0x188, 0x420 };
    memcpy(a + 0x3F0 - 0x3F0 + 0x300, table, sizeof table);
    const uint8_t slow[] = { CODE(0, 2, 2) };               /* the stub's 24 bytes */
    put_unwind(a + 0x400, 0, 0, slow, 1, 0);
    const uint8_t body[] = { CODE(3, 0, HS_RDX), CODE(2, 0, HS_RAX), CODE(1, 0, HS_RCX) };
    put_unwind(a + 0x410, 0, 3, body, 3, 0);
    put_unwind(a + 0x420, 0, 0, NULL, 0, 0);

    o->cm = hs_codemap_new(target_read, t);
    hs_codemap_add_image(o->cm, IMG, 0x4000, "t.exe", false);
    hs_codemap_add_image(o->cm, AGENT, 0x4000, "hookscope-agent.dll", true);
    hs_own_arena ar = { ARENA, 0x1000, ARENA + 0x300, 3 };
    hs_own_slot sl = { ARENA + 0x100 - 32, ARENA + 0x200, ARENA + 0x180, FN, desc };
    hs_owncode own;
    memset(&own, 0, sizeof own);
    own.agent_base = AGENT;
    own.agent_size = 0x4000;
    own.wrap_begin = AGENT + 0x1000;     /* rbp holds the descriptor up to wrap_rsi */
    own.wrap_rsi = AGENT + 0x1010;
    own.wrap_gone = AGENT + 0x1080;
    own.wrap_end = AGENT + 0x1090;
    own.wrap_ret = AGENT + 0x1040;
    own.arenas = &ar;
    own.narenas = 1;
    own.slots = &sl;
    own.nslots = 1;
    own.tids[0] = 77;
    own.ntids = 1;
    hs_codemap_set_own(o->cm, &own);
}

static void test_own_code(void)
{
    own_fixture o;
    own_setup(&o);
    hs_uw_env env = hs_codemap_env(o.cm);
    stackbuf sb;
    /* the caller's frame: FN was entered with [rsp] = return into the leaf region */
    const uint64_t caller_ret = IMG + 0x1308;
    struct { const char *name; uint64_t rip; int pushed; } at[] = {
        { "stub body (3 pushes)", ARENA + 0x114, 3 },
        { "done: 3 pushes, undescribed", 0, 3 },
        { "after one pop", 1, 2 },
        { "after three pops", 3, 0 },
        { "after push rbp (wrapper entry)", 4, -1 },
        { "at the wrapper's jump", -1, -2 },
        { "no-wrap pops", -3, 3 },
        { "trampoline", ARENA + 0x184, 0 },
        { "jump back from the trampoline", ARENA + 0x188, 0 },
    };
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        uint64_t rip = at[i].rip;
        if (i >= 1 && i <= 4)
            rip = o.done + at[i].rip;
        else if (i == 5)
            rip = o.wrap;
        else if (i == 6)
            rip = o.nowrap;
        memset(&sb, 0, sizeof sb);
        hs_uw_regs r;
        memset(&r, 0, sizeof r);
        r.r[HS_RBX] = 0x1111;
        r.r[HS_RBP] = 0x2222;
        /* the stack: what is pushed above the entry state, then the return address */
        size_t k = 0;
        if (at[i].pushed > 0) {
            for (int j = 0; j < at[i].pushed; j++)
                sb.w[k++] = 0xAA00 + (uint64_t)j;
        } else if (at[i].pushed == -1) {
            sb.w[k++] = 0x2222;          /* the caller's rbp, pushed */
            r.r[HS_RBP] = 0x2222;
        } else if (at[i].pushed == -2) {
            sb.w[k++] = 0x1111;          /* rbx, then rbp */
            sb.w[k++] = 0x2222;
            r.r[HS_RBP] = ARENA + 0x100 - 32;   /* the descriptor */
            r.r[HS_RBX] = 0x5555;
        }
        sb.w[k++] = caller_ret;
        r.rip = rip;
        r.r[HS_RSP] = STK;
        hs_uw_stack st = stack_at(&sb, 512, false);
        int err = hs_unwind_step(&env, &st, &r);
        char name[96];
        snprintf(name, sizeof name, "own/unwind from %s", at[i].name);
        tap_check(!err && r.rip == caller_ret && r.r[HS_RSP] == STK + 8 * k && r.r[HS_RBX] == 0x1111 &&
                      r.r[HS_RBP] == 0x2222,
                  name, "err %d rip %llx rsp +%lld rbx %llx rbp %llx", err, (unsigned long long)r.rip,
                  (long long)(r.r[HS_RSP] - STK), (unsigned long long)r.r[HS_RBX],
                  (unsigned long long)r.r[HS_RBP]);
    }

    /* attribution */
    int attr;
    uint64_t f1[] = { AGENT + 0x1500, AGENT + 0x1048, o.stub + 4, IMG + 0x1250, IMG + 0x1308 };
    uint32_t n = hs_codemap_attribute(o.cm, NULL, f1, 5, &attr);
    tap_check(n == 3 && attr == HS_ATTR_HOOKSCOPE && f1[0] == FN && f1[1] == IMG + 0x1250 && f1[2] == IMG + 0x1308,
              "own/a probe: hookscope's work for the stub's function, agent frames dropped",
              "n %u attr %d, %llx %llx", n, attr, (unsigned long long)f1[0], (unsigned long long)f1[1]);
    uint64_t f2[] = { IMG + 0x1220, o.tramp + 4, IMG + 0x1308 };
    n = hs_codemap_attribute(o.cm, NULL, f2, 3, &attr);
    tap_check(n == 3 && attr == HS_ATTR_PROGRAM && f2[1] == FN + 1,
              "own/return address in a trampoline names its function", "n %u %llx", n, (unsigned long long)f2[1]);
    uint64_t f3[] = { AGENT + 0x1020, IMG + 0x1308 };
    hs_uw_regs leaf;
    memset(&leaf, 0, sizeof leaf);
    leaf.r[HS_RSI] = ARENA + 0x100 - 32;
    n = hs_codemap_attribute(o.cm, &leaf, f3, 2, &attr);
    tap_check(n == 2 && attr == HS_ATTR_HOOKSCOPE && f3[0] == FN && f3[1] == IMG + 0x1308,
              "own/in the timing wrapper (rsi): hookscope's work for the timed function", "n %u %llx", n,
              (unsigned long long)f3[0]);
    uint64_t f4[] = { AGENT + 0x1020, IMG + 0x1308 };
    leaf.r[HS_RSI] = 5;
    n = hs_codemap_attribute(o.cm, &leaf, f4, 2, &attr);
    tap_check(n == 1 && attr == HS_ATTR_HOOKSCOPE && f4[0] == IMG + 0x1308,
              "own/wrapper without a descriptor: its caller", "n %u", n);
    uint64_t f5[] = { AGENT + 0x1004, IMG + 0x1308 };
    leaf.r[HS_RBP] = ARENA + 0x100 - 32;   /* at the wrapper's first instructions the stub's rbp */
    leaf.r[HS_RSI] = 0x7777;               /* the caller's rsi: not a descriptor of this call */
    n = hs_codemap_attribute(o.cm, &leaf, f5, 2, &attr);
    tap_check(n == 2 && attr == HS_ATTR_HOOKSCOPE && f5[0] == FN, "own/wrapper entry: the descriptor is in rbp",
              "n %u %llx", n, (unsigned long long)f5[0]);
    uint64_t f6[] = { AGENT + 0x1084, IMG + 0x1308 };
    leaf.r[HS_RSI] = ARENA + 0x100 - 32;   /* restored already: the caller's value */
    n = hs_codemap_attribute(o.cm, &leaf, f6, 2, &attr);
    tap_check(n == 1 && attr == HS_ATTR_HOOKSCOPE && f6[0] == IMG + 0x1308,
              "own/wrapper after its pops: the function returned, its caller", "n %u %llx", n,
              (unsigned long long)f6[0]);
    uint64_t f7[] = { IMG + 0x1220, AGENT + 0x1040, IMG + 0x1308 };
    n = hs_codemap_attribute(o.cm, NULL, f7, 3, &attr);
    tap_check(n == 2 && attr == HS_ATTR_PROGRAM && f7[0] == IMG + 0x1220 && f7[1] == IMG + 0x1308,
              "own/a timed function's body: the program's, the wrapper's frame dropped", "n %u attr %d", n, attr);
    uint64_t f8[] = { o.stub + 4, IMG + 0x1308 };
    n = hs_codemap_attribute(o.cm, NULL, f8, 2, &attr);
    tap_check(n == 2 && attr == HS_ATTR_HOOKSCOPE && f8[0] == FN && f8[1] == IMG + 0x1308,
              "own/an entry stub: hookscope's work for its function", "n %u attr %d", n, attr);
    uint64_t f9[] = { o.tramp + 2, IMG + 0x1308 };
    n = hs_codemap_attribute(o.cm, NULL, f9, 2, &attr);
    tap_check(n == 2 && attr == HS_ATTR_PROGRAM && f9[0] == FN, "own/a trampoline: the function's own code",
              "n %u attr %d", n, attr);
    tap_check(hs_codemap_own_thread(o.cm, 77) && !hs_codemap_own_thread(o.cm, 78), "own/threads", "%s", "not told apart");
    tap_check(hs_codemap_is_own(o.cm, o.stub) && hs_codemap_is_own(o.cm, AGENT + 5) && !hs_codemap_is_own(o.cm, FN),
              "own/is_own", "%s", "wrong");

    /* images: an enumeration that no longer lists the agent sweeps it away */
    hs_codemap_begin_enum(o.cm);
    hs_codemap_add_image(o.cm, IMG, 0x4000, "t.exe", false);
    hs_codemap_sweep(o.cm);
    hs_uw_entry e;
    const hs_image *ims;
    size_t nim = hs_codemap_images(o.cm, &ims);
    tap_check(nim == 2 && ims[1].unloaded && !ims[0].unloaded && env.lookup(env.ctx, AGENT + 0x1000, &e) == HS_UW_UNKNOWN &&
                  env.lookup(env.ctx, FN, &e) == HS_UW_TABLE,
              "images/unloaded after an enumeration", "%zu images", nim);
    hs_codemap_free(o.cm);
    free_target(&o.t);
}

/* ---- classifier ------------------------------------------------------------------ */

typedef struct tally {
    uint64_t cpu[8], wait[8];   /* by stack id */
} tally;

static void count_kind(void *ctx, uint32_t stack, uint8_t kind)
{
    tally *t = ctx;
    if (kind == HS_SAMPLE_CPU)
        t->cpu[stack]++;
    else
        t->wait[stack]++;
}

/* A simulated thread: per 1 ms interval (1000 units) whether it ran and
 * for how long; the clock is exact or in 10 ms steps. */
typedef struct sim {
    int exact;
    uint64_t wall, cpu_true;
    uint64_t quantum;          /* 10000 for coarse */
} sim;

static uint64_t sim_clock(const sim *s)
{
    return s->exact ? s->cpu_true : s->cpu_true / s->quantum * s->quantum;
}

#define P 1000
#define MAXWIN 1000000

/* One interval of a simulated thread: the CPU it used, whether its
 * registers moved, the stack the sample finds. */
typedef struct interval {
    uint64_t cpu;
    bool moved;
    uint32_t stack;
} interval;

/* n intervals of one simulated thread through the classifier, as `step`
 * says; what it classified. */
static tally run_thread(int exact, int n, interval (*step)(int i), uint64_t window, bool final_known)
{
    sim s = { exact, 0, 0, 10 * P };
    hs_cls_shared sh = { 0, 0 };
    hs_cls_thread c;
    hs_cls_init(&c, &sh);
    tally t = { 0 };
    for (int i = 0; i < n; i++) {
        interval v = step(i);
        s.wall += P;
        s.cpu_true += v.cpu;
        hs_cls_sample(&c, s.wall, sim_clock(&s), v.moved, false, v.stack, window, count_kind, &t);
    }
    hs_cls_finish(&c, s.wall, final_known ? sim_clock(&s) : 0, final_known, count_kind, &t);
    hs_cls_free(&c);
    return t;
}

static interval busy(int i) { (void)i; return (interval){ P, true, 0 }; }
/* asleep; the sampler's suspensions nudge its clock (6%: what handling one costs it) */
static interval sleeping(int i) { return (interval){ 60, i % 1000 == 999, 0 }; }
/* waits; its clock is charged in whole 10 ms ticks (tick-based accounting)
 * at random samples, 6% on average: the sampler's suspensions, caught by
 * the timer now and then, sometimes two close together */
static interval ticked_waiter(int i)
{
    static uint64_t r = 88172645463325252ull;
    if (i == 0)
        r = 88172645463325252ull;
    return (interval){ xorshift64(&r) % 1000 < 6 ? 10 * P : 0, false, 0 };
}
/* runs 30% of the time in 3 ms bursts; stack 1 running, stack 2 waiting */
static interval duty30(int i) { bool r = i % 10 < 3; return (interval){ r ? P : 0, r, r ? 1 : 2 }; }
/* busy, but not scheduled in every 4th interval (registers unchanged) */
static interval unscheduled(int i) { bool r = i % 4 != 3; return (interval){ r ? P : 0, r, 0 }; }
/* two burners on one busy thread, 70/30 (stacks 3 and 4) */
static interval split70(int i) { return (interval){ P, true, i % 10 < 7 ? 3 : 4 }; }

static void test_classifier(void)
{
    for (int exact = 1; exact >= 0; exact--) {
        const char *mode = exact ? "cycles" : "10ms";
        char name[96];
        tally t;

        t = run_thread(exact, 3000, busy, MAXWIN, true);
        snprintf(name, sizeof name, "classify/%s: busy thread", mode);
        tap_check(t.cpu[0] >= 2990 && t.wait[0] <= 10, name, "cpu %llu wait %llu", (unsigned long long)t.cpu[0],
                  (unsigned long long)t.wait[0]);

        t = run_thread(exact, 5000, sleeping, 200 * P, true);
        snprintf(name, sizeof name, "classify/%s: sleeping thread", mode);
        tap_check(t.cpu[0] == 0 && t.wait[0] == 5000, name, "cpu %llu wait %llu", (unsigned long long)t.cpu[0],
                  (unsigned long long)t.wait[0]);

        /* a thread that sleeps 5 ms at a time (it wakes briefly, so its
         * registers move) beside one that only waits: the suspensions'
         * cost, learned from the waiting one, is not CPU of either */
        {
            sim w = { exact, 0, 0, 10 * P }, z = { exact, 0, 0, 10 * P };
            hs_cls_shared sh = { 0, 0 };
            hs_cls_thread cw, cz;
            hs_cls_init(&cw, &sh);
            hs_cls_init(&cz, &sh);
            tally tw = { 0 }, tz = { 0 };
            for (int i = 0; i < 5000; i++) {
                w.wall += P;
                w.cpu_true += 60;
                hs_cls_sample(&cw, w.wall, sim_clock(&w), false, false, 0, 200 * P, count_kind, &tw);
                z.wall += P;
                z.cpu_true += 60 + (i % 5 == 4 ? 20 : 0);   /* 0.4% of its own */
                hs_cls_sample(&cz, z.wall, sim_clock(&z), i % 5 == 4, false, 0, 200 * P, count_kind, &tz);
            }
            hs_cls_finish(&cw, w.wall, sim_clock(&w), true, count_kind, &tw);
            hs_cls_finish(&cz, z.wall, sim_clock(&z), true, count_kind, &tz);
            snprintf(name, sizeof name, "classify/%s: a thread waking every 5 ms, one waiting", mode);
            tap_check(tw.cpu[0] == 0 && tz.cpu[0] <= 5000 * 4 / 1000 + 2, name, "waiting %llu, waking %llu CPU samples",
                      (unsigned long long)tw.cpu[0], (unsigned long long)tz.cpu[0]);
            hs_cls_free(&cw);
            hs_cls_free(&cz);
        }
        t = run_thread(exact, 20000, ticked_waiter, 200 * P, true);
        snprintf(name, sizeof name, "classify/%s: a waiting thread charged whole ticks", mode);
        tap_check(t.cpu[0] == 0 && t.wait[0] == 20000, name, "cpu %llu wait %llu", (unsigned long long)t.cpu[0],
                  (unsigned long long)t.wait[0]);

        /* CPU samples match its CPU time, and none comes from an interval without running */
        t = run_thread(exact, 10000, duty30, MAXWIN, true);
        snprintf(name, sizeof name, "classify/%s: 30%% duty", mode);
        tap_check(t.cpu[1] >= 2950 && t.cpu[1] <= 3000 && t.cpu[2] == 0, name,
                  "cpu %llu of 3000 running, %llu from waits", (unsigned long long)t.cpu[1],
                  (unsigned long long)t.cpu[2]);

        t = run_thread(exact, 4000, unscheduled, MAXWIN, true);
        snprintf(name, sizeof name, "classify/%s: busy, sometimes not scheduled", mode);
        tap_check(t.cpu[0] >= 2990 && t.cpu[0] <= 3010, name, "cpu %llu (3000 ran)", (unsigned long long)t.cpu[0]);

        t = run_thread(exact, 5000, split70, MAXWIN, true);
        double split = (double)t.cpu[3] / (double)(t.cpu[3] + t.cpu[4]);
        snprintf(name, sizeof name, "classify/%s: 70/30 split of a busy thread", mode);
        tap_check(split > 0.695 && split < 0.705, name, "split %.3f", split);

        /* the final clock is lost: the last window takes the share before it */
        t = run_thread(exact, 1005, busy, MAXWIN, false);
        snprintf(name, sizeof name, "classify/%s: final clock unknown", mode);
        tap_check(t.cpu[0] >= 1000, name, "cpu %llu of 1005", (unsigned long long)t.cpu[0]);
    }
    /* no clock information at all: moved = running */
    hs_cls_shared sh = { 0, 0 };
    hs_cls_thread c;
    hs_cls_init(&c, &sh);
    tally t = { 0 };
    for (int i = 0; i < 10; i++)
        hs_cls_sample(&c, (uint64_t)i * P, 0, i < 4, false, 0, MAXWIN, count_kind, &t);
    hs_cls_finish(&c, 10 * P, 0, false, count_kind, &t);
    tap_check(t.cpu[0] == 4 && t.wait[0] == 6, "classify/no clock: moved samples", "cpu %llu", (unsigned long long)t.cpu[0]);
    hs_cls_free(&c);
}

/* A recorded run (tests/unit/fixtures/classify-busy-200hz.txt): a busy
 * thread sampled at 200 Hz with Wine's clock in 10 ms ticks. Its CPU
 * samples x the period must be its CPU time within a sample (classify.h),
 * here 2.870 s x 603 samples / 3.015 s: 574. */
static void test_classifier_replay(void)
{
    const char *name = "classify/replay-busy-200hz (a busy thread recorded under Wine)";
    FILE *f = fopen("tests/unit/fixtures/classify-busy-200hz.txt", "r");
    if (!f) {
        tap_fail(name, "cannot open tests/unit/fixtures/classify-busy-200hz.txt (run from the top of the tree)");
        return;
    }
    hs_cls_shared sh = { 0, 0 };
    hs_cls_thread c;
    hs_cls_init(&c, &sh);
    tally t = { 0 };
    char line[200];
    unsigned long long wall, cpu, w0 = 0, c0 = 0, w1 = 0, c1 = 0;
    int moved, n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "%llu %llu %d", &wall, &cpu, &moved) != 3)
            continue;
        if (!n++)
            w0 = wall, c0 = cpu;
        w1 = wall, c1 = cpu;
        hs_cls_sample(&c, wall, cpu, moved != 0, false, 0, 20000000ull, count_kind, &t);
    }
    fclose(f);
    hs_cls_finish(&c, w1, c1, true, count_kind, &t);
    hs_cls_free(&c);
    /* the windows give each its local density of samples (the sampler's
     * pace varies), the whole run's average is this: within 0.5% and one */
    double want = (double)(c1 - c0) * n / (double)(w1 - w0), slack = 1 + want * 0.005;
    tap_check(n == 603 && (double)t.cpu[0] >= want - slack && (double)t.cpu[0] <= want + slack, name,
              "%llu CPU samples, %llu wait samples of %d; its CPU time makes %.1f", (unsigned long long)t.cpu[0],
              (unsigned long long)t.wait[0], n, want);
}

/* ---- sample set ------------------------------------------------------------------- */

static void test_sampleset(void)
{
    hs_sampleset *s = hs_sampleset_new();
    uint64_t a[] = { 0x140001010, 0x140001100 }, b[] = { 0x140001020, 0x140001100 };
    hs_sample smp = { 1, 20, 0, HS_SAMPLE_CPU, false, 2, a };
    for (int i = 0; i < 5; i++)
        hs_sampleset_add(s, &smp);
    smp.frames = b;
    hs_sampleset_add(s, &smp);
    smp.kind = HS_SAMPLE_WAIT;
    hs_sampleset_add(s, &smp);
    smp.tid = 10;
    smp.kind = HS_SAMPLE_CPU;
    hs_sampleset_add(s, &smp);
    uint32_t id = hs_sampleset_stack(s, 20, false, a, 2);
    hs_sampleset_count(s, id, HS_SAMPLE_WAIT, 2);
    hs_sampleset_lost(s, 3);
    hs_sampleset_thread(s, 20, 1.5);
    hs_sampleset_module(s, "C:\\t\\t.exe", 0x140000000, 0x4000, 7, false, false);
    hs_sampleset_module(s, "C:\\w\\late.dll", 0x180000000, 0x2000, 9, true, false);
    tap_check(hs_sampleset_unique(s) == 3 && hs_sampleset_total(s, HS_SAMPLE_CPU) == 7 &&
                  hs_sampleset_total(s, HS_SAMPLE_WAIT) == 3,
              "set/intern and count", "unique %zu", hs_sampleset_unique(s));
    hs_sampleset_taken_add(s, 4);
    hs_sampleset_taken_add(s, 1);
    tap_check(hs_sampleset_taken(s) == 5 && hs_sampleset_total(s, HS_SAMPLE_CPU) == 7,
              "set/taken apart from counted", "taken %llu", (unsigned long long)hs_sampleset_taken(s));

    hs_profile *p = hs_profile_new();
    hs_profile_add_module(p, "C:\\t\\t.exe", 0x140000000, 0x4000);
    hs_profile_add_samples(p, s);
    /* stacks: CPU then wait; by thread, then frames */
    int order_ok = p->nstacks == 5 && p->stacks[0].kind == HS_STACK_CPU && p->stacks[0].tid == 10 &&
                   p->stacks[1].tid == 20 && p->stacks[1].addrs[0] == a[0] && p->stacks[1].count == 5 &&
                   p->stacks[2].addrs[0] == b[0] && p->stacks[3].kind == HS_STACK_WAIT &&
                   p->stacks[3].addrs[0] == a[0] && p->stacks[3].count == 2 && p->stacks[4].count == 1;
    tap_check(order_ok, "set/stacks in the profile, in order", "%zu stacks", p->nstacks);
    tap_check(p->nmodules == 2 && p->modules[1].unloaded && p->modules[1].timestamp == 9 && !p->modules[1].traced,
              "set/modules added once", "%zu modules", p->nmodules);
    const hs_prof_thread *t20 = hs_profile_thread(p, 20);
    tap_check(p->nthreads_list == 2 && t20->cpu_samples == 6 && t20->wait_samples == 3 && t20->cpu_s == 1.5 &&
                  p->threads_list[0].tid == 10,
              "set/threads", "%zu threads", p->nthreads_list);
    tap_check(p->sampling.on && p->sampling.samples == 7 && p->sampling.wait_samples == 3 && p->sampling.lost == 3 &&
                  p->sampling.threads == 2,
              "set/run figures", "samples %llu", (unsigned long long)p->sampling.samples);
    hs_profile_free(p);
    hs_sampleset_free(s);
}

/* ---- system-call returns ------------------------------------------------------ */

/* A thread right after `syscall; ret` is blocked in the system, unless the
 * call is one of ntdll's that never block (NtContinue: a thread before it
 * first runs): those are set by rva and hold only in ntdll. */
static void test_at_syscall(void)
{
    static const uint8_t stub[] = { 0x4C, 0x8B, 0xD1, 0xB8, 0x42, 0, 0, 0, 0xF6, 0x04, 0x25, 0x08, 0x03, 0xFE,
                                    0x7F, 0x01, 0x75, 0x03, 0x0F, 0x05, 0xC3, 0xCD, 0x2E, 0xC3 };
    const uint64_t nt = 0x7FF800000000ull, other = 0x7FF900000000ull;
    target t = { 0 };
    uint32_t none[] = { 0, 0, 0 };
    uint8_t *a = make_image(&t, nt, 0x4000, none, 0), *b = make_image(&t, other, 0x4000, none, 0);
    for (uint32_t rva = 0x1000; rva <= 0x1040; rva += 0x20) {
        memcpy(a + rva, stub, sizeof stub);
        memcpy(b + rva, stub, sizeof stub);
    }
    hs_codemap *cm = hs_codemap_new(target_read, &t);
    hs_codemap_add_image(cm, nt, 0x4000, "C:\\windows\\system32\\NTDLL.DLL", false);
    hs_codemap_add_image(cm, other, 0x4000, "C:\\windows\\system32\\win32u.dll", false);
    /* syscall at +18, int 2e at +21: the returns are +20 and +23 */
    bool before[3], after[3], elsewhere = true;
    for (int i = 0; i < 3; i++)
        before[i] = hs_codemap_at_syscall(cm, nt + 0x1000 + 0x20 * (uint64_t)i + 20);
    const uint32_t quick[] = { 0x1020 };
    hs_codemap_set_quick(cm, quick, 1);
    for (int i = 0; i < 3; i++) {
        after[i] = hs_codemap_at_syscall(cm, nt + 0x1000 + 0x20 * (uint64_t)i + 20);
        elsewhere = elsewhere && hs_codemap_at_syscall(cm, other + 0x1000 + 0x20 * (uint64_t)i + 20);
    }
    tap_check(before[0] && before[1] && before[2], "syscall/every-stub", "a stub's return not seen as a wait");
    tap_check(after[0] && !after[1] && after[2], "syscall/quick-not-waiting",
              "only the quick call's return is not a wait (%d %d %d)", after[0], after[1], after[2]);
    tap_check(!hs_codemap_at_syscall(cm, nt + 0x1020 + 23) && hs_codemap_at_syscall(cm, nt + 0x1040 + 23),
              "syscall/quick-int2e", "the int 2e return of the quick stub");
    tap_check(elsewhere, "syscall/quick-only-in-ntdll", "the same rva in another image is still a wait");
    tap_check(!hs_codemap_at_syscall(cm, nt + 0x1000 + 10), "syscall/not-after-syscall", "mid-stub");
    hs_codemap_free(cm);
    free_target(&t);
}

int main(void)
{
    test_unwinder();
    test_at_syscall();
    test_own_code();
    test_classifier();
    test_classifier_replay();
    test_sampleset();
    return tap_status();
}
