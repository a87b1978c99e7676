/*
 * bench/stackbench.c - nanoseconds per call of a function whose entry
 * stack is deep: exe_empty_deep() is called in a loop from 14 nested
 * functions below main, so its stack at entry has more than 16 frames
 * (with the CRT's and the system's) and a --stacks=16 capture always walks
 * the full 16. The same loop calls lib_empty (benchlib.dll, never hooked)
 * as the control. Prints "deep ns_per_call" and "deep-control ...", the
 * best of 7 rounds; argv[1]: calls per round (default 200000). Also
 * "rdtsc2 ns": what two rdtsc instructions cost here (a timed call reads
 * the time stamp counter twice), for reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#include "bench/clock.h"

__declspec(dllimport) void lib_empty(void);

__attribute__((noinline)) void exe_empty_deep(void) { __asm__ volatile(""); }

typedef void (*empty_fn)(void);

static long calls;
static double result;

__attribute__((noinline)) void bottom(empty_fn volatile fn)
{
    double a = now_ns();
    for (long i = 0; i < calls; i++)
        fn();
    result = (now_ns() - a) / (double)calls;
}

#define NEST(name, next)                                            \
    __attribute__((noinline)) void name(empty_fn fn)              \
    {                                                              \
        next(fn);                                                  \
        __asm__ volatile("");                                      \
    }
NEST(n1, bottom)
NEST(n2, n1)
NEST(n3, n2)
NEST(n4, n3)
NEST(n5, n4)
NEST(n6, n5)
NEST(n7, n6)
NEST(n8, n7)
NEST(n9, n8)
NEST(n10, n9)
NEST(n11, n10)
NEST(n12, n11)
NEST(n13, n12)

static inline unsigned long long rdtsc(void)
{
    unsigned lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (unsigned long long)hi << 32 | lo;
}

static double rdtsc_pair(void)
{
    unsigned long long s = 0;
    double a = now_ns();
    for (int i = 0; i < 1000000; i++) {
        s += rdtsc();
        s ^= rdtsc();
    }
    double ns = (now_ns() - a) / 1e6;
    return ns + (double)(s & 0);
}

int main(int argc, char **argv)
{
    calls = argc > 1 ? atol(argv[1]) : 200000;
    double best[3] = { 1e9, 1e9, 1e9 };
    for (int r = 0; r < 7; r++) {
        double p = rdtsc_pair();
        if (p < best[2])
            best[2] = p;
        n13(exe_empty_deep);
        if (result < best[0])
            best[0] = result;
        n13(lib_empty);
        if (result < best[1])
            best[1] = result;
    }
    printf("deep %.3f\ndeep-control %.3f\nrdtsc2 %.3f\n", best[0], best[1], best[2]);
    return 0;
}
