/*
 * injector/output/firefox.c - profile.firefox.json: the run for the
 * Firefox Profiler (profiler.firefox.com), in its Gecko profile format,
 * version 24: the version its own `perf script` importer writes, which
 * the profiler upgrades on loading (the tables as firefox-devtools/
 * profiler src/types/gecko-profile.ts describes them, with the frame
 * table's `optimizations` column that version 27 dropped). Names come
 * presymbolicated: a frame's location is "function (in module)", which
 * the profiler splits into a function and its library.
 *
 *   {"meta": {"version": 24, "interval": <ms between samples>, "startTime": 0,
 *             "product": "hookscope", "categories": [...], "markerSchema": [...], ...},
 *    "libs": [], "pausedRanges": [], "processes": [],
 *    "threads": [{"name": "thread 1234", "tid": 1234, "pid": ..., "samples": {...},
 *                 "markers": {...}, "stackTable": {...}, "frameTable": {...},
 *                 "stringTable": [...]}, ...]}
 *
 * One thread per thread of the run with samples or timed calls, by id.
 * Times are milliseconds from the run's start (startTime 0: a run keeps
 * no date, and `report DIR` writes the file again byte for byte).
 *
 * samples: {stack, time, responsiveness (0)}, sorted by time: with
 * --timeline each sample the sampler took, at its time. The frames of a
 * sample's stack carry its thread's state as their category (Running: a
 * CPU sample; Waiting, in a system call; Ready, runnable and not running;
 * hookscope: hookscope's own code in the target, its leaf "hookscope
 * serving F" for the hooked function F it served: F's call may not have
 * begun, the entry probe runs before it is timed), so the activity graph and the call tree show the
 * states, each sample's as the sampler counted it. Without --timeline
 * samples have no times: each stack's samples follow one another an
 * interval apart, in the profile's order of stacks (the call tree and the
 * flame graph are exact, the order in time is not), and an instant marker
 * at 0 on each thread says so. A timeline that kept no sample's time has
 * its calls and no samples, and a marker saying so.
 *
 * markers: every call the timeline kept, an interval marker (phase 1)
 * named by its function, from its start to its end (each rounded to the
 * nanosecond, as trace.json's), of category "Hooked call", with data
 * {type "HookedCall", module, time: --time's duration of the call
 * (hookscope's own slow paths inside it taken out), self: that time less
 * the times of the calls it made that the timeline kept (a call the
 * filters left out stays in its caller's self time), depth}. The calls
 * still open at the end last up to it. Calls a thread dropped are one
 * instant marker at the first of them with their count. At most
 * HS_TIMELINE_VIEW_CALLS calls, the first to begin (a browser opens no
 * larger file): the calls left out of a thread are one instant marker,
 * where they begin (their time still counts in their callers' self time).
 *
 * A call's self time is found as the events come (per thread, in the
 * order the calls ended: a call after the calls it made): each depth
 * keeps the sum of the calls that ended at it and have no caller yet.
 * Where calls were dropped, the self times around them are not exact: a
 * dropped call's time stays in its caller's self time, and a call whose
 * caller was dropped can be taken for a call made by the next one at the
 * caller's depth (report.txt and report.json say how many were dropped).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"
#include "injector/output/format.h"
#include "injector/output/stackset.h"
#include "injector/output/writers.h"

/* meta.categories, in this order */
enum { CAT_OTHER, CAT_RUNNING, CAT_WAITING, CAT_READY, CAT_HOOKSCOPE, CAT_CALL };
static const char *const categories[][2] = {
    { "Other", "grey" },  { "Running", "green" },    { "Waiting", "blue" },
    { "Ready", "orange" }, { "hookscope", "purple" }, { "Hooked call", "yellow" },
};

static int category_of(int kind)
{
    switch (kind) {
    case HS_STACK_CPU: return CAT_RUNNING;
    case HS_STACK_WAIT: return CAT_WAITING;
    case HS_STACK_READY: return CAT_READY;
    case HS_STACK_HOOKSCOPE: return CAT_HOOKSCOPE;
    default: return CAT_OTHER;
    }
}

