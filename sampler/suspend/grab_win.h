/*
 * sampler/suspend/grab_win.h - one sample of one thread of another process:
 * suspend it, get its registers, copy its stack with one read, resume it.
 * This is the only place where the sampler stops a thread, and the thread
 * is stopped for nothing else (the unwind happens after it runs again).
 *
 * Never a thread left suspended, never a hang: the suspension primitive's
 * watchdog (hook/suspend/threads_win.h) resumes the thread when its
 * context and stack copy do not come in time (under Wine, GetThreadContext
 * on a thread suspended while it is still being created waits until that
 * thread runs: 100 ms for a thread's first sample, 1 s later), and the
 * sample is dropped. A sampling thread stuck for good in GetThreadContext
 * (the thread it asked about resumed by the watchdog and still no answer)
 * shows in hs_grabber_stuck; the caller stops waiting for it.
 */
#ifndef HOOKSCOPE_SAMPLER_GRAB_WIN_H
#define HOOKSCOPE_SAMPLER_GRAB_WIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <windows.h>

typedef struct hs_grabber hs_grabber;

/* Ready to grab (the suspension primitive started) the threads of a
 * process of `bits` (64; or 32, a WOW64 process: its threads' 32-bit
 * registers and stack). NULL when it cannot (GetLastError says why). */
hs_grabber *hs_grabber_new(size_t stack_cap, int bits);

/* fn(ctx) runs in each grab while the thread is stopped, after its stack
 * was copied: for what must be read at the same moment as the stack (the
 * 32-bit agent's shadow records of the thread's open timed calls). */
void hs_grab_while_stopped(hs_grabber *g, void (*fn)(void *ctx), void *ctx);
/* Stop it (after the sampling thread ended, or was ended while stuck). */
void hs_grabber_free(hs_grabber *g);
/* Is the sampling thread stuck in a context the watchdog gave up on? */
bool hs_grabber_stuck(const hs_grabber *g);

enum hs_grab_status {
    HS_GRAB_OK = 0,
    HS_GRAB_GONE,      /* the thread (or the process) is ending or ended */
    HS_GRAB_TIMEOUT,   /* its context did not come in time (it was resumed) */
    HS_GRAB_FAILED,    /* another failure (it was resumed) */
    HS_GRAB_HELD,      /* someone else holds it suspended (created suspended, a freeze):
                          it is not running; it was left as it was */
};

/* The registers of a sample, which it also compares with the previous
 * one: the 16 general ones by x64 number (hook/base/x64.h), then the
 * instruction pointer and the flags. A 32-bit thread's eax..edi are the
 * first 8 (esp at HS_RSP, ebp at HS_RBP), the others 0. */
#define HS_GRAB_REGS 18
#define HS_GRAB_PC 16
#define HS_GRAB_FLAGS 17

typedef struct hs_grab {
    uint64_t regs[HS_GRAB_REGS];
    bool same;                 /* they equal `prev`: the thread has not run; no stack was copied */
    const uint8_t *stack;      /* the copy: [stack_lo, stack_lo + stack_len) */
    uint64_t stack_lo;
    size_t stack_len;
    bool complete;             /* the copy reaches the stack's base */
    uint64_t stopped_qpc;      /* performance-counter ticks from suspend to resume */
    int64_t at_qpc;            /* the performance counter while it was stopped (its context read) */
} hs_grab;

/* Sample `thread` of `process` (stack_base: from its TEB, the 32-bit
 * one's for a 32-bit thread; 0 unknown).
 * prev: its registers at its previous sample (or NULL); when they are
 * the same, the thread has not run since, its stack is what it was, and
 * it is resumed at once without a copy. The buffers of *out are the
 * grabber's, valid until the next call. */
int hs_grab_thread(hs_grabber *g, HANDLE process, HANDLE thread, uint64_t stack_base,
                   const uint64_t *prev, hs_grab *out);

#endif
