/*
 * bench/threadstart.c - a thread's start and end, untraced, with the DLLs
 * named on the command line loaded first (bench/run.py dll-presence).
 *
 *   threadstart.exe N [DLL...]
 *       loads each DLL, then starts N threads one after another (each
 *       waited for before the next), each doing nothing but note the
 *       performance counter; per thread: start (CreateThread called -> its
 *       first instruction) and end (its last instruction -> the wait on
 *       its handle returns). Prints the medians and the 10th percentiles
 *       (over the threads after the first 8: warm) in microseconds:
 *           start_us A end_us E start_p10_us A10 end_p10_us E10
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

static LONGLONG now(void)
{
    LARGE_INTEGER c;
    QueryPerformanceCounter(&c);
    return c.QuadPart;
}

typedef struct {
    LONGLONG begin, last;
} thread_times;

static DWORD WINAPI noting_thread(void *p)
{
    thread_times *t = p;
    t->begin = now();
    t->last = now();
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The value a fraction q of the way up the sorted v[0..n). */
static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n ? v[(int)(q * n)] : 0;
}

int main(int argc, char **argv)
{
    enum { WARM = 8 };
    if (argc < 2 || atoi(argv[1]) <= WARM) {
        fprintf(stderr, "usage: threadstart.exe N [DLL...] (N > %d)\n", WARM);
        return 2;
    }
    int n = atoi(argv[1]);
    for (int i = 2; i < argc; i++)
        if (!LoadLibraryA(argv[i])) {
            fprintf(stderr, "threadstart: cannot load %s (error %lu)\n", argv[i], GetLastError());
            return 1;
        }
    LARGE_INTEGER f;
    QueryPerformanceFrequency(&f);
    double us = 1e6 / (double)f.QuadPart;
    double *start = calloc((size_t)n, sizeof *start), *end = calloc((size_t)n, sizeof *end);
    if (!start || !end)
        return 1;
    int k = 0;
    for (int i = 0; i < n; i++) {
        thread_times t = { 0, 0 };
        LONGLONG t0 = now();
        HANDLE h = CreateThread(NULL, 0, noting_thread, &t, 0, NULL);
        if (!h) {
            fprintf(stderr, "threadstart: CreateThread failed (error %lu)\n", GetLastError());
            return 1;
        }
        WaitForSingleObject(h, INFINITE);
        LONGLONG t1 = now();
        CloseHandle(h);
        if (i < WARM)
            continue;
        start[k] = (double)(t.begin - t0) * us;
        end[k] = (double)(t1 - t.last) * us;
        k++;
    }
    printf("start_us %.1f end_us %.1f ", quantile(start, k, 0.5), quantile(end, k, 0.5));
    printf("start_p10_us %.1f end_p10_us %.1f\n", quantile(start, k, 0.1), quantile(end, k, 0.1));
    return 0;
}
