/*
 * agent/regions.c - the life of a thread region (session.h): committing
 * its parts as the function table grows, handing one to a thread the
 * first time it calls a hooked function (the stub finds its TLS slot
 * empty and calls hs_probe_slow, which calls hs_on_slow in probes.c, which
 * calls hs_region_acquire), marking it when its thread exits, and when the
 * regions are all taken, folding the region of a thread that is gone into
 * the shared overflow region and giving it to the new thread. When none
 * can be had, the thread keeps an empty slot and every call of it is
 * counted with atomic adds in the overflow region: slower, still exact.
 * Also the sink: private memory with a region's layout that nobody reads,
 * where the agent's own calls into hooked code go (its shadow stack limit
 * is 0: never timed).
 */
#include <string.h>

#include "agent/agent.h"

/* After a call that would end its function: gcc makes no tail jump of it.
 * Wine's RtlVirtualUnwind (a foreign walker, as ETW's) misreads the
 * epilogue `add rsp; pop ...; jmp rel32` of a slow path the entry stub
 * calls: test_sample_truth's stepping finds it. */
#define NO_TAIL_CALL() __asm__ volatile("")

/* Regions [threads_used, prepared) are committed ahead of the threads
 * that will take them (under layout_lock). */
static uint32_t prepared;

static uint32_t live_regions(void)
{
    int32_t used = g_hs.hdr->threads_used;
    uint32_t max = g_hs.hdr->max_threads;
    return used < 0 ? 0 : (uint32_t)used < max ? (uint32_t)used : max;
}

typedef int (*commit_fn)(void *p, uint64_t len);

static int commit_private(void *p, uint64_t len)
{
    return VirtualAlloc(p, len, MEM_COMMIT, PAGE_READWRITE) ? 0 : -1;
}

/* Commit the parts of the region at `r` that do not grow with the number
 * of functions, and set up its shadow stack (timing) once. */
static int region_init(char *r, commit_fn commit, int timed)
{
    const hs_session_header *h = g_hs.hdr;
    hs_region_hdr *rh = (hs_region_hdr *)r;
    if (commit(r, HS_PAGE) < 0)
        return -1;
    if ((h->options & HS_OPT_EDGES) &&
        commit(r + h->region_edges_off, (uint64_t)h->region_edges_cap * sizeof(hs_edge_rec)) < 0)
        return -1;
    if ((h->options & HS_OPT_STACKS) &&
        (commit(r + h->region_stacks_off, (uint64_t)h->region_stacks_cap * sizeof(hs_stack_rec)) < 0 ||
         commit(r + h->region_frames_off, (uint64_t)h->region_frames_cap * 8) < 0))
        return -1;
    if (timed && h->region_shadow_cap) {
        uint64_t len = (uint64_t)h->region_shadow_cap * sizeof(hs_shadow_rec);
        if (commit(r + h->region_shadow_off, len) < 0)
            return -1;
        rh->shadow_base = rh->shadow_top = (uint64_t)(uintptr_t)(r + h->region_shadow_off);
        rh->shadow_limit = rh->shadow_base + len;
        if ((h->options & HS_OPT_TIMELINE) && h->region_timeline_cap) {
            uint64_t tl = (uint64_t)h->region_timeline_cap * sizeof(hs_tl_event);
            if (commit(r + h->region_timeline_off, tl) < 0)
                return -1;
            /* every page touched once now (its first write faults), so that
             * no call pays for that (a region passed on is touched already) */
            if (!rh->tl_base)
                for (uint64_t off = 0; off < tl; off += HS_PAGE)
                    ((volatile char *)(r + h->region_timeline_off))[off] = 0;
            rh->tl_cap = h->region_timeline_cap;
            rh->tl_min_ticks = (uint64_t)((double)h->timeline_min_ns * h->tsc_hz / 1e9);
            rh->tl_depths = h->timeline_depths ? h->timeline_depths : UINT64_MAX;
            rh->tl_wait_limit = g_hs.tl_wait_ticks;
            rh->tl_base = (uint64_t)(uintptr_t)(r + h->region_timeline_off);
        }
    }
    return 0;
}

