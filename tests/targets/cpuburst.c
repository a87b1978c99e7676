/*
 * cpuburst: a known amount of CPU before and after a line on stdin, each
 * measured by the program itself, for comparing the CPU time a profiler
 * reports with the program's own over the window the profiler saw.
 *
 *   cpuburst.exe PRE_MS BURST_MS
 *       computes until its thread has used PRE_MS of CPU, prints
 *       "pid N pre_us X"; waits for a line on stdin; computes BURST_MS of
 *       CPU and prints "burst_us Y"; waits for another line, then exits.
 *       X and Y are its own CPU times (GetThreadTimes) over each stretch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

static volatile unsigned long long sink;

static long long cpu_us(void)
{
    FILETIME c, e, k, u;
    GetThreadTimes(GetCurrentThread(), &c, &e, &k, &u);
    ULARGE_INTEGER a, b;
    a.LowPart = k.dwLowDateTime, a.HighPart = k.dwHighDateTime;
    b.LowPart = u.dwLowDateTime, b.HighPart = u.dwHighDateTime;
    return (long long)((a.QuadPart + b.QuadPart) / 10);
}

__attribute__((noinline)) unsigned long long crunch(unsigned long long x)
{
    for (int i = 0; i < 20000; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

/* Computes until this thread has used `ms` more of CPU; returns what it used. */
__attribute__((noinline)) long long burn(long long ms)
{
    long long t0 = cpu_us(), t;
    unsigned long long x = 1;
    do {
        x = crunch(x);
        t = cpu_us();
    } while (t - t0 < ms * 1000);
    sink = x;
    return t - t0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cpuburst.exe PRE_MS BURST_MS\n");
        return 2;
    }
    char line[64];
    long long pre = burn(atoll(argv[1]));
    printf("pid %lu pre_us %lld\n", GetCurrentProcessId(), pre);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 1;
    long long burst = burn(atoll(argv[2]));
    printf("burst_us %lld\n", burst);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 1;
    return 0;
}
