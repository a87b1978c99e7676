/* spin: three functions that burn a fixed amount of work each, for
 * `hookscope diff`. Built twice: spin.exe, and spin_slow.exe with
 * SLOW_SPINS set, where slow_part() does 100 times the work of spin.exe's;
 * calls are the same in both:
 *   main -> steady_a x 50, slow_part x 50, steady_b x 50 */
#include <stdio.h>

#ifndef SLOW_SPINS
#define SLOW_SPINS 20000
#endif

volatile unsigned long long sink;

/* the work is in each function itself, so it is the function's self time */
#define BURN(n)                                    \
    for (unsigned long i = 0; i < (n); i++)        \
        sink += i * 2654435761u

__attribute__((noinline)) void steady_a(void) { BURN(20000); }
__attribute__((noinline)) void slow_part(void) { BURN(SLOW_SPINS); }
__attribute__((noinline)) void steady_b(void) { BURN(20000); }

int main(void)
{
    for (int i = 0; i < 50; i++) {
        steady_a();
        slow_part();
        steady_b();
    }
    printf("%llu\n", sink & 1);
    return 0;
}
