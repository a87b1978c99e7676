/*
 * longjmp32.c - a 32-bit (i686) test program: calls that never return (a
 * longjmp out of a recursion), among calls that do.
 *
 *   dive      recursion 4 deep (dive(3) .. dive(0)), then longjmp back
 *             into land: none of the four returns
 *   land      ROUNDS times: setjmp, dive(3); after each landing, work(i)
 *   work      an ordinary call, made where the dives were made
 *
 * Calls (exact): main 1, land 1, dive 40, work 10. With --time (the
 * 32-bit agent's return probes) every call of dive ends by unwind (40),
 * found at the next timed call on the thread; land, work and main return.
 *
 * Output (exact, checked by tests/test_wow64_time.py), exit code 0:
 *   landed=10 work=45
 */
#include <setjmp.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline, noclone))
#define ROUNDS 10

static jmp_buf landing;
volatile int sink;

NOINLINE int dive(int n)
{
    if (n == 0)
        longjmp(landing, 1);
    if (n < 0)
        return 0;
    int r = dive(n - 1);
    sink = r;   /* (a store after the call: no tail call, no loop) */
    return r + n;
}

NOINLINE int work(int i)
{
    sink = i;
    return i;
}

NOINLINE void land(void)
{
    volatile int landed = 0, total = 0;
    for (volatile int i = 0; i < ROUNDS; i++) {
        if (setjmp(landing) == 0) {
            dive(3);
        } else {
            landed++;
            total += work(i);
        }
    }
    printf("landed=%d work=%d\n", landed, total);
}

int main(void)
{
    land();
    return 0;
}
