/*
 * cpusplit.c - a known CPU split, measured by the program itself.
 *
 * The main thread runs three burners for about S seconds (argv[1],
 * default 3), in rounds of short calls made by round(): burn_a 5 times,
 * burn_b 3 times, burn_c twice, each call about 0.3 ms of arithmetic in
 * its own body (so its samples are its self samples), so that their CPU
 * shares are about 50/30/20. It times every call with the performance
 * counter and, at the end, prints per burner its calls and the
 * microseconds measured:
 *
 *   burn_a calls N us U
 *   burn_b calls N us U
 *   burn_c calls N us U
 *
 * A second thread only waits (an event set at the end) and a third only
 * sleeps (Sleep(5) in a loop), unless argv[2] is "alone"; it prints their
 * ids (0 when not started) and the main thread's:
 *
 *   main M waiter W sleeper Z
 *
 * Exit code 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long long sink;
static volatile LONG stop_sleeper;

/* each burner: `work` steps of a dependent multiply-add */
NOINLINE void burn_a(int work)
{
    unsigned long long x = sink;
    for (int i = 0; i < work; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
}

NOINLINE void burn_b(int work)
{
    unsigned long long x = sink ^ 1;
    for (int i = 0; i < work; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
}

NOINLINE void burn_c(int work)
{
    unsigned long long x = sink ^ 2;
    for (int i = 0; i < work; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
}

static LARGE_INTEGER freq;
static long long calls[3], ticks[3];

/* one round: a 5 times, b 3 times, c twice, each call timed */
NOINLINE void round_of_calls(int work)
{
    static const char order[] = "aaaaabbbcc";
    void (*const fn[3])(int) = { burn_a, burn_b, burn_c };
    for (int i = 0; order[i]; i++) {
        int k = order[i] - 'a';
        LARGE_INTEGER a, b;
        QueryPerformanceCounter(&a);
        fn[k](work);
        QueryPerformanceCounter(&b);
        calls[k]++;
        ticks[k] += b.QuadPart - a.QuadPart;
    }
}

static HANDLE done;

static DWORD WINAPI waiter(void *arg)
{
    (void)arg;
    WaitForSingleObject(done, INFINITE);
    return 0;
}

static DWORD WINAPI sleeper(void *arg)
{
    (void)arg;
    while (!stop_sleeper)
        Sleep(5);
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    LARGE_INTEGER t0, a, b;
    QueryPerformanceFrequency(&freq);
    done = CreateEventW(NULL, TRUE, FALSE, NULL);
    DWORD wtid = 0, stid = 0;
    if (argc < 3 || strcmp(argv[2], "alone")) {
        CloseHandle(CreateThread(NULL, 0, waiter, NULL, 0, &wtid));
        CloseHandle(CreateThread(NULL, 0, sleeper, NULL, 0, &stid));
    }

    /* calibrate: steps for about 0.3 ms per burner call (the best of a few) */
    int work = 100000;
    double per = 1;
    for (int i = 0; i < 5; i++) {
        QueryPerformanceCounter(&a);
        burn_a(work);
        QueryPerformanceCounter(&b);
        double d = (double)(b.QuadPart - a.QuadPart) / (double)freq.QuadPart;
        if (d < per)
            per = d;
        calls[0]++;
        ticks[0] += b.QuadPart - a.QuadPart;
    }
    if (per > 0)
        work = (int)(work * 0.0003 / per);
    if (work < 1000)
        work = 1000;

    QueryPerformanceCounter(&t0);
    do {
        round_of_calls(work);
        QueryPerformanceCounter(&b);
    } while ((double)(b.QuadPart - t0.QuadPart) / (double)freq.QuadPart < seconds);
    /* the other threads end with the process: the main thread never waits */
    SetEvent(done);
    stop_sleeper = 1;
    for (int k = 0; k < 3; k++)
        printf("burn_%c calls %lld us %lld\n", 'a' + k, calls[k], ticks[k] * 1000000 / freq.QuadPart);
    printf("main %lu waiter %lu sleeper %lu\n", GetCurrentThreadId(), wtid, stid);
    return 0;
}
