/*
 * spawner: threads that come and go while the process is sampled. The
 * main thread starts 60 workers in waves of 4; each worker burns CPU (in
 * work()), sleeps, and ends; main waits for every wave. The workers of
 * the first 10 waves burn 5 to 40 ms and sleep 5 ms (shorter than the
 * sampler's listing of threads may take to see them: up to 200 ms while
 * the threads it knows do not change), those of the last 5 waves burn
 * 5 ms and sleep 400 ms (four busy threads at once on a loaded machine
 * can wait longer than that for a core, and a thread is sampled only
 * when it runs). Prints, per worker, its id and how long it lived (performance
 * counter, from its start to its end):
 *
 *   worker TID ms M
 *
 * then "threads 60", and exits 0.
 */
#include <stdio.h>
#include <windows.h>

#include "burnms.h"

static volatile unsigned long long sink;
static LARGE_INTEGER freq;
static struct {
    DWORD tid;
    double ms;
} workers[60];

__attribute__((noinline)) void work(int ms)
{
    unsigned long long x = burn_ms(ms, sink, 5000);
    sink += x;
}

static DWORD WINAPI worker(void *arg)
{
    int i = (int)(uintptr_t)arg;
    LARGE_INTEGER t0, t;
    QueryPerformanceCounter(&t0);
    work(i >= 40 ? 5 : 5 + (i / 4 * 7 + i % 4 * 11) % 36);
    Sleep(i >= 40 ? 400 : 5);
    QueryPerformanceCounter(&t);
    workers[i].ms = (double)(t.QuadPart - t0.QuadPart) * 1000.0 / (double)freq.QuadPart;
    return 0;
}

int main(void)
{
    int made = 0;
    QueryPerformanceFrequency(&freq);
    for (int wave = 0; wave < 15; wave++) {
        HANDLE h[4];
        for (int i = 0; i < 4; i++) {
            int k = wave * 4 + i;
            h[i] = CreateThread(NULL, 0, worker, (void *)(uintptr_t)k, 0, &workers[k].tid);
            if (h[i])
                made++;
        }
        WaitForMultipleObjects(4, h, TRUE, INFINITE);
        for (int i = 0; i < 4; i++)
            CloseHandle(h[i]);
    }
    for (int k = 0; k < 60; k++)
        printf("worker %lu ms %.1f\n", workers[k].tid, workers[k].ms);
    printf("threads %d\n", made);
    return 0;
}
