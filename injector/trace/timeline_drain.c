/*
 * injector/trace/timeline_drain.c - draining the timelines (see
 * timeline_drain.h).
 *
 * Design: each thread region of the session has a ring of events that the
 * agent's timing wrapper fills at every call's exit (one thread writes
 * it, no lock, no system call) and this thread empties: it reads a ring's
 * head (the events written), copies [tail, head) out through the
 * session's bounded reader, checks them, and gives the room back by
 * writing the tail. x86 keeps stores in order, so an event is whole
 * before the head that publishes it. Each take becomes one block of the
 * file (one thread's events); a ring names its thread in its first event
 * and again when its region passes to another thread, so events are never
 * given to the wrong thread. The ring's drops are the agent's counts (per
 * region: given to the thread the region serves when they are read); the
 * file's are counted here.
 *
 * The blocks are taken straight into a buffer of OUT_BYTES, in place
 * behind their headers, and the buffer is queued for the file's writer
 * (timeline_writer.h, a thread of its own) when it is full and at the end
 * of each pass: a pass makes one write however many rings and takes it
 * had (a write costs ~10 us under Wine whatever its size; one a take made
 * the drain of a steady program cost more than its copying), and no take
 * waits for a write (unless OUT_BUFFERS of them are behind).
 *
 * The passes are timed by a condition variable, which Wine keeps in the
 * process: an event's timed wait is a round trip to the wineserver, and
 * a loaded machine made that wake late.
 */
#include "injector/trace/timeline_drain.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "injector/trace/timeline_writer.h"

_Static_assert(sizeof(hs_tl_rec) == sizeof(hs_tl_event), "the file's events are the session's");
_Static_assert(offsetof(hs_tl_rec, func) == offsetof(hs_tl_event, func), "event func");
_Static_assert(offsetof(hs_tl_rec, depth) == offsetof(hs_tl_event, depth), "event depth");

/* How often the rings are emptied. */
#define DRAIN_MS 2
/* A buffer of blocks written at a time (within a core's L2 cache), the
 * room for events below which it is queued before the next take, and the
 * buffers (the writes that may be behind: 16 MiB, ~25 ms of a program
 * making 20 million calls a second). HOOKSCOPE_TEST_TIMELINE_BUFFERS=
 * BYTES,COUNT sets the first and last for tests (a queue that fills). */
#define OUT_BYTES (512u * 1024)
#define OUT_MIN_EVENTS 1024u
#define OUT_BUFFERS 32u
#define OUT_TEST_ENV "HOOKSCOPE_TEST_TIMELINE_BUFFERS"

struct hs_tl_drain {
    hs_session_host *s;
    FILE *f;
    char *path;
    uint64_t max_bytes;
    hs_prof_timeline *tl;
    hs_session_tl *rings;       /* per region (the layout's max_threads) */
    uint64_t *seen_dropped;     /* the ring's drops already given to a thread */
    uint64_t *seen_filtered;    /* the same of the calls the filters left out */
    uint64_t *seen_waits, *seen_wait_ticks; /* and of the waits for room */
    hs_tl_writer *writer;
    hs_tl_outbuf *out;          /* the blocks being gathered (NULL: none yet) */
    size_t out_bytes, out_min_events;
    hs_session_trust trust;
    HANDLE thread;
    bool stopping;              /* (the drain's thread ends; under wait_lock) */
    SRWLOCK wait_lock;
    CONDITION_VARIABLE wake;
    uint64_t passes;            /* for -v: the passes, the seconds they took, and writing */
    double pass_s, write_s;
    uint64_t writes, full_waits;
    double last_pass, longest_gap;  /*   the longest time from one pass of the thread to the next */
    uint64_t most_taken;        /*   the most events one ring gave in a pass */
    uint64_t busy_passes, busy_events;  /*   the passes that moved calls, their calls and seconds */
    double busy_s;
    double cpu_s;               /*   the CPU time of the drain's thread (its passes, idle or not) */
    SRWLOCK lock;               /* one pass at a time (the thread's, the last one's) */
};

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

static void widen(hs_prof_tl_thread *th, uint64_t first, uint64_t last)
{
    if (first < th->drop_first)
        th->drop_first = first;
    if (last > th->drop_last)
        th->drop_last = last;
}

