/* loop: runs forever (for --duration and Ctrl+C tests), calling tick().
 * With the argument "ignore" it ignores Ctrl+C. */
#include <stdio.h>
#include <string.h>
#include <windows.h>

volatile unsigned long ticks;

__attribute__((noinline)) void tick(void)
{
    ticks++;
}

static BOOL WINAPI ignore_ctrl(DWORD type)
{
    return TRUE;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "ignore"))
        SetConsoleCtrlHandler(ignore_ctrl, TRUE);
    printf("looping\n");
    fflush(stdout);
    for (;;) {
        for (int i = 0; i < 1000; i++)
            tick();
        Sleep(1);
    }
}
