/*
 * napper.c - a program to attach to while its calls are in progress:
 * prints its pid, then for about 4 s calls outer(), which calls napper()
 * 10 times, which sleeps 50 ms; prints "done", exit 0. Whenever an
 * attach ends, a thread is almost surely inside napper (and outer).
 */
#include <stdio.h>
#include <windows.h>

__attribute__((noinline)) void napper(int i) { Sleep(50); }

__attribute__((noinline)) void outer(int n)
{
    for (int i = 0; i < n; i++)
        napper(i);
}

int main(void)
{
    printf("pid %lu\n", GetCurrentProcessId());
    fflush(stdout);
    for (int k = 0; k < 8; k++)
        outer(10);
    printf("done\n");
    return 0;
}
