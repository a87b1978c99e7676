/* bench/clock.h - nanoseconds from the performance counter, for the
 * benchmark programs. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <windows.h>

static double now_ns(void)
{
    static LARGE_INTEGER f;
    LARGE_INTEGER t;
    if (!f.QuadPart)
        QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&t);
    return (double)t.QuadPart * 1e9 / (double)f.QuadPart;
}

#endif
