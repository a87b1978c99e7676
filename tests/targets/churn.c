/* churn: N threads one after another (each joined before the next
 * starts), each calling work() M times, optionally with several alive at
 * once (K). Prints the number of calls made. */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

static long calls_per_thread;

__attribute__((noinline)) long work(long x)
{
    volatile long y = x;
    __asm__ volatile("" : : : "memory");
    return y + 1;
}

static DWORD WINAPI worker(void *arg)
{
    long x = 0;
    for (long i = 0; i < calls_per_thread; i++)
        x = work(x);
    return x == calls_per_thread ? 0 : 1;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 600;
    calls_per_thread = argc > 2 ? atol(argv[2]) : 1000;
    int k = argc > 3 ? atoi(argv[3]) : 1;
    long long made = 0;
    int bad = 0;
    for (int i = 0; i < n; i += k) {
        HANDLE t[64];
        int m = 0;
        for (; m < k && i + m < n; m++)
            t[m] = CreateThread(NULL, 0, worker, NULL, 0, NULL);
        WaitForMultipleObjects((DWORD)m, t, TRUE, INFINITE);
        for (int j = 0; j < m; j++) {
            DWORD c;
            GetExitCodeThread(t[j], &c);
            bad += c != 0;
            CloseHandle(t[j]);
            made += calls_per_thread;
        }
    }
    printf("threads %d calls %lld bad %d\n", n, made, bad);
    return 0;
}
