/*
 * hookscope/tl_head.h - how the agent moves the head of a --timeline ring
 * (session.h: hs_region_hdr's tl_head) past the event it wrote.
 */
#ifndef HOOKSCOPE_TL_HEAD_H
#define HOOKSCOPE_TL_HEAD_H

#include <stdint.h>

/* One 8-byte store, after the event's. The injector reads the head while
 * the thread runs: stored as two 32-bit halves (i686 code's add/adc of a
 * uint64_t) it would be seen half written at its carry, once in 2^32
 * events, below the tail for a moment. An 8-byte atomic store is one
 * access on i686 too (gcc's fild/fistp; time32.S, the 32-bit return
 * probe, stores the head its own way). Only the region's thread writes it. */
static inline void hs_tl_head_advance(uint64_t *head)
{
    __atomic_store_n(head, *head + 1, __ATOMIC_RELEASE);
}

#endif
