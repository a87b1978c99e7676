/*
 * agent/threads.c - per-thread counter regions.
 *
 * A thread's TLS slot (at a fixed TEB offset, read by every entry stub)
 * points at the counters of its region in the session. A thread gets its
 * region the first time it calls a hooked function: the stub finds the
 * slot empty and calls hs_probe_slow (probes.S), which calls
 * hs_slow_count below. When the session's regions are all taken, the
 * thread keeps an empty slot and every call of it is counted with an
 * atomic add in the shared overflow region: slower, still exact.
 *
 * While the agent itself works on a thread (installing hooks, the slow
 * path), the slot points at the "sink", private counters nobody reads,
 * so that calls the agent makes into hooked modules are neither counted
 * nor recursive.
 */
#include <string.h>

#include "agent.h"

void *hs_tls_get(void)
{
    DWORD i = g_hs.tls;
    if (i < 64)
        return (void *)hs_teb_read(HS_TEB_TLS_SLOTS + i * 8);
    void **exp = (void **)hs_teb_read(HS_TEB_TLS_EXPANSION);
    return exp ? exp[i - 64] : NULL;
}

void hs_tls_set(void *v)
{
    DWORD i = g_hs.tls;
    if (i < 64) {
        hs_teb_write(HS_TEB_TLS_SLOTS + i * 8, (uint64_t)(uintptr_t)v);
        return;
    }
    void **exp = (void **)hs_teb_read(HS_TEB_TLS_EXPANSION);
    if (exp)
        exp[i - 64] = v;
    else
        TlsSetValue(i, v);  /* allocates the expansion slots */
}

void *hs_agent_enter(void)
{
    void *prev = hs_tls_get();
    hs_tls_set(g_hs.sink);
    return prev;
}

void hs_agent_leave(void *prev)
{
    hs_tls_set(prev);
}

static uint32_t live_regions(void)
{
    int32_t used = g_hs.hdr->threads_used;
    uint32_t max = g_hs.hdr->max_threads;
    return used < 0 ? 0 : (uint32_t)used < max ? (uint32_t)used : max;
}

/* Commit region k's header and counters [0, n). */
static int region_commit(uint32_t k, uint32_t n)
{
    hs_session_header *h = g_hs.hdr;
    char *r = hs_session_region(g_hs.view, k);
    uint64_t len = h->region_counters_off + (uint64_t)n * 8;
    if (hs_session_commit(r, len) < 0)
        return -1;
    if ((h->options & HS_OPT_EDGES) && hs_session_commit(r + h->region_edges_off,
                                                          (uint64_t)h->region_edges_cap *
                                                              sizeof(hs_edge_rec)) < 0)
        return -1;
    ((hs_region_hdr *)r)->committed_funcs = n;
    return 0;
}

/* Called with layout_lock held. */
int hs_regions_grow(uint32_t n_functions)
{
    uint32_t live = live_regions();
    for (uint32_t k = 0; k < live; k++)
        if (region_commit(k, n_functions) < 0)
            return -1;
    /* the overflow region */
    return region_commit(g_hs.hdr->max_threads, n_functions);
}

static uint64_t *acquire_region(void)
{
    hs_session_header *h = g_hs.hdr;
    uint64_t *counters = NULL;
    AcquireSRWLockExclusive(&g_hs.layout_lock);
    if ((uint32_t)h->threads_used < h->max_threads) {
        uint32_t k = (uint32_t)h->threads_used;
        if (region_commit(k, h->n_functions) == 0 &&
            hs_session_commit(hs_session_slot(g_hs.view, k), sizeof(hs_thread_slot)) == 0) {
            uint32_t tid = (uint32_t)hs_teb_read(HS_TEB_THREAD_ID);
            hs_region_hdr *r = (hs_region_hdr *)hs_session_region(g_hs.view, k);
            r->tid = tid;
            r->slot = k;
            hs_thread_slot *s = hs_session_slot(g_hs.view, k);
            s->tid = tid;
            s->state = HS_SLOT_LIVE;
            counters = hs_region_counters(g_hs.view, k);
            MemoryBarrier();
            h->threads_used = (int32_t)k + 1;
        }
    }
    ReleaseSRWLockExclusive(&g_hs.layout_lock);
    return counters;
}

/* The slow path of an entry stub, for a thread whose slot is empty.
 * Returns the counters the stub should increment, or NULL when the call
 * was counted here (overflow). Runs with all registers saved. */
uint64_t *hs_slow_count(uint32_t fidx)
{
    InterlockedIncrement(&g_hs.in_slow);
    hs_tls_set(g_hs.sink);
    uint64_t *c = acquire_region();
    if (c) {
        hs_tls_set(c);
        InterlockedDecrement(&g_hs.in_slow);
        return c;
    }
    hs_session_header *h = g_hs.hdr;
    if (fidx < h->n_functions) {
        uint64_t *ov = hs_region_counters(g_hs.view, h->max_threads);
        InterlockedIncrement64((volatile LONG64 *)&ov[fidx]);
    }
    InterlockedIncrement64((volatile LONG64 *)&h->overflow_calls);
    hs_tls_set(NULL);
    InterlockedDecrement(&g_hs.in_slow);
    return NULL;
}

void hs_thread_exit(void)
{
    if (!g_hs.hdr)
        return;
    uint64_t *c = hs_tls_get();
    if (!c || c == g_hs.sink)
        return;
    hs_region_hdr *r = (hs_region_hdr *)((char *)c - g_hs.hdr->region_counters_off);
    hs_thread_slot *s = hs_session_slot(g_hs.view, r->slot);
    s->state = HS_SLOT_EXITED;
}
