/*
 * busy.c - threads that only burn CPU and threads that only wait, each
 * measuring its own CPU time and how long it lived.
 *
 *   busy.exe SECONDS [BURNERS [WAITERS]]
 *
 * BURNERS threads (default 1; the main thread is the first of them) call
 * spin() for SECONDS of wall time; WAITERS threads (default 0), started
 * first, wait on an event that is set when every burner is done. Each
 * thread then reads its own CPU time (GetThreadTimes, user + kernel) and
 * the wall time from its start (the performance counter), and the
 * program prints one line per thread, the main thread's first:
 *
 *   burner TID cpu_us C wall_us W
 *   waiter TID cpu_us C wall_us W
 *
 * What a sampler must find: a thread sampled W x rate times (CPU and
 * wait samples), of them C x rate CPU samples. Exit code 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#define MAX_THREADS 64

static volatile unsigned long long sink;
static double seconds;
static LARGE_INTEGER freq;
static HANDLE burnt;

/* about a microsecond of arithmetic */
__attribute__((noinline)) void spin(void)
{
    unsigned long long x = sink;
    for (int i = 0; i < 300; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
}

static struct {
    DWORD tid;
    int waits;
    unsigned long long cpu_us, wall_us;
} th[MAX_THREADS];

static double since(LARGE_INTEGER t0)
{
    LARGE_INTEGER t;
    QueryPerformanceCounter(&t);
    return (double)(t.QuadPart - t0.QuadPart) / (double)freq.QuadPart;
}

/* its CPU time and its life so far */
static void measure(int i, LARGE_INTEGER t0)
{
    FILETIME c, e, k, u;
    GetThreadTimes(GetCurrentThread(), &c, &e, &k, &u);
    th[i].cpu_us = (((unsigned long long)k.dwHighDateTime << 32 | k.dwLowDateTime) +
                    ((unsigned long long)u.dwHighDateTime << 32 | u.dwLowDateTime)) / 10;
    th[i].wall_us = (unsigned long long)(since(t0) * 1e6);
}

__attribute__((noinline)) static DWORD WINAPI burner(void *arg)
{
    int i = (int)(uintptr_t)arg;
    LARGE_INTEGER t0;
    QueryPerformanceCounter(&t0);
    do {
        for (int k = 0; k < 100; k++)
            spin();
    } while (since(t0) < seconds);
    measure(i, t0);
    return 0;
}

__attribute__((noinline)) static DWORD WINAPI waiter(void *arg)
{
    int i = (int)(uintptr_t)arg;
    LARGE_INTEGER t0;
    QueryPerformanceCounter(&t0);
    WaitForSingleObject(burnt, INFINITE);
    measure(i, t0);
    return 0;
}

int main(int argc, char **argv)
{
    seconds = argc > 1 ? atof(argv[1]) : 2.0;
    int nb = argc > 2 ? atoi(argv[2]) : 1, nw = argc > 3 ? atoi(argv[3]) : 0;
    if (nb < 1 || nw < 0 || nb + nw > MAX_THREADS) {
        fprintf(stderr, "usage: busy.exe SECONDS [BURNERS [WAITERS]] (at most %d threads)\n", MAX_THREADS);
        return 2;
    }
    QueryPerformanceFrequency(&freq);
    burnt = CreateEventW(NULL, TRUE, FALSE, NULL);
    HANDLE h[MAX_THREADS];
    th[0].tid = GetCurrentThreadId();
    for (int i = nb; i < nb + nw; i++) {
        th[i].waits = 1;
        h[i] = CreateThread(NULL, 0, waiter, (void *)(uintptr_t)i, 0, &th[i].tid);
    }
    for (int i = 1; i < nb; i++)
        h[i] = CreateThread(NULL, 0, burner, (void *)(uintptr_t)i, 0, &th[i].tid);
    burner(0);
    if (nb > 1)
        WaitForMultipleObjects((DWORD)nb - 1, h + 1, TRUE, INFINITE);
    SetEvent(burnt);
    if (nw)
        WaitForMultipleObjects((DWORD)nw, h + nb, TRUE, INFINITE);
    for (int i = 0; i < nb + nw; i++)
        printf("%s %lu cpu_us %llu wall_us %llu\n", th[i].waits ? "waiter" : "burner", th[i].tid, th[i].cpu_us,
               th[i].wall_us);
    return 0;
}