/* The ranges of the view found committed, so that a pass asks the system
 * (VirtualQuery: a round trip to the server under Wine, some 100 us on a
 * busy machine) only about memory it has not seen yet: a page of the
 * section, once committed, stays so while the view is mapped. Used by the
 * drain's thread and its last pass, one at a time (the drain's lock). */
static struct {
    uintptr_t lo, hi;
} known[32];
static unsigned nknown;
static int (*host_committed)(const void *p, uint64_t *run);

static int committed_cached(const void *p, uint64_t *run)
{
    uintptr_t a = (uintptr_t)p;
    for (unsigned i = 0; i < nknown && i < 32; i++) {
        if (a >= known[i].lo && a < known[i].hi) {
            *run = known[i].hi - a;
            return 1;
        }
    }
    int ok = host_committed(p, run);
    if (ok && *run) {
        known[nknown % 32].lo = a;
        known[nknown % 32].hi = a + *run;
        nknown++;
    }
    return ok;
}

/* The blocks of buffer b, which were not written: the timeline stops
 * there and their calls count as not in the file. */
static void not_written(void *ctx, hs_tl_outbuf *b)
{
    hs_tl_drain *d = ctx;
    d->tl->bytes -= b->used;
    for (size_t at = 0; at < b->used;) {
        hs_tl_block blk;
        memcpy(&blk, b->data + at, sizeof blk);
        const hs_tl_event *ev = (const hs_tl_event *)(b->data + at + sizeof blk);
        hs_prof_tl_thread *th = hs_timeline_thread(d->tl, blk.tid);
        if (blk.flags & HS_TL_BLOCK_OPEN) {
            th->open -= blk.count;
        } else {
            th->events -= blk.count;
            th->dropped_file += blk.count;
            for (uint32_t i = 0; i < blk.count; i++)
                widen(th, ev[i].t0, ev[i].t1);
        }
        at += sizeof blk + (size_t)blk.count * sizeof *ev;
    }
    b->used = 0;
    b->failed = false;
}

/* Queue the blocks gathered for the file. */
static void flush(hs_tl_drain *d)
{
    if (d->out && d->out->used) {
        hs_tl_writer_queue(d->writer, d->out);
        d->out = NULL;
    }
}

/* Where the next block's events go in the buffer, and how many fit
 * (the buffer queued first when fewer than out_min_events would). */
static hs_tl_event *reserve(hs_tl_drain *d, size_t *room)
{
    if (d->out && d->out_bytes - d->out->used < sizeof(hs_tl_block) + d->out_min_events * sizeof(hs_tl_event))
        flush(d);
    if (!d->out) {
        d->out = hs_tl_writer_buffer(d->writer);
        if (d->out->failed)
            not_written(d, d->out);
        d->out->used = 0;
    }
    *room = (d->out_bytes - d->out->used - sizeof(hs_tl_block)) / sizeof(hs_tl_event);
    return (hs_tl_event *)(d->out->data + d->out->used + sizeof(hs_tl_block));
}

static uint32_t funcs_of(const hs_tl_event *ev, size_t n)
{
    uint32_t funcs = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].func >= funcs)
            funcs = ev[i].func + 1;
    return funcs;
}

/* Make the n events reserve() placed one block of thread tid (flags:
 * HS_TL_BLOCK_*), as far as --timeline-max lets; funcs: their highest
 * function + 1. They count as in the file from here (not_written takes
 * them back if the write fails). */
static void put_block(hs_tl_drain *d, uint32_t tid, uint32_t flags, size_t n, uint32_t funcs)
{
    hs_prof_tl_thread *th = hs_timeline_thread(d->tl, tid);
    hs_tl_event *ev = (hs_tl_event *)(d->out->data + d->out->used + sizeof(hs_tl_block));
    uint64_t room = d->tl->bytes + sizeof(hs_tl_block) < d->max_bytes
                        ? (d->max_bytes - d->tl->bytes - sizeof(hs_tl_block)) / sizeof *ev
                        : 0;
    size_t fit = hs_tl_writer_failed(d->writer) ? 0 : n < room ? n : (size_t)room;
    if (fit) {
        hs_tl_block b = { HS_TL_BLOCK_MAGIC, tid, (uint32_t)fit, flags };
        memcpy(d->out->data + d->out->used, &b, sizeof b);
        d->out->used += sizeof b + fit * sizeof *ev;
        d->tl->bytes += sizeof b + fit * sizeof *ev;
        if (fit < n)
            funcs = funcs_of(ev, fit);
        if (funcs > d->tl->funcs_named)
            d->tl->funcs_named = funcs;
        if (flags & HS_TL_BLOCK_OPEN)
            th->open += fit;
        else
            th->events += fit;
    }
    if (flags & HS_TL_BLOCK_OPEN)
        return;   /* (not calls that ended: the report counts them as open) */
    for (size_t i = fit; i < n; i++)
        widen(th, ev[i].t0, ev[i].t1);
    th->dropped_file += n - fit;
}

