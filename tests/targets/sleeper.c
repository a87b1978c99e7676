/*
 * sleeper.c - known durations: caller() calls sleeper() 5 times, and
 * sleeper() sleeps 20 ms; caller() itself does next to nothing. So
 * sleeper's inclusive time is about 100 ms, caller's inclusive time at
 * least that, and caller's self time a tiny part of it. sleeper()
 * measures its own calls with the performance counter; main prints their
 * total and shortest to stderr ("measured total_us N min_us M"), so that a
 * test can hold hookscope's durations against the program's own. Exit 0.
 */
#include <stdio.h>
#include <windows.h>

static LONGLONG total_ticks, min_ticks = -1;

__attribute__((noinline)) void sleeper(int i)
{
    LARGE_INTEGER a, b;
    QueryPerformanceCounter(&a);
    Sleep(20);
    QueryPerformanceCounter(&b);
    LONGLONG d = b.QuadPart - a.QuadPart;
    total_ticks += d;
    if (min_ticks < 0 || d < min_ticks)
        min_ticks = d;
}

__attribute__((noinline)) int caller(void)
{
    int n = 0;
    for (int i = 0; i < 5; i++, n++)
        sleeper(i);
    return n;
}

int main(void)
{
    printf("slept %d times\n", caller());
    LARGE_INTEGER f;
    QueryPerformanceFrequency(&f);
    fprintf(stderr, "measured total_us %lld min_us %lld\n", total_ticks * 1000000 / f.QuadPart,
            min_ticks * 1000000 / f.QuadPart);
    return 0;
}
