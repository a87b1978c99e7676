/*
 * folded.c - a small call tree with known entry stacks, for
 * entry-stacks.folded:
 *
 *   main -> top (x2) -> mid(2) -> leaf (x2 each)
 *                    -> leaf
 *        -> mid(3) -> leaf (x3)
 *        -> leaf
 *
 * so top 2 calls, mid 3 (2 under top, 1 under main), leaf 10 (4 under
 * top/mid, 2 under top, 3 under mid, 1 under main). Prints the sum; exit 0.
 */
#include <stdio.h>

static volatile int sink;

__attribute__((noinline)) void leaf(int i) { sink += i; }

__attribute__((noinline)) void mid(int n)
{
    for (int i = 0; i < n; i++)
        leaf(i);
}

__attribute__((noinline)) void top(void)
{
    mid(2);
    leaf(100);
}

int main(void)
{
    top();
    top();
    mid(3);
    leaf(7);
    printf("sink = %d\n", sink);
    return 0;
}