/* Empty every ring once. */
static void pass(hs_tl_drain *d)
{
    AcquireSRWLockExclusive(&d->lock);
    double t0 = hs_now();
    hs_session_src src = hs_session_host_src(d->s);
    host_committed = src.committed;
    if (src.committed)
        src.committed = committed_cached;
    uint32_t nregions = hs_session_regions(&src);
    uint64_t moved = 0;
    for (uint32_t k = 0; k < nregions; k++) {
        hs_session_tl *st = &d->rings[k];
        uint64_t taken = 0;
        for (;;) {
            uint32_t tid = st->tid;
            size_t room;
            hs_tl_event *ev = reserve(d, &room);
            size_t n = hs_session_timeline_take(&src, k, st, ev, room, &d->trust);
            if (!tid)
                tid = st->tid;
            if (!tid) {
                /* no thread named (the agent names it first): no figure is anyone's */
                d->seen_filtered[k] = st->filtered;
                d->seen_dropped[k] = st->dropped;
                d->seen_waits[k] = st->waits;
                d->seen_wait_ticks[k] = st->wait_ticks;
                break;
            }
            /* (each only as it grows: the target may write anything there) */
            if (st->waits > d->seen_waits[k]) {
                hs_timeline_thread(d->tl, tid)->waits += st->waits - d->seen_waits[k];
                d->seen_waits[k] = st->waits;
            }
            if (st->wait_ticks > d->seen_wait_ticks[k]) {
                hs_timeline_thread(d->tl, tid)->wait_ticks += st->wait_ticks - d->seen_wait_ticks[k];
                d->seen_wait_ticks[k] = st->wait_ticks;
            }
            if (st->filtered > d->seen_filtered[k]) {
                hs_timeline_thread(d->tl, tid)->filtered += st->filtered - d->seen_filtered[k];
                d->seen_filtered[k] = st->filtered;
            }
            if (st->dropped > d->seen_dropped[k]) {
                /* (before the events that follow the drops: the thread they were counted for) */
                hs_prof_tl_thread *th = hs_timeline_thread(d->tl, tid);
                th->dropped_buffer += st->dropped - d->seen_dropped[k];
                widen(th, st->drop_first, st->drop_last);
                d->seen_dropped[k] = st->dropped;
            }
            if (!n)
                break;
            put_block(d, st->tid, 0, n, st->funcs);
            moved += n;
            taken += n;
        }
        if (taken > d->most_taken)
            d->most_taken = taken;
    }
    flush(d);
    double took = hs_now() - t0;
    d->passes++;
    d->pass_s += took;
    if (moved) {
        d->busy_passes++;
        d->busy_events += moved;
        d->busy_s += took;
    }
    ReleaseSRWLockExclusive(&d->lock);
}

/* The calls still open on each thread at the end (a main that called
 * exit(), a thread ended inside a call, a call running at a detach), up
 * to now: one block a thread, after all its other events. */
