/*
 * stubstep.c - every instruction hookscope runs around a hooked call,
 * unwound. Traced with `-f leaf_fn -f call_fn -f branch_fn -f frame_fn`
 * (and any probe options), it calls each of them with the trap flag set
 * and, in a vectored exception handler, stops at every instruction the
 * call executes in hookscope's code (the entry stub, its slow path, the
 * trampoline, the timing wrapper, the agent's thunks and probes, the
 * entry-stack capture) and in the function itself. At each one it unwinds
 * the live stack with hookscope's unwinder (hook/unwind/unwinder.c),
 * looking functions up with RtlLookupFunctionEntry, which finds
 * hookscope's generated code through the growable function table the
 * agent registers (the table the kernel's ETW stack walker reads), and
 * checks that the walk reaches the return address into mid_fn, then
 * mid_fn's own return address into main, with nothing else between them
 * but hookscope's code and the function (and what it calls): each state
 * unwinds to the true callers.
 * Calls into system DLLs are stepped over (an int3 at their return
 * address), so only hookscope's code and the program are stepped.
 *
 * The functions, each a shape of trampoline (the first 5 bytes the hook
 * moves; written in assembly, with no padding before them, so that the
 * hook patches their entry):
 *   leaf_fn     C: a leaf without a prologue
 *   call_fn     sub rsp then a call, moved into the trampoline as "push
 *               the return address into call_fn; jmp helper_fn"
 *   branch_fn   push rbx, then a conditional jump out of the first bytes
 *               (taken for 0: the trampoline's jump into the function
 *               with rbx pushed; not taken otherwise)
 *   frame_fn    push rbp; mov rbp, rsp; sub rsp: a frame pointer set up
 *               in the trampoline
 *
 * Paths: a thread's first hooked call (the stub's slow path, the agent
 * making its region), later calls (the fast path), four call sites (the
 * edge slots of the function's block, then the edge table: edges from a
 * new site take the probe's slow path).
 *
 *   stubstep.exe   prints "stubstep states N arena N agent N program N bad N",
 *                  then "fn NAME arena N" for each function, and, for each
 *                  bad state (at most 8), a line "bad ..."
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

int call_fn(int a, int b), branch_fn(int a, int b), frame_fn(int a, int b);
extern const char call_fn_end[], branch_fn_end[], frame_fn_end[], helper_fn[], helper_fn_end[];

/* helper_fn: a leaf call_fn calls. Each function follows the previous
 * one's last byte: no padding a hook could use instead of the entry. */
__asm__(".text\n"
        ".p2align 4\n"
        "helper_fn:\n"
        "  leal 1(%rcx,%rdx), %eax\n"
        "  ret\n"
        "helper_fn_end:\n"
        ".globl call_fn\n"
        ".def call_fn; .scl 2; .type 32; .endef\n"
        ".seh_proc call_fn\n"
        "call_fn:\n"
        "  subq $40, %rsp\n"
        "  .seh_stackalloc 40\n"
        "  .seh_endprologue\n"
        "  call helper_fn\n"
        "  addl $1, %eax\n"
        "  addq $40, %rsp\n"
        "  ret\n"
        ".seh_endproc\n"
        "call_fn_end:\n"
        ".globl branch_fn\n"
        ".def branch_fn; .scl 2; .type 32; .endef\n"
        ".seh_proc branch_fn\n"
        "branch_fn:\n"
        "  pushq %rbx\n"
        "  .seh_pushreg %rbx\n"
        "  .seh_endprologue\n"
        "  testl %ecx, %ecx\n"
        "  .byte 0x0f, 0x84\n"                  /* je rel32 .Lzero */
        "  .long .Lzero - (. + 4)\n"
        "  leal (%rcx,%rdx), %eax\n"
        "  popq %rbx\n"
        "  ret\n"
        ".Lzero:\n"
        "  movl %edx, %eax\n"
        "  popq %rbx\n"
        "  ret\n"
        ".seh_endproc\n"
        "branch_fn_end:\n"
        ".globl frame_fn\n"
        ".def frame_fn; .scl 2; .type 32; .endef\n"
        ".seh_proc frame_fn\n"
        "frame_fn:\n"
        "  pushq %rbp\n"
        "  .seh_pushreg %rbp\n"
        "  movq %rsp, %rbp\n"
        "  .seh_setframe %rbp, 0\n"
        "  subq $32, %rsp\n"
        "  .seh_stackalloc 32\n"
        "  .seh_endprologue\n"
        "  leal 2(%rcx,%rdx), %eax\n"
        "  leaq 0(%rbp), %rsp\n"
        "  popq %rbp\n"
        "  ret\n"
        ".seh_endproc\n"
        "frame_fn_end:\n");