/* --timeline: name the thread in its region's ring: the events after the
 * name are its own. A region passed on from a thread that is gone may
 * still hold that thread's events, which the injector takes within
 * milliseconds: a thread outside the loader lock waits up to a second
 * for room, one under it not at all; without room, every event of the
 * new thread is dropped (and counted), and the next thread to take the
 * region tries again. Called by the thread that takes the region. */
static void timeline_thread(hs_region_hdr *rh, uint32_t tid, int may_wait)
{
    if (!rh->tl_base)
        return;
    rh->tl_cap = g_hs.hdr->region_timeline_cap;
    for (int waited = 0; rh->tl_head - rh->tl_tail >= rh->tl_cap; waited++) {
        if (!may_wait || waited == 1000) {
            rh->tl_cap = 0;
            return;
        }
        Sleep(1);
    }
    hs_tl_event *e = (hs_tl_event *)(uintptr_t)rh->tl_base + (rh->tl_head & (rh->tl_cap - 1));
    e->t0 = tid;
    e->t1 = e->ticks = 0;
    e->func = HS_TL_THREAD;
    e->depth = 0;
    hs_tl_head_advance(&rh->tl_head);
}

/* Commit the per-function parts of a region for functions [0, n). */
static int region_funcs(char *r, uint32_t n, commit_fn commit)
{
    const hs_session_header *h = g_hs.hdr;
    hs_region_hdr *rh = (hs_region_hdr *)r;
    if (n <= rh->committed_funcs)
        return 0;
    if (commit(r + h->region_counters_off, (uint64_t)n * h->region_fblock) < 0)
        return -1;
    if ((h->options & HS_OPT_STACKS) && commit(r + h->region_countdown_off, (uint64_t)n * 4) < 0)
        return -1;
    if ((h->options & HS_OPT_TIME) && commit(r + h->region_time_off, (uint64_t)n * sizeof(hs_time_rec)) < 0)
        return -1;
    rh->committed_funcs = n;
    return 0;
}

/* Called with layout_lock held. */
int hs_regions_grow(uint32_t n_functions)
{
    uint32_t live = live_regions();
    if (prepared > live)
        live = prepared;   /* (and the regions committed ahead) */
    for (uint32_t k = 0; k < live; k++)
        if (region_funcs(hs_session_region(g_hs.view, k), n_functions, hs_session_commit) < 0)
            return -1;
    /* the overflow region is set up at the first growth */
    char *ov = hs_session_region(g_hs.view, g_hs.hdr->max_threads);
    if (!((hs_region_hdr *)ov)->committed_funcs && region_init(ov, hs_session_commit, 0) < 0)
        return -1;
    return region_funcs(ov, n_functions, hs_session_commit);
}

int hs_sink_init(void)
{
    const hs_session_header *h = g_hs.hdr;
    char *sink = VirtualAlloc(NULL, h->region_size, MEM_RESERVE, PAGE_READWRITE);
    if (!sink || region_init(sink, commit_private, 0) < 0 ||
        region_funcs(sink, h->max_functions, commit_private) < 0)
        return -1;
    g_hs.sink = (uint64_t *)(sink + h->region_counters_off);
    g_hs.sink_size = h->region_size;
    return 0;
}

/* Regions whose threads passed DLL_THREAD_DETACH, oldest first (a ring:
 * each region is in it at most once). */
static uint32_t ended[HS_MAX_THREADS_LIMIT + 1];
static uint32_t ended_first, ended_n;
static SRWLOCK ended_lock = SRWLOCK_INIT;   /* the ring: a few stores under it, never a wait */

/* Regions kept committed ahead: the first threads of a run, and a burst
 * of threads started together, take one with no system call. */
#define PREPARED_AHEAD 32
#define PREPARED_AHEAD_TIMELINE 4   /* (each region's ring is touched when committed: 8 MiB by default) */

/* The loader lock (PEB.LoaderLock). A thread's first hooked call often
 * runs in a TLS callback or a DllMain at DLL_THREAD_ATTACH, and its last
 * ones at DLL_THREAD_DETACH, under that lock, where every thread that
 * starts or ends waits for it: there no region is committed and nothing
 * waits (under Wine each commit of the section is a round trip to the
 * server, hundreds of microseconds while threads are being made). */
