/*
 * injector/profile/timeline.c - the timeline's file and its description
 * in the profile (see timeline.h).
 *
 * The file is read as untrusted input like the session it came from (the
 * target wrote its events): each block's count is bounded by what is left
 * of the file, each event checked before a writer sees it, and a file
 * that fails a check is refused whole, in one line.
 */
#include "injector/profile/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"

void hs_timeline_free(hs_prof_timeline *t)
{
    if (!t)
        return;
    free(t->file);
    free(t->func_map);
    free(t->threads);
    free(t->samples);
    free(t);
}

hs_prof_tl_thread *hs_timeline_thread(hs_prof_timeline *t, uint32_t tid)
{
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].tid == tid)
            return &t->threads[i];
    t->threads = hs_xrealloc(t->threads, (t->nthreads + 1) * sizeof *t->threads);
    hs_prof_tl_thread *th = &t->threads[t->nthreads++];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    th->drop_first = UINT64_MAX;
    return th;
}

hs_prof_tl_thread hs_timeline_totals(const hs_prof_timeline *t)
{
    hs_prof_tl_thread sum;
    memset(&sum, 0, sizeof sum);
    sum.drop_first = UINT64_MAX;
    for (size_t i = 0; i < t->nthreads; i++) {
        const hs_prof_tl_thread *th = &t->threads[i];
        sum.events += th->events;
        sum.filtered += th->filtered;
        sum.open += th->open;
        sum.dropped_buffer += th->dropped_buffer;
        sum.dropped_file += th->dropped_file;
        sum.waits += th->waits;
        sum.wait_ticks += th->wait_ticks;
        if (th->drop_first < sum.drop_first)
            sum.drop_first = th->drop_first;
        if (th->drop_last > sum.drop_last)
            sum.drop_last = th->drop_last;
    }
    return sum;
}

double hs_timeline_us(const hs_prof_timeline *t, uint64_t tsc)
{
    if (!(t->tsc_hz > 0))
        return 0;
    double d = tsc >= t->tsc_start ? (double)(tsc - t->tsc_start) : -(double)(t->tsc_start - tsc);
    return d * 1e6 / t->tsc_hz;
}

double hs_timeline_qpc_us(const hs_prof_timeline *t, int64_t qpc)
{
    if (t->qpc_hz <= 0)
        return 0;
    return (double)(qpc - t->qpc_start) * 1e6 / (double)t->qpc_hz;
}

static uint64_t us_as_ns(double us)
{
    return us > 0 ? (uint64_t)(us * 1000.0 + 0.5) : 0;
}

uint64_t hs_timeline_ns(const hs_prof_timeline *t, uint64_t tsc)
{
    return us_as_ns(hs_timeline_us(t, tsc));
}

uint64_t hs_timeline_qpc_ns(const hs_prof_timeline *t, int64_t qpc)
{
    return us_as_ns(hs_timeline_qpc_us(t, qpc));
}

uint64_t hs_timeline_ticks_ns(const hs_prof_timeline *t, uint64_t ticks)
{
    return hs_timeline_ns(t, t->tsc_start + ticks);
}

/* Events read at a time. */
#define CHUNK 8192u

static void cut_short(const hs_prof_timeline *t, uint64_t off, uint32_t count, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s is cut short at byte %llu (a block of %u events)", t->file, (unsigned long long)off,
             count);
}

