/*
 * agent/stackwalk.c - the entry stack of a hooked function: frame 0 is its
 * entry, then one return address per caller, walked with the modules'
 * unwind data by hookscope's one unwinder (hook/unwind/unwinder.h, the
 * sampler's too) over this process's own memory, hookscope's own wrapper
 * frames left out.
 *
 * What it costs is finding each return address's function table entry:
 * Wine's RtlLookupFunctionEntry walks the loader's module list (a linked
 * list, in load order) for every frame and reads the image's directory
 * again, about 0.7 us per frame in a process with some 60 modules, where
 * the exe, first in the list, costs 10 ns (bench/run.py stacks). Return
 * addresses repeat, so each thread keeps the answers in a small cache in
 * its region's header page: (return address -> function entry, image
 * base). A module unloaded (hs_stackwalk_forget) empties every cache.
 *
 * Then each step decodes the function's unwind data and looks for an
 * epilogue at the return address: the unwinder's plan of the step
 * (hs_unwind_step_plan) is the same for every stack through that return
 * address, so the plans are kept too (walkplans.h, the table the 32-bit
 * agent's walk keeps its own in), and a return address seen before costs
 * a probe of the table and the plan's few loads from the stack
 * (bench/run.py stacks: "per captured stack"). The plans of a module
 * unloaded are forgotten with the caches. No heap and no lock: this runs
 * in the middle of the target's calls.
 */
#include <string.h>

#include "agent/agent.h"
#include "agent/walkplans.h"
#include "hook/pe/pe.h"
#include "hook/unwind/unwinder.h"

/* The cache, in the agent's part of a region's first page (session.h). */
#define CACHE_SLOTS 128
typedef struct walk_cache {
    volatile LONG gen;             /* hs_walk_plans_gen it was filled under */
    uint32_t reserved;
    struct {
        uint64_t pc;               /* 0: empty */
        uint64_t base;
        PRUNTIME_FUNCTION rf;
    } e[CACHE_SLOTS];
} walk_cache;
_Static_assert(HS_REGION_AGENT_OFF + sizeof(walk_cache) <= HS_EDGES_LISTED_OFF,
               "walk cache fits the header page before the listed edge entries");

void hs_stackwalk_forget(uint64_t base)
{
    (void)base;   /* (every module's answers go: they are few to find again) */
    hs_walk_plans_forget();
}

static PRUNTIME_FUNCTION lookup(walk_cache *c, uint64_t pc, DWORD64 *base)
{
    uint32_t i = (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> 57);
    if (c->e[i].pc == pc) {
        *base = c->e[i].base;
        return c->e[i].rf;
    }
    PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(pc, base, NULL);
    if (rf) {
        c->e[i].pc = pc;
        c->e[i].base = *base;
        c->e[i].rf = rf;
    }
    return rf;
}

/* The unwinder's view of this process: function entries from the cache,
 * and reads of code and unwind data inside the image the last lookup
 * found (the only reads a table step makes besides the stack, which the
 * walk gives it whole). */
typedef struct live {
    walk_cache *cache;
    uint64_t img_lo, img_hi;   /* the image of the last entry found */
} live;

static int live_lookup(void *ctx, uint64_t pc, hs_uw_entry *e)
{
    live *l = ctx;
    DWORD64 base = 0;
    PRUNTIME_FUNCTION rf = lookup(l->cache, pc, &base);
    if (!rf)
        return HS_UW_LEAF;     /* no unwind data: a leaf, its return address at rsp */
    if (base != l->img_lo) {
        uint32_t size = hs_pe_mapped_size((const void *)(uintptr_t)base, NULL);
        l->img_lo = base;
        l->img_hi = base + (size ? size : rf->EndAddress);
    }
    e->base = base;
    e->begin = rf->BeginAddress;
    e->end = rf->EndAddress;
    e->unwind = rf->UnwindData;
    return HS_UW_TABLE;
}

static int live_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const live *l = ctx;
    if (addr < l->img_lo || addr >= l->img_hi || len > l->img_hi - addr)
        return -1;
    hs_copy_bytes(buf, (const uint8_t *)(uintptr_t)addr, len);
    return 0;
}

static const uint8_t *live_view(void *ctx, uint64_t addr, size_t len)
{
    const live *l = ctx;
    if (addr < l->img_lo || addr >= l->img_hi || len > l->img_hi - addr)
        return NULL;
    return (const uint8_t *)(uintptr_t)addr;
}

