/*
 * seh.c - Windows structured exceptions and longjmp through hooked (and,
 * with --time, wrapped) frames.
 *
 * mingw-w64 gcc has no __try/__except. What works on x64 is a frame-based
 * handler attached to a function through the assembler's .seh_handler
 * directive: <excpt.h>'s __try1/__except1 do that with msvcrt's
 * __C_specific_handler and a one-entry scope table whose filter is a C
 * function, but they use fixed labels (.l_startw/.l_endw), so one per
 * file. TRY/EXCEPT below are the same thing with a label per use: the
 * scope covers the code between them, the filter is called with the
 * EXCEPTION_POINTERS (and the establisher frame), and when it returns
 * EXCEPTION_EXECUTE_HANDLER, __C_specific_handler unwinds every frame
 * below (RtlUnwindEx: this is where hookscope's wrapper frames see the
 * exception) and resumes after EXCEPT with this frame's callee-saved
 * registers restored. The compiler knows nothing of that jump, so the
 * guarded part is a single call and what it produced is read from
 * volatile globals afterwards.
 *
 * The same regs_call as in cxxexc.cpp checks the callee-saved registers
 * of the function that handled each exception.
 *
 * Scenarios:
 *   raise      RaiseException in raiser(), handled in its direct caller
 *   nested     raiser() under a frame whose filter declines (CONTINUE_SEARCH),
 *              handled one frame further up
 *   av         an access violation (a write to address 0) in av_leaf(),
 *              handled two frames up (av_mid between)
 *   longjmp    msvcrt longjmp out of lj_a -> lj_b -> lj_c back to setjmp's
 *              frame (mingw's setjmp passes the frame, so msvcrt's longjmp
 *              unwinds: RtlUnwind with STATUS_LONGJUMP)
 *   rawjmp     msvcrt longjmp out of rj_a -> rj_b, to a _setjmp(buf, NULL):
 *              without a frame msvcrt restores the registers and jumps,
 *              no unwind - nothing sees the two frames go
 *   loop       raise 100 more times (counts must add up exactly)
 * Output is deterministic; exit 0 when every check passed, 1 if not.
 */
#include <setjmp.h>
#include <stdio.h>
#include <windows.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define TRY(tag, filter)                                                                 \
    __asm__ volatile(".Ltry_" #tag ":\n\t"                                               \
                     ".seh_handler __C_specific_handler, @except\n\t"                  \
                     ".seh_handlerdata\n\t"                                             \
                     ".long 1\n\t"                                                      \
                     ".rva .Ltry_" #tag ", .Lend_" #tag ", " #filter ", .Lend_" #tag "\n\t" \
                     ".text")
#define EXCEPT(tag) __asm__ volatile("nop\n.Lend_" #tag ":\n\tnop")

#include "regs_call.h"

static const unsigned long long expected_regs[8] = {
    0x1111111111111111ull, 0x2222222222222222ull, 0x3333333333333333ull, 0x4444444444444444ull,
    0x5555555555555555ull, 0x6666666666666666ull, 0x7777777777777777ull, 0x0888888888888888ull,
};
static const char *const reg_names[8] = { "rbx", "rbp", "rsi", "rdi", "r12", "r13", "r14", "r15" };

static int failures;
static int quiet;
static volatile DWORD last_code;     /* set by the filters */
static volatile int handled;         /* set after EXCEPT */
static volatile int declined;        /* filter calls that said CONTINUE_SEARCH */
static volatile int not_reached;

#define CLOBBER_CALLEE_SAVED()                                                                 \
    __asm__ volatile("movq $-1, %%rbx\n\tmovq $-1, %%rsi\n\tmovq $-1, %%rdi\n\t"              \
                     "movq $-1, %%r12\n\tmovq $-1, %%r13\n\tmovq $-1, %%r14\n\tmovq $-1, %%r15" \
                     : : : "rbx", "rsi", "rdi", "r12", "r13", "r14", "r15")

/* filters for __C_specific_handler: (EXCEPTION_POINTERS *, establisher frame) */
LONG filter_execute(EXCEPTION_POINTERS *ep, void *frame)
{
    last_code = ep->ExceptionRecord->ExceptionCode;
    return EXCEPTION_EXECUTE_HANDLER;
}

LONG filter_decline(EXCEPTION_POINTERS *ep, void *frame)
{
    declined++;
    return EXCEPTION_CONTINUE_SEARCH;
}

/* ---- the functions exceptions go through ---------------------------------- */

