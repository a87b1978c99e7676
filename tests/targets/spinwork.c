/*
 * spinwork.c - a workload of known cost per call, measured by the program
 * itself: spin() runs a fixed number of dependent multiply-adds and times
 * them with QueryPerformanceCounter; step() calls spin() once; main calls
 * step() N times (default 2000) from 12 nested frames, so that an entry
 * stack of spin or step is deep.
 *
 * Prints "spin = X" on stdout; on stderr "measured min_ns A total_ns B"
 * (spin's loop: the shortest call and the sum of all). Exit 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#define ITERS 6000

static LARGE_INTEGER freq;
static double min_ns = 1e30, total_ns;
static volatile unsigned long long result;

__attribute__((noinline)) unsigned long long spin(unsigned n)
{
    LARGE_INTEGER a, b;
    QueryPerformanceCounter(&a);
    unsigned long long x = n;
    for (unsigned i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    QueryPerformanceCounter(&b);
    double ns = (double)(b.QuadPart - a.QuadPart) * 1e9 / (double)freq.QuadPart;
    if (ns < min_ns)
        min_ns = ns;
    total_ns += ns;
    return x;
}

__attribute__((noinline)) void step(void) { result += spin(ITERS); }

static int calls;

__attribute__((noinline)) void run(void)
{
    for (int i = 0; i < calls; i++)
        step();
}

#define NEST(name, next)                     \
    __attribute__((noinline)) void name(void) \
    {                                         \
        next();                               \
        __asm__ volatile("");                 \
    }
NEST(n1, run)
NEST(n2, n1)
NEST(n3, n2)
NEST(n4, n3)
NEST(n5, n4)
NEST(n6, n5)
NEST(n7, n6)
NEST(n8, n7)
NEST(n9, n8)
NEST(n10, n9)
NEST(n11, n10)
NEST(n12, n11)

int main(int argc, char **argv)
{
    calls = argc > 1 ? atoi(argv[1]) : 2000;
    QueryPerformanceFrequency(&freq);
    n12();
    printf("spin = %llu\n", result);
    fprintf(stderr, "measured min_ns %.0f total_ns %.0f\n", min_ns, total_ns);
    return 0;
}