/* A step out of a timing wrapper frame from its return address
 * (hs_wrapper_ret), without its unwind data: rbp is the wrapper's frame
 * and its layout is fixed (wrapper.S: [rbp] r12, +8 rdi, +16 rsi, +24 rbx,
 * +32 the caller's rbp, +40 the return address, +48 the caller's rsp), so
 * the step is what undoing its unwind codes does (set_frame rbp, five
 * pushes, the return), with no lookup and no interpretation: a timed call
 * adds one such frame below each timed function. HS_UW_END (0), or
 * HS_UW_BAD when the frame is not in the stack. */
static int wrapper_step(hs_uw_regs *regs, uint64_t lo, uint64_t hi)
{
    uint64_t fr = regs->r[HS_RBP];
    if (fr < lo || fr > hi || hi - fr < 48)
        return HS_UW_BAD;
    const uint64_t *f = (const uint64_t *)(uintptr_t)fr;
    regs->r[HS_R12] = f[0];
    regs->r[HS_RDI] = f[1];
    regs->r[HS_RSI] = f[2];
    regs->r[HS_RBX] = f[3];
    regs->r[HS_RBP] = f[4];
    regs->rip = f[5];
    regs->r[HS_RSP] = fr + 48;
    return 0;
}

int hs_stackwalk(uint64_t *counters, uint64_t entry, uint64_t rsp, const hs_saved_regs *r, uint64_t *frames,
                 int max, int *truncated)
{
    walk_cache *cache = (walk_cache *)((char *)counters - g_hs.hdr->region_counters_off + HS_REGION_AGENT_OFF);
    LONG gen = hs_walk_plans_gen();
    if (cache->gen != gen) {
        memset(cache->e, 0, sizeof cache->e);
        cache->gen = gen;
    }
    const uint64_t lo = hs_teb_read(HS_TEB_STACK_LIMIT), hi = hs_teb_read(HS_TEB_STACK_BASE);
    const uint64_t agent_lo = (uint64_t)(uintptr_t)g_hs.self, agent_hi = agent_lo + g_hs.self_size;
    int n = 0;
    frames[n++] = entry;
    *truncated = 0;
    if (rsp < lo || rsp + 8 > hi)
        return n;
    live l = { cache, 0, 0 };
    hs_uw_env env = { &l, live_lookup, live_read, live_view };
    hs_uw_stack st = { lo, (const uint8_t *)(uintptr_t)lo, (size_t)(hi - lo), true };
    hs_uw_regs regs;
    memset(&regs, 0, sizeof regs);
    regs.rip = entry;
    regs.r[HS_RSP] = rsp;
    regs.r[HS_RBX] = r->rbx;
    regs.r[HS_RBP] = r->rbp;
    regs.r[HS_RSI] = r->rsi;
    regs.r[HS_RDI] = r->rdi;
    regs.r[HS_R12] = r->r12;
    regs.r[HS_R13] = r->r13;
    regs.r[HS_R14] = r->r14;
    regs.r[HS_R15] = r->r15;
    /* at a function's entry nothing of its prologue has run: the step
     * pops its return address (or, for a part entered with a frame set up,
     * like gcc's .cold parts, undoes the codes at offset 0 first) */
    const uint64_t wrapper_ret = (uint64_t)(uintptr_t)hs_wrapper_ret;
    hs_walk_plan plan;
    for (;;) {
        uint64_t sp = regs.r[HS_RSP], pc = regs.rip;
        int err;
        if (pc == wrapper_ret) {
            err = wrapper_step(&regs, lo, hi);
        } else if (hs_walk_plan_get(pc, gen, &plan)) {
            err = hs_unwind_run(&plan.x64, &st, &regs);
        } else {
            err = hs_unwind_step_plan(&env, &st, &regs, &plan.x64);
            if (plan.x64.whole)
                hs_walk_plan_put(pc, gen, &plan);
        }
        if (err != HS_UW_END)
            break;
        /* Wine can leave junk after the last frame: stop at the first null
         * or at a stack pointer that does not move up */
        if (regs.rip == 0 || regs.r[HS_RSP] <= sp || regs.r[HS_RSP] > hi)
            break;
        /* the timing wrapper's frames are folded into the hooked function
         * in every report: they do not count against the depth */
        if (regs.rip >= agent_lo && regs.rip < agent_hi)
            continue;
        if (n == max) {
            *truncated = 1;
            break;
        }
        frames[n++] = regs.rip;
    }
    return n;
}
