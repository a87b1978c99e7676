/*
 * agent/edgehash.h - where a (call site, callee) pair goes in a thread's
 * edge table (session.h: hs_edge_rec, open addressing, region_edges_cap a
 * power of two): the hash the entry stubs compute in machine code (x64:
 * agent/stubs.c; x86: hook/engine/count32.c, given the constants) and the
 * C insert (tables.c) computes alike, so that a stub finds every entry C
 * made. Portable, for the native tests of the 32-bit stubs.
 */
#ifndef HOOKSCOPE_EDGEHASH_H
#define HOOKSCOPE_EDGEHASH_H

#include <stdint.h>

/* imul with a sign-extended imm32 on x64, so both constants stay below
 * 2^31; on x86 the product of a 32-bit site is below 2^63, its high half
 * from one mul */
#define HS_EDGE_MULT 0x5BD1E995u
static inline uint32_t hs_edge_mix(uint32_t fidx) { return (fidx * 0x9E3779B9u) & 0x7FFFFFFFu; }
static inline uint32_t hs_edge_slot(uint64_t site, uint32_t fidx, uint32_t cap)
{
    uint32_t bits = 0;
    while ((1u << bits) < cap)
        bits++;
    return (uint32_t)(((site ^ hs_edge_mix(fidx)) * (uint64_t)HS_EDGE_MULT) >> (64 - bits));
}

#endif