static void open_calls(hs_tl_drain *d)
{
    hs_session_src src = hs_session_host_src(d->s);
    uint64_t end = rdtsc();
    uint32_t nregions = hs_session_regions(&src);
    size_t cap = d->s->layout.region_shadow_cap;
    hs_tl_event *buf = hs_xmalloc((cap ? cap : 1) * sizeof *buf);
    for (uint32_t k = 0; k < nregions; k++) {
        if (!d->rings[k].tid)
            continue;
        size_t n = hs_session_timeline_open(&src, k, buf, cap, &d->trust), kept = 0;
        for (size_t i = 0; i < n; i++) {
            if (buf[i].t0 > end)
                continue;   /* (its t0 was written by the target: it cannot have begun after now) */
            buf[kept] = buf[i];
            buf[kept].t1 = buf[kept].ticks = end;
            buf[kept].ticks -= buf[kept].t0;
            kept++;
        }
        for (size_t done = 0, room; done < kept; done += room) {
            hs_tl_event *ev = reserve(d, &room);
            if (room > kept - done)
                room = kept - done;
            memcpy(ev, buf + done, room * sizeof *ev);
            put_block(d, d->rings[k].tid, HS_TL_BLOCK_OPEN, room, funcs_of(ev, room));
        }
    }
    free(buf);
    flush(d);
}

static DWORD WINAPI drain_main(void *arg)
{
    hs_tl_drain *d = arg;
    AcquireSRWLockExclusive(&d->wait_lock);
    while (!d->stopping) {
        SleepConditionVariableSRW(&d->wake, &d->wait_lock, DRAIN_MS, 0);
        if (d->stopping)
            break;
        ReleaseSRWLockExclusive(&d->wait_lock);
        double now = hs_now();
        if (d->last_pass && now - d->last_pass > d->longest_gap)
            d->longest_gap = now - d->last_pass;
        d->last_pass = now;
        pass(d);
        AcquireSRWLockExclusive(&d->wait_lock);
    }
    ReleaseSRWLockExclusive(&d->wait_lock);
    /* (read by the thread itself: Wine has no times of a thread that ended) */
    FILETIME c, e, k, u;
    if (GetThreadTimes(GetCurrentThread(), &c, &e, &k, &u))
        d->cpu_s = (double)(((uint64_t)k.dwHighDateTime << 32 | k.dwLowDateTime) +
                            ((uint64_t)u.dwHighDateTime << 32 | u.dwLowDateTime)) / 1e7;
    return 0;
}

hs_tl_drain *hs_tl_drain_start(hs_session_host *s, const char *dir, uint64_t max_bytes)
{
    hs_tl_drain *d = hs_xcalloc(1, sizeof *d);
    d->s = s;
    d->max_bytes = max_bytes;
    d->path = hs_xasprintf("%s\\%s", dir, HS_TIMELINE_FILE);
    const char *why = NULL;
    d->f = hs_fopen_out(d->path, &why);
    if (!d->f) {
        hs_err("cannot write %s: %s", d->path, why ? why : "cannot create it");
        free(d->path);
        free(d);
        return NULL;
    }
    /* unbuffered: the drain gathers its writes itself (out_bytes), and the
     * C runtime's buffer would only copy them first */
    setvbuf(d->f, NULL, _IONBF, 0);
    hs_tl_file_hdr fh;
    memset(&fh, 0, sizeof fh);
    memcpy(fh.magic, HS_TL_FILE_MAGIC, 8);
    fh.event_size = sizeof(hs_tl_event);
    fwrite(&fh, sizeof fh, 1, d->f);
    d->tl = hs_xcalloc(1, sizeof *d->tl);
    d->tl->file = hs_xstrdup(d->path);
    d->tl->bytes = sizeof fh;
    d->tl->max_bytes = max_bytes;
    d->tl->min_ns = s->layout.timeline_min_ns;
    d->tl->depths = s->layout.timeline_depths;
    d->tl->wait_ms = s->layout.timeline_wait_ms;
    LARGE_INTEGER q, qf;
    QueryPerformanceFrequency(&qf);
    QueryPerformanceCounter(&q);
    d->tl->tsc_start = rdtsc();
    d->tl->qpc_start = q.QuadPart;
    d->tl->qpc_hz = qf.QuadPart;
    nknown = 0;
    uint32_t regions = s->layout.max_threads ? s->layout.max_threads : 1;
    d->rings = hs_xcalloc(regions, sizeof *d->rings);
    d->seen_dropped = hs_xcalloc(regions, sizeof *d->seen_dropped);
    d->seen_filtered = hs_xcalloc(regions, sizeof *d->seen_filtered);
    d->seen_waits = hs_xcalloc(regions, sizeof *d->seen_waits);
    d->seen_wait_ticks = hs_xcalloc(regions, sizeof *d->seen_wait_ticks);
    d->out_bytes = OUT_BYTES;
    unsigned nbufs = OUT_BUFFERS;
    char test[64];
    size_t bytes;
    unsigned count;
    if (GetEnvironmentVariableA(OUT_TEST_ENV, test, sizeof test) &&
        sscanf(test, "%zu,%u", &bytes, &count) == 2 && bytes >= sizeof(hs_tl_block) + sizeof(hs_tl_event) &&
        bytes <= OUT_BYTES && count >= 1 && count <= 1024) {
        d->out_bytes = bytes;
        nbufs = count;
    }
    size_t most = (d->out_bytes - sizeof(hs_tl_block)) / sizeof(hs_tl_event);
    d->out_min_events = most / 4 < OUT_MIN_EVENTS ? (most / 4 ? most / 4 : 1) : OUT_MIN_EVENTS;
    InitializeSRWLock(&d->lock);
    InitializeSRWLock(&d->wait_lock);
    InitializeConditionVariable(&d->wake);
    d->writer = hs_tl_writer_start(d->f, d->path, d->out_bytes, nbufs);
    d->thread = d->writer ? CreateThread(NULL, 0, drain_main, d, 0, NULL) : NULL;
    /* it runs a moment every few milliseconds: ahead of the target's
     * threads when they compete for the CPU, so that the rings empty
     * (Wine 8 ignores it: every thread stays at the Linux niceness it
     * started with) */
    if (d->thread)
        SetThreadPriority(d->thread, THREAD_PRIORITY_HIGHEST);
    if (!d->thread) {
        if (d->writer)
            hs_err("cannot start the timeline's drain: %s", hs_win_error(GetLastError()));
        hs_prof_timeline *tl = hs_tl_drain_stop(d, NULL);
        hs_timeline_free(tl);
        return NULL;
    }
    return d;
}

