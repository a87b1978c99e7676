/*
 * threadchurn: keeps creating short-lived threads, for attaching and
 * detaching while threads come and go. The main thread starts batches of
 * B threads and waits for each batch; every thread calls churn() N
 * times and checks every result.
 *
 *   threadchurn.exe [N [B]]     (default N 2000, B 4)
 *
 * A helper thread waits for a line on stdin (or 600 s: longer than any
 * test may take, on a machine however busy), then the main
 * thread finishes the batch it is in and reports: threads made, calls
 * made, wrong results, and whether this exe's code bytes in memory equal
 * the file's.
 *
 *   pid N code-matches 1                      (at start)
 *   threads T calls C bad 0 code-matches 1    (at the end)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#define MAX_BATCH 64

static volatile LONG stop;
static volatile LONG64 calls;
static volatile LONG bad, threads;
static int per_thread = 2000, batch = 4;

__attribute__((noinline)) unsigned long long churn(unsigned long long x)
{
    return (x + 0x632BE59BD9B4E019ull) * 0x9E3779B97F4A7C15ull;
}

__attribute__((noinline)) static DWORD WINAPI spawned(void *arg)
{
    unsigned long long x = (unsigned long long)(uintptr_t)arg;
    for (int i = 0; i < per_thread; i++) {
        unsigned long long y = churn(x);
        if (y != (x + 0x632BE59BD9B4E019ull) * 0x9E3779B97F4A7C15ull)
            InterlockedIncrement(&bad);
        x = y;
    }
    InterlockedAdd64(&calls, per_thread);
    return 0;
}

static DWORD WINAPI read_stdin(void *arg)
{
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        line[0] = 0;
    stop = 1;
    return 0;
}

#include "codecheck.h"

int main(int argc, char **argv)
{
    if (argc > 1)
        per_thread = atoi(argv[1]);
    if (argc > 2)
        batch = atoi(argv[2]);
    if (batch < 1 || batch > MAX_BATCH)
        batch = 4;
    printf("pid %lu code-matches %d\n", GetCurrentProcessId(), code_matches_file());
    fflush(stdout);
    HANDLE reader = CreateThread(NULL, 0, read_stdin, NULL, 0, NULL);
    DWORD start = GetTickCount();
    unsigned long long seed = 1;
    while (!stop && GetTickCount() - start < 600000) {
        HANDLE t[MAX_BATCH];
        int n = 0;
        for (int i = 0; i < batch; i++) {
            t[n] = CreateThread(NULL, 0, spawned, (void *)(uintptr_t)seed++, 0, NULL);
            if (t[n])
                n++;
            else
                InterlockedIncrement(&bad);
        }
        WaitForMultipleObjects(n, t, TRUE, INFINITE);
        for (int i = 0; i < n; i++)
            CloseHandle(t[i]);
        threads += n;
    }
    printf("threads %ld calls %lld bad %ld code-matches %d\n", threads, (long long)calls, bad,
           code_matches_file());
    fflush(stdout);
    if (stop)
        WaitForSingleObject(reader, INFINITE);
    return 0;
}
