/*
 * hook/unwind/retshadow.h - the true return addresses of a 32-bit thread's
 * timed calls: the 32-bit agent's return probe (agent/time32.S) puts its
 * return thunk's address in each open timed call's return address slot
 * and keeps the true one on the thread's shadow return stack. Every x86
 * stack walk over such a stack reads a slot's true value here (the
 * agent's over its live stack, through hs_uw32_env's shadow; the
 * sampler's into its copy). Plain C.
 */
#ifndef HOOKSCOPE_RETSHADOW_H
#define HOOKSCOPE_RETSHADOW_H

#include <stdint.h>

/* A thread's shadow return stack: a timed call's return address slot
 * holds the return thunk's address while the call is open, and its
 * record the true one. */
typedef struct hs_ret_shadow {
    uint32_t thunk;            /* the return thunk's address */
    const uint8_t *recs;       /* the open calls' records, oldest first */
    uint32_t n, size;          /* how many, and the bytes of one */
    uint32_t slot_off, ret_off; /* where a record keeps the slot's address (the entry
                                   esp) and the true return address */
} hs_ret_shadow;

/* The true value of the return address `value` read from stack slot
 * `slot`: value itself, unless it is the thunk: then the true address of
 * the newest record at or above that slot -- the slot's own, or for a
 * copy of a return address that a callee made below its slot (i686 gcc's
 * main realigns its stack and pushes its return address again) the
 * innermost call open above it; when that is the thunk too, its call was
 * a tail jump of the call under it: that one's -- or the thunk when no
 * record lies at or above the slot. s may be NULL (no shadow stack). */
uint32_t hs_ret_shadow_true(const hs_ret_shadow *s, uint32_t slot, uint32_t value);

#endif
