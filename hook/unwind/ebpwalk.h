/*
 * hook/unwind/ebpwalk.h - the stack of a 32-bit (x86) thread at a hooked
 * function's entry, by its frame-pointer (EBP) chain: the entry, the
 * return address at esp, then each frame's return address at [ebp+4],
 * the next frame at [ebp]. Run on the thread's own live stack, within
 * [lo, hi) (its TEB's StackLimit and StackBase). Plain C, no Windows API,
 * so that it is tested natively as 32-bit code.
 *
 * What it cannot see: a caller that keeps no frame pointer (FPO, gcc's
 * default at -O2 for i686) leaves ebp to an outer frame, so the walk goes
 * on from there and that caller's own caller is missing; the PDB's frame
 * data, which fills such gaps for the sampler (unwind32.h), is not in the
 * target.
 */
#ifndef HOOKSCOPE_EBPWALK_H
#define HOOKSCOPE_EBPWALK_H

#include <stdint.h>

/* A thread's shadow return stack (the 32-bit agent's return probes,
 * agent/time32.S): a timed call's return address slot holds the return
 * thunk's address while the call is open, and its record the true one. */
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

/* Whether addr can be a return address: in executable memory (the
 * caller's test; the walk itself can only rule out what no code is). */
typedef int (*hs_ebp_is_code)(uint32_t addr, void *ctx);

/* frames[0] = entry, frames[1] = the return address at esp, then one per
 * frame of the EBP chain from ebp, as long as each frame lies in [lo, hi),
 * above the last and 4-aligned and its return address can be one: not
 * below HS_EBP_LOWEST_CODE, not on the stack, and is_code's (when given)
 * -- a caller without a frame pointer may keep any value in ebp, a
 * local's address among them, and what lies above that is no return
 * address; at most max frames (*truncated when the chain went on). Each
 * return address is its true one (hs_ret_shadow_true; `shadow` may be
 * NULL). Returns the count. */
#define HS_EBP_LOWEST_CODE 0x10000u   /* Windows maps nothing below 64 KiB */
int hs_ebp_walk(uint32_t entry, uint32_t esp, uint32_t ebp, uint32_t lo, uint32_t hi, const hs_ret_shadow *shadow,
                hs_ebp_is_code is_code, void *ctx, uint64_t *frames, int max, int *truncated);

#endif
