/*
 * tests/unit/thunk32.h - the 32-bit agent's thunks (agent/thunks32.S) and
 * counting stubs with edges and entry stacks (hook/engine/count32.h),
 * natively as 32-bit code: the C sides the thunks call (hs_on_slow,
 * hs_on_edge, hs_on_stack, as the agent's probes.c does), for the
 * differential harness (xcase.h) and for threads. Built into
 * build/native32 only, with test_hook_exec.
 */
#ifndef HS_TEST_THUNK32_H
#define HS_TEST_THUNK32_H

#include <stddef.h>
#include <stdint.h>

#include "tests/unit/xcase.h"

/* Run case f (o and count as test_hook_exec ran it, count.expect its
 * entries in one run) again through the thunks: `edges` 0, through the
 * slow thunk alone: it must run alike, the C side called once per entry
 * of a variant without counters (v % 3 == 2), with the entry esp and
 * ebx/ebp/esi/edi as they were, and the ticks added to the region's
 * `excluded`; `edges` 1, with caller edges and entry stacks through the
 * three: every call counted with its caller, the edge thunk's C side
 * called in each variant that starts with empty caller slots and never
 * for the caller a slot has, the stack thunk's where the countdown is 0,
 * walking the entry and its caller. The C sides change what C code may
 * (edx, flags, x87, xmm0-7, MXCSR, LastError). XC_SAME, or XC_DIFFERENT
 * with why. */
int thunk32_diff(hs_engine *e, const xc_func *f, xc_opts o, xc_count count, unsigned exp_count, int edges,
                 char *why, size_t n);

/* What thunk32_diff saw pass: entries through the slow thunk, calls
 * counted with their caller. */
extern unsigned thunk32_slowed;
extern uint64_t thunk32_edged;

/* slow32/threads, edges32/threads, stacks32/threads (tap results): 8
 * threads, each with a TEB of its own and no counters, call one hooked
 * function at once; see thunk32.c. */
void thunk32_threads(hs_engine *e);

#endif
