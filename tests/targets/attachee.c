/*
 * attachee: a multi-threaded program to attach to. Two workers call
 * work() in a loop and check every result; the main thread waits for a
 * line on stdin, then reports: whether every result was right, how many
 * calls were made, and whether this exe's code bytes in memory equal the
 * file's (so that a detach must have restored them exactly). With
 * "tls N" it first takes N TLS slots.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

static volatile LONG stop;
static volatile LONG64 calls[2];
static volatile LONG bad;

__attribute__((noinline)) unsigned long long work(unsigned long long x)
{
    return x * 6364136223846793005ull + 1442695040888963407ull;
}

static DWORD WINAPI worker(void *arg)
{
    int id = (int)(uintptr_t)arg;
    unsigned long long x = (unsigned long long)id + 1;
    while (!stop) {
        unsigned long long y = work(x);
        if (y != x * 6364136223846793005ull + 1442695040888963407ull)
            InterlockedIncrement(&bad);
        x = y;
        calls[id]++;
        if ((calls[id] & 0xFFF) == 0)
            Sleep(0);
    }
    return 0;
}

#include "codecheck.h"

int main(int argc, char **argv)
{
    /* "tls N": use N TLS slots first, so that an agent attached later gets
     * an index past the TEB's 64 direct slots (the expansion slots) */
    if (argc > 2 && !strcmp(argv[1], "tls"))
        for (int i = atoi(argv[2]); i > 0; i--)
            TlsAlloc();
    printf("pid %lu code-matches %d\n", GetCurrentProcessId(), code_matches_file());
    fflush(stdout);
    HANDLE t[2];
    for (int i = 0; i < 2; i++)
        t[i] = CreateThread(NULL, 0, worker, (void *)(uintptr_t)i, 0, NULL);
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        line[0] = 0;
    stop = 1;
    WaitForMultipleObjects(2, t, TRUE, INFINITE);
    printf("bad %ld calls %lld code-matches %d\n", bad, (long long)(calls[0] + calls[1]),
           code_matches_file());
    return 0;
}
