/*
 * injector/profile/timeline.h - the timeline of a run (--timeline): every
 * timed call of every thread with its start and end, kept in a file of
 * the output directory (HS_TIMELINE_FILE) that the injector fills while
 * the target runs (trace/timeline_drain.c), and described in the profile
 * (what report.json saves): the clock, the map from the file's function
 * numbers to the profile's functions, what each thread kept and dropped.
 *
 * The file: a header (HS_TL_FILE_MAGIC, the event size), then blocks,
 * each a block header (HS_TL_BLOCK_MAGIC, the thread id, the count, its
 * flags: HS_TL_BLOCK_OPEN for the calls still open when the trace ended,
 * whose t1 is that end, written last) and
 * that many events (hs_tl_rec: the layout of the session's hs_tl_rec,
 * as the agent wrote them) of one thread, in the order the calls ended.
 * Plain C: built and tested natively too.
 */
#ifndef HOOKSCOPE_PROFILE_TIMELINE_H
#define HOOKSCOPE_PROFILE_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HS_TIMELINE_FILE "timeline.bin"
#define HS_TL_FILE_MAGIC "HSTIMEL1"
#define HS_TL_BLOCK_MAGIC 0x42544C48u   /* "HLTB" */

/* One call: raw rdtsc at entry and exit, the ticks --time counted for it
 * (hookscope's own slow paths inside it taken out), its function (the
 * session's number: hs_prof_timeline.func_map), and the timed calls open
 * around it on its thread. */
typedef struct hs_tl_rec {
    uint64_t t0, t1, ticks;
    uint32_t func, depth;
} hs_tl_rec;

typedef struct hs_tl_file_hdr {
    char magic[8];
    uint32_t event_size;       /* sizeof(hs_tl_rec) */
    uint32_t reserved;
} hs_tl_file_hdr;

typedef struct hs_tl_block {
    uint32_t magic;
    uint32_t tid;
    uint32_t count;
    uint32_t flags;            /* HS_TL_BLOCK_* */
} hs_tl_block;
#define HS_TL_BLOCK_OPEN 1u

/* What one thread's timeline kept and lost. Drops: calls the thread's
 * buffer had no room for (the injector had not taken the earlier ones
 * yet) or the file had no room for (--timeline-max), with the range of
 * times they cover (rdtsc; drop_first > drop_last: none); and the waits
 * for room in its buffer that came first. */
typedef struct hs_prof_tl_thread {
    uint32_t tid;
    uint64_t events;
    uint64_t dropped_buffer, dropped_file;
    uint64_t filtered;         /* calls the filters left out (too short, too deep) */
    uint64_t open;             /* calls still open at the end (events too, ending there) */
    uint64_t drop_first, drop_last;
    uint64_t waits;            /* times its buffer was full and waited for (--timeline-wait) */
    uint64_t wait_ticks;       /*   the rdtsc ticks it waited, left out of its calls' times */
} hs_prof_tl_thread;

/* A sample on the timeline: its stack (an index of the profile's stacks:
 * a sampled stack of its thread) and when it was taken, on the
 * performance counter. */
typedef struct hs_prof_tl_sample {
    uint32_t stack;
    int64_t qpc;
} hs_prof_tl_sample;

typedef struct hs_prof_timeline {
    char *file;                /* the events' file, where it is now (its run's directory) */
    uint64_t tsc_start;        /* rdtsc at the run's start: time 0 */
    double tsc_hz;             /* rdtsc ticks per second (whole Hz) */
    int64_t qpc_start;         /* QueryPerformanceCounter read with tsc_start, */
    int64_t qpc_hz;            /*   and its rate: a QPC time t is tsc_start + (t - qpc_start) * tsc_hz / qpc_hz */
    uint64_t bytes, max_bytes; /* the file's size, and --timeline-max */
    uint64_t min_ns;           /* --timeline-min-duration (0: none) */
    uint32_t depths;           /* --timeline-depth (0: none) */
    uint32_t wait_ms;          /* --timeline-wait, whole ms (0: a full buffer drops calls at once) */
    uint32_t *func_map;        /* the events' function number -> the profile's function (UINT32_MAX: none) */
    uint32_t funcs_named;      /* (a run's drain) the highest function number in the file + 1 */
    uint32_t nfunc_map;
    hs_prof_tl_thread *threads;
    size_t nthreads;
    hs_prof_tl_sample *samples;  /* in the order they were taken */
    size_t nsamples;
    uint64_t samples_dropped;    /* samples whose time was not kept */
} hs_prof_timeline;

void hs_timeline_free(hs_prof_timeline *t);

/* The thread tid's entry (added when new). */
hs_prof_tl_thread *hs_timeline_thread(hs_prof_timeline *t, uint32_t tid);