static bool is_sampled(int kind)
{
    return kind == HS_STACK_CPU || kind == HS_STACK_WAIT || kind == HS_STACK_READY || kind == HS_STACK_HOOKSCOPE;
}

/* Calls that ended at one depth and wait for their caller: the first's
 * start, the sum of their --time ticks. */
typedef struct pending {
    uint64_t t0, ticks;
    uint32_t depth;
} pending;

/* The tables of the thread being written. */
typedef struct ff_thread {
    hs_strtab strings;
    hs_map rows;                 /* (frame key index, category) -> frame row */
    uint32_t *row_loc;           /* per row: its location in strings */
    uint8_t *row_cat;
    size_t nrows, row_loc_cap, row_cat_cap;
    hs_map stacks;               /* (prefix + 1, row) -> stack */
    uint32_t *st_prefix;         /* per stack: UINT32_MAX for a root */
    uint32_t *st_row;
    size_t nstacks, st_prefix_cap, st_row_cap;
    hs_map of_stack;             /* (the profile's stack, 0) -> stack */
    pending *pend;
    size_t npend, pend_cap;
    bool first_marker;
    uint64_t left;               /* calls left out (beginning at or after the cut) */
} ff_thread;

typedef struct ff_out {
    const hs_profile *p;
    FILE *out;
    hs_frametab keys;            /* the frames of every stack, as functions (hs_frame_key) */
    ff_thread th;
    uint64_t cut, kept, total;   /* calls beginning at or after cut (rdtsc) are left out */
    bool sampled;                /* the profile has samples */
} ff_out;

static void thread_reset(ff_thread *th)
{
    hs_strtab_free(&th->strings);
    hs_map_free(&th->rows);
    hs_map_free(&th->stacks);
    hs_map_free(&th->of_stack);
    free(th->row_loc);
    free(th->row_cat);
    free(th->st_prefix);
    free(th->st_row);
    free(th->pend);
    memset(th, 0, sizeof *th);
}

/* The frame row of a frame key in a category (added when new); serving:
 * the leaf of a sample in hookscope's own code, "hookscope serving" the
 * hooked function (whose call may not have begun, or may have ended). */
static uint32_t frame_row(ff_out *o, hs_loc key, int cat, bool serving)
{
    ff_thread *th = &o->th;
    uint32_t k = hs_frametab_add(&o->keys, key);
    uint32_t row = hs_map_get(&th->rows, k, (uint64_t)cat | (uint64_t)serving << 8);
    if (row != HS_MAP_NONE)
        return row;
    char name[600], loc[840];
    hs_loc_format(o->p, key, false, false, name, sizeof name);
    int32_t m = hs_loc_module(o->p, key);
    const char *own = serving ? "hookscope serving " : "";
    if (m >= 0)
        snprintf(loc, sizeof loc, "%s%s (in %s)", own, name, o->p->modules[m].name);
    else
        snprintf(loc, sizeof loc, "%s%s", own, name);
    row = (uint32_t)th->nrows++;
    hs_xgrow(&th->row_loc, &th->row_loc_cap, th->nrows, sizeof *th->row_loc);
    hs_xgrow(&th->row_cat, &th->row_cat_cap, th->nrows, sizeof *th->row_cat);
    th->row_loc[row] = hs_strtab_add(&th->strings, loc);
    th->row_cat[row] = (uint8_t)cat;
    hs_map_xput(&th->rows, k, (uint64_t)cat | (uint64_t)serving << 8, row);
    return row;
}

/* The thread's stack of the profile's stack s (added when new, with its
 * prefixes: a prefix always comes before the stacks that extend it). */
