/*
 * tests/unit/ebpwalk32.h - the stack of a 32-bit (x86) thread at a hooked
 * function's entry, by its frame-pointer (EBP) chain: the entry, the
 * return address at esp, then each frame's return address at [ebp+4],
 * the next frame at [ebp]. Run on the thread's own live stack, within
 * [lo, hi) (its TEB's StackLimit and StackBase). Plain C, no Windows API,
 * so that it is tested natively as 32-bit code.
 *
 * What it cannot see: a caller that keeps no frame pointer (FPO, gcc's
 * default at -O2 for i686) leaves ebp to an outer frame, so the walk goes
 * on from there and that caller's own caller is missing. The 32-bit
 * agent's entry stacks are walked with frame data instead
 * (unwind32.h: hs_unwind32_walk_entry); this bare chain is what the
 * native harnesses of the agent's thunks check the registers they pass
 * with (tests/unit/thunk32.c, time32.c).
 */
#ifndef HOOKSCOPE_TESTS_EBPWALK32_H
#define HOOKSCOPE_TESTS_EBPWALK32_H

#include <stdint.h>

#include "hook/unwind/retshadow.h"

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
