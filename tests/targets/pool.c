/*
 * tests/targets/pool.c - threads that mostly do not run, for the suspend
 * sampler's "threads that do not run are not suspended".
 *
 *   pool.exe pool IDLE MSTEPS
 *       IDLE threads wake every 100 ms for a few microseconds of work
 *       (idle_tick) and wait again; one busy thread runs MSTEPS million
 *       steps of arithmetic (busy_work) and prints "busy_s S", its own
 *       wall time from start to end (the performance counter), then the
 *       pool is stopped. Expected: the busy thread's CPU samples; the idle
 *       threads' samples are waits, nearly all without a suspension.
 *
 *   pool.exe bursts N BURST_US PERIOD_MS TOTAL_MS
 *       N threads each compute for BURST_US (burst_work, timed with the
 *       performance counter) then sleep PERIOD_MS, for TOTAL_MS; each
 *       prints "burst TID S", the seconds it spent in bursts (its CPU
 *       time, when not preempted). Expected: CPU samples of each thread
 *       close to S x the rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

static volatile unsigned long long sink;
static HANDLE stop;
static double qpf;

static double now_s(void)
{
    LARGE_INTEGER c;
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / qpf;
}

__attribute__((noinline)) unsigned long long idle_tick(unsigned long long x)
{
    for (int i = 0; i < 2000; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static DWORD WINAPI idle_main(void *arg)
{
    unsigned long long x = (uintptr_t)arg;
    while (WaitForSingleObject(stop, 100) == WAIT_TIMEOUT)
        x = idle_tick(x);
    sink += x;
    return 0;
}

__attribute__((noinline)) unsigned long long busy_work(unsigned long long x, int n)
{
    for (int i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static long long busy_steps;

static DWORD WINAPI busy_main(void *arg)
{
    unsigned long long x = (uintptr_t)arg;
    double t0 = now_s();
    for (long long done = 0; done < busy_steps; done += 10000)
        x = busy_work(x, 10000);
    printf("busy_s %.6f\n", now_s() - t0);
    sink += x;
    return 0;
}

__attribute__((noinline)) unsigned long long burst_work(unsigned long long x, double until)
{
    do {
        for (int i = 0; i < 500; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
    } while (now_s() < until);
    return x;
}

static double burst_s, period_ms, total_s;

static DWORD WINAPI burst_main(void *arg)
{
    unsigned long long x = (uintptr_t)arg;
    double t0 = now_s(), spent = 0;
    while (now_s() - t0 < total_s) {
        double b0 = now_s();
        x = burst_work(x, b0 + burst_s);
        spent += now_s() - b0;
        Sleep((DWORD)period_ms);
    }
    printf("burst %lu %.6f\n", GetCurrentThreadId(), spent);
    sink += x;
    return 0;
}

int main(int argc, char **argv)
{
    LARGE_INTEGER f;
    QueryPerformanceFrequency(&f);
    qpf = (double)f.QuadPart;
    setvbuf(stdout, NULL, _IONBF, 0);
    stop = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (argc == 4 && !strcmp(argv[1], "pool")) {
        int idle = atoi(argv[2]);
        busy_steps = atoll(argv[3]) * 1000000;
        HANDLE h[64];
        for (int i = 0; i < idle && i < 64; i++)
            h[i] = CreateThread(NULL, 0, idle_main, (void *)(uintptr_t)(i + 1), 0, NULL);
        Sleep(50);   /* the pool is up and waiting */
        HANDLE b = CreateThread(NULL, 0, busy_main, (void *)1, 0, NULL);
        WaitForSingleObject(b, INFINITE);
        SetEvent(stop);
        for (int i = 0; i < idle && i < 64; i++)
            WaitForSingleObject(h[i], INFINITE);
        return 0;
    }
    if (argc == 6 && !strcmp(argv[1], "bursts")) {
        int n = atoi(argv[2]);
        burst_s = atof(argv[3]) / 1e6;
        period_ms = atof(argv[4]);
        total_s = atof(argv[5]) / 1e3;
        HANDLE h[64];
        for (int i = 0; i < n && i < 64; i++)
            h[i] = CreateThread(NULL, 0, burst_main, (void *)(uintptr_t)(i + 1), 0, NULL);
        for (int i = 0; i < n && i < 64; i++)
            WaitForSingleObject(h[i], INFINITE);
        return 0;
    }
    fprintf(stderr, "usage: pool.exe pool IDLE MSTEPS | bursts N BURST_US PERIOD_MS TOTAL_MS\n");
    return 2;
}