static RTL_CRITICAL_SECTION *loader_lock(void)
{
    const char *peb = (const char *)(uintptr_t)hs_teb_read(HS_TEB_PEB);
    return peb ? *(RTL_CRITICAL_SECTION *const *)(peb + HS_PEB_LOADER_LOCK) : NULL;
}

static int holds_loader_lock(void)
{
    const RTL_CRITICAL_SECTION *cs = loader_lock();
    return cs && (uint64_t)(uintptr_t)cs->OwningThread == hs_teb_read(HS_TEB_THREAD_ID);
}

/* Folds into the overflow region, one at a time (its stack table and
 * time records are written without atomics). */
static SRWLOCK fold_lock = SRWLOCK_INIT;

/* The region of the thread that ended first, folded into the overflow
 * region and cleared; or max_threads. Called with the loader lock held:
 * a thread gives its region back at DLL_THREAD_DETACH, under that lock,
 * and what it runs after (other DLLs' detach code, the exe's TLS
 * callbacks, still counted and timed in its region) runs under the same
 * hold; once another thread holds the lock, the one that ended runs no
 * more hooked code. No handle, no system call. */
static uint32_t reclaim(void)
{
    hs_session_header *h = g_hs.hdr;
    AcquireSRWLockExclusive(&ended_lock);
    uint32_t k = h->max_threads;
    if (ended_n) {
        k = ended[ended_first];
        ended_first = (ended_first + 1) % (HS_MAX_THREADS_LIMIT + 1);
        ended_n--;
    }
    ReleaseSRWLockExclusive(&ended_lock);
    if (k >= h->max_threads)
        return k;
    AcquireSRWLockExclusive(&fold_lock);
    hs_region_fold(k);
    ReleaseSRWLockExclusive(&fold_lock);
    return k;
}

/* Commit region k (a fresh one) for the functions known now. */
static int prepare(uint32_t k)
{
    hs_session_header *h = g_hs.hdr;
    char *r = hs_session_region(g_hs.view, k);
    return region_init(r, hs_session_commit, (h->options & HS_OPT_TIME) != 0) == 0 &&
                   region_funcs(r, h->n_functions, hs_session_commit) == 0 &&
                   hs_session_commit(hs_session_slot(g_hs.view, k), sizeof(hs_thread_slot)) == 0
               ? 0
               : -1;
}

/* Keep PREPARED_AHEAD fresh regions committed past the ones in use: by
 * one thread at a time, outside the loader lock, committing outside
 * layout_lock (a thread under the loader lock may wait for that lock);
 * a growth of the function table meanwhile is made up for before the
 * region counts as prepared. */
static SRWLOCK prepare_lock = SRWLOCK_INIT;

static void prepare_ahead(int wait)
{
    hs_session_header *h = g_hs.hdr;
    if (wait)
        AcquireSRWLockExclusive(&prepare_lock);
    else if (!TryAcquireSRWLockExclusive(&prepare_lock))
        return;   /* (another thread does it) */
    for (;;) {
        AcquireSRWLockExclusive(&g_hs.layout_lock);
        uint32_t used = live_regions();
        if (prepared < used)
            prepared = used;
        uint32_t k = prepared;
        ReleaseSRWLockExclusive(&g_hs.layout_lock);
        uint32_t ahead = (h->options & HS_OPT_TIMELINE) && h->region_timeline_cap ? PREPARED_AHEAD_TIMELINE : PREPARED_AHEAD;
        if (k >= h->max_threads || k >= used + ahead || prepare(k) < 0)
            break;
        AcquireSRWLockExclusive(&g_hs.layout_lock);
        int ok = region_funcs(hs_session_region(g_hs.view, k), h->n_functions, hs_session_commit) == 0;
        if (ok && prepared == k)
            prepared = k + 1;
        ReleaseSRWLockExclusive(&g_hs.layout_lock);
        if (!ok)
            break;
    }
    ReleaseSRWLockExclusive(&prepare_lock);
    NO_TAIL_CALL();
}

