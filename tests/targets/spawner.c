/*
 * spawner: threads that come and go while the process is sampled. The
 * main thread starts 60 workers in waves of 4; each worker burns CPU for
 * 5 to 40 ms (in work()), sleeps 5 ms, and ends; main waits for every
 * wave. Prints "threads 60" and exits 0.
 */
#include <stdio.h>
#include <windows.h>

#include "burnms.h"

static volatile unsigned long long sink;

__attribute__((noinline)) void work(int ms)
{
    unsigned long long x = burn_ms(ms, sink, 5000);
    sink += x;
}

static DWORD WINAPI worker(void *arg)
{
    work(5 + (int)(uintptr_t)arg % 36);
    Sleep(5);
    return 0;
}

int main(void)
{
    int made = 0;
    for (int wave = 0; wave < 15; wave++) {
        HANDLE h[4];
        for (int i = 0; i < 4; i++) {
            h[i] = CreateThread(NULL, 0, worker, (void *)(uintptr_t)(wave * 7 + i * 11), 0, NULL);
            if (h[i])
                made++;
        }
        WaitForMultipleObjects(4, h, TRUE, INFINITE);
        for (int i = 0; i < 4; i++)
            CloseHandle(h[i]);
    }
    printf("threads %d\n", made);
    return 0;
}
