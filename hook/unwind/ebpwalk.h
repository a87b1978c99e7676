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
 * on from there and that caller's own caller is missing; the PDB's FPO
 * data, which would fill such gaps, is not read here.
 */
#ifndef HOOKSCOPE_EBPWALK_H
#define HOOKSCOPE_EBPWALK_H

#include <stdint.h>

/* frames[0] = entry, frames[1] = the return address at esp, then one per
 * frame of the EBP chain from ebp, as long as each frame lies in [lo, hi),
 * above the last and 4-aligned and its return address is not 0; at most
 * max frames (*truncated when the chain went on). Returns the count. */
int hs_ebp_walk(uint32_t entry, uint32_t esp, uint32_t ebp, uint32_t lo, uint32_t hi, uint64_t *frames, int max,
                int *truncated);

#endif