void hs_regions_prepare(void)
{
    prepare_ahead(1);
}

void hs_regions_reset(void)
{
    AcquireSRWLockExclusive(&ended_lock);
    ended_first = ended_n = 0;
    ReleaseSRWLockExclusive(&ended_lock);
    prepared = 0;
}

/* Give the calling thread a region: one whose thread ended, else a
 * prepared one; outside the loader lock, when neither is at hand, it
 * prepares more first. Under the loader lock it neither commits nor
 * waits for another thread's commits: when no region is at hand there,
 * its calls count in the overflow region until its first call outside
 * the lock takes one. Outside the lock, a region whose thread ended is
 * taken only while the lock is free to take (a try: a thread that holds
 * a lock of its own and waited for the loader's could deadlock). */
uint64_t *hs_region_acquire(void)
{
    hs_session_header *h = g_hs.hdr;
    int locked = holds_loader_lock();
    for (int round = 0;; round++) {
        uint32_t k = h->max_threads;
        if (locked) {
            k = reclaim();
        } else {
            RTL_CRITICAL_SECTION *ll = loader_lock();
            if (ll && TryEnterCriticalSection(ll)) {
                k = reclaim();
                LeaveCriticalSection(ll);
            }
        }
        int full = 0;
        if (k >= h->max_threads) {
            if (locked ? !TryAcquireSRWLockExclusive(&g_hs.layout_lock)
                       : (AcquireSRWLockExclusive(&g_hs.layout_lock), 0))
                return NULL;
            k = (uint32_t)h->threads_used;
            if (k < prepared)
                h->threads_used = (int32_t)k + 1;
            else
                k = h->max_threads;
            full = (uint32_t)h->threads_used >= h->max_threads;
            ReleaseSRWLockExclusive(&g_hs.layout_lock);
        }
        if (k < h->max_threads) {
            uint32_t tid = (uint32_t)hs_teb_read(HS_TEB_THREAD_ID);
            hs_region_hdr *rh = (hs_region_hdr *)hs_session_region(g_hs.view, k);
            rh->tid = tid;
            rh->slot = k;
            timeline_thread(rh, tid, !locked);
            hs_thread_slot *s = hs_session_slot(g_hs.view, k);
            s->tid = tid;
            MemoryBarrier();
            s->state = HS_SLOT_LIVE;
            if (!locked)
                prepare_ahead(0);
            return hs_region_counters(g_hs.view, k);
        }
        if (locked)
            return NULL;
        /* outside the loader lock: more regions ahead, this thread's first
         * (at most twice: every region may be taken) */
        prepare_ahead(1);
        if (full || round == 2)
            return NULL;
    }
}

void hs_thread_exit(void)
{
    if (!g_hs.hdr)
        return;
    uint64_t *c = hs_tls_get();
    if (!c || c == g_hs.sink)
        return;
    uint32_t k = hs_region_of(c)->slot;
    hs_thread_slot *s = hs_session_slot(g_hs.view, k);
    if (s->state == HS_SLOT_EXITED)
        return;
    s->state = HS_SLOT_EXITED;
    if (k >= g_hs.hdr->max_threads || k >= HS_MAX_THREADS_LIMIT)
        return;
    /* (its region is handed on once this thread let go of the loader lock:
     * until then the exe's TLS callbacks and other DLLs' detach code count
     * in it) */
    AcquireSRWLockExclusive(&ended_lock);
    ended[(ended_first + ended_n) % (HS_MAX_THREADS_LIMIT + 1)] = k;
    ended_n++;
    ReleaseSRWLockExclusive(&ended_lock);
    NO_TAIL_CALL();
}

_Static_assert(HS_THREAD_COSTS <= sizeof ((hs_session_header *)0)->thread_cost_count / sizeof(uint32_t),
               "thread costs");
_Static_assert(HS_COST_BUCKETS == sizeof ((hs_session_header *)0)->thread_cost_hist[0] / sizeof(uint32_t),
               "thread cost buckets");

