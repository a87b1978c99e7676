/*
 * callconv.c - a 32-bit (i686) test program: one function of each x86
 * calling convention, each called a known number of times.
 *
 *   cdecl_add      cdecl: arguments on the stack, the caller pops them
 *   stdcall_mix    stdcall: the callee pops its 12 bytes of arguments (ret 12)
 *   fastcall_mul   fastcall: the first two in ECX and EDX, the third on the
 *                  stack, popped by the callee (ret 4)
 *   counter_add    thiscall: the object in ECX, the argument on the stack
 *                  (ret 4), as MSVC calls C++ methods
 *   sum_varargs    cdecl with variable arguments
 *   mul64          returns 64 bits in EDX:EAX
 *   average        returns a double on the x87 stack (ST0)
 *
 * The functions have external linkage and are never inlined: gcc gives a
 * static function of an i686 unit a register convention of its own when it
 * sees every call.
 *
 * Calls (exact): main 1, cdecl_add 10, stdcall_mix 20, fastcall_mul 30,
 * counter_add 40, sum_varargs 5, mul64 3, average 2
 *
 * Edges (exact): main->cdecl_add 10, main->stdcall_mix 20,
 * main->fastcall_mul 30, main->counter_add 40, main->sum_varargs 5,
 * main->mul64 3, main->average 2
 *
 * Output (exact, checked by tests/test_wow64.py), exit code 0, no args:
 *   cdecl_add=145
 *   stdcall_mix=2670
 *   fastcall_mul=-4785
 *   counter_add=820 calls=40
 *   sum_varargs=35
 *   mul64=12345678987654321,24691357975308642,37037036962962963
 *   average=2.500,7.250
 *   pointer=4 bytes
 */
#include <stdarg.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline, noclone))

struct counter {
    int total;
    int calls;
};

NOINLINE int cdecl_add(int a, int b)
{
    return a + b;
}

NOINLINE int __attribute__((stdcall)) stdcall_mix(int a, int b, int c)
{
    return a * b + c;
}

NOINLINE int __attribute__((fastcall)) fastcall_mul(int a, int b, int c)
{
    return a * b - c;
}

NOINLINE void __attribute__((thiscall)) counter_add(struct counter *self, int n)
{
    self->total += n;
    self->calls++;
}

NOINLINE int sum_varargs(int n, ...)
{
    va_list ap;
    int s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s += va_arg(ap, int);
    va_end(ap);
    return s;
}

NOINLINE unsigned long long mul64(unsigned long long a, unsigned k)
{
    return a * k;
}

NOINLINE double average(int a, int b, int c, int d)
{
    return (a + b + c + d) / 4.0;
}

int main(void)
{
    int s = 0;
    for (int i = 0; i < 10; i++)
        s += cdecl_add(i, 10);
    printf("cdecl_add=%d\n", s);

    s = 0;
    for (int i = 0; i < 20; i++)
        s += stdcall_mix(i, i, 10);
    printf("stdcall_mix=%d\n", s);

    s = 0;
    for (int i = 0; i < 30; i++)
        s += fastcall_mul(i, -1, 10 * i);
    printf("fastcall_mul=%d\n", s);

    struct counter c = {0, 0};
    for (int i = 1; i <= 40; i++)
        counter_add(&c, i);
    printf("counter_add=%d calls=%d\n", c.total, c.calls);

    s = 0;
    for (int i = 1; i <= 5; i++)
        s += sum_varargs(i, 1, 2, 3, 4, 5);
    printf("sum_varargs=%d\n", s);

    unsigned long long m[3];
    for (unsigned k = 1; k <= 3; k++)
        m[k - 1] = mul64(12345678987654321ULL, k);
    printf("mul64=%llu,%llu,%llu\n", m[0], m[1], m[2]);

    printf("average=%.3f,%.3f\n", average(1, 2, 3, 4), average(4, 6, 8, 11));
    printf("pointer=%u bytes\n", (unsigned)sizeof(void *));
    return 0;
}
