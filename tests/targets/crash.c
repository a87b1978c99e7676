/* crash: calls f() 1000 times, then writes through a null pointer. */
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) void f(int i)
{
    sink += i;
}

int main(void)
{
    for (int i = 0; i < 1000; i++)
        f(i);
    printf("about to crash\n");
    fflush(stdout);
    *(volatile int *)0 = 1;
    return 0;
}
