/*
 * injector/output/trace_json.c - trace.json: the timeline (--timeline) in
 * the Chrome trace event format, which Perfetto, chrome://tracing and
 * speedscope's importer open.
 *
 * One process (process_name metadata), one track per thread (thread_name
 * metadata), and every call the timeline kept as a complete event ("X")
 * with its start and duration in microseconds from the run's start, its
 * function as the name and its module as the category. Start and end are
 * each rounded to the nanosecond first, so a call nests inside its caller
 * exactly as the clock saw it: a call's extent on the wall clock, where
 * --time's durations take out hookscope's own slow paths inside it (entry
 * stacks, a new edge). Complete events carry no args: speedscope's
 * importer tells frames apart by name and args together, so args that
 * differ from call to call would make every call a frame of its own (the
 * depth is in the nesting, and in timeline.bin). Calls a thread dropped (a full buffer, the file's size
 * limit) are one instant event ("i") on its track at the first of them,
 * with their count and time range: a gap in a track is never silent.
 * Each sample the sampler took with its time is an instant event on its
 * thread's track, named by its leaf frame, with its whole stack (root
 * first, "module!function" frames) in args.stack: read while the thread
 * was stopped, on the performance counter, which the run read together
 * with the TSC at its start (report.json: qpc_start, tsc_start), so a
 * sample stands inside the calls it interrupted. A sample in hookscope's
 * own code (category "hookscope-sample") is "hookscope serving F", F the
 * hooked function that code served (its stack's leaf, there as
 * "hookscope serving module!F"): F's call may not have begun (the entry
 * probe runs before the call is timed) or may have ended, and a sample
 * named F would stand outside every call of F.
 * Events come in the file's order (per thread, as the calls ended, then
 * the calls still open at the end, up to the end), which the format
 * allows for complete events; the threads' names after them.
 *
 * At most HS_TRACE_VIEW_CALLS calls, the longest (speedscope's app takes
 * minutes to import five times as many; hs_timeline_longest): the whole run stays in
 * view, and a call kept has its callers kept. What a cut leaves out is
 * said three times: the file's otherData (calls, kept, left out, and
 * which were kept), each thread's name ("thread N (M shorter calls left
 * out)", which Perfetto and speedscope show), and an instant event at the
 * thread's start with its figures.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "hook/base/util.h"
#include "injector/output/format.h"
#include "injector/output/writers.h"

typedef struct trace_out {
    const hs_profile *p;
    FILE *out;
    bool first;
    hs_tl_longest keep;          /* the calls kept; the others left out, */
    uint64_t *left;              /* these many of each timeline thread's */
    size_t at;                   /* the thread (its index) of the last block */
} trace_out;

static void sep(trace_out *o)
{
    fputs(o->first ? "\n" : ",\n", o->out);
    o->first = false;
}