static uint32_t stack_of(ff_out *o, uint32_t s)
{
    ff_thread *th = &o->th;
    uint32_t have = hs_map_get(&th->of_stack, s, 0);
    if (have != HS_MAP_NONE)
        return have;
    const hs_prof_stack *st = &o->p->stacks[s];
    int cat = category_of(st->kind);
    uint32_t prefix = UINT32_MAX;
    for (uint32_t d = st->nframes; d-- > 0;) {
        uint32_t row = frame_row(o, hs_frame_key(st->frames[d]), cat, !d && st->kind == HS_STACK_HOOKSCOPE);
        uint32_t next = hs_map_get(&th->stacks, (uint64_t)prefix + 1, row);
        if (next == HS_MAP_NONE) {
            next = (uint32_t)th->nstacks++;
            hs_xgrow(&th->st_prefix, &th->st_prefix_cap, th->nstacks, sizeof *th->st_prefix);
            hs_xgrow(&th->st_row, &th->st_row_cap, th->nstacks, sizeof *th->st_row);
            th->st_prefix[next] = prefix;
            th->st_row[next] = row;
            hs_map_xput(&th->stacks, (uint64_t)prefix + 1, row, next);
        }
        prefix = next;
    }
    hs_map_xput(&th->of_stack, s, 0, prefix);
    return prefix;
}

/* Nanoseconds as milliseconds, exactly. */
static void ns_as_ms(FILE *out, uint64_t ns)
{
    fprintf(out, "%" PRIu64 ".%06u", ns / 1000000, (unsigned)(ns % 1000000));
}

/* ---- samples ---------------------------------------------------------------- */

/* A sample of the timeline: its thread, time and index (the order taken). */
typedef struct timed_sample {
    uint32_t tid;
    uint32_t stack;
    uint64_t ns;
    size_t at;
} timed_sample;

