/*
 * tests/targets/shortthreads.c - many short-lived threads, each calling
 * one leaf function: what a thread's start and end cost, and what a
 * program that makes threads all the time pays under a tracer.
 *
 *   shortthreads.exe run N M [B]
 *       N threads, each calling leaf() M times; B threads started at a
 *       time (each batch waited for before the next), or all N at once
 *       when B is 0 or missing. Prints
 *           calls C bad 0
 *           wall_s S
 *       C = N x M (every result checked); S the wall time from the first
 *       CreateThread to the last thread's end (the performance counter).
 *
 *   shortthreads.exe lat N M [DLL...]
 *       loads each DLL first (what a DLL's mere presence costs each
 *       thread: bench/run.py dll-presence); then N threads one after another (each waited for before the next),
 *       each calling leaf() M times; per thread, from the performance
 *       counter: start (CreateThread called -> the thread runs its first
 *       instruction), first (its first leaf() call: the moment a tracer
 *       may give the thread its counters), end (its last instruction ->
 *       the wait on its handle returns in the creating thread), life
 *       (CreateThread called -> the wait returns, less the thread's own
 *       work after its first call). Prints the medians (over the threads
 *       after the first 8: warm) in microseconds, then the 10th
 *       percentiles (which a loaded machine's scheduling blurs less), and
 *       the calls:
 *           start_us A first_us F end_us E life_us L
 *           start_p10_us A first_p10_us F end_p10_us E life_p10_us L
 *           calls C bad 0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#define LEAF(x) ((x) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull)

__attribute__((noinline)) unsigned long long leaf(unsigned long long x)
{
    return LEAF(x);
}

static int per_thread;
static volatile LONG bad;
static volatile LONG64 calls;
static double qpf;

static LONGLONG now(void)
{
    LARGE_INTEGER c;
    QueryPerformanceCounter(&c);
    return c.QuadPart;
}

typedef struct {
    unsigned long long seed;
    LONGLONG begin, first, last;   /* first instruction, after the first call, last instruction */
} thread_arg;

static DWORD WINAPI worker(void *p)
{
    thread_arg *a = p;
    a->begin = now();
    unsigned long long x = a->seed;
    int n = 0;
    if (per_thread > 0) {
        unsigned long long y = leaf(x);
        a->first = now();
        if (y != LEAF(x))
            InterlockedIncrement(&bad);
        x = y;
        n = 1;
    } else {
        a->first = a->begin;
    }
    for (; n < per_thread; n++) {
        unsigned long long y = leaf(x);
        if (y != LEAF(x))
            InterlockedIncrement(&bad);
        x = y;
    }
    InterlockedAdd64(&calls, per_thread);
    a->last = now();
    return 0;
}

static int run(int n, int batch)
{
    if (batch <= 0 || batch > n)
        batch = n;
    thread_arg *args = calloc((size_t)n, sizeof *args);
    HANDLE *t = calloc((size_t)n, sizeof *t);
    if (!args || !t)
        return 1;
    LONGLONG t0 = now();
    for (int i = 0; i < n; i += batch) {
        int m = n - i < batch ? n - i : batch;
        for (int k = 0; k < m; k++) {
            args[i + k].seed = (unsigned long long)(i + k + 1);
            t[i + k] = CreateThread(NULL, 0, worker, &args[i + k], 0, NULL);
            if (!t[i + k])
                InterlockedIncrement(&bad);
        }
        for (int k = 0; k < m; k++)
            if (t[i + k]) {
                WaitForSingleObject(t[i + k], INFINITE);
                CloseHandle(t[i + k]);
            }
    }
    LONGLONG t1 = now();
    printf("calls %lld bad %ld\nwall_s %.4f\n", (long long)calls, bad, (double)(t1 - t0) / qpf);
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

static int latency(int n)
{
    enum { WARM = 8 };
    if (n <= WARM)
        n = WARM + 1;
    double *start = calloc((size_t)n, sizeof *start), *first = calloc((size_t)n, sizeof *first);
    double *end = calloc((size_t)n, sizeof *end), *life = calloc((size_t)n, sizeof *life);
    if (!start || !first || !end || !life)
        return 1;
    int k = 0;
    for (int i = 0; i < n; i++) {
        thread_arg a = { .seed = (unsigned long long)(i + 1) };
        LONGLONG t0 = now();
        HANDLE h = CreateThread(NULL, 0, worker, &a, 0, NULL);
        if (!h) {
            InterlockedIncrement(&bad);
            continue;
        }
        WaitForSingleObject(h, INFINITE);
        LONGLONG t1 = now();
        CloseHandle(h);
        if (i < WARM)
            continue;
        double us = 1e6 / qpf;
        start[k] = (double)(a.begin - t0) * us;
        first[k] = (double)(a.first - a.begin) * us;
        end[k] = (double)(t1 - a.last) * us;
        life[k] = (double)((t1 - t0) - (a.last - a.first)) * us;
        k++;
    }
    printf("start_us %.1f first_us %.1f end_us %.1f life_us %.1f\n", quantile(start, k, 0.5),
           quantile(first, k, 0.5), quantile(end, k, 0.5), quantile(life, k, 0.5));
    printf("start_p10_us %.1f first_p10_us %.1f end_p10_us %.1f life_p10_us %.1f\n", quantile(start, k, 0.1),
           quantile(first, k, 0.1), quantile(end, k, 0.1), quantile(life, k, 0.1));
    printf("calls %lld bad %ld\n", (long long)calls, bad);
    return 0;
}

int main(int argc, char **argv)
{
    LARGE_INTEGER f;
    QueryPerformanceFrequency(&f);
    qpf = (double)f.QuadPart;
    if (argc < 4 || (strcmp(argv[1], "run") && strcmp(argv[1], "lat"))) {
        fprintf(stderr, "usage: shortthreads.exe run N M [B] | lat N M [DLL...]\n");
        return 2;
    }
    int n = atoi(argv[2]);
    per_thread = atoi(argv[3]);
    if (!strcmp(argv[1], "lat"))
        for (int i = 4; i < argc; i++)
            if (!LoadLibraryA(argv[i])) {
                fprintf(stderr, "shortthreads: cannot load %s (error %lu)\n", argv[i], GetLastError());
                return 1;
            }
    int rc = !strcmp(argv[1], "run") ? run(n, argc > 4 ? atoi(argv[4]) : 0) : latency(n);
    fflush(stdout);
    return rc;
}
