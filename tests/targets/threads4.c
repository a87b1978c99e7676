/* threads4: 4 threads each call work() 1,000,000 times; exactly 4,000,000. */
#include <stdio.h>
#include <windows.h>

#define CALLS 1000000

__attribute__((noinline)) unsigned long work(unsigned long x)
{
    __asm__ volatile("");
    return x * 2654435761u + 1;
}

static DWORD WINAPI worker(void *arg)
{
    unsigned long acc = (unsigned long)(uintptr_t)arg;
    for (int i = 0; i < CALLS; i++)
        acc = work(acc);
    return (DWORD)acc;
}

int main(void)
{
    HANDLE t[4];
    for (int i = 0; i < 4; i++)
        t[i] = CreateThread(NULL, 0, worker, (void *)(uintptr_t)(i + 1), 0, NULL);
    WaitForMultipleObjects(4, t, TRUE, INFINITE);
    DWORD x = 0;
    for (int i = 0; i < 4; i++) {
        DWORD c;
        GetExitCodeThread(t[i], &c);
        x ^= c;
        CloseHandle(t[i]);
    }
    printf("done %08lx\n", (unsigned long)x);
    return 0;
}
