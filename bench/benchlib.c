/* bench/benchlib.c - the unhooked copy of the leaf function, in a DLL that
 * hookscope is not told to hook. */
#include "bench/leaf.h"

__declspec(dllexport) __attribute__((noinline)) unsigned long long lib_leaf(unsigned long long x)
{
    return BENCH_LEAF_BODY(x);
}

__declspec(dllexport) __attribute__((noinline)) void lib_empty(void)
{
    __asm__ volatile("");
}