/* Every thread's figures summed (tid 0; the drops' range the widest). */
hs_prof_tl_thread hs_timeline_totals(const hs_prof_timeline *t);

/* Microseconds from the run's start to rdtsc value `tsc`; to performance
 * counter value `qpc` (read by the sampler). */
double hs_timeline_us(const hs_prof_timeline *t, uint64_t tsc);
double hs_timeline_qpc_us(const hs_prof_timeline *t, int64_t qpc);
/* The same in whole nanoseconds, rounded (before the start: 0): a call's
 * start and end each rounded first, so that a call nests inside its
 * caller in every writer exactly as the clock saw it. */
uint64_t hs_timeline_ns(const hs_prof_timeline *t, uint64_t tsc);
uint64_t hs_timeline_qpc_ns(const hs_prof_timeline *t, int64_t qpc);
/* A duration of `ticks` in ns on the timeline's clock (its rate in whole
 * Hz, as report.json keeps it: `report DIR` gives the same figures). */
uint64_t hs_timeline_ticks_ns(const hs_prof_timeline *t, uint64_t ticks);

/* Read the events' file of t: calls fn for each block (its thread, its
 * events, already checked: a function of the map, t0 <= t1, the duration
 * within them), in the file's order; the events of a function the map
 * has but the profile does not (UINT32_MAX: the session named it, and
 * what it said of it could not be trusted) are left out and counted in
 * *unknown (unless NULL). 0; or -1 with a one-line reason in
 * err naming the file (it cannot be read, is not a timeline, is cut
 * short, or holds an event that cannot be); fn returning nonzero stops
 * the read and is returned. nfuncs: the profile's functions. */
typedef int (*hs_tl_block_fn)(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n);
int hs_timeline_read(const hs_prof_timeline *t, size_t nfuncs, hs_tl_block_fn fn, void *ctx, uint64_t *unknown,
                     char *err, size_t errlen);
/* The views of the timeline that a browser opens (profile.firefox.json,
 * speedscope's evented profiles) hold at most this many calls, the first:
 * a browser reads a file whole into one string, which cannot pass 512 MiB
 * (V8's limit), and a file past it only costs the time to write it. */
#define HS_TIMELINE_VIEW_CALLS 2000000u
/* trace.json holds at most this many, the longest: speedscope's app
 * imports a Chrome trace in a time that grows faster than its calls
 * (headless Chromium here, lua's calls: 50,000 in 3 s, 100,000 in 6 s,
 * 200,000 in 39 s, 500,000 in 161 s; the 100,000 longest of 2.3 million,
 * 11 MB: 8 s), and a file that takes minutes to open is not opened. */
#define HS_TRACE_VIEW_CALLS 100000u

/* The calls that such a view keeps: those that begin before *cut (an
 * rdtsc value; UINT64_MAX: every call), as many of the first as fit in
 * max_calls (*kept of *total). Two reads of the file; 0, or -1 with a
 * one-line reason in err. */
int hs_timeline_cutoff(const hs_prof_timeline *t, size_t nfuncs, uint64_t max_calls, uint64_t *cut, uint64_t *kept,
                       uint64_t *total, char *err, size_t errlen);

/* The calls that a view of the whole run keeps (trace.json): the
 * longest, as many as fit in max_calls (kept of total). Durations (t1 -
 * t0) are taken in buckets (one tick wide below 4096 ticks, 1/4096 of a
 * duration above): every call of min_ticks or more (0: every call), then
 * of the bucket that does not fit whole, edge_ticks to min_ticks - 1,
 * those that begin before edge_until (rdtsc; 0: none), as many as fit
 * (start times in 65,536 buckets too: a view may keep a few less than
 * max_calls). A call kept has its callers kept: each is longer, and
 * began earlier. */
typedef struct hs_tl_longest {
    uint64_t min_ticks;
    uint64_t edge_ticks, edge_until;
    uint64_t kept, total;
} hs_tl_longest;

/* Whether l keeps the call e. */
bool hs_tl_longest_keeps(const hs_tl_longest *l, const hs_tl_rec *e);

/* The longest calls that fit in max_calls; one read of the file, three
 * when a bucket does not fit whole. 0, or -1 with a one-line reason in
 * err. */
int hs_timeline_longest(const hs_prof_timeline *t, size_t nfuncs, uint64_t max_calls, hs_tl_longest *l, char *err,
                        size_t errlen);

/* The same for one thread's blocks only (the others are skipped, their
 * events unread, their sizes still checked against the file's). */
int hs_timeline_read_thread(const hs_prof_timeline *t, size_t nfuncs, uint32_t tid, hs_tl_block_fn fn, void *ctx,
                            uint64_t *unknown, char *err, size_t errlen);

#endif
