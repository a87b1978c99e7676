/*
 * sleeper.c - known durations: caller() calls sleeper() 5 times, and
 * sleeper() sleeps 20 ms; caller() itself does next to nothing. So
 * sleeper's inclusive time is about 100 ms, caller's inclusive time at
 * least that, and caller's self time a tiny part of it. Exit 0.
 */
#include <stdio.h>
#include <windows.h>

__attribute__((noinline)) void sleeper(int i) { Sleep(20); }

__attribute__((noinline)) int caller(void)
{
    int n = 0;
    for (int i = 0; i < 5; i++, n++)
        sleeper(i);
    return n;
}

int main(void)
{
    printf("slept %d times\n", caller());
    return 0;
}