void hs_thread_cost(int which, uint64_t t0)
{
    hs_session_header *h = g_hs.hdr;
    uint64_t t = hs_rdtsc() - t0;
    if (!h || hs_hookscope_thread())
        return;
    InterlockedAdd64((volatile LONG64 *)&h->thread_cost_ticks[which], (LONG64)t);
    InterlockedIncrement((volatile LONG *)&h->thread_cost_count[which]);
    InterlockedIncrement((volatile LONG *)&h->thread_cost_hist[which][hs_cost_bucket(t)]);
}

uint64_t hs_live_wrapper_frames(void)
{
    const hs_session_header *h = g_hs.hdr;
    /* (frames of earlier sessions of this agent count too) */
    uint64_t n = (uint64_t)hs_untimed_frames + hs_retired_frames();
    if (!(h->options & HS_OPT_TIME))
        return n;
    uint32_t live = live_regions();
    for (uint32_t k = 0; k < live; k++) {
        const hs_region_hdr *r = (const hs_region_hdr *)hs_session_region(g_hs.view, k);
        /* a thread that ended inside timed calls never returns from them */
        if (hs_session_slot(g_hs.view, k)->state == HS_SLOT_EXITED)
            continue;
        if (r->shadow_top > r->shadow_base)
            n += (r->shadow_top - r->shadow_base) / sizeof(hs_shadow_rec);
    }
    return n;
}

/* Reserve n function records (committed, zeroed) and commit their
 * counters in every region; *first receives the first index. The records
 * are filled by the caller before any hook can use them. */
int hs_session_add_functions(uint32_t n, uint32_t *first)
{
    hs_session_header *h = g_hs.hdr;
    AcquireSRWLockExclusive(&g_hs.layout_lock);
    uint32_t f = h->n_functions;
    int rc = -1;
    if ((uint64_t)f + n <= h->max_functions &&
        hs_session_commit(hs_session_func(g_hs.view, f), (uint64_t)n * sizeof(hs_func_rec)) == 0 &&
        hs_regions_grow(f + n) == 0) {
        *first = f;
        h->n_functions = f + n;
        rc = 0;
    }
    ReleaseSRWLockExclusive(&g_hs.layout_lock);
    return rc;
}

/* ---- reusing the region of a thread that is gone ---------------------------- */

/* Add everything region k counted to the overflow region, then clear k
 * for another thread. The thread that owned k ended (nobody writes k:
 * see reclaim); called with fold_lock held. */
