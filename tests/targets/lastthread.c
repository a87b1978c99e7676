/*
 * lastthread: main starts a worker and ends itself with ExitThread; the
 * worker calls work() 10 times and ends with ExitThread(42). The process
 * ends when its last thread does, with that thread's code: 42.
 */
#include <stdio.h>
#include <windows.h>

volatile int sink;

__attribute__((noinline)) void work(int i)
{
    sink += i;
}

static DWORD WINAPI worker(void *arg)
{
    Sleep(200);   /* main has ended by now */
    for (int i = 0; i < 10; i++)
        work(i);
    printf("worker ends\n");
    fflush(stdout);
    ExitThread(42);
}

int main(void)
{
    CloseHandle(CreateThread(NULL, 0, worker, NULL, 0, NULL));
    ExitThread(0);
}
