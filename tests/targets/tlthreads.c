/* tlthreads: threads one after another, each a known tree of calls, for
 * the timeline's threads (a region passed from a thread that ended to the
 * next one).
 *
 *   tlthreads.exe [T [N]]     (default T 6, N 1000)
 *
 * The main thread starts T threads one at a time, each waited for before
 * the next starts; thread k (1..T) calls outer() N * k times, and each
 * outer() calls inner() twice:
 *   main -> (thread k) worker -> outer x N*k -> inner x 2
 * It prints "thread K TID" for each, then "calls C" (outer and inner). */
#include <stdio.h>
#include <windows.h>

static volatile unsigned long sink;
static int per = 1000;

__attribute__((noinline)) unsigned long inner(unsigned long x)
{
    __asm__ volatile("");
    return x * 2654435761u + 1;
}

__attribute__((noinline)) unsigned long outer(unsigned long x)
{
    return inner(inner(x));
}

static DWORD WINAPI worker(void *arg)
{
    int k = (int)(uintptr_t)arg;
    unsigned long acc = (unsigned long)k;
    for (int i = 0; i < per * k; i++)
        acc = outer(acc);
    sink = acc;
    return 0;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 6;
    if (argc > 2)
        per = atoi(argv[2]);
    long long calls = 0;
    for (int k = 1; k <= threads; k++) {
        DWORD tid;
        HANDLE h = CreateThread(NULL, 0, worker, (void *)(uintptr_t)k, 0, &tid);
        WaitForSingleObject(h, INFINITE);
        CloseHandle(h);
        printf("thread %d %lu\n", k, (unsigned long)tid);
        calls += 3LL * per * k;
    }
    printf("calls %lld\n", calls);
    return 0;
}
