/*
 * injector/output/txt_longest.c - report.txt's "longest calls" section
 * (--timeline): per thread, the single calls that took longest, when each
 * began and the calls it ran under, read from the timeline's file in two
 * passes (the longest first, then the calls around them), in memory the
 * size of what is shown whatever the file's size.
 *
 * A call's duration is its --time ticks (hookscope's own slow paths left
 * out, as in the time table); the calls around it are the events of its
 * thread at a lower depth whose span holds its span.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/output/format.h"
#include "injector/output/writers.h"

#define LONGEST 5     /* calls shown per thread */
#define AROUND 6      /* the innermost calls around one that are named (and the outermost) */

typedef struct longest_call {
    hs_tl_rec ev;
    bool open;                   /* still open when the trace ended */
    uint32_t around[AROUND];     /* profile functions at depths depth-1 .. depth-AROUND (UINT32_MAX: none) */
    uint32_t root;               /* the function at depth 0 when deeper than AROUND (UINT32_MAX: none) */
} longest_call;

typedef struct longest_thread {
    uint32_t tid;
    longest_call calls[LONGEST]; /* the longest, longest first */
    uint32_t n;
} longest_thread;

typedef struct longest_scan {
    const hs_prof_timeline *t;
    longest_thread *threads;
    size_t nthreads;
} longest_scan;

static longest_thread *thread_of(longest_scan *s, uint32_t tid)
{
    for (size_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].tid == tid)
            return &s->threads[i];
    s->threads = hs_xrealloc(s->threads, (s->nthreads + 1) * sizeof *s->threads);
    longest_thread *th = &s->threads[s->nthreads++];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    return th;
}

/* Pass 1: keep each thread's LONGEST longest calls (ties: the earlier). */
static int keep_longest(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n)
{
    longest_thread *th = thread_of(ctx, tid);
    for (uint32_t i = 0; i < n; i++) {
        const hs_tl_rec *e = &ev[i];
        if (th->n == LONGEST) {
            const hs_tl_rec *last = &th->calls[LONGEST - 1].ev;
            if (e->ticks < last->ticks || (e->ticks == last->ticks && e->t0 >= last->t0))
                continue;
            th->n--;
        }
        uint32_t k = th->n++;
        while (k > 0 && (th->calls[k - 1].ev.ticks < e->ticks ||
                         (th->calls[k - 1].ev.ticks == e->ticks && th->calls[k - 1].ev.t0 > e->t0))) {
            th->calls[k] = th->calls[k - 1];
            k--;
        }
        longest_call *c = &th->calls[k];
        c->ev = *e;
        c->open = open;
        c->root = UINT32_MAX;
        for (int a = 0; a < AROUND; a++)
            c->around[a] = UINT32_MAX;
    }
    return 0;
}

/* Pass 2: the calls around the kept ones. */
static int find_around(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n)
{
    (void)open;
    longest_scan *s = ctx;
    longest_thread *th = thread_of(s, tid);
    for (uint32_t i = 0; i < n; i++) {
        const hs_tl_rec *e = &ev[i];
        for (uint32_t k = 0; k < th->n; k++) {
            longest_call *c = &th->calls[k];
            if (e->depth >= c->ev.depth || e->t0 > c->ev.t0 || e->t1 < c->ev.t1)
                continue;
            uint32_t up = c->ev.depth - e->depth;   /* 1: its caller */
            uint32_t f = s->t->func_map[e->func];
            if (up <= AROUND)
                c->around[up - 1] = f;
            else if (e->depth == 0)
                c->root = f;
        }
    }
    return 0;
}

static void put_function(const hs_profile *p, uint32_t f, FILE *out)
{
    if (f == UINT32_MAX)
        fputc('?', out);   /* not on the timeline (dropped) */
    else
        fputs(hs_func_label(p, f), out);
}

static void put_call(const hs_profile *p, const longest_call *c, FILE *out)
{
    const hs_prof_timeline *t = p->timeline;
    uint32_t f = t->func_map[c->ev.func];
    double ns = t->tsc_hz > 0 ? (double)c->ev.ticks * 1e9 / t->tsc_hz : 0;
    char dur[32];
    hs_fmt_duration(ns, dur, sizeof dur);
    double at = hs_timeline_us(t, c->ev.t0) / 1e6;
    fprintf(out, "  %12s %12.6f s  ", dur, at > 0 ? at : 0);
    char name[512];
    snprintf(name, sizeof name, "%s (%s)%s", hs_func_label(p, f), p->modules[p->funcs[f].module].name,
             c->open ? " [open at the end]" : "");
    fprintf(out, "%-40s", name);
    uint32_t depth = c->ev.depth;
    if (!depth) {
        fputs("  (outermost)\n", out);
        return;
    }
    fputs("  under ", out);
    uint32_t shown = depth < AROUND ? depth : AROUND;
    if (depth > AROUND) {
        put_function(p, c->root, out);
        fputs(depth > AROUND + 1 ? " > .. > " : " > ", out);
    }
    for (uint32_t a = shown; a > 0; a--) {
        put_function(p, c->around[a - 1], out);
        if (a > 1)
            fputs(" > ", out);
    }
    fputc('\n', out);
}

int hs_write_txt_longest(const hs_profile *p, uint32_t top, FILE *out)
{
    uint32_t shown = top && top < LONGEST ? top : LONGEST;
    const hs_prof_timeline *t = p->timeline;
    if (!t)
        return 0;
    longest_scan s = { t, NULL, 0 };
    char err[400] = "";   /* (a writer's own failure sets none: said by the caller) */
    if (hs_timeline_read(t, p->nfuncs, keep_longest, &s, NULL, err, sizeof err) != 0 ||
        hs_timeline_read(t, p->nfuncs, find_around, &s, NULL, err, sizeof err) != 0) {
        if (err[0])
            hs_err("%s", err);
        free(s.threads);
        return -1;
    }
    bool any = false;
    for (size_t i = 0; i < s.nthreads; i++)
        any |= s.threads[i].n > 0;
    if (any) {
        fprintf(out, "\nlongest calls, per thread (--timeline: each call's time as --time counts it, when it began "
                     "(seconds from the timeline's start, which is hookscope's and comes before the target's), the "
                     "calls it ran under)\n");
        fprintf(out, "  %12s %14s  %-40s\n", "time", "began", "function (module)");
    }
    for (size_t i = 0; i < s.nthreads; i++) {
        const longest_thread *th = &s.threads[i];
        if (!th->n)
            continue;
        fprintf(out, "thread %u", th->tid);
        for (size_t j = 0; j < t->nthreads; j++) {
            const hs_prof_tl_thread *x = &t->threads[j];
            uint64_t dropped = x->dropped_buffer + x->dropped_file;
            if (x->tid == th->tid && dropped)
                fprintf(out, " (%llu of its calls were dropped: longer ones may be among them)",
                        (unsigned long long)dropped);
        }
        fputc('\n', out);
        for (uint32_t k = 0; k < th->n && k < shown; k++)
            put_call(p, &th->calls[k], out);
    }
    free(s.threads);
    return ferror(out) ? -1 : 0;
}
