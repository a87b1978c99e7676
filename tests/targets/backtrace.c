/*
 * backtrace.c - a program that captures its own stack
 * (CaptureStackBackTrace, i.e. ntdll!RtlCaptureStackBackTrace) from
 * inside nested and recursive calls and prints each frame as an offset
 * in its exe ("other" elsewhere), with and without frames skipped, and
 * whether the hash is the sum of the frames. Under `hookscope run --time`
 * it must print what it prints untraced (agent/backtrace.c): no wrapper
 * frame, no return thunk. Built for x86-64 (build/tests) and i686
 * (build/tests32, with frame pointers: the ebp chain is what the capture
 * walks there).
 *
 * Output: 5 lines; exit code 0.
 */
#include <stdio.h>
#include <windows.h>

#define NOINLINE __attribute__((noinline))

static HMODULE self;

static NOINLINE void show(const char *who, ULONG skip)
{
    void *f[12];
    ULONG hash = 0, sum = 0;
    USHORT n = CaptureStackBackTrace(skip, 12, f, &hash);
    printf("%s:", who);
    for (USHORT i = 0; i < n; i++) {
        HMODULE m = NULL;
        sum += (ULONG)(ULONG_PTR)f[i];
        if (i >= 6)
            continue;       /* (below main: the C runtime's start, then the system's) */
        GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (const char *)f[i], &m);
        if (m == self)
            printf(" +%lx", (unsigned long)((char *)f[i] - (char *)self));
        else
            printf(" other");
    }
    printf(" | %s\n", hash == sum ? "hash ok" : "hash wrong");
}

static NOINLINE void inner(void)
{
    show("inner", 0);
}

static NOINLINE void middle(void)
{
    inner();
    show("middle", 0);
    show("middle skip 1", 1);
}

static NOINLINE int recurse(int n)
{
    if (n == 0) {
        show("recurse", 0);
        return 0;
    }
    return recurse(n - 1) + 1;
}

int main(void)
{
    self = GetModuleHandleA(NULL);
    middle();
    printf("depth %d\n", recurse(3));
    return 0;
}
