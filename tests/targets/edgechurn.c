/*
 * tests/targets/edgechurn.c - threads one after another whose calls of
 * one function come from many call sites: more than a function block
 * keeps inline, so each thread's region fills entries of its edge table,
 * and a region passed from thread to thread is folded table and all.
 *
 *   edgechurn.exe N R SITES
 *       N threads, each waited for before the next starts; each calls
 *       work() R times from each of SITES call sites in sites8() (8) or
 *       sites160() (160). Expected: work() called N * R * SITES times, the
 *       edge from the sites' function N * R * SITES times. Prints
 *           threads N calls C
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

__attribute__((noinline)) long work(long x)
{
    volatile long y = x;
    __asm__ volatile("" : : : "memory");
    return y + 1;
}

/* each statement its own call site */
#define SITE x = work(x);
#define SITES8 SITE SITE SITE SITE SITE SITE SITE SITE
#define SITES40 SITES8 SITES8 SITES8 SITES8 SITES8

__attribute__((noinline)) long sites8(long x)
{
    SITES8
    return x;
}

__attribute__((noinline)) long sites160(long x)
{
    SITES40 SITES40 SITES40 SITES40
    return x;
}

static long rounds;
static int many;

static DWORD WINAPI worker(void *arg)
{
    long x = 0;
    for (long i = 0; i < rounds; i++)
        x = many ? sites160(x) : sites8(x);
    *(long *)arg = x;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (atoi(argv[3]) != 8 && atoi(argv[3]) != 160)) {
        fprintf(stderr, "usage: edgechurn.exe N R 8|160\n");
        return 2;
    }
    int n = atoi(argv[1]);
    rounds = atol(argv[2]);
    many = atoi(argv[3]) == 160;
    long long calls = 0;
    for (int i = 0; i < n; i++) {
        long made = 0;
        HANDLE t = CreateThread(NULL, 0, worker, &made, 0, NULL);
        if (!t)
            return 1;
        WaitForSingleObject(t, INFINITE);
        CloseHandle(t);
        calls += made;
    }
    printf("threads %d calls %lld\n", n, calls);
    return 0;
}
