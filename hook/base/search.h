/*
 * hook/base/search.h - binary search over a sorted range: every lookup in
 * a sorted table is one hs_partition_point with a predicate that says
 * whether element i lies before what is looked for.
 *
 *   lower bound (first key >= k):     left(i) = key(i) <  k
 *   upper bound (first key >  k):     left(i) = key(i) <= k
 *   the range that may contain k:     upper bound - 1 (none when 0)
 *
 * Tables sorted by a uint32_t field (rvas, mostly) have the two bounds
 * ready made (HS_LOWER_BOUND_U32, HS_UPPER_BOUND_U32).
 *
 * Static inline, so that the predicate (a static function at the call
 * site) is inlined into the loop: as fast as a hand-written search.
 */
#ifndef HOOKSCOPE_BASE_SEARCH_H
#define HOOKSCOPE_BASE_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The first index in [0, n) for which left(ctx, i) is false (n if none),
 * where left is true for a prefix of the range and false after it. */
static inline size_t hs_partition_point(size_t n, const void *ctx, bool (*left)(const void *ctx, size_t i))
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (left(ctx, mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- tables sorted by a uint32_t field -------------------------------------- */

typedef struct hs_u32_key {
    const uint8_t *base;
    size_t size, off;          /* element size; the key's offset in it */
    uint32_t k;
} hs_u32_key;

static inline uint32_t hs__key_u32(const hs_u32_key *q, size_t i)
{
    uint32_t v;
    memcpy(&v, q->base + i * q->size + q->off, sizeof v);
    return v;
}

static inline bool hs__u32_below(const void *ctx, size_t i)
{
    const hs_u32_key *q = ctx;
    return hs__key_u32(q, i) < q->k;
}

static inline bool hs__u32_not_above(const void *ctx, size_t i)
{
    const hs_u32_key *q = ctx;
    return hs__key_u32(q, i) <= q->k;
}

/* The first element whose key is >= k (lower) or > k (upper), of n
 * elements of `size` bytes at base sorted by a uint32_t key `off` bytes
 * into each. */
static inline size_t hs_lower_bound_u32(const void *base, size_t n, size_t size, size_t off, uint32_t k)
{
    hs_u32_key q = { (const uint8_t *)base, size, off, k };
    return hs_partition_point(n, &q, hs__u32_below);
}

static inline size_t hs_upper_bound_u32(const void *base, size_t n, size_t size, size_t off, uint32_t k)
{
    hs_u32_key q = { (const uint8_t *)base, size, off, k };
    return hs_partition_point(n, &q, hs__u32_not_above);
}

/* The same for an array and a field by name:
 * HS_UPPER_BOUND_U32(t->syms, t->count, rva, x). */
#define HS_LOWER_BOUND_U32(array, n, field, k) \
    hs_lower_bound_u32((array), (n), sizeof *(array), offsetof(__typeof__(*(array)), field), (k))
#define HS_UPPER_BOUND_U32(array, n, field, k) \
    hs_upper_bound_u32((array), (n), sizeof *(array), offsetof(__typeof__(*(array)), field), (k))

#endif