/* hs_timeline_read of every thread (all), or of thread tid. */
static int read_blocks(const hs_prof_timeline *t, size_t nfuncs, bool all, uint32_t tid, hs_tl_block_fn fn,
                       void *ctx, uint64_t *unknown, char *err, size_t errlen)
{
    FILE *f = hs_fopen(t->file, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read %s", t->file);
        return -1;
    }
    hs_tl_file_hdr h;
    int rc = 0;
    hs_tl_rec *buf = hs_xmalloc(CHUNK * sizeof *buf);
    uint64_t off = sizeof h;
    int64_t size = -1;   /* (known when blocks are skipped) */
    if (!all &&
        (hs_fseek(f, 0, SEEK_END) != 0 || (size = (int64_t)hs_ftell(f)) < 0 || hs_fseek(f, 0, SEEK_SET) != 0)) {
        snprintf(err, errlen, "cannot read %s", t->file);
        rc = -1;
    } else if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, HS_TL_FILE_MAGIC, 8) ||
               h.event_size != sizeof(hs_tl_rec)) {
        snprintf(err, errlen, "%s is not a hookscope timeline", t->file);
        rc = -1;
    }
    while (!rc) {
        hs_tl_block b;
        size_t got = fread(&b, 1, sizeof b, f);
        if (got == 0 && feof(f))
            break;
        if (got != sizeof b || b.magic != HS_TL_BLOCK_MAGIC || (b.flags & ~HS_TL_BLOCK_OPEN)) {
            snprintf(err, errlen, "%s: no block of events at byte %llu", t->file, (unsigned long long)off);
            rc = -1;
            break;
        }
        off += sizeof b;
        if (!all && b.tid != tid) {
            uint64_t skip = (uint64_t)b.count * sizeof *buf;
            if (off + skip > (uint64_t)size || hs_fseek(f, (int64_t)skip, SEEK_CUR) != 0) {
                cut_short(t, off, b.count, err, errlen);
                rc = -1;
            }
            off += skip;
            continue;
        }
        for (uint32_t done = 0; !rc && done < b.count;) {
            uint32_t n = b.count - done < CHUNK ? b.count - done : CHUNK;
            if (fread(buf, sizeof *buf, n, f) != n) {
                cut_short(t, off, b.count, err, errlen);
                rc = -1;
                break;
            }
            uint32_t kept = 0;
            for (uint32_t i = 0; i < n; i++) {
                const hs_tl_rec e = buf[i];
                uint32_t f = e.func < t->nfunc_map ? t->func_map[e.func] : 0;
                if (e.func >= t->nfunc_map || (f >= nfuncs && f != UINT32_MAX) || e.t1 < e.t0 ||
                    e.ticks > e.t1 - e.t0) {
                    snprintf(err, errlen, "%s: the event at byte %llu is not a call of a known function",
                             t->file, (unsigned long long)(off + (uint64_t)i * sizeof e));
                    rc = -1;
                    break;
                }
                if (f == UINT32_MAX) {
                    if (unknown)
                        ++*unknown;
                    continue;
                }
                buf[kept++] = e;
            }
            if (!rc && kept)
                rc = fn(ctx, b.tid, (b.flags & HS_TL_BLOCK_OPEN) != 0, buf, kept);
            off += (uint64_t)n * sizeof *buf;
            done += n;
        }
    }
    free(buf);
    fclose(f);
    return rc;
}

int hs_timeline_read(const hs_prof_timeline *t, size_t nfuncs, hs_tl_block_fn fn, void *ctx, uint64_t *unknown,
                     char *err, size_t errlen)
{
    return read_blocks(t, nfuncs, true, 0, fn, ctx, unknown, err, errlen);
}

int hs_timeline_read_thread(const hs_prof_timeline *t, size_t nfuncs, uint32_t tid, hs_tl_block_fn fn, void *ctx,
                            uint64_t *unknown, char *err, size_t errlen)
{
    return read_blocks(t, nfuncs, false, tid, fn, ctx, unknown, err, errlen);
}

/* ---- the first calls, for views of a bounded size ---------------------------- */

#define CUT_BUCKETS 65536u

/* Start times in buckets: of every call, or of those from edge_lo to
 * edge_hi - 1 ticks long. */
typedef struct cut_scan {
    uint64_t lo, hi, n;          /* the first and last start, the calls */
    uint64_t edge_lo, edge_hi;
    uint64_t *hist;              /* NULL: the first read */
    double width;
} cut_scan;

static int scan_starts(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n)
{
    (void)tid;
    (void)open;
    cut_scan *c = ctx;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t t0 = ev[i].t0, d = ev[i].t1 - ev[i].t0;
        if (d < c->edge_lo || d >= c->edge_hi)
            continue;
        if (!c->hist) {
            c->lo = c->n ? (t0 < c->lo ? t0 : c->lo) : t0;
            c->hi = c->n ? (t0 > c->hi ? t0 : c->hi) : t0;
            c->n++;
            continue;
        }
        uint64_t b = (uint64_t)((double)(t0 - c->lo) / c->width);
        c->hist[b < CUT_BUCKETS ? b : CUT_BUCKETS - 1]++;
    }
    return 0;
}

/* The second read of c (its lo and hi known): the first start from which
 * the calls counted no longer fit in max, at the end of the last bucket
 * whose calls, with all before, still fit (*fit: how many); UINT64_MAX
 * when they all fit. 0, or -1 with err set. */
static int start_cut(const hs_prof_timeline *t, size_t nfuncs, cut_scan *c, uint64_t max, uint64_t *cut,
                     uint64_t *fit, char *err, size_t errlen)
{
    c->hist = hs_xcalloc(CUT_BUCKETS, sizeof *c->hist);
    c->width = (double)(c->hi - c->lo + 1) / CUT_BUCKETS;
    int rc = hs_timeline_read(t, nfuncs, scan_starts, c, NULL, err, errlen);
    uint64_t sum = 0;
    uint32_t b = 0;
    while (!rc && b < CUT_BUCKETS && sum + c->hist[b] <= max)
        sum += c->hist[b++];
    /* (the first start whose bucket is b: the bucket bounds as scan_starts drew them) */
    uint64_t at = c->lo + (uint64_t)((double)b * c->width);
    while (!rc && at > c->lo && (uint64_t)((double)(at - 1 - c->lo) / c->width) >= b)
        at--;
    while (!rc && (uint64_t)((double)(at - c->lo) / c->width) < b)
        at++;
    *cut = b < CUT_BUCKETS ? at : UINT64_MAX;
    *fit = sum;
    free(c->hist);
    c->hist = NULL;
    return rc;
}

