/*
 * stackevery.c - functions called a known number of times on known
 * threads, for --stack-every: on the main thread tick 100 times, tock 25
 * times, tack 7 times; then one more thread calls tock 25 times.
 * Prints the sum; exit 0.
 */
#include <stdio.h>
#include <windows.h>

static volatile long sink;

__attribute__((noinline)) void tick(int i) { sink += i; }
__attribute__((noinline)) void tock(int i) { sink += 2 * i; }
__attribute__((noinline)) void tack(int i) { sink += 3 * i; }

__attribute__((noinline)) DWORD WINAPI tock_thread(void *arg)
{
    for (int i = 0; i < 25; i++)
        tock(i);
    return 0;
}

int main(void)
{
    for (int i = 0; i < 100; i++)
        tick(i);
    for (int i = 0; i < 25; i++)
        tock(i);
    for (int i = 0; i < 7; i++)
        tack(i);
    HANDLE t = CreateThread(NULL, 0, tock_thread, NULL, 0, NULL);
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
    printf("sink = %ld\n", sink);
    return 0;
}
