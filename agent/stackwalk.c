/*
 * agent/stackwalk.c - the entry stack of a hooked function: frame 0 is its
 * entry, then one return address per caller, walked with the modules'
 * unwind data (RtlVirtualUnwind), hookscope's own wrapper frames left out.
 *
 * What it costs is finding each return address's function table entry:
 * Wine's RtlLookupFunctionEntry walks the loader's module list (a linked
 * list, in load order) for every frame and reads the image's directory
 * again, about 0.7 us per frame in a process with some 60 modules, where
 * the exe, first in the list, costs 10 ns (bench/run.py stacks). Return
 * addresses repeat, so each thread keeps the answers in a small cache in
 * its region's header page: (return address -> function entry, image
 * base). A module unloaded (hs_stackwalk_forget) empties every cache.
 * No heap and no lock: this runs in the middle of the target's calls.
 */
#include <string.h>

#include "agent/agent.h"

/* The cache, in the agent's part of a region's first page (session.h). */
#define CACHE_SLOTS 128
typedef struct walk_cache {
    volatile LONG gen;             /* hs_code_gen it was filled under */
    uint32_t reserved;
    struct {
        uint64_t pc;               /* 0: empty */
        uint64_t base;
        PRUNTIME_FUNCTION rf;
    } e[CACHE_SLOTS];
} walk_cache;
_Static_assert(HS_REGION_AGENT_OFF + sizeof(walk_cache) <= HS_PAGE, "walk cache fits the header page");

static volatile LONG code_gen;