void hs_region_fold(uint32_t k)
{
    hs_session_header *h = g_hs.hdr;
    char *src = hs_session_region(g_hs.view, k);
    char *dst = hs_session_region(g_hs.view, h->max_threads);
    hs_region_hdr *sr = (hs_region_hdr *)src, *dr = (hs_region_hdr *)dst;
    uint32_t n = sr->committed_funcs < dr->committed_funcs ? sr->committed_funcs : dr->committed_funcs;
    uint64_t *sc = (uint64_t *)(src + h->region_counters_off), *dc = (uint64_t *)(dst + h->region_counters_off);
    int edges = (h->options & HS_OPT_EDGES) != 0;
    hs_edge_rec *se = (hs_edge_rec *)(src + h->region_edges_off);
    hs_edge_rec *de = (hs_edge_rec *)(dst + h->region_edges_off);
    int timed = (h->options & HS_OPT_TIME) != 0;
    hs_time_rec *st = (hs_time_rec *)(src + h->region_time_off);
    hs_time_rec *dt = (hs_time_rec *)(dst + h->region_time_off);
    if (edges)
        AcquireSRWLockExclusive(&hs_overflow_lock);
    /* each function block once: its count, then its callers kept inline,
     * into the overflow region's; cleared, with its time record, only when
     * the thread touched it (a function it never called has all zeros
     * there: its wrapper is entered only after its stub counted the call;
     * clearing every block was half of a fold of 5,000 functions, and
     * every time record, 400 bytes each, 2 MB) */
    for (uint32_t i = 0; i < n; i++) {
        uint64_t *blk = hs_fblock_at(h, sc, i);
        uint64_t c = *blk;
        if (c)
            InterlockedAdd64((volatile LONG64 *)hs_fblock_at(h, dc, i), (LONG64)c);
        int touched = c != 0;
        if (edges) {
            const hs_fblock *b = (const hs_fblock *)blk;
            /* first into the overflow region's block of the callee: the line
             * the count just went to (the edge table's lines are each a TLB
             * and a cache miss, ~2 k cycles under this VM: ten of them were
             * 80% of a thread's start); only folds write that block's edges,
             * under hs_overflow_lock */
            hs_fblock *ob = (hs_fblock *)hs_fblock_at(h, dc, i);
            for (int k = 0; k < HS_INLINE_EDGES; k++)
                if (b->edge[k].site && b->edge[k].count && !hs_inline_edge_add(ob, b->edge[k].site, b->edge[k].count) &&
                    hs_edge_add(de, &dr->edges_used, NULL, b->edge[k].site, i, b->edge[k].count) < 0)
                    dr->edges_overflowed++;
            touched |= b->edge[0].site != 0;   /* (slots fill in order) */
        }
        if (touched) {
            memset(blk, 0, h->region_fblock);
            if (timed) {
                hs_time_rec_merge(&dt[i], &st[i], hs_tsc_ns_mult);
                memset(&st[i], 0, sizeof st[i]);
            }
        }
    }
    if (n < sr->committed_funcs) {   /* (functions the overflow region has not committed yet) */
        memset(hs_fblock_at(h, sc, n), 0, (size_t)(sr->committed_funcs - n) * h->region_fblock);
        if (timed)
            memset(&st[n], 0, (size_t)(sr->committed_funcs - n) * sizeof *st);
    }
    if (edges) {
        /* the table's entries: the listed ones when they are all there
         * (each cleared after), else every one (and the table after) */
        const uint32_t *listed = hs_edges_listed_of(sc);
        int all_listed = sr->edges_used <= HS_EDGES_LISTED;
        uint32_t n_visit = all_listed ? sr->edges_used : h->region_edges_cap;
        for (uint32_t j = 0; j < n_visit; j++) {
            uint32_t i = all_listed ? listed[j] : j;
            if (i >= h->region_edges_cap)
                continue;
            if (se[i].site && se[i].count && hs_edge_add(de, &dr->edges_used, NULL, se[i].site, se[i].callee, se[i].count) < 0)
                dr->edges_overflowed++;
            if (all_listed)
                memset(&se[i], 0, sizeof se[i]);
        }
        ReleaseSRWLockExclusive(&hs_overflow_lock);
        if (!all_listed)   /* (an empty table is all zeros, its pages maybe never touched) */
            memset(se, 0, (size_t)h->region_edges_cap * sizeof *se);
    }
    if (h->options & HS_OPT_STACKS) {
        hs_stack_rec *ss = (hs_stack_rec *)(src + h->region_stacks_off);
        const uint64_t *pool = (const uint64_t *)(src + h->region_frames_off);
        for (uint32_t i = 0; sr->stacks_used && i < h->region_stacks_cap; i++)
            if (ss[i].hash && hs_stack_add(dr, ss[i].func, pool + ss[i].frames, ss[i].depth, ss[i].truncated,
                                        ss[i].count) < 0)
                dr->stacks_dropped += ss[i].count;
        if (sr->stacks_used)
            memset(ss, 0, (size_t)h->region_stacks_cap * sizeof *ss);
        dr->stacks_dropped += sr->stacks_dropped;
    }
    if (timed)
        dr->time_dropped += sr->time_dropped;
    if (h->options & HS_OPT_STACKS)
        memset(src + h->region_countdown_off, 0, (size_t)sr->committed_funcs * 4);
    dr->edges_overflowed += sr->edges_overflowed;
    sr->edges_used = 0;
    sr->edges_overflowed = 0;
    sr->stacks_used = 0;
    sr->frames_used = 0;
    sr->stacks_dropped = 0;
    sr->time_dropped = 0;
    sr->shadow_top = sr->shadow_base;
    InterlockedIncrement((volatile LONG *)&h->regions_reused);
}