/* the functions stepped; the current one's code, and what it calls */
typedef int (*target_fn)(int, int);
static const struct target {
    const char *name;
    target_fn fn;
    const char *end;
    int arg;
} targets[] = {
    { "leaf_fn", leaf_fn, NULL, 1 },
    { "call_fn", call_fn, call_fn_end, 1 },
    { "branch_fn", branch_fn, branch_fn_end, 0 },   /* the jump taken */
    { "branch_fn", branch_fn, branch_fn_end, 1 },   /* and not */
    { "frame_fn", frame_fn, frame_fn_end, 1 },
};
#define NTARGETS (sizeof targets / sizeof *targets)
static const struct target *cur;
static long arena_of_fn[NTARGETS];

static int in_fn(uint64_t pc)
{
    uint64_t lo = (uint64_t)(uintptr_t)cur->fn;
    uint64_t hi = cur->end ? (uint64_t)(uintptr_t)cur->end : lo + 64;
    return (pc >= lo && pc < hi) ||
           (pc >= (uint64_t)(uintptr_t)helper_fn && pc < (uint64_t)(uintptr_t)helper_fn_end);
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

/* Does a walk reach the return address into mid_fn, then mid_fn's own
 * into main, with nothing between the state and them but return
 * addresses that exist: into hookscope's code from the agent's (a thunk,
 * a probe, the wrapper), into the function from what it calls; never a
 * stale value (a return address into a stub that already returned, the
 * relocated call's return address above its own frame)? */
static int chain_ok(const uint64_t *frames, uint32_t n)
{
    uint32_t k = 0;
    while (k < n && frames[k] != want_mid)
        k++;
    if (k + 1 >= n || frames[k + 1] != want_main)
        return 0;
    for (uint32_t i = 1; i < k; i++) {
        uint64_t f = frames[i], below = frames[i - 1];
        int below_agent = below >= agent_lo && below < agent_hi;
        int below_helper = below >= (uint64_t)(uintptr_t)helper_fn && below < (uint64_t)(uintptr_t)helper_fn_end;
        if (f >= agent_lo && f < agent_hi)
            continue;
        if (in_generated(f) ? !below_agent : !in_fn(f) || !below_helper)
            return 0;
    }
    return 1;
}

/* The same state walked by the system's own unwinder (RtlVirtualUnwind over
 * RtlLookupFunctionEntry, a leaf where no entry covers the address), as a
 * walker that runs nothing forward reads the tables (the kernel's, for
 * ETW): its walk must reach mid_fn's and main's return addresses too.
 * Only for states in described code: the few undescribed instructions of a
 * stub are for hookscope's own walker alone. */
static long foreign, foreign_bad, foreign_unread;

static void check_foreign(const CONTEXT *c0, const char *where, uint64_t lo, uint64_t hi)
{
    DWORD64 base = 0;
    if (in_generated(c0->Rip) && !RtlLookupFunctionEntry(c0->Rip, &base, NULL))
        return;
    CONTEXT c = *c0;
    uint64_t frames[64];
    uint32_t n = 0;
    while (n < 64 && c.Rip) {
        frames[n++] = c.Rip;
        if (c.Rip == want_main)
            break;
        PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(c.Rip, &base, NULL);
        if (rf) {
            void *handler_data;
            DWORD64 establisher;
            RtlVirtualUnwind(UNW_FLAG_NHANDLER, base, c.Rip, rf, &c, &handler_data, &establisher, NULL);
        } else {
            if (c.Rsp < lo || c.Rsp + 8 > hi)
                break;
            c.Rip = *(const DWORD64 *)(uintptr_t)c.Rsp;
            c.Rsp += 8;
        }
        if (c.Rsp < lo || c.Rsp >= hi)
            break;
    }
    /* Wine's RtlVirtualUnwind cannot step out of a tail call's epilogue
     * (add rsp; pop ...; jmp rel32), which the agent's C code has: not a
     * question of hookscope's tables */
    if (n == 1 && c0->Rip >= agent_lo && c0->Rip < agent_hi) {
        foreign_unread++;
        return;
    }
    foreign++;
    if (!chain_ok(frames, n) && ++foreign_bad <= 8) {
        printf("foreign bad %s %s(%d) rip %llx (agent+%llx):", cur->name, where, cur->arg, (unsigned long long)c0->Rip, (unsigned long long)(c0->Rip - agent_lo));
        for (uint32_t i = 0; i < n && i < 12; i++)
            printf(" %llx", (unsigned long long)frames[i]);
        printf(" | want %llx then %llx\n", (unsigned long long)want_mid, (unsigned long long)want_main);
    }
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
    int ok = chain_ok(frames, res.n);
    states++;
    if (want_mid)
        check_foreign(c, where, lo, hi);
    if (!ok) {
        if (++bad <= 8) {
            printf("bad %s %s(%d) rip %llx (stop %d):", cur->name, where, cur->arg, (unsigned long long)c->Rip,
                   res.stop);
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
        arena_of_fn[cur - targets]++;
        check_state(c, "arena");
    } else if (pc >= exe_lo && pc < exe_hi) {
        if (in_fn(pc)) {
            in_program++;
            check_state(c, "program");
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

/* Call the current function with every instruction of the call stepped.
 * The first instruction at its entry (patched: a jump to its stub) gives
 * the return address into mid_fn. */
#define STEP_CALL(site)                                                       \
    do {                                                                      \
        want_main = (uint64_t)(uintptr_t)__builtin_return_address(0);        \
        want_mid = 0;                                                         \
        step_tid = GetCurrentThreadId();                                      \
        stepping = 1;                                                         \
        __asm__ volatile("pushfq; orq $0x100, (%%rsp); popfq" ::: "memory");  \
        sink += cur->fn(cur->arg, site);                                      \
        stepping = 0;                                                         \
    } while (0)

/* mid_fn's call sites; the first instruction stepped is in the caller, the
 * next the jump at the function's entry: the handler takes [rsp] there */
__attribute__((noinline)) void mid_fn(int site);

static LONG WINAPI on_first(EXCEPTION_POINTERS *x)
{
    CONTEXT *c = x->ContextRecord;
    if (stepping && GetCurrentThreadId() == step_tid && !want_mid &&
        x->ExceptionRecord->ExceptionCode == EXCEPTION_SINGLE_STEP) {
        if (c->Rip == (uint64_t)(uintptr_t)cur->fn) {
            want_mid = *(uint64_t *)(uintptr_t)c->Rsp;
            in_program++;
            check_state(c, "entry");
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
    /* for each function: a new thread's first call, then every site twice
     * on this thread */
    for (cur = targets; cur < targets + NTARGETS; cur++) {
        HANDLE t = CreateThread(NULL, 0, fresh_thread, NULL, 0, NULL);
        WaitForSingleObject(t, INFINITE);
        CloseHandle(t);
        for (int round = 0; round < 2; round++)
            for (int site = 0; site < 5; site++)
                mid_fn(site);
    }
    cur = targets;   /* the bad lines were printed as they came */
    printf("stubstep states %ld arena %ld agent %ld program %ld bad %ld foreign %ld foreign_bad %ld unread %ld\n",
           states, in_arena, in_agent, in_program, bad, foreign, foreign_bad, foreign_unread);
    for (size_t i = 0; i < NTARGETS; i++)
        printf("fn %s(%d) arena %ld\n", targets[i].name, targets[i].arg, arena_of_fn[i]);
    return 0;
}
