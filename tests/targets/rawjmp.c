/*
 * rawjmp.c - recursive calls abandoned by a longjmp that does not unwind
 * (msvcrt's longjmp to a _setjmp that recorded no frame restores the
 * registers and jumps: no handler sees the frames go), then the same
 * function called again normally:
 *
 *   outer -> _setjmp; dive(3, 1) -> dive(2) -> dive(1) -> dive(0) -> longjmp
 *   dive(2, 0) -> dive(1) -> dive(0), returning
 *
 * dive: 7 calls, 3 that return. Prints "dive = N"; exit 0.
 */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf jb;
static volatile int depth_seen;

__attribute__((noinline)) int dive(int n, int jump)
{
    volatile int local = n;
    depth_seen++;
    if (n == 0) {
        if (jump)
            longjmp(jb, 1);
        return 0;
    }
    return dive(n - 1, jump) + local;
}

__attribute__((noinline)) void outer(void)
{
    if (_setjmp(jb, NULL) == 0)
        dive(3, 1);
}

int main(void)
{
    outer();
    int r = dive(2, 0);
    printf("dive = %d, %d calls\n", r, depth_seen);
    return 0;
}
