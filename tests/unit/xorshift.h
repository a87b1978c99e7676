/*
 * tests/unit/xorshift.h - the unit tests' pseudo-random numbers: Marsaglia's
 * xorshift64 (13, 7, 17) over a state the test owns and seeds, so that a
 * failing case repeats with its seed.
 */
#ifndef HS_TEST_XORSHIFT_H
#define HS_TEST_XORSHIFT_H

#include <stdint.h>

/* the seed the tests start from unless they choose another */
#define XORSHIFT_SEED 0x9E3779B97F4A7C15ull

/* The next number of the sequence in *state (never 0 for a state not 0). */
static inline uint64_t xorshift64(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

#endif
