/*
 * jumps32.c - a 32-bit (i686) test program: longjmp out of hooked
 * functions, and threads created and ended while every function is hooked.
 *
 *   run_longjmp    five times: setjmp, then dive (4 levels of recursion
 *                  down to jump_out, which longjmps back over all of them);
 *                  after each landing, after_jump
 *   run_threads    two waves of four threads; each thread's body calls
 *                  thread_work 1000 times, then the thread ends
 *
 * setjmp is msvcrt's _setjmp3 through its import thunk (hooked: one
 * instruction, jmp [abs32]); it returns twice, the thunk is entered once.
 *
 * Calls (exact): main 1, run_longjmp 1, dive 25, jump_out 5, after_jump 5,
 * run_threads 1, thread_body 8, thread_work 8000, _setjmp3 5
 *
 * Edges (exact): main->run_longjmp 1, run_longjmp->dive 5, dive->dive 20,
 * dive->jump_out 5, run_longjmp->after_jump 5, main->run_threads 1,
 * <external>->thread_body 8, thread_body->thread_work 8000,
 * run_longjmp->_setjmp3 5
 *
 * Output (exact, checked by tests/test_wow64_hard.py), exit code 0, no args:
 *   longjmp landed 5 times, depth sum 20, after 15
 *   threads 8, work 8000, sum 63992000
 */
#include <setjmp.h>
#include <stdio.h>
#include <windows.h>

#define NOINLINE __attribute__((noinline, noclone))

static jmp_buf landing;
static volatile LONG work_sum;
static volatile LONG work_calls;
static volatile int armed = 1;   /* (so that gcc does not take jump_out for noreturn) */

NOINLINE void jump_out(int depth)
{
    if (armed)
        longjmp(landing, depth + 1);
}

NOINLINE int dive(int n, int depth)
{
    if (n == 0) {
        jump_out(depth);
        return 0;   /* not reached while armed */
    }
    return dive(n - 1, depth + 1) + 1;
}

NOINLINE int after_jump(int k)
{
    return k + 1;
}

NOINLINE void run_longjmp(void)
{
    volatile int depths = 0, after = 0, landed = 0;
    for (volatile int i = 0; i < 5; i++) {
        int r = setjmp(landing);
        if (r == 0) {
            dive(4, 0);
        } else {
            landed++;
            depths += r - 1;
            after += after_jump(i);
        }
    }
    printf("longjmp landed %d times, depth sum %d, after %d\n", landed, depths, after);
}

NOINLINE int thread_work(int i)
{
    InterlockedIncrement(&work_calls);
    return i * 2;
}

NOINLINE DWORD WINAPI thread_body(LPVOID arg)
{
    int base = (int)(INT_PTR)arg;
    LONG sum = 0;
    for (int i = 0; i < 1000; i++)
        sum += thread_work(base * 1000 + i);
    InterlockedExchangeAdd(&work_sum, sum);
    return 0;
}

NOINLINE void run_threads(void)
{
    int started = 0;
    for (int wave = 0; wave < 2; wave++) {
        HANDLE h[4];
        for (int i = 0; i < 4; i++) {
            h[i] = CreateThread(NULL, 0, thread_body, (LPVOID)(INT_PTR)(wave * 4 + i), 0, NULL);
            if (!h[i])
                return;
            started++;
        }
        WaitForMultipleObjects(4, h, TRUE, INFINITE);
        for (int i = 0; i < 4; i++)
            CloseHandle(h[i]);
    }
    printf("threads %d, work %ld, sum %ld\n", started, (long)work_calls, (long)work_sum);
}

int main(void)
{
    run_longjmp();
    run_threads();
    return 0;
}