static int cmp_timed(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const timed_sample *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

static void sample_row(ff_out *o, bool *first, uint32_t stack, uint64_t ns)
{
    fputs(*first ? "\n    [" : ",\n    [", o->out);
    *first = false;
    if (o->p->stacks[stack].nframes)
        fprintf(o->out, "%u", stack_of(o, stack));
    else
        fputs("null", o->out);
    fputs(", ", o->out);
    ns_as_ms(o->out, ns);
    fputs(", 0]", o->out);
}

/* The thread's samples: from the timeline's (sorted, *at: the first of
 * this thread's), or without times from the counts of its stacks. */
static void put_samples(ff_out *o, uint32_t tid, const timed_sample *ts, size_t nts, size_t *at, uint64_t interval_ns)
{
    fputs(",\n   \"samples\": {\"schema\": {\"stack\": 0, \"time\": 1, \"responsiveness\": 2}, \"data\": [", o->out);
    bool first = true;
    if (o->p->timeline) {
        for (; *at < nts && ts[*at].tid == tid; ++*at)
            sample_row(o, &first, ts[*at].stack, ts[*at].ns);
    } else {
        uint64_t k = 0;
        for (size_t s = 0; s < o->p->nstacks; s++) {
            const hs_prof_stack *st = &o->p->stacks[s];
            if (!is_sampled(st->kind) || st->tid != tid)
                continue;
            for (uint64_t i = 0; i < st->count; i++)
                sample_row(o, &first, (uint32_t)s, k++ * interval_ns);
        }
    }
    fputs("]}", o->out);
}

/* ---- markers ---------------------------------------------------------------- */

/* A marker's first fields: its name (a function without one: "") and start. */
static void marker_open(ff_out *o, const char *name, uint64_t start_ns)
{
    fputs(o->th.first_marker ? "\n    [" : ",\n    [", o->out);
    o->th.first_marker = false;
    fprintf(o->out, "%u, ", hs_strtab_add(&o->th.strings, name ? name : ""));
    ns_as_ms(o->out, start_ns);
}

/* An instant marker of hookscope's own with a line of text. */
static void note(ff_out *o, const char *name, uint64_t at_ns, const char *text)
{
    marker_open(o, name, at_ns);
    fprintf(o->out, ", null, 0, %d, {\"type\": \"HookscopeNote\", \"text\": ", CAT_OTHER);
    hs_json_quote(o->out, text);
    fputs("}]", o->out);
}

/* The self ticks of call e (its ticks less those of the calls it made,
 * pending at the depth below), and e pending at its own depth. */
static uint64_t self_ticks(ff_thread *th, const hs_tl_rec *e)
{
    uint64_t kids = 0;
    while (th->npend && th->pend[th->npend - 1].depth > e->depth && th->pend[th->npend - 1].t0 >= e->t0) {
        const pending *k = &th->pend[--th->npend];
        if (k->depth == e->depth + 1)
            kids += k->ticks;
    }
    /* deeper calls left that began before this one had a caller the
     * timeline dropped: no call to come made them */
    while (th->npend && th->pend[th->npend - 1].depth > e->depth)
        th->npend--;
    pending *top = th->npend ? &th->pend[th->npend - 1] : NULL;
    if (top && top->depth == e->depth) {
        top->ticks += e->ticks;   /* (its t0, the first's, stays) */
    } else {
        hs_xgrow(&th->pend, &th->pend_cap, th->npend + 1, sizeof *th->pend);
        th->pend[th->npend++] = (pending){ e->t0, e->ticks, e->depth };
    }
    return e->ticks > kids ? e->ticks - kids : 0;
}

static int cmp_deeper_first(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint32_t x = ((const hs_tl_rec *)a)->depth, y = ((const hs_tl_rec *)b)->depth;
    return x > y ? -1 : x < y;
}

static int put_calls(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n)
{
    (void)tid;
    ff_out *o = ctx;
    const hs_profile *p = o->p;
    const hs_prof_timeline *t = p->timeline;
    hs_tl_rec *sorted = NULL;
    if (open) {
        /* the calls open at the end all end there: the innermost first,
         * as calls end */
        sorted = hs_xmalloc((size_t)n * sizeof *sorted);
        memcpy(sorted, ev, (size_t)n * sizeof *sorted);
        hs_sort(sorted, n, sizeof *sorted, cmp_deeper_first, NULL);
        ev = sorted;
    }
    for (uint32_t i = 0; i < n; i++) {
        const hs_tl_rec *e = &ev[i];
        uint32_t f = t->func_map[e->func];
        uint64_t self = self_ticks(&o->th, e);
        if (e->t0 >= o->cut) {
            o->th.left++;
            continue;
        }
        marker_open(o, hs_func_label(p, f), hs_timeline_ns(t, e->t0));
        fputs(", ", o->out);
        ns_as_ms(o->out, hs_timeline_ns(t, e->t1));
        fprintf(o->out, ", 1, %d, {\"type\": \"HookedCall\", \"module\": ", CAT_CALL);
        hs_json_quote(o->out, p->modules[p->funcs[f].module].name);
        fputs(", \"time\": ", o->out);
        ns_as_ms(o->out, hs_timeline_ticks_ns(t, e->ticks));
        fputs(", \"self\": ", o->out);
        ns_as_ms(o->out, hs_timeline_ticks_ns(t, self));
        fprintf(o->out, ", \"depth\": %u}]", e->depth);
    }
    free(sorted);
    return ferror(o->out) ? -1 : 0;
}

static int put_markers(ff_out *o, uint32_t tid)
{
    const hs_prof_timeline *t = o->p->timeline;
    fputs(",\n   \"markers\": {\"schema\": {\"name\": 0, \"startTime\": 1, \"endTime\": 2, \"phase\": 3, "
          "\"category\": 4, \"data\": 5}, \"data\": [",
          o->out);
    o->th.first_marker = true;
    if (!t) {
        if (o->p->sampling.on)
            note(o, "samples without times", 0,
                 "a run without --timeline keeps no sample's time: each stack's samples follow one another an "
                 "interval apart (call tree and flame graph exact, the order in time not)");
        fputs("]}", o->out);
        return 0;
    }
    if (!t->nsamples && o->sampled)
        note(o, "samples without times", 0,
             "the timeline kept no sample's time: the samples are in the other outputs");
    for (size_t i = 0; i < t->nthreads; i++) {
        const hs_prof_tl_thread *th = &t->threads[i];
        uint64_t dropped = th->dropped_buffer + th->dropped_file;
        if (th->tid != tid || !dropped)
            continue;
        char name[96], text[200];
        snprintf(name, sizeof name, "hookscope dropped %" PRIu64 " calls", dropped);
        snprintf(text, sizeof text, "%" PRIu64 " calls of this thread are not on the timeline (%" PRIu64
                 " for a full buffer, %" PRIu64 " past --timeline-max), from here to %.3f ms",
                 dropped, th->dropped_buffer, th->dropped_file, (double)hs_timeline_ns(t, th->drop_last) / 1e6);
        note(o, name, hs_timeline_ns(t, th->drop_first), text);
    }
    char err[400] = "";   /* (a writer's own failure sets none: said by the caller) */
    if (hs_timeline_read_thread(t, o->p->nfuncs, tid, put_calls, o, NULL, err, sizeof err) != 0) {
        if (err[0])
            hs_err("%s", err);
        return -1;
    }
    if (o->th.left) {
        char name[96], text[400];
        double at_ms = (double)hs_timeline_ns(t, o->cut) / 1e6;
        snprintf(name, sizeof name, "hookscope left out %" PRIu64 " calls", o->th.left);
        snprintf(text, sizeof text, "the calls of this thread that begin from %.3f ms on are not in this file, which "
                 "holds the first %" PRIu64 " of the run's %" PRIu64 " calls (a browser opens no larger one); "
                 "timeline.bin holds them all (trace.json the longest of the run's calls)", at_ms, o->kept, o->total);
        note(o, name, hs_timeline_ns(t, o->cut), text);
    }
    fputs("]}", o->out);
    return 0;
}

/* ---- the tables and the file ------------------------------------------------ */

static void put_tables(ff_out *o)
{
    ff_thread *th = &o->th;
    FILE *out = o->out;
    fputs(",\n   \"stackTable\": {\"schema\": {\"prefix\": 0, \"frame\": 1}, \"data\": [", out);
    for (size_t i = 0; i < th->nstacks; i++) {
        fputs(i ? ", [" : "[", out);
        if (th->st_prefix[i] == UINT32_MAX)
            fputs("null", out);
        else
            fprintf(out, "%u", th->st_prefix[i]);
        fprintf(out, ", %u]", th->st_row[i]);
    }
    fputs("]},\n   \"frameTable\": {\"schema\": {\"location\": 0, \"relevantForJS\": 1, \"innerWindowID\": 2, "
          "\"implementation\": 3, \"optimizations\": 4, \"line\": 5, \"column\": 6, \"category\": 7, "
          "\"subcategory\": 8}, \"data\": [",
          out);
    for (size_t i = 0; i < th->nrows; i++)
        fprintf(out, "%s[%u, false, 0, null, null, null, null, %u, 0]", i ? ", " : "", th->row_loc[i],
                th->row_cat[i]);
    fputs("]},\n   \"stringTable\": [", out);
    for (size_t i = 0; i < th->strings.n; i++) {
        if (i)
            fputs(", ", out);
        hs_json_quote(out, th->strings.v[i]);
    }
    fputs("]}", out);
}

static bool has_samples(const hs_profile *p)
{
    for (size_t i = 0; i < p->nstacks; i++)
        if (is_sampled(p->stacks[i].kind) && p->stacks[i].count)
            return true;
    return false;
}

bool hs_firefox_wanted(const hs_profile *p)
{
    return p->timeline || has_samples(p);
}

/* The threads: those of the timeline and those with samples, by id. */
static uint32_t *thread_ids(const hs_profile *p, size_t *n)
{
    size_t cap = p->nstacks + (p->timeline ? p->timeline->nthreads : 0) + 1, k = 0;
    uint32_t *v = hs_xcalloc(cap, sizeof *v);
    for (size_t i = 0; p->timeline && i < p->timeline->nthreads; i++)
        v[k++] = p->timeline->threads[i].tid;
    for (size_t i = 0; i < p->nstacks; i++)
        if (is_sampled(p->stacks[i].kind))
            v[k++] = p->stacks[i].tid;
    *n = hs_u32_sort_unique(v, k);
    return v;
}

static void put_meta(const hs_profile *p, FILE *out)
{
    fputs("{\"meta\": {\"version\": 24, \"interval\": ", out);
    if (p->sampling.rate_hz > 0)
        fprintf(out, "%.9g", 1000.0 / p->sampling.rate_hz);
    else
        fputs("1", out);
    fputs(", \"startTime\": 0, \"shutdownTime\": null, \"processType\": 0, \"product\": \"hookscope\", "
          "\"stackwalk\": 1, \"debug\": 0, \"gcpoison\": 0, \"asyncstack\": 0, \"presymbolicated\": true,\n"
          "  \"categories\": [",
          out);
    for (size_t i = 0; i < sizeof categories / sizeof categories[0]; i++)
        fprintf(out, "%s{\"name\": \"%s\", \"color\": \"%s\", \"subcategories\": [\"Other\"]}", i ? ", " : "",
                categories[i][0], categories[i][1]);
    fputs("],\n  \"markerSchema\": ["
          "{\"name\": \"HookedCall\", \"tooltipLabel\": \"{marker.name}\", "
          "\"tableLabel\": \"{marker.name} ({marker.data.module})\", \"chartLabel\": \"{marker.name}\", "
          "\"display\": [\"marker-chart\", \"marker-table\"], \"data\": ["
          "{\"key\": \"module\", \"label\": \"Module\", \"format\": \"string\", \"searchable\": true}, "
          "{\"key\": \"time\", \"label\": \"Time (--time)\", \"format\": \"duration\"}, "
          "{\"key\": \"self\", \"label\": \"Self time\", \"format\": \"duration\"}, "
          "{\"key\": \"depth\", \"label\": \"Depth\", \"format\": \"integer\"}]},\n"
          "   {\"name\": \"HookscopeNote\", \"tableLabel\": \"{marker.name}: {marker.data.text}\", "
          "\"display\": [\"marker-chart\", \"marker-table\"], \"data\": ["
          "{\"key\": \"text\", \"label\": \"Note\", \"format\": \"string\"}]}]},\n"
          " \"libs\": [], \"pausedRanges\": [], \"processes\": [],\n \"threads\": [",
          out);
}

int hs_write_firefox(const hs_profile *p, FILE *out)
{
    ff_out o = { .p = p, .out = out, .cut = UINT64_MAX, .sampled = has_samples(p) };
    const hs_prof_timeline *t = p->timeline;
    char err[400] = "";   /* (a writer's own failure sets none: said by the caller) */
    if (t && hs_timeline_cutoff(t, p->nfuncs, HS_TIMELINE_VIEW_CALLS, &o.cut, &o.kept, &o.total, err, sizeof err)) {
        if (err[0])
            hs_err("%s", err);
        return -1;
    }
    size_t nts = 0, at = 0, ntids;
    timed_sample *ts = NULL;
    if (t) {
        ts = hs_xcalloc(t->nsamples + 1, sizeof *ts);
        for (size_t i = 0; i < t->nsamples; i++) {
            uint32_t s = t->samples[i].stack;
            ts[nts++] = (timed_sample){ p->stacks[s].tid, s, hs_timeline_qpc_ns(t, t->samples[i].qpc), i };
        }
        hs_sort(ts, nts, sizeof *ts, cmp_timed, NULL);
    }
    uint64_t interval_ns = p->sampling.rate_hz > 0 ? (uint64_t)(1e9 / p->sampling.rate_hz + 0.5) : 1000000;
    uint32_t *tids = thread_ids(p, &ntids);
    const char *exe = hs_basename(p->target_path ? p->target_path : "target");
    put_meta(p, out);
    int rc = 0;
    for (size_t i = 0; i < ntids && !rc; i++) {
        fprintf(out, "%s\n  {\"name\": \"thread %u\", \"tid\": %u, \"pid\": %u, \"processType\": \"default\", "
                     "\"processName\": ",
                i ? "," : "", tids[i], tids[i], p->pid);
        hs_json_quote(out, exe);
        fputs(", \"registerTime\": 0, \"unregisterTime\": null", out);
        while (at < nts && ts[at].tid < tids[i])
            at++;
        put_samples(&o, tids[i], ts, nts, &at, interval_ns);
        rc = put_markers(&o, tids[i]);
        if (!rc)
            put_tables(&o);
        thread_reset(&o.th);
    }
    fputs("]}\n", out);
    free(tids);
    free(ts);
    hs_frametab_free(&o.keys);
    thread_reset(&o.th);
    return rc || ferror(out) ? -1 : 0;
}
