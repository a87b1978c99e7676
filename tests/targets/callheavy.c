/*
 * callheavy.c - a program that is nearly all calls: `callheavy N [DEPTH]`
 * (default 1,000,000 and 4) calls leaf() N times, DEPTH + 3 frames below
 * main (DEPTH + 1 levels of nest, then calls); a call does one addition. Untraced it runs in a few milliseconds; with an entry stack at
 * every call hookscope's probes cost far more than the program itself.
 * Prints the sum; exit 0.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile long long sink;

__attribute__((noinline)) void leaf(int i) { sink += i; }

__attribute__((noinline)) void calls(int n)
{
    for (int i = 0; i < n; i++)
        leaf(i);
}

__attribute__((noinline)) void nest(int depth, int n)
{
    if (depth == 0)
        calls(n);
    else
        nest(depth - 1, n);
    sink += 0;   /* not a tail call: every level stays a frame */
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000000;
    int depth = argc > 2 ? atoi(argv[2]) : 4;
    nest(depth, n);
    printf("sum %lld\n", (long long)sink);
    return 0;
}
