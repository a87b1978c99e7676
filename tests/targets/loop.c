/* loop: runs forever (for --duration and Ctrl+C tests), calling tick(). */
#include <stdio.h>
#include <windows.h>

volatile unsigned long ticks;

__attribute__((noinline)) void tick(void)
{
    ticks++;
}

int main(void)
{
    printf("looping\n");
    fflush(stdout);
    for (;;) {
        for (int i = 0; i < 1000; i++)
            tick();
        Sleep(1);
    }
}