void hs_stackwalk_forget(void)
{
    InterlockedIncrement(&code_gen);
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

/* Is pc inside an epilogue by Windows' rules: [add rsp,imm | lea rsp,[reg+imm]],
 * then pops, then ret or a jmp out of the function? (RtlVirtualUnwind
 * interprets those instead of applying the unwind codes: left to it.) A
 * return address is rarely one: compilers put a nop after a call that
 * would return into an epilogue. */
static int in_epilog(const uint8_t *pc, DWORD64 base, PRUNTIME_FUNCTION rf)
{
    if ((pc[0] & 0xf8) == 0x48) {
        if ((pc[1] == 0x81 || pc[1] == 0x83) && pc[0] == 0x48 && pc[2] == 0xc4)
            pc += pc[1] == 0x81 ? 7 : 4;
        else if (pc[1] == 0x8d && !(pc[0] & 0x06) && ((pc[2] >> 3) & 7) == 4 && (pc[2] & 7) != 4 &&
                 ((pc[2] >> 6) == 1 || (pc[2] >> 6) == 2))
            pc += (pc[2] >> 6) == 1 ? 4 : 7;
        else if (pc[1] == 0x81 || pc[1] == 0x83 || pc[1] == 0x8d)
            return 0;
    }
    for (;;) {
        if ((*pc & 0xf0) == 0x40)
            pc++;
        if (*pc >= 0x58 && *pc <= 0x5f) {
            pc++;
            continue;
        }
        if (*pc == 0xc2 || *pc == 0xc3)
            return 1;
        if (*pc == 0xe9 || *pc == 0xeb) {
            int32_t d;
            if (*pc == 0xe9)
                memcpy(&d, pc + 1, 4);
            else
                d = (int8_t)pc[1];
            uint64_t t = (uint64_t)(uintptr_t)pc + (*pc == 0xe9 ? 5 : 2) + (uint64_t)(int64_t)d - base;
            return !(t >= rf->BeginAddress && t < rf->EndAddress);
        }
        if (*pc == 0xf3)
            return pc[1] == 0xc3;
        return 0;
    }
}

/* Unwind one frame at a return address the way RtlVirtualUnwind does
 * (Windows' rules: codes applied in order; saves relative to the frame
 * base, the frame register's value less its offset, or rsp; chained
 * infos; then the return address), for the cases where that is all it
 * does. Returns 0, or -1 (nothing changed) when pc is in a prologue or
 * in an epilogue, or the info has codes this does not apply (machine
 * frames, unknown versions): the caller then asks Wine. */
static int unwind_frame(DWORD64 base, uint64_t pc, PRUNTIME_FUNCTION rf, CONTEXT *ctx)
{
    uint64_t *reg = &ctx->Rax;
    uint64_t rsp = ctx->Rsp, frame = ctx->Rsp;
    uint64_t saved[16];
    uint16_t set = 0;            /* registers restored, applied at the end */
    for (int depth = 0; depth < 32; depth++) {
        const uint8_t *ui = (const uint8_t *)(uintptr_t)(base + rf->UnwindData);
        uint8_t version = ui[0] & 7, flags = ui[0] >> 3, prolog = ui[1], count = ui[2];
        uint8_t freg = ui[3] & 15, foff = ui[3] >> 4;
        if (version != 1 && version != 2)
            return -1;
        if (pc >= base + rf->BeginAddress && pc < base + rf->BeginAddress + prolog)
            return -1;
        if (count && in_epilog((const uint8_t *)(uintptr_t)pc, base, rf))
            return -1;
        if (freg)
            frame = ((set >> freg) & 1 ? saved[freg] : reg[freg]) - foff * 16u;
        const uint8_t *c = ui + 4;
        for (int i = 0; i < count;) {
            uint8_t op = c[i * 2 + 1] & 15, info = c[i * 2 + 1] >> 4;
            const uint8_t *next = c + (i + 1) * 2;
            switch (op) {
            case 0:   /* UWOP_PUSH_NONVOL */
                saved[info] = *(const uint64_t *)(uintptr_t)rsp;
                set |= (uint16_t)(1u << info);
                rsp += 8;
                i += 1;
                break;
            case 1:   /* UWOP_ALLOC_LARGE */
                if (info) {
                    uint32_t v;
                    memcpy(&v, next, 4);
                    rsp += v;
                    i += 3;
                } else {
                    rsp += (uint64_t)(next[0] | next[1] << 8) * 8;
                    i += 2;
                }
                break;
            case 2:   /* UWOP_ALLOC_SMALL */
                rsp += (uint64_t)info * 8 + 8;
                i += 1;
                break;
            case 3:   /* UWOP_SET_FPREG */
                rsp = frame;
                i += 1;
                break;
            case 4:   /* UWOP_SAVE_NONVOL */
                saved[info] = *(const uint64_t *)(uintptr_t)(frame + (uint64_t)(next[0] | next[1] << 8) * 8);
                set |= (uint16_t)(1u << info);
                i += 2;
                break;
            case 5: { /* UWOP_SAVE_NONVOL_FAR */
                uint32_t v;
                memcpy(&v, next, 4);
                saved[info] = *(const uint64_t *)(uintptr_t)(frame + v);
                set |= (uint16_t)(1u << info);
                i += 3;
                break;
            }
            case 6:   /* UWOP_EPILOG (version 2): nothing to do here */
                if (version != 2)
                    return -1;
                i += 2;
                break;
            case 8:   /* UWOP_SAVE_XMM128: the walk needs no xmm register */
                i += 2;
                break;
            case 9:   /* UWOP_SAVE_XMM128_FAR */
                i += 3;
                break;
            default:  /* a machine frame, or unknown */
                return -1;
            }
        }
        if (!(flags & UNW_FLAG_CHAININFO))
            break;
        rf = (PRUNTIME_FUNCTION)(uintptr_t)(ui + 4 + ((count + 1u) & ~1u) * 2);
        if (depth == 31)
            return -1;
    }
    for (int r = 0; r < 16; r++)
        if ((set >> r) & 1)
            reg[r] = saved[r];
    ctx->Rip = *(const uint64_t *)(uintptr_t)rsp;
    ctx->Rsp = rsp + 8;
    return 0;
}

int hs_stackwalk(uint64_t *counters, uint64_t entry, uint64_t rsp, const hs_saved_regs *r, uint64_t *frames,
                 int max, int *truncated)
{
    walk_cache *cache = (walk_cache *)((char *)counters - g_hs.hdr->region_counters_off + HS_REGION_AGENT_OFF);
    LONG gen = code_gen;
    if (cache->gen != gen) {
        memset(cache->e, 0, sizeof cache->e);
        cache->gen = gen;
    }
    const uint64_t lo = hs_teb_read(0x10), hi = hs_teb_read(0x08);  /* StackLimit, StackBase */
    const uint64_t agent_lo = (uint64_t)(uintptr_t)g_hs.self, agent_hi = agent_lo + g_hs.self_size;
    int n = 0;
    frames[n++] = entry;
    *truncated = 0;
    if (rsp < lo || rsp + 8 > hi)
        return n;
    CONTEXT ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.ContextFlags = CONTEXT_FULL;
    ctx.Rip = entry;
    ctx.Rsp = rsp;
    ctx.Rbx = r->rbx;
    ctx.Rbp = r->rbp;
    ctx.Rsi = r->rsi;
    ctx.Rdi = r->rdi;
    ctx.R12 = r->r12;
    ctx.R13 = r->r13;
    ctx.R14 = r->r14;
    ctx.R15 = r->r15;
    /* at a function's entry nothing of its prologue has run: its return
     * address is at rsp, unless it is a part entered with a frame set up
     * (unwind codes at offset 0: gcc's .cold parts) */
    DWORD64 image = 0;
    PRUNTIME_FUNCTION rf = lookup(cache, entry, &image);
    const uint8_t *ui = rf ? (const uint8_t *)(uintptr_t)(image + rf->UnwindData) : NULL;
    if (ui && ui[2] && ui[4] == 0) {
        PVOID handler_data;
        DWORD64 establisher;
        RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, ctx.Rip, rf, &ctx, &handler_data, &establisher, NULL);
    } else {
        ctx.Rip = *(uint64_t *)rsp;
        ctx.Rsp = rsp + 8;
    }
    for (;;) {
        /* Wine can leave junk after the last frame: stop at the first null
         * or at a stack pointer outside the stack */
        if (ctx.Rip == 0 || ctx.Rsp < lo || ctx.Rsp > hi)
            break;
        /* the timing wrapper's frames are folded into the hooked function
         * in every report: they do not count against the depth */
        if (!(ctx.Rip >= agent_lo && ctx.Rip < agent_hi)) {
            if (n == max) {
                *truncated = 1;
                break;
            }
            frames[n++] = ctx.Rip;
        }
        rf = lookup(cache, ctx.Rip, &image);
        if (rf && unwind_frame(image, ctx.Rip, rf, &ctx) == 0) {
            /* done */
        } else if (rf) {
            PVOID handler_data;
            DWORD64 establisher;
            RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, ctx.Rip, rf, &ctx, &handler_data, &establisher, NULL);
        } else {
            /* no unwind data: a leaf, its return address at rsp */
            if (ctx.Rsp < lo || ctx.Rsp + 8 > hi)
                break;
            ctx.Rip = *(uint64_t *)ctx.Rsp;
            ctx.Rsp += 8;
        }
    }
    return n;
}
