/*
 * leafcall.c - a leaf without a frame pointer called from a function with
 * one, the case the ebp chain gets wrong: sampled in the leaf, [ebp+4] is
 * the framed function's return address, so a walker that trusts the
 * chain names the framed function's caller as the leaf's and leaves the
 * framed function out. Only the leaf's frame data (gcc's `.eh_frame`)
 * says where its return address is.
 *
 * main calls framed() (which keeps a frame pointer) for about S seconds
 * (argv[1], default 2); framed calls leaf() (i686 gcc -O1: no frame
 * pointer; it saves registers and keeps 8 bytes of locals) in a loop.
 * Every sample in leaf has the stack main -> framed -> leaf. With a
 * second argument "pid" it first prints its process id (to attach to).
 *
 * Output (exact, for any S, without "pid"):
 *   leafcall done
 * Exit code 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long long sink;

NOINLINE void leaf(int work)
{
    unsigned long long x = sink;
    for (int i = 0; i < work; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
}

NOINLINE __attribute__((optimize("no-omit-frame-pointer"))) void framed(DWORD ms)
{
    DWORD t0 = GetTickCount();
    while (GetTickCount() - t0 < ms)
        leaf(20000);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    if (argc > 2 && !strcmp(argv[2], "pid")) {
        printf("pid %lu\n", GetCurrentProcessId());
        fflush(stdout);
    }
    framed((DWORD)(seconds * 1000));
    printf("leafcall done\n");
    return 0;
}
