/*
 * tailsleep.c - functions that end in tail jumps to code hookscope cannot
 * see into (built -O2, so that the compiler makes them jumps):
 *
 *   sleeper()     `mov ecx, 20; jmp [__imp_Sleep]`: sleeps 20 ms
 *   parent(n)     calls sleeper() n times from a loop, the last call a
 *                 tail jump (main: parent(5), about 100 ms in all)
 *   relay6(a..f)  hands its six arguments (two on the stack) on to
 *                 show6 through a function pointer, by a tail jump
 *   show6(a..f)   prints them
 *
 * The stack below main is filled with a pattern before each relay6 call,
 * so that a stack argument copied too short prints the pattern. Prints
 * "relay6 ..." three times and "slept"; main measures parent(5) with the
 * performance counter and prints "measured parent_us N" to stderr, so that
 * a test can hold hookscope's durations against the program's own on a
 * loaded machine. Exit 0.
 */
#include <stdio.h>
#include <windows.h>

#define NOIPA __attribute__((noinline, noipa))

NOIPA void sleeper(void) { Sleep(20); }

NOIPA void parent(int n)
{
    for (int i = 1; i < n; i++)
        sleeper();
    sleeper();
}

NOIPA void show6(int a, int b, int c, int d, int e, int f)
{
    printf("relay6 %d %d %d %d %d %d\n", a, b, c, d, e, f);
}

typedef void (*fn6)(int, int, int, int, int, int);
static fn6 volatile target6 = show6;

NOIPA void relay6(int a, int b, int c, int d, int e, int f) { target6(a, b, c, d, e, f); }

NOIPA void scribble(void)
{
    volatile unsigned char junk[4096];
    for (unsigned i = 0; i < sizeof junk; i++)
        junk[i] = 0x77;
}

int main(void)
{
    for (int i = 0; i < 3; i++) {
        scribble();
        relay6(1 + i, 2, 3, 4, 50 + i, 600 + i);
    }
    LARGE_INTEGER a, b, f;
    QueryPerformanceCounter(&a);
    parent(5);
    QueryPerformanceCounter(&b);
    QueryPerformanceFrequency(&f);
    printf("slept\n");
    fprintf(stderr, "measured parent_us %lld\n", (b.QuadPart - a.QuadPart) * 1000000 / f.QuadPart);
    return 0;
}
