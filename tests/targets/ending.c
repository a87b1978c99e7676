/*
 * ending: ends in the way its argument says, after calling work() 10
 * times, for telling a crash from an exit by how the process ended.
 *
 *   ending.exe return N        main returns N
 *   ending.exe exit N          ExitProcess(N)
 *   ending.exe terminate N     TerminateProcess(GetCurrentProcess(), N)
 *   ending.exe thread-exit N   another thread calls ExitProcess(N) while
 *                              main waits
 *   ending.exe av              writes through a null pointer
 *   ending.exe div0            integer division by zero
 *   ending.exe overflow        unbounded recursion (stack overflow)
 *   ending.exe raise           RaiseException(0xE0000001), not handled
 *   ending.exe fastfail        __fastfail(7)
 *   ending.exe abort           abort()
 *   ending.exe thread-av       another thread writes through a null pointer
 *   ending.exe filter-exit     an unhandled-exception filter of its own
 *                              says "execute handler" (the process ends
 *                              with the exception's code)
 *   ending.exe filter-fix      an access violation whose filter repairs
 *                              the pointer and continues; then returns 0
 *
 * Prints "ending KIND" first. N may be negative (-1073741819 is
 * 0xC0000005 as an int).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

volatile int sink;
static volatile int *volatile target_ptr;
static int fixed_cell;

__attribute__((noinline)) void work(int i)
{
    sink += i;
}

static volatile int bottomless = 1;

__attribute__((noinline)) int recurse(int n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    if (!bottomless)
        return 0;
    return recurse(n + 1) + pad[0];
}

static LONG WINAPI filter_exit(EXCEPTION_POINTERS *ep)
{
    return EXCEPTION_EXECUTE_HANDLER;
}

static LONG WINAPI filter_fix(EXCEPTION_POINTERS *ep)
{
    /* the faulting instruction is a store through rax: point rax at a
     * real cell and run it again */
    if (ep->ExceptionRecord->ExceptionCode == EXCEPTION_ACCESS_VIOLATION) {
        ep->ContextRecord->Rax = (DWORD64)(uintptr_t)&fixed_cell;
        return EXCEPTION_CONTINUE_EXECUTION;
    }
    return EXCEPTION_CONTINUE_SEARCH;
}

static DWORD WINAPI exiter(void *arg)
{
    ExitProcess((UINT)(uintptr_t)arg);
}

static DWORD WINAPI crasher(void *arg)
{
    *target_ptr = 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *kind = argc > 1 ? argv[1] : "return";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    for (int i = 0; i < 10; i++)
        work(i);
    printf("ending %s\n", kind);
    fflush(stdout);
    if (!strcmp(kind, "return"))
        return n;
    if (!strcmp(kind, "exit"))
        ExitProcess((UINT)n);
    if (!strcmp(kind, "terminate"))
        TerminateProcess(GetCurrentProcess(), (UINT)n);
    if (!strcmp(kind, "thread-exit")) {
        CreateThread(NULL, 0, exiter, (void *)(uintptr_t)(UINT)n, 0, NULL);
        Sleep(INFINITE);
    }
    if (!strcmp(kind, "av"))
        *target_ptr = 1;
    if (!strcmp(kind, "div0")) {
        volatile int zero = 0;
        sink = 10 / zero;
    }
    if (!strcmp(kind, "overflow"))
        sink = recurse(0);
    if (!strcmp(kind, "raise"))
        RaiseException(0xE0000001, 0, 0, NULL);
    if (!strcmp(kind, "fastfail"))
        __asm__ volatile("movl $7, %%ecx\n\tint $0x29" : : : "rcx", "memory");   /* __fastfail(7) */
    if (!strcmp(kind, "abort"))
        abort();
    if (!strcmp(kind, "thread-av")) {
        CreateThread(NULL, 0, crasher, NULL, 0, NULL);
        Sleep(INFINITE);
    }
    if (!strcmp(kind, "filter-exit")) {
        SetUnhandledExceptionFilter(filter_exit);
        *target_ptr = 1;
    }
    if (!strcmp(kind, "filter-fix")) {
        SetUnhandledExceptionFilter(filter_fix);
        __asm__ volatile("movl $7, (%%rax)" : : "a"(target_ptr) : "memory");
        printf("fixed %d\n", fixed_cell);
        return 0;
    }
    return 99;   /* an unknown kind */
}
