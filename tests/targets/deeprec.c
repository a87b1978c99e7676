/*
 * deeprec.c - deep recursion: `deeprec N` calls depth_sum(N), which
 * recurses N levels (N + 1 calls), on the main thread (default stack,
 * 2 MB with mingw's linker defaults); `deeprec N thread` does the same on
 * a thread with a 512 MB stack (for recursion deeper than a timing shadow
 * stack). Prints the sum 0 + 1 + ... + N. Default N: 10000.
 *
 * Every level is a real call that is not a tail call (the addition after
 * it), and keeps one volatile local, so the compiler can neither loop nor
 * inline it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

__attribute__((noinline)) unsigned long long depth_sum(int n)
{
    volatile int local = n;
    if (n == 0)
        return 0;
    return depth_sum(n - 1) + (unsigned long long)local;
}

static int depth;
static unsigned long long result;

__attribute__((noinline)) DWORD WINAPI recurse_thread(void *arg)
{
    result = depth_sum(depth);
    return 0;
}

int main(int argc, char **argv)
{
    depth = argc > 1 ? atoi(argv[1]) : 10000;
    if (argc > 2 && strcmp(argv[2], "thread") == 0) {
        HANDLE t = CreateThread(NULL, 512u << 20, recurse_thread, NULL,
                                STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
        if (!t)
            return 2;
        WaitForSingleObject(t, INFINITE);
        CloseHandle(t);
    } else {
        result = depth_sum(depth);
    }
    printf("depth_sum(%d) = %llu\n", depth, result);
    return 0;
}
