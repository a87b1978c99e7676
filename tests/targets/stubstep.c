/*
 * stubstep.c - every instruction hookscope runs around a hooked call,
 * unwound. Traced with `-f leaf_fn` (and any probe options), it calls
 * leaf_fn with the trap flag set and, in a vectored exception handler,
 * stops at every instruction the call executes in hookscope's code (the
 * entry stub, its slow path, the trampoline, the timing wrapper, the
 * agent's thunks and probes, the entry-stack capture) and in leaf_fn
 * itself. At each one it unwinds the live stack with hookscope's unwinder
 * (hook/unwind/unwinder.c), looking functions up with
 * RtlLookupFunctionEntry, which finds hookscope's generated code through
 * the growable function table the agent registers (the table the kernel's
 * ETW stack walker reads), and checks that the walk reaches the return
 * address into mid_fn, then mid_fn's own return address into main, with
 * nothing else between them: each state unwinds to the true callers.
 * Calls into system DLLs are stepped over (an int3 at their return
 * address), so only hookscope's code and the program are stepped.
 *
 * Paths: a thread's first hooked call (the stub's slow path, the agent
 * making its region), later calls (the fast path), four call sites (the
 * edge slots of the function's block, then the edge table: edges from a
 * new site take the probe's slow path).
 *
 *   stubstep.exe   prints "stubstep states N arena N agent N program N bad N"
 *                  and, for each bad state (at most 8), a line "bad ..."
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "hook/unwind/unwinder.h"

static volatile int sink;

__attribute__((noinline)) int leaf_fn(int a, int b)
{
    return a * 3 + b;
}

static uint64_t exe_lo, exe_hi, agent_lo, agent_hi;
static volatile uint64_t want_mid, want_main;   /* the callers each state must unwind to */
static volatile int stepping;
static DWORD step_tid;                          /* the thread stepped */
static uint64_t bp_at;                          /* the int3 that ends a stepped-over call */
static uint8_t bp_byte;
static long states, in_arena, in_agent, in_program, bad;

static int image_of(uint64_t pc, uint64_t *lo, uint64_t *hi)
{
    HMODULE m;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCWSTR)(uintptr_t)pc, &m))
        return 0;
    const IMAGE_DOS_HEADER *d = (const IMAGE_DOS_HEADER *)m;
    const IMAGE_NT_HEADERS64 *nt = (const IMAGE_NT_HEADERS64 *)((const char *)m + d->e_lfanew);
    *lo = (uint64_t)(uintptr_t)m;
    *hi = *lo + nt->OptionalHeader.SizeOfImage;
    return 1;
}

/* hookscope's generated code: executable memory that belongs to no image */
static int in_generated(uint64_t pc)
{
    MEMORY_BASIC_INFORMATION mi;
    if (!VirtualQuery((const void *)(uintptr_t)pc, &mi, sizeof mi))
        return 0;
    return mi.Type == MEM_PRIVATE && (mi.Protect & (PAGE_EXECUTE | PAGE_EXECUTE_READ | PAGE_EXECUTE_READWRITE));
}

/* ---- the unwinder over this process ---------------------------------------------- */

static int live_lookup(void *ctx, uint64_t pc, hs_uw_entry *e)
{
    (void)ctx;
    DWORD64 base = 0;
    PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(pc, &base, NULL);
    if (rf) {
        e->base = base;
        e->begin = rf->BeginAddress;
        e->end = rf->EndAddress;
        e->unwind = rf->UnwindData;
        return HS_UW_TABLE;
    }
    uint64_t lo, hi;
    if (in_generated(pc))
        return HS_UW_EMULATE;   /* the few undescribed instructions: run forward */
    return image_of(pc, &lo, &hi) ? HS_UW_LEAF : HS_UW_UNKNOWN;
}

static int live_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    MEMORY_BASIC_INFORMATION mi;
    if (!VirtualQuery((const void *)(uintptr_t)addr, &mi, sizeof mi) || mi.State != MEM_COMMIT ||
        (mi.Protect & (PAGE_NOACCESS | PAGE_GUARD)) ||
        addr + len > (uint64_t)(uintptr_t)mi.BaseAddress + mi.RegionSize)
        return -1;
    memcpy(buf, (const void *)(uintptr_t)addr, len);
    return 0;
}

