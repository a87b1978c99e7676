/*
 * worksleep: threads that mix pure computing with short sleeps, and a
 * thread that computes and then sleeps: where a sampler must give the CPU
 * to the code that ran and the waits to the code that waited.
 *
 *   worksleep.exe mixed N     N threads, each for 1.5 s: 256 calls of step()
 *                             (pure CPU, about 30 us each), then Sleep(10)
 *                             in nap(); prints "mixed steps S cpu_us C" per
 *                             thread (its own CPU time). 256 steps take
 *                             about 8 ms: longer than the head start a Linux
 *                             kernel gives a thread waking from a sleep (up
 *                             to 6 ms), during which a sampler sharing its
 *                             core cannot run under Wine, which does not
 *                             apply thread priorities (Windows would let the
 *                             sampler's high priority preempt it)
 *   worksleep.exe phases      one thread: compute() for 0.6 s without ever
 *                             blocking, then sleeper() sleeps 0.6 s; prints
 *                             "phases compute_us C sleep_us S"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

static volatile unsigned long long sink;

__attribute__((noinline)) unsigned long long step(unsigned long long x)
{
    for (int i = 0; i < 24000; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

__attribute__((noinline)) void nap(void)
{
    Sleep(10);
}

static ULONGLONG cpu_us(void)
{
    FILETIME c, e, k, u;
    GetThreadTimes(GetCurrentThread(), &c, &e, &k, &u);
    ULARGE_INTEGER a, b;
    a.LowPart = k.dwLowDateTime, a.HighPart = k.dwHighDateTime;
    b.LowPart = u.dwLowDateTime, b.HighPart = u.dwHighDateTime;
    return (a.QuadPart + b.QuadPart) / 10;
}

static DWORD WINAPI mixed_thread(void *arg)
{
    (void)arg;
    DWORD t0 = GetTickCount();
    unsigned long long x = GetCurrentThreadId(), steps = 0;
    while (GetTickCount() - t0 < 1500) {
        for (int i = 0; i < 256; i++, steps++)
            x = step(x);
        nap();
    }
    sink += x;
    printf("mixed steps %llu cpu_us %llu\n", steps, (unsigned long long)cpu_us());
    return 0;
}

__attribute__((noinline)) unsigned long long compute(void)
{
    LARGE_INTEGER f, a, b;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&a);
    unsigned long long x = 7;
    do {
        x = step(x);
        QueryPerformanceCounter(&b);
    } while ((b.QuadPart - a.QuadPart) * 10 < f.QuadPart * 6);
    return x;
}

__attribute__((noinline)) void sleeper(void)
{
    Sleep(600);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "mixed")) {
        int n = atoi(argv[2]);
        HANDLE h[64];
        for (int i = 0; i < n && i < 64; i++)
            h[i] = CreateThread(NULL, 0, mixed_thread, NULL, 0, NULL);
        WaitForMultipleObjects((DWORD)(n < 64 ? n : 64), h, TRUE, INFINITE);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "phases")) {
        ULONGLONG c0 = cpu_us();
        LARGE_INTEGER f, a, b;
        QueryPerformanceFrequency(&f);
        sink += compute();
        ULONGLONG c1 = cpu_us();
        QueryPerformanceCounter(&a);
        sleeper();
        QueryPerformanceCounter(&b);
        printf("phases compute_us %llu sleep_us %llu\n", (unsigned long long)(c1 - c0),
               (unsigned long long)((b.QuadPart - a.QuadPart) * 1000000 / f.QuadPart));
        return 0;
    }
    fprintf(stderr, "usage: worksleep mixed N | phases\n");
    return 2;
}
