/*
 * agent/tables.c - the tables of a thread region (session.h): its header
 * from its counters, the caller-edge table and the entry-stack table, and
 * counting in the shared overflow region (under its lock). Used by the
 * probes' slow paths (probes.c) and by folding a region into the overflow
 * region when its thread is gone (regions.c).
 */
#include <string.h>

#include "agent/agent.h"

SRWLOCK hs_overflow_lock = SRWLOCK_INIT;

hs_region_hdr *hs_region_of(uint64_t *counters)
{
    return (hs_region_hdr *)((char *)counters - g_hs.hdr->region_counters_off);
}

hs_edge_rec *hs_edges_of(uint64_t *counters)
{
    return (hs_edge_rec *)((char *)counters + (g_hs.hdr->region_edges_off - g_hs.hdr->region_counters_off));
}

/* Insert (site, fidx) into an edge table with `count`, or add to an
 * existing entry. Returns -1 when the table is too full to insert. */
int hs_inline_edge_add(hs_fblock *b, uint64_t site, uint64_t count)
{
    for (int k = 0; k < HS_INLINE_EDGES; k++) {
        if (b->edge[k].site == site) {
            b->edge[k].count += count;
            return 1;
        }
        if (!b->edge[k].site) {
            b->edge[k].count = count;
            MemoryBarrier();   /* (a reader takes a slot by its site) */
            b->edge[k].site = site;
            return 1;
        }
    }
    return 0;
}

uint32_t *hs_edges_listed_of(uint64_t *counters)
{
    return (uint32_t *)((char *)hs_region_of(counters) + HS_EDGES_LISTED_OFF);
}

int hs_edge_add(hs_edge_rec *t, uint32_t *used, uint32_t *listed, uint64_t site, uint32_t fidx, uint64_t count)
{
    if (site == 0)
        return 0;   /* no caller: entered as a thread start */
    uint32_t cap = g_hs.hdr->region_edges_cap;
    uint32_t i = hs_edge_slot(site, fidx, cap);
    for (uint32_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
        if (t[i].site == site && t[i].callee == fidx) {
            t[i].count += count;
            return 0;
        }
        if (t[i].site == 0) {
            if (*used >= cap / 4 * 3)
                return -1;
            t[i].callee = fidx;
            t[i].count = count;
            MemoryBarrier();
            t[i].site = site;
            if (listed && *used < HS_EDGES_LISTED)
                listed[*used] = i;
            (*used)++;
            return 0;
        }
    }
    return -1;
}

/* Count a call (and its edge) in the shared overflow region. */
void hs_overflow_count(uint32_t fidx, uint64_t site, int count_call)
{
    hs_session_header *h = g_hs.hdr;
    uint64_t *ov = hs_region_counters(g_hs.view, h->max_threads);
    if (fidx >= h->n_functions)
        return;
    if (count_call) {
        InterlockedIncrement64((volatile LONG64 *)hs_fblock_at(h, ov, fidx));
        InterlockedIncrement64((volatile LONG64 *)&h->overflow_calls);
    }
    if ((h->options & HS_OPT_EDGES) && site) {
        AcquireSRWLockExclusive(&hs_overflow_lock);
        hs_region_hdr *r = hs_region_of(ov);
        if (hs_edge_add(hs_edges_of(ov), &r->edges_used, NULL, site, fidx, 1) < 0)
            r->edges_overflowed++;   /* lost: reported */
        ReleaseSRWLockExclusive(&hs_overflow_lock);
    }
}

static uint64_t hash_frames(uint32_t fidx, const uint64_t *f, int n)
{
    uint64_t h = 0xCBF29CE484222325ull ^ fidx;
    for (int i = 0; i < n; i++) {
        h ^= f[i];
        h *= 0x100000001B3ull;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

/* Add `count` to the stack (fidx, frames) in region r's table, inserting
 * it if new. Returns -1 when the table or the frame pool is full. */
int hs_stack_add(hs_region_hdr *r, uint32_t fidx, const uint64_t *frames, int n, int truncated,
                     uint64_t count)
{
    const hs_session_header *h = g_hs.hdr;
    char *region = (char *)r;
    hs_stack_rec *tab = (hs_stack_rec *)(region + h->region_stacks_off);
    uint64_t *pool = (uint64_t *)(region + h->region_frames_off);
    uint32_t cap = h->region_stacks_cap;
    uint64_t hash = hash_frames(fidx, frames, n);
    uint32_t i = (uint32_t)(hash & (cap - 1));
    for (uint32_t k = 0; k < cap; k++, i = (i + 1) & (cap - 1)) {
        hs_stack_rec *s = &tab[i];
        if (s->hash == hash && s->func == fidx && s->depth == n &&
            memcmp(pool + s->frames, frames, (size_t)n * 8) == 0) {
            s->count += count;
            return 0;
        }
        if (s->hash == 0) {
            if (r->stacks_used >= cap / 4 * 3 || r->frames_used + (uint32_t)n > h->region_frames_cap)
                return -1;
            memcpy(pool + r->frames_used, frames, (size_t)n * 8);
            s->frames = r->frames_used;
            s->func = fidx;
            s->depth = (uint16_t)n;
            s->truncated = (uint16_t)truncated;
            s->count = count;
            MemoryBarrier();
            s->hash = hash;
            r->frames_used += (uint32_t)n;
            r->stacks_used++;
            return 0;
        }
    }
    return -1;
}