__attribute__((noinline)) void raiser(int v)
{
    CLOBBER_CALLEE_SAVED();
    if (v >= 0)
        RaiseException(0xE0000000u | (DWORD)v, 0, 0, NULL);
    not_reached++;
}

__attribute__((noinline)) void av_leaf(int v)
{
    CLOBBER_CALLEE_SAVED();
    *(volatile int *)(ULONG_PTR)v = 1;   /* v == 0: access violation */
    not_reached++;
}

__attribute__((noinline)) void av_mid(int v)
{
    CLOBBER_CALLEE_SAVED();
    av_leaf(v);
    not_reached++;
}

static jmp_buf jb;

__attribute__((noinline)) void lj_c(int v)
{
    CLOBBER_CALLEE_SAVED();
    longjmp(jb, v);
}

__attribute__((noinline)) void lj_b(int v)
{
    lj_c(v + 1);
    not_reached++;
}

__attribute__((noinline)) void lj_a(int v)
{
    CLOBBER_CALLEE_SAVED();
    lj_b(v + 1);
    not_reached++;
}

static jmp_buf raw_jb;

__attribute__((noinline)) void rj_b(int v)
{
    CLOBBER_CALLEE_SAVED();
    longjmp(raw_jb, v);
}

__attribute__((noinline)) void rj_a(int v)
{
    rj_b(v * 2);
    not_reached++;
}

/* ---- the handling functions (each is fn for regs_call) ---------------------- */

__attribute__((noinline)) void handle_raise(int v)
{
    handled = 0;
    TRY(raise, filter_execute);
    raiser(v);
    EXCEPT(raise);
    handled = 1;
}

__attribute__((noinline)) void decline_raise(int v)
{
    TRY(decline, filter_decline);
    raiser(v);
    EXCEPT(decline);
    not_reached++;   /* never handled here */
}

__attribute__((noinline)) void handle_nested(int v)
{
    handled = 0;
    TRY(nested, filter_execute);
    decline_raise(v);
    EXCEPT(nested);
    handled = 1;
}

__attribute__((noinline)) void handle_av(int v)
{
    handled = 0;
    TRY(av, filter_execute);
    av_mid(v);
    EXCEPT(av);
    handled = 1;
}

__attribute__((noinline)) void do_longjmp(int v)
{
    volatile int r = setjmp(jb);
    if (r == 0)
        lj_a(v);
    else if (!quiet)
        printf("  setjmp returned %d\n", r);
}

__attribute__((noinline)) void do_raw_longjmp(int v)
{
    volatile int r = _setjmp(raw_jb, NULL);   /* no frame: longjmp will not unwind */
    if (r == 0)
        rj_a(v);
    else if (!quiet)
        printf("  _setjmp returned %d\n", r);
}

__attribute__((noinline)) void loop_raise(int n)
{
    quiet = 1;
    int ok = 0;
    for (int i = 0; i < n; i++) {
        handle_raise(i & 0xFF);
        ok += handled && last_code == (0xE0000000u | (DWORD)(i & 0xFF));
    }
    printf("  handled %d of %d\n", ok, n);
    quiet = 0;
}

static void scenario(const char *name, void (*fn)(int), int arg)
{
    unsigned long long regs[8];
    printf("%s:\n", name);
    last_code = 0;
    regs_call(fn, arg, regs);
    if (fn != loop_raise && fn != do_longjmp && fn != do_raw_longjmp)
        printf("  handled %d, code 0x%08lX\n", handled, (unsigned long)last_code);
    int bad = 0;
    for (int i = 0; i < 8; i++) {
        if (regs[i] != expected_regs[i]) {
            printf("  %s is 0x%016llx, expected 0x%016llx\n", reg_names[i], regs[i], expected_regs[i]);
            bad++;
        }
    }
    failures += bad;
    printf("  registers ok: %s\n", bad ? "no" : "yes");
}

int main(void)
{
    scenario("raise", handle_raise, 0x42);
    scenario("no raise", handle_raise, -1);
    scenario("nested", handle_nested, 0x43);
    scenario("av", handle_av, 0);
    scenario("longjmp", do_longjmp, 5);
    scenario("rawjmp", do_raw_longjmp, 3);
    scenario("loop", loop_raise, 100);
    printf("filters declined: %d\n", declined);
    printf("not reached: %d\n", not_reached);
    failures += not_reached != 1;   /* raiser(-1) returns normally: the one expected */
    printf("%s\n", failures ? "FAILED" : "all ok");
    fflush(stdout);
    return failures ? 1 : 0;
}
