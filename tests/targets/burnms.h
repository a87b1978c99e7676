/*
 * burnms.h - burn about `ms` milliseconds of CPU in the calling function's
 * own body (always inlined, so samples land in the caller): a dependent
 * multiply-add loop from `x`, `step` rounds between two looks at
 * QueryPerformanceCounter. Returns the loop's value (store it somewhere
 * volatile, or the loop may go).
 */
#ifndef BURNMS_H
#define BURNMS_H

#include <windows.h>

static inline __attribute__((always_inline)) unsigned long long burn_ms(int ms, unsigned long long x, int step)
{
    LARGE_INTEGER f, t0, t;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&t0);
    do {
        for (int i = 0; i < step; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        QueryPerformanceCounter(&t);
    } while ((t.QuadPart - t0.QuadPart) * 1000 < (LONGLONG)ms * f.QuadPart);
    return x;
}

#endif