int hs_timeline_cutoff(const hs_prof_timeline *t, size_t nfuncs, uint64_t max_calls, uint64_t *cut, uint64_t *kept,
                       uint64_t *total, char *err, size_t errlen)
{
    cut_scan c = { .edge_hi = UINT64_MAX };
    *cut = UINT64_MAX;
    *kept = *total = 0;
    if (hs_timeline_read(t, nfuncs, scan_starts, &c, NULL, err, errlen) != 0)
        return -1;
    *kept = *total = c.n;
    if (c.n <= max_calls)
        return 0;
    return start_cut(t, nfuncs, &c, max_calls, cut, kept, err, errlen);
}

/* ---- the longest calls, for a view of the whole run ------------------------- */

/* Durations (rdtsc ticks) in buckets, in the order of the durations: the
 * first 4096 one tick each, then 4096 to each power of two (a bucket
 * 1/4096 of its durations wide). */
#define DUR_EXACT 4096u
#define DUR_BUCKETS (DUR_EXACT + 52u * DUR_EXACT)

static uint32_t dur_bucket(uint64_t d)
{
    if (d < DUR_EXACT)
        return (uint32_t)d;
    uint32_t e = 63u - (uint32_t)__builtin_clzll(d);   /* 12 to 63 */
    return DUR_EXACT + (e - 12u) * DUR_EXACT + (uint32_t)((d >> (e - 12u)) & (DUR_EXACT - 1u));
}

/* The shortest duration of bucket b. */
static uint64_t dur_bucket_min(uint32_t b)
{
    if (b < DUR_EXACT)
        return b;
    uint32_t e = (b - DUR_EXACT) / DUR_EXACT + 12u;
    return (uint64_t)(DUR_EXACT + (b - DUR_EXACT) % DUR_EXACT) << (e - 12u);
}

typedef struct dur_scan {
    uint64_t *hist;
    uint64_t n;
} dur_scan;

static int scan_durations(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n)
{
    (void)tid;
    (void)open;
    dur_scan *c = ctx;
    for (uint32_t i = 0; i < n; i++)
        c->hist[dur_bucket(ev[i].t1 - ev[i].t0)]++;
    c->n += n;
    return 0;
}

bool hs_tl_longest_keeps(const hs_tl_longest *l, const hs_tl_rec *e)
{
    uint64_t d = e->t1 - e->t0;
    return d >= l->min_ticks || (d >= l->edge_ticks && e->t0 < l->edge_until);
}

int hs_timeline_longest(const hs_prof_timeline *t, size_t nfuncs, uint64_t max_calls, hs_tl_longest *l, char *err,
                        size_t errlen)
{
    dur_scan c = { hs_xcalloc(DUR_BUCKETS, sizeof *c.hist), 0 };
    memset(l, 0, sizeof *l);
    int rc = hs_timeline_read(t, nfuncs, scan_durations, &c, NULL, err, errlen);
    l->kept = l->total = c.n;
    if (!rc && c.n > max_calls) {
        /* whole buckets from the longest down, while they fit */
        uint64_t sum = 0;
        uint32_t b = DUR_BUCKETS;
        while (b > 0 && sum + c.hist[b - 1] <= max_calls)
            sum += c.hist[--b];
        l->min_ticks = b < DUR_BUCKETS ? dur_bucket_min(b) : UINT64_MAX;
        l->kept = sum;
        /* the rest from the bucket that did not fit, the first to begin
         * (b > 0: a bucket did not fit) */
        cut_scan e = { .edge_lo = dur_bucket_min(b - 1), .edge_hi = l->min_ticks };
        uint64_t fit = 0;
        if (sum < max_calls && hs_timeline_read(t, nfuncs, scan_starts, &e, NULL, err, errlen) == 0 &&
            start_cut(t, nfuncs, &e, max_calls - sum, &l->edge_until, &fit, err, errlen) == 0) {
            l->edge_ticks = e.edge_lo;
            l->edge_until = fit ? l->edge_until : 0;
            l->kept += fit;
        } else if (sum < max_calls) {
            rc = -1;
        }
    }
    free(c.hist);
    return rc;
}
