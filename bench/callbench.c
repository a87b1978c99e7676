/*
 * bench/callbench.c - nanoseconds per call, for bench/run.py.
 *
 * Two kinds of calls, each to a copy in this exe (hooked when run under
 * `hookscope run`) and to the same code in benchlib.dll (never hooked,
 * the control for machine noise):
 *   chain: x = f(x), a dependent multiply-add (latency-bound, like real code)
 *   empty: f() returns at once, independent calls (throughput-bound: the
 *          worst case for a probe)
 * Each is called through a function pointer; the best of 7 rounds is
 * printed as "name ns_per_call".
 *
 * `callbench paced RATE SECONDS`: exe_leaf called RATE million times a
 * second for SECONDS (in steps of 1,000 calls, each step waiting for its
 * time), for a steady program; prints "paced-calls N" and "paced-seconds S"
 * (S above SECONDS: the calls could not keep the pace).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "bench/clock.h"
#include "bench/leaf.h"

__declspec(dllimport) unsigned long long lib_leaf(unsigned long long x);
__declspec(dllimport) void lib_empty(void);

__attribute__((noinline)) unsigned long long exe_leaf(unsigned long long x)
{
    return BENCH_LEAF_BODY(x);
}

__attribute__((noinline)) void exe_empty(void)
{
    __asm__ volatile("");
}

typedef unsigned long long (*leaf_fn)(unsigned long long);
typedef void (*empty_fn)(void);

static unsigned long long sink = 1;

static double chain(leaf_fn volatile fn, long calls)
{
    unsigned long long x = sink;
    double a = now_ns();
    for (long i = 0; i < calls; i++)
        x = fn(x);
    double b = now_ns();
    sink = x;
    return (b - a) / (double)calls;
}

static double empty(empty_fn volatile fn, long calls)
{
    double a = now_ns();
    for (long i = 0; i < calls; i += 4) {
        fn();
        fn();
        fn();
        fn();
    }
    return (now_ns() - a) / (double)calls;
}

static int paced(double rate, double seconds)
{
    /* (the performance counter read directly: the wait calls no function of the exe, which is hooked) */
    LARGE_INTEGER f, start, t;
    QueryPerformanceFrequency(&f);
    unsigned long long x = sink;
    long calls = 0, total = (long)(rate * 1e6 * seconds);
    double per = (double)f.QuadPart / (rate * 1e6);   /* counter ticks per call */
    QueryPerformanceCounter(&start);
    while (calls < total) {
        for (int i = 0; i < 1000; i++)
            x = exe_leaf(x);
        calls += 1000;
        do
            QueryPerformanceCounter(&t);
        while ((double)(t.QuadPart - start.QuadPart) < (double)calls * per);
    }
    sink = x;
    printf("paced-calls %ld\npaced-seconds %.3f\n", calls, (double)(t.QuadPart - start.QuadPart) / (double)f.QuadPart);
    return (int)(sink & 0);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "paced") && atof(argv[2]) > 0 && atof(argv[3]) > 0)
        return paced(atof(argv[2]), atof(argv[3]));
    long calls = argc > 1 ? atol(argv[1]) : 20000000;
    double best[4] = { 1e9, 1e9, 1e9, 1e9 };
    for (int r = 0; r < 7; r++) {
        double v[4] = { chain(exe_leaf, calls), chain(lib_leaf, calls), empty(exe_empty, calls),
                        empty(lib_empty, calls) };
        for (int i = 0; i < 4; i++)
            if (v[i] < best[i])
                best[i] = v[i];
    }
    printf("chain %.3f\nchain-control %.3f\nempty %.3f\nempty-control %.3f\n", best[0], best[1],
           best[2], best[3]);
    return (int)(sink & 0);
}
