/*
 * bench/spin.c - a CPU-bound target for the sampler's benchmark: T
 * threads (argv[1], default 1) each run the same fixed amount of
 * arithmetic (argv[2] million steps, default 400), through a few levels of
 * calls so that stacks have some depth. Prints the wall time of the work
 * phase ("work_s S"), measured with the performance counter from before
 * the threads start to after the last ends, so that hookscope's own start
 * and report are not in it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long long sink;
static long long steps;

NOINLINE unsigned long long leaf(unsigned long long x, int n)
{
    for (int i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

NOINLINE unsigned long long middle(unsigned long long x, int n)
{
    return leaf(x, n) ^ leaf(x + 1, n);
}

static DWORD WINAPI worker(void *arg)
{
    unsigned long long x = (unsigned long long)(uintptr_t)arg;
    for (long long done = 0; done < steps; done += 20000)
        x = middle(x, 10000);
    sink += x;
    return 0;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    steps = (argc > 2 ? atoll(argv[2]) : 400) * 1000000;
    if (threads < 1 || threads > 64)
        return 2;
    LARGE_INTEGER f, a, b;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&a);
    HANDLE h[64];
    for (int i = 0; i < threads; i++)
        h[i] = CreateThread(NULL, 0, worker, (void *)(uintptr_t)(i + 1), 0, NULL);
    WaitForMultipleObjects((DWORD)threads, h, TRUE, INFINITE);
    QueryPerformanceCounter(&b);
    printf("work_s %.6f\n", (double)(b.QuadPart - a.QuadPart) / (double)f.QuadPart);
    return 0;
}
