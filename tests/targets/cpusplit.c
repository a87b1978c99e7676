/*
 * cpusplit.c - a known CPU split, measured by the program itself.
 *
 * The main thread runs three burners for about S seconds (argv[1],
 * default 3), in rounds of short calls made by round_of_calls(): burn_a 5
 * times, burn_b 3 times, burn_c twice, in an order shuffled anew every
 * round (no fixed cycle), each call arithmetic in its own body (so its
 * samples are its self samples). The calls cost different times: burn_a
 * about 0.06 ms, burn_b 0.3 ms, burn_c 0.75 ms, so that the CPU split
 * (about 11/33/56) is far from the split of the calls (50/30/20): a
 * sampler that attributed by calls, or to the function called before,
 * would be found out. It times every call with the performance counter
 * and, at the end, prints per burner its calls and the microseconds
 * measured:
 *
 *   burn_a calls N us U
 *   burn_b calls N us U
 *   burn_c calls N us U
 *
 * A second thread only waits (an event set at the end) and a third only
 * sleeps (Sleep(5) in a loop), unless argv[2] is "alone"; it prints their
 * ids (0 when not started) and the main thread's, then the main thread's
 * CPU time (GetThreadTimes) and its wall time from the start of main:
 *
 *   main M waiter W sleeper Z
 *   main cpu_us C wall_us T
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
static int work[3];                 /* steps per call of each burner */

/* one round: a 5 times, b 3 times, c twice, in a shuffled order, each call
 * timed */
NOINLINE void round_of_calls(void)
{
    static unsigned long long seed = 0x2545F4914F6CDD1Dull;
    char order[] = "aaaaabbbcc";
    for (int i = 9; i > 0; i--) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((seed >> 33) % (unsigned)(i + 1));
        char c = order[i];
        order[i] = order[j];
        order[j] = c;
    }
    void (*const fn[3])(int) = { burn_a, burn_b, burn_c };
    for (int i = 0; order[i]; i++) {
        int k = order[i] - 'a';
        LARGE_INTEGER a, b;
        QueryPerformanceCounter(&a);
        fn[k](work[k]);
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

static unsigned long long ft_us(FILETIME f)
{
    return ((unsigned long long)f.dwHighDateTime << 32 | f.dwLowDateTime) / 10;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    LARGE_INTEGER start, t0, a, b;
    QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&start);
    done = CreateEventW(NULL, TRUE, FALSE, NULL);
    DWORD wtid = 0, stid = 0;
    if (argc < 3 || strcmp(argv[2], "alone")) {
        CloseHandle(CreateThread(NULL, 0, waiter, NULL, 0, &wtid));
        CloseHandle(CreateThread(NULL, 0, sleeper, NULL, 0, &stid));
    }

    /* calibrate: steps per millisecond of a burner call (the best of a few) */
    int steps = 100000;
    double per = 1;
    for (int i = 0; i < 5; i++) {
        QueryPerformanceCounter(&a);
        burn_a(steps);
        QueryPerformanceCounter(&b);
        double d = (double)(b.QuadPart - a.QuadPart) / (double)freq.QuadPart;
        if (d < per)
            per = d;
        calls[0]++;
        ticks[0] += b.QuadPart - a.QuadPart;
    }
    double per_ms = per > 0 ? steps * 0.001 / per : 1e5;
    static const double ms[3] = { 0.06, 0.3, 0.75 };
    for (int k = 0; k < 3; k++) {
        work[k] = (int)(per_ms * ms[k]);
        if (work[k] < 100)
            work[k] = 100;
    }

    QueryPerformanceCounter(&t0);
    do {
        round_of_calls();
        QueryPerformanceCounter(&b);
    } while ((double)(b.QuadPart - t0.QuadPart) / (double)freq.QuadPart < seconds);
    /* the other threads end with the process: the main thread never waits */
    SetEvent(done);
    stop_sleeper = 1;
    FILETIME c, e, k, u;
    GetThreadTimes(GetCurrentThread(), &c, &e, &k, &u);
    QueryPerformanceCounter(&b);
    for (int i = 0; i < 3; i++)
        printf("burn_%c calls %lld us %lld\n", 'a' + i, calls[i], ticks[i] * 1000000 / freq.QuadPart);
    printf("main %lu waiter %lu sleeper %lu\n", GetCurrentThreadId(), wtid, stid);
    printf("main cpu_us %llu wall_us %lld\n", ft_us(k) + ft_us(u),
           (b.QuadPart - start.QuadPart) * 1000000 / freq.QuadPart);
    return 0;
}