hs_prof_timeline *hs_tl_drain_stop(hs_tl_drain *d, hs_session_trust *trust)
{
    if (d->thread) {
        /* no thread waits for room any more: nothing will take its calls
         * after the last pass (the agent reads this at every wait) */
        d->s->hdr->timeline_wait_ms = 0;
        AcquireSRWLockExclusive(&d->wait_lock);
        d->stopping = true;
        WakeConditionVariable(&d->wake);
        ReleaseSRWLockExclusive(&d->wait_lock);
        WaitForSingleObject(d->thread, INFINITE);
        CloseHandle(d->thread);
        pass(d);   /* what the rings still hold */
        open_calls(d);
    }
    bool failed = d->writer && hs_tl_writer_end(d->writer, not_written, d, &d->writes, &d->write_s, &d->full_waits);
    if (fclose(d->f) != 0 && !failed)
        hs_err("cannot write %s", d->path);
    uint64_t events = 0;
    for (size_t i = 0; i < d->tl->nthreads; i++)
        events += d->tl->threads[i].events;
    hs_log("timeline: %llu calls in %llu bytes, taken in %llu passes of %.1f us on average (%.1f ms in all, "
           "%.1f ms writing the file in %llu writes); the %llu passes that moved calls took %llu in %.1f ms; "
           "the drain's thread used %.0f ms of CPU; the longest time between passes %.1f ms, the most calls a ring "
           "gave in a pass %llu, buffers waited for %llu times",
           (unsigned long long)events, (unsigned long long)d->tl->bytes, (unsigned long long)d->passes,
           d->passes ? d->pass_s * 1e6 / (double)d->passes : 0.0, d->pass_s * 1e3, d->write_s * 1e3,
           (unsigned long long)d->writes, (unsigned long long)d->busy_passes, (unsigned long long)d->busy_events,
           d->busy_s * 1e3, d->cpu_s * 1e3, d->longest_gap * 1e3, (unsigned long long)d->most_taken,
           (unsigned long long)d->full_waits);
    if (trust && d->trust.problems) {
        if (!trust->problems)
            memcpy(trust->first, d->trust.first, sizeof trust->first);
        trust->problems += d->trust.problems;
    }
    hs_prof_timeline *tl = d->tl;
    free(d->rings);
    free(d->seen_dropped);
    free(d->seen_filtered);
    free(d->seen_waits);
    free(d->seen_wait_ticks);
    free(d->path);
    free(d);
    return tl;
}