static void ns_as_us(FILE *out, uint64_t ns)
{
    fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static int put_events(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n)
{
    (void)open;   /* (shown as any call, up to the end: report.json counts them) */
    trace_out *o = ctx;
    const hs_prof_timeline *t = o->p->timeline;
    /* (a thread the profile does not list: the spare count at nthreads) */
    if (o->at >= t->nthreads || t->threads[o->at].tid != tid)
        for (o->at = 0; o->at < t->nthreads && t->threads[o->at].tid != tid;)
            o->at++;
    for (uint32_t i = 0; i < n; i++) {
        const hs_tl_rec *e = &ev[i];
        if (!hs_tl_longest_keeps(&o->keep, e)) {
            o->left[o->at]++;
            continue;
        }
        uint32_t f = t->func_map[e->func];
        uint64_t start = hs_timeline_ns(t, e->t0), end = hs_timeline_ns(t, e->t1);
        sep(o);
        fputs("{\"name\": ", o->out);
        hs_json_quote(o->out, hs_func_label(o->p, f));
        fputs(", \"cat\": ", o->out);
        hs_json_quote(o->out, o->p->modules[o->p->funcs[f].module].name);
        fputs(", \"ph\": \"X\", \"ts\": ", o->out);
        ns_as_us(o->out, start);
        fputs(", \"dur\": ", o->out);
        ns_as_us(o->out, end - start);
        fprintf(o->out, ", \"pid\": %u, \"tid\": %u}", o->p->pid, tid);
    }
    return ferror(o->out) ? -1 : 0;
}

/* A thread's name, with the calls the cut left out of it (0: none). */
static void thread_name(trace_out *o, uint32_t tid, uint64_t left)
{
    sep(o);
    fprintf(o->out, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %u, \"tid\": %u, \"args\": {\"name\": \"thread %u",
            o->p->pid, tid, tid);
    if (left)
        fprintf(o->out, " (%" PRIu64 " shorter calls left out)", left);
    fputs("\"}}", o->out);
}

/* The timeline's threads' names, and an instant event on each thread
 * that has calls left out. */
static void timeline_thread_names(trace_out *o)
{
    const hs_prof_timeline *t = o->p->timeline;
    for (size_t i = 0; i < t->nthreads; i++) {
        uint32_t tid = t->threads[i].tid;
        thread_name(o, tid, o->left[i]);
        if (!o->left[i])
            continue;
        sep(o);
        fprintf(o->out, "{\"name\": \"hookscope left out %" PRIu64 " calls\", \"cat\": \"hookscope\", \"ph\": \"i\", "
                        "\"s\": \"t\", \"ts\": 0.000, \"pid\": %u, \"tid\": %u, \"args\": {\"left_out\": %" PRIu64
                        ", \"run_calls\": %" PRIu64 ", \"run_calls_kept\": %" PRIu64 "}}",
                o->left[i], o->p->pid, tid, o->left[i], o->keep.total, o->keep.kept);
    }
}

/* Names for the threads that have samples and no calls. */
static void sampled_thread_names(trace_out *o)
{
    const hs_prof_timeline *t = o->p->timeline;
    uint32_t *named = hs_xcalloc(t->nthreads + t->nsamples + 1, sizeof *named);
    size_t n = 0;
    for (size_t i = 0; i < t->nthreads; i++)
        named[n++] = t->threads[i].tid;
    for (size_t i = 0; i < t->nsamples; i++) {
        uint32_t tid = o->p->stacks[t->samples[i].stack].tid;
        size_t k = 0;
        while (k < n && named[k] != tid)
            k++;
        if (k == n) {
            named[n++] = tid;
            thread_name(o, tid, 0);
        }
    }
    free(named);
}

/* Frame f of a sample's stack as text (with_module: "module!function");
 * the leaf of a sample in hookscope's own code is "hookscope serving"
 * the function. */
static const char *sample_frame(const hs_profile *p, const hs_prof_stack *st, uint32_t f, bool with_module,
                                char *buf, size_t len)
{
    char name[600];
    if (f || st->kind != HS_STACK_HOOKSCOPE)
        return hs_loc_format(p, st->frames[f], with_module, false, buf, len);
    snprintf(buf, len, "hookscope serving %s", hs_loc_format(p, st->frames[0], with_module, false, name, sizeof name));
    return buf;
}

/* The samples, as instant events. */
static void put_samples(trace_out *o)
{
    const hs_prof_timeline *t = o->p->timeline;
    char buf[640];
    for (size_t i = 0; i < t->nsamples; i++) {
        const hs_prof_stack *st = &o->p->stacks[t->samples[i].stack];
        if (!st->nframes)
            continue;
        /* a sample in hookscope's own code (its probes, the wrapper) is its
         * cost, for the hooked function it served */
        bool own = st->kind == HS_STACK_HOOKSCOPE;
        sep(o);
        fputs("{\"name\": ", o->out);
        hs_json_quote(o->out, sample_frame(o->p, st, 0, false, buf, sizeof buf));
        fprintf(o->out, ", \"cat\": \"%s\", \"ph\": \"i\", \"s\": \"t\", \"ts\": ", own ? "hookscope-sample" : "sample");
        ns_as_us(o->out, hs_timeline_qpc_ns(t, t->samples[i].qpc));
        fprintf(o->out, ", \"pid\": %u, \"tid\": %u, \"args\": {\"stack\": [", o->p->pid, st->tid);
        for (uint32_t f = st->nframes; f-- > 0;) {
            hs_json_quote(o->out, sample_frame(o->p, st, f, true, buf, sizeof buf));
            if (f)
                fputs(", ", o->out);
        }
        fputs("]}}", o->out);
    }
}

int hs_write_trace_json(const hs_profile *p, FILE *out)
{
    const hs_prof_timeline *t = p->timeline;
    trace_out o = { .p = p, .out = out, .first = true };
    char err[400] = "";   /* (a writer's own failure sets none: said by the caller) */
    if (t) {
        hs_prof_tl_thread sum = hs_timeline_totals(t);
        if (sum.events + sum.open > HS_TRACE_VIEW_CALLS &&
            hs_timeline_longest(t, p->nfuncs, HS_TRACE_VIEW_CALLS, &o.keep, err, sizeof err)) {
            if (err[0])
                hs_err("%s", err);
            return -1;
        }
        o.left = hs_xcalloc(t->nthreads + 1, sizeof *o.left);
    }
    fputs("{\"displayTimeUnit\": \"ns\", ", out);
    if (o.keep.kept < o.keep.total) {
        char kept[300];
        fprintf(out, "\"otherData\": {\"calls\": %" PRIu64 ", \"calls_kept\": %" PRIu64 ", \"calls_left_out\": %" PRIu64
                     ", \"kept\": \"%s\", \"left_out\": \"the other calls, shorter: the file keeps the longest "
                     "(speedscope takes minutes to import more); timeline.bin has them all\"},\n ",
                o.keep.total, o.keep.kept, o.keep.total - o.keep.kept, hs_fmt_longest_kept(t, &o.keep, kept, sizeof kept));
    }
    fputs("\"traceEvents\": [", out);
    sep(&o);
    fprintf(out, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %u, \"tid\": 0, \"args\": {\"name\": ", p->pid);
    hs_json_quote(out, p->target_path ? hs_basename(p->target_path) : "target");
    fputs("}}", out);
    if (!t) {   /* a run without --timeline (the writer table offers it only with one) */
        fputs("\n]}\n", out);
        return ferror(out) ? -1 : 0;
    }
    for (size_t i = 0; i < t->nthreads; i++) {
        const hs_prof_tl_thread *th = &t->threads[i];
        uint64_t dropped = th->dropped_buffer + th->dropped_file;
        if (!dropped)
            continue;
        sep(&o);
        fprintf(out, "{\"name\": \"hookscope dropped %" PRIu64 " calls\", \"cat\": \"hookscope\", \"ph\": \"i\", "
                     "\"s\": \"t\", \"ts\": ", dropped);
        ns_as_us(out, hs_timeline_ns(t, th->drop_first));
        fprintf(out, ", \"pid\": %u, \"tid\": %u, \"args\": {\"dropped\": %" PRIu64 ", \"buffer_full\": %" PRIu64
                     ", \"file_full\": %" PRIu64 ", \"from_us\": ",
                p->pid, th->tid, dropped, th->dropped_buffer, th->dropped_file);
        ns_as_us(out, hs_timeline_ns(t, th->drop_first));
        fputs(", \"to_us\": ", out);
        ns_as_us(out, hs_timeline_ns(t, th->drop_last));
        fputs("}}", out);
    }
    sampled_thread_names(&o);
    put_samples(&o);
    if (hs_timeline_read(t, p->nfuncs, put_events, &o, NULL, err, sizeof err) != 0) {
        if (err[0])
            hs_err("%s", err);
        free(o.left);
        return -1;
    }
    timeline_thread_names(&o);
    free(o.left);
    fputs("\n]}\n", out);
    return ferror(out) ? -1 : 0;
}
