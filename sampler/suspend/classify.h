/*
 * sampler/suspend/classify.h - which samples of a thread show it running (CPU
 * samples), which show it ready (runnable, not running) and which show it
 * waiting (blocked in a system call): ARCHITECTURE.md, decision 12.
 *
 * Three facts per sample: the thread's CPU clock read just before it (its
 * cycle counter where the system keeps one; else its user + kernel
 * time), with the wall clock in the same unit; whether its registers
 * changed since its previous sample ("moved": a thread that executed no
 * instruction in between has exactly the same registers); and whether it
 * stands at a system-call return ("waiting": blocked in the system at
 * that instant, whatever it ran before: such a sample is never a CPU
 * sample, so a window's CPU share never goes to a stack in which the
 * thread was blocked).
 *
 * The method, per thread: samples wait in a window until the CPU clock
 * is seen to move. The window then closes: its share of running time is
 * x = CPU gained / wall time elapsed since the previous close (at most 1),
 * so x * N of its N samples are CPU samples (rounded, with the rounding
 * carried into the next window, so that over a thread's life CPU samples
 * x sample period = its CPU time to within one sample). They are taken
 * from the samples that moved and do not wait, spread evenly; when more
 * are due than moved (a thread that was ready but not scheduled at some
 * samples), the unmoved ones that do not wait fill up only if the window
 * ran at least half the time and some sample of it moved, else the
 * excess is dropped. Every other sample is a wait sample when it waits,
 * else a ready sample (the thread could have run: it was preempted, or
 * held by the sampler itself). So a thread that did not run is never a CPU
 * sample, whatever the sampler's own suspensions cost it, even with a
 * clock charged in whole ticks (Linux's, under Wine: a waiting thread
 * handling a suspension now and then gets a whole tick, and a short
 * window after one shows it "running"). The price: a thread that spins
 * on one instruction (registers never change) has no CPU samples.
 * What a suspension costs a thread (handling one runs it briefly, in the
 * kernel or in Wine's signal handler) is learned per sample, across the
 * process's threads, from the windows without any moved sample (the
 * thread provably did not run: all the CPU it gained is the sampler's),
 * and taken off every window's CPU gain (a window with little CPU, and
 * moved samples, waits for the first estimate). A thread's first sample
 * counts as not moved (there is nothing to compare it with).
 *
 * With a cycle counter the clock moves whenever the thread ran at all,
 * so each window is one sample interval and x is exact per sample. With
 * thread times that advance in ~10-16 ms steps (Windows' clock tick,
 * Linux's USER_HZ under Wine), a window spans the samples between two
 * steps and x is the share over that span. A window that stays open
 * longer than max_window closes with nothing gained. When the final
 * clock is not known (a thread that ended; Wine forgets ended threads'
 * times), the last window takes the share of the one before; a thread
 * without any closed window falls back to "moved = running".
 */
#ifndef HOOKSCOPE_SAMPLER_CLASSIFY_H
#define HOOKSCOPE_SAMPLER_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hs_cls_pending {
    uint32_t stack;
    bool moved;
    bool waiting;                  /* its leaf stands at a system-call return */
} hs_cls_pending;

/* What the threads of one process share: the CPU time one sample costs a
 * thread that is not running (in clock units), learned from idle windows. */
typedef struct hs_cls_shared {
    double overhead;
    uint64_t learned;              /* samples it was learned from */
} hs_cls_shared;

typedef struct hs_cls_thread {
    hs_cls_shared *shared;
    bool started;
    uint64_t win_wall, win_cpu;    /* the clocks when the window opened */
    uint64_t last_cpu;             /* at the previous sample */
    hs_cls_pending *pend;
    size_t n, cap;
    double carry;
    double last_x;                 /* share of the last window closed with CPU information, -1 none */
} hs_cls_thread;

/* Receives each sample's kind (HS_SAMPLE_CPU, _READY or _WAIT, sampler.h). */
typedef void (*hs_cls_emit)(void *ctx, uint32_t stack, uint8_t kind);

void hs_cls_init(hs_cls_thread *t, hs_cls_shared *shared);
/* A sample of interned stack `stack`, taken at `wall`, the thread's CPU
 * clock reading `cpu` just before; `waiting`: its leaf stands at a
 * system-call return (blocked there). max_window: in wall units. */
void hs_cls_sample(hs_cls_thread *t, uint64_t wall, uint64_t cpu, bool moved, bool waiting, uint32_t stack,
                   uint64_t max_window, hs_cls_emit emit, void *ctx);
/* The end of the thread or of sampling: close the window with the final
 * clock `cpu` at `wall` (known false: not known). */
void hs_cls_finish(hs_cls_thread *t, uint64_t wall, uint64_t cpu, bool known, hs_cls_emit emit, void *ctx);
void hs_cls_free(hs_cls_thread *t);

#endif
