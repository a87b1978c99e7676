/*
 * tailcall.c - a tail call: tail() ends with a jump to callee() (built
 * with -O2, which turns `return callee(x + 1);` into a jmp), so callee's
 * return address is in main, the caller of tail. main calls tail 3 times
 * and callee once directly. Prints the sum; exit 0.
 */
#include <stdio.h>

__attribute__((noinline)) int callee(int x) { return x * 3; }

__attribute__((noinline)) int tail(int x) { return callee(x + 1); }

int main(void)
{
    int s = 0;
    for (int i = 0; i < 3; i++)
        s += tail(i);
    s += callee(10);
    printf("sum = %d\n", s);
    return 0;
}
