/*
 * tests/unit/test_session_layout.c - the helpers of hookscope/session.h
 * that a 32-bit agent compiles too: hs_hist_bucket's 128-bit product made
 * of 32-bit halves equals the 128-bit arithmetic of this 64-bit build, at
 * the edges (a product just below, at and above 2^96; mult 0 and 2^32)
 * and for millions of random pairs. (The layout itself is compared field
 * by field by tests/test_session_layout.py.)
 */
#include <stdint.h>
#include <stdio.h>

#include "hookscope/session.h"
#include "tests/unit/tap.h"
#include "tests/unit/xorshift.h"

static uint32_t by_int128(uint64_t ticks, uint64_t mult)
{
    unsigned __int128 ns = ((unsigned __int128)ticks * mult) >> 32;
    if (ns >> 64)
        return HS_HIST_BUCKETS - 1;
    uint32_t b = 63 - (uint32_t)__builtin_clzll((uint64_t)ns | 1);
    return b < HS_HIST_BUCKETS ? b : HS_HIST_BUCKETS - 1;
}

static uint64_t state = XORSHIFT_SEED;

static uint64_t next(void)
{
    return xorshift64(&state);
}

int main(void)
{
    const uint64_t edges[][2] = {
        { 0, 0 }, { 1, 1ull << 32 }, { 1000, 1ull << 32 }, { ~0ull, 1ull << 32 }, { ~0ull, ~0ull },
        { 1ull << 63, 1ull << 33 }, { 1ull << 63, 1ull << 32 }, { (1ull << 32) - 1, (1ull << 32) + 1 },
        { 0xFFFFFFFFull, 0xFFFFFFFFull }, { 3ull << 62, 0x155555555ull }, { 12345, 0 },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        uint32_t got = hs_hist_bucket(edges[i][0], edges[i][1]), want = by_int128(edges[i][0], edges[i][1]);
        if (got != want) {
            tap_diag("ticks 0x%llx mult 0x%llx: bucket %u, want %u", (unsigned long long)edges[i][0],
                     (unsigned long long)edges[i][1], got, want);
            bad++;
        }
    }
    tap_check(!bad, "hist-bucket-edges", "%d edge cases differ", bad);
    long differ = 0;
    for (long i = 0; i < 4000000; i++) {
        uint64_t r = next();
        uint64_t ticks = next() >> (r % 64), mult = next() >> ((r >> 6) % 64);
        differ += hs_hist_bucket(ticks, mult) != by_int128(ticks, mult);
    }
    tap_check(!differ, "hist-bucket-random", "%ld of 4,000,000 random pairs differ", differ);
    return tap_status();
}