static void check_state(const CONTEXT *c, const char *where)
{
    uint64_t lo = 0, hi = 0;
    __asm__ volatile("mov %%gs:0x10, %0" : "=r"(lo));
    __asm__ volatile("mov %%gs:0x8, %0" : "=r"(hi));
    hs_uw_env env = { NULL, live_lookup, live_read, NULL };
    hs_uw_stack st = { lo, (const uint8_t *)(uintptr_t)lo, (size_t)(hi - lo), true };
    hs_uw_regs r;
    memset(&r, 0, sizeof r);
    r.rip = c->Rip;
    const uint64_t regs[16] = { c->Rax, c->Rcx, c->Rdx, c->Rbx, c->Rsp, c->Rbp, c->Rsi, c->Rdi,
                                c->R8, c->R9, c->R10, c->R11, c->R12, c->R13, c->R14, c->R15 };
    memcpy(r.r, regs, sizeof regs);
    uint64_t frames[64];
    hs_uw_result res = hs_unwind_walk(&env, &st, &r, frames, 64);
    /* frames up to want_mid may be hookscope's or leaf_fn's; then main's
     * return address must come next */
    uint32_t k = 0;
    while (k < res.n && frames[k] != want_mid)
        k++;
    int ok = k < res.n && k + 1 < res.n && frames[k + 1] == want_main;
    for (uint32_t i = 1; ok && i < k; i++) {
        uint64_t f = frames[i];
        int ours = (f >= agent_lo && f < agent_hi) || in_generated(f) ||
                   (f >= (uint64_t)(uintptr_t)leaf_fn && f < (uint64_t)(uintptr_t)leaf_fn + 64);
        if (!ours)
            ok = 0;
    }
    states++;
    if (!ok) {
        if (++bad <= 8) {
            printf("bad %s rip %llx (stop %d):", where, (unsigned long long)c->Rip, res.stop);
            for (uint32_t i = 0; i < res.n && i < 12; i++)
                printf(" %llx", (unsigned long long)frames[i]);
            printf(" | want %llx then %llx\n", (unsigned long long)want_mid, (unsigned long long)want_main);
        }
    }
}

/* ---- stepping ------------------------------------------------------------------ */

static void set_int3(uint64_t at)
{
    DWORD old;
    bp_at = at;
    VirtualProtect((void *)(uintptr_t)at, 1, PAGE_EXECUTE_READWRITE, &old);
    bp_byte = *(volatile uint8_t *)(uintptr_t)at;
    *(volatile uint8_t *)(uintptr_t)at = 0xCC;
    VirtualProtect((void *)(uintptr_t)at, 1, old, &old);
    FlushInstructionCache(GetCurrentProcess(), (void *)(uintptr_t)at, 1);
}

static void clear_int3(void)
{
    DWORD old;
    VirtualProtect((void *)(uintptr_t)bp_at, 1, PAGE_EXECUTE_READWRITE, &old);
    *(volatile uint8_t *)(uintptr_t)bp_at = bp_byte;
    VirtualProtect((void *)(uintptr_t)bp_at, 1, old, &old);
    FlushInstructionCache(GetCurrentProcess(), (void *)(uintptr_t)bp_at, 1);
    bp_at = 0;
}

/* Where the trapped instruction stands; returns 0 to stop stepping. */
static int step_at(CONTEXT *c)
{
    uint64_t pc = c->Rip;
    if (pc == want_mid)
        return 0;                               /* back in mid_fn: done */
    if (pc >= agent_lo && pc < agent_hi) {
        in_agent++;
        check_state(c, "agent");
    } else if (in_generated(pc)) {
        in_arena++;
        check_state(c, "arena");
    } else if (pc >= exe_lo && pc < exe_hi) {
        if (pc >= (uint64_t)(uintptr_t)leaf_fn && pc < (uint64_t)(uintptr_t)leaf_fn + 64) {
            in_program++;
            check_state(c, "leaf_fn");
        }
    } else {
        /* a system DLL: step over the call, to its return address */
        uint64_t ret = *(uint64_t *)(uintptr_t)c->Rsp;
        set_int3(ret);
        return 2;
    }
    return 1;
}

static LONG WINAPI on_trap(EXCEPTION_POINTERS *x)
{
    DWORD code = x->ExceptionRecord->ExceptionCode;
    CONTEXT *c = x->ContextRecord;
    if (!stepping || GetCurrentThreadId() != step_tid)
        return EXCEPTION_CONTINUE_SEARCH;
    if (code == EXCEPTION_BREAKPOINT && bp_at && (c->Rip == bp_at || c->Rip == bp_at + 1)) {
        c->Rip = bp_at;
        clear_int3();
    } else if (code != EXCEPTION_SINGLE_STEP) {
        return EXCEPTION_CONTINUE_SEARCH;
    }
    int r = step_at(c);
    if (r == 1)
        c->EFlags |= 0x100;
    else
        c->EFlags &= ~0x100u;
    if (r == 0)
        stepping = 0;
    return EXCEPTION_CONTINUE_EXECUTION;
}

/* Call leaf_fn with every instruction of the call stepped. The first
 * instruction in leaf_fn's entry (patched: a jump to its stub) gives the
 * return address into mid_fn. */
#define STEP_CALL(site)                                                       \
    do {                                                                      \
        want_main = (uint64_t)(uintptr_t)__builtin_return_address(0);        \
        want_mid = 0;                                                         \
        step_tid = GetCurrentThreadId();                                      \
        stepping = 1;                                                         \
        __asm__ volatile("pushfq; orq $0x100, (%%rsp); popfq" ::: "memory");  \
        sink += leaf_fn(site, 2);                                             \
        stepping = 0;                                                         \
    } while (0)

/* mid_fn's call sites; the first instruction stepped is in the caller, the
 * next the jump at leaf_fn's entry: the handler takes [rsp] there */
__attribute__((noinline)) void mid_fn(int site);

static LONG WINAPI on_first(EXCEPTION_POINTERS *x)
{
    CONTEXT *c = x->ContextRecord;
    if (stepping && GetCurrentThreadId() == step_tid && !want_mid &&
        x->ExceptionRecord->ExceptionCode == EXCEPTION_SINGLE_STEP) {
        if (c->Rip == (uint64_t)(uintptr_t)leaf_fn) {
            want_mid = *(uint64_t *)(uintptr_t)c->Rsp;
            in_program++;
            check_state(c, "leaf_fn entry");
        }
        c->EFlags |= 0x100;
        return EXCEPTION_CONTINUE_EXECUTION;
    }
    return on_trap(x);
}

__attribute__((noinline)) void mid_fn(int site)
{
    switch (site) {
    case 0: STEP_CALL(10); break;
    case 1: STEP_CALL(11); break;
    case 2: STEP_CALL(12); break;
    case 3: STEP_CALL(13); break;
    default: STEP_CALL(14); break;
    }
}

static DWORD WINAPI fresh_thread(void *arg)
{
    (void)arg;
    mid_fn(0);   /* this thread's first hooked call: the slow path */
    return 0;
}

int main(void)
{
    image_of((uint64_t)(uintptr_t)main, &exe_lo, &exe_hi);
    HMODULE agent = GetModuleHandleW(L"hookscope-agent.dll");
    if (agent)
        image_of((uint64_t)(uintptr_t)agent, &agent_lo, &agent_hi);
    AddVectoredExceptionHandler(1, on_first);
    /* a new thread's first call, then every site twice on this thread */
    HANDLE t = CreateThread(NULL, 0, fresh_thread, NULL, 0, NULL);
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
    for (int round = 0; round < 2; round++)
        for (int site = 0; site < 5; site++)
            mid_fn(site);
    printf("stubstep states %ld arena %ld agent %ld program %ld bad %ld\n", states, in_arena, in_agent,
           in_program, bad);
    return 0;
}
