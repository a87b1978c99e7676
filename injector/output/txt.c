/*
 * injector/output/txt.c - report.txt: a header saying what was traced and
 * how it ended (with samples: how many of each kind, the sampler's own
 * cost, hookscope's own in the target); with samples, where the CPU went
 * and where threads waited (txt_cpu.c); the modules with their hook
 * statistics, and the functions sorted by calls; then, by the options of
 * the trace:
 *
 *   call graph   (edges, the default) each called function with its
 *                callers and callees and the calls on each edge, in the
 *                spirit of `uftrace graph`;
 *   time         (--time) calls, total, self, avg, min, max and unwinds per
 *                timed function, by total time, and DTrace-quantize-style
 *                histograms of the durations of the top functions;
 *   entry stacks (--stacks) the sampling policy and the most frequent
 *                stacks;
 *   threads      each thread's calls, samples of each kind and CPU time
 *                (after the samples; with `report --threads`, after the
 *                functions).
 *
 * The function table's order and column come from the sort keys beside
 * the profile (profile/views.h).
 *
 * Everything is sorted with full tie-breaks, so the same profile gives
 * the same text.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hookscope/skip.h"
#include "injector/output/format.h"
#include "injector/output/writers.h"

static void count_summary(FILE *out, const char *label, const uint32_t *counts, int n,
                          const char *(*name)(int))
{
    int any = 0;
    for (int i = 1; i < n; i++) {
        if (!counts[i])
            continue;
        fprintf(out, "%s%s %u", any ? ", " : label, name(i), counts[i]);
        any = 1;
    }
    if (any)
        fputc('\n', out);
}

/* ---- call graph ------------------------------------------------------------ */

typedef struct graph_edge {
    const hs_prof_edge *e;
    int32_t caller_func;         /* -1 when the caller is not a function */
    hs_caller_key k;
} graph_edge;

/* by calls (descending), then caller, then callee */
static int cmp_edge_calls(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const graph_edge *x = *(const graph_edge *const *)a, *y = *(const graph_edge *const *)b;
    if (x->e->calls != y->e->calls)
        return x->e->calls > y->e->calls ? -1 : 1;
    int c = hs_caller_key_cmp(&x->k, &y->k);
    if (c)
        return c;
    return x->e->callee < y->e->callee ? -1 : x->e->callee > y->e->callee;
}

/* "function" for a caller in module `home`, else "module!function" */
static void caller_label(const hs_profile *p, const graph_edge *g, uint32_t home, char *buf, size_t len)
{
    bool away = g->caller_func >= 0 && p->funcs[g->caller_func].module != home;
    hs_loc_format(p, g->e->caller, away, false, buf, len);
}

static void write_graph(const hs_profile *p, FILE *out, const uint32_t *order, size_t norder)
{
    size_t ne = p->nedges;
    graph_edge *g = hs_xcalloc(ne ? ne : 1, sizeof *g);
    graph_edge **by_calls = hs_xcalloc(ne ? ne : 1, sizeof *by_calls);
    for (size_t i = 0; i < ne; i++) {
        g[i].e = &p->edges[i];
        g[i].caller_func = p->edges[i].caller.func;
        hs_caller_key_of(p, p->edges[i].caller, &g[i].k);
        by_calls[i] = &g[i];
    }
    hs_sort(by_calls, ne, sizeof *by_calls, cmp_edge_calls, NULL);
    /* edges into each callee and out of each caller function, by calls */
    size_t nf = p->nfuncs;
    size_t *in_first = hs_xcalloc(nf + 1, sizeof *in_first);
    size_t *out_first = hs_xcalloc(nf + 1, sizeof *out_first);
    for (size_t i = 0; i < ne; i++) {
        in_first[g[i].e->callee + 1]++;
        if (g[i].caller_func >= 0)
            out_first[g[i].caller_func + 1]++;
    }
    for (size_t f = 0; f < nf; f++) {
        in_first[f + 1] += in_first[f];
        out_first[f + 1] += out_first[f];
    }
    const graph_edge **in_list = hs_xcalloc(ne ? ne : 1, sizeof *in_list);
    const graph_edge **out_list = hs_xcalloc(ne ? ne : 1, sizeof *out_list);
    size_t *in_fill = hs_xcalloc(nf + 1, sizeof *in_fill);
    size_t *out_fill = hs_xcalloc(nf + 1, sizeof *out_fill);
    for (size_t k = 0; k < ne; k++) {
        const graph_edge *x = by_calls[k];
        in_list[in_first[x->e->callee] + in_fill[x->e->callee]++] = x;
        if (x->caller_func >= 0)
            out_list[out_first[x->caller_func] + out_fill[x->caller_func]++] = x;
    }

    fprintf(out, "\ncall graph: each called function, its callers (<-) and its callees (->),\n"
                 "with the calls on each edge; callers in other modules as module!function\n");
    if (p->edges_lost)
        fprintf(out, "(%llu edge increments were lost: the edge tables were full)\n",
                (unsigned long long)p->edges_lost);
    for (size_t k = 0; k < norder; k++) {
        uint32_t fi = order[k];
        const hs_prof_func *f = &p->funcs[fi];
        fprintf(out, "\n%-48s %12llu  %s\n", hs_func_label(p, fi), (unsigned long long)f->calls,
                p->modules[f->module].name);
        uint64_t seen = 0;
        for (size_t j = in_first[fi]; j < in_first[fi + 1]; j++) {
            const graph_edge *x = in_list[j];
            char label[600];
            caller_label(p, x, f->module, label, sizeof label);
            fprintf(out, "    <- %12llu  %s\n", (unsigned long long)x->e->calls, label);
            seen += x->e->calls;
        }
        if (seen < f->calls)
            fprintf(out, "    <- %12llu  (no caller recorded)\n", (unsigned long long)(f->calls - seen));
        for (size_t j = out_first[fi]; j < out_first[fi + 1]; j++) {
            const graph_edge *x = out_list[j];
            const hs_prof_func *c = &p->funcs[x->e->callee];
            if (c->module != f->module)
                fprintf(out, "    -> %12llu  %s!%s\n", (unsigned long long)x->e->calls,
                        p->modules[c->module].name, hs_func_label(p, x->e->callee));
            else
                fprintf(out, "    -> %12llu  %s\n", (unsigned long long)x->e->calls, hs_func_label(p, x->e->callee));
        }
    }
    free(in_fill);
    free(out_fill);
    free(in_list);
    free(out_list);
    free(in_first);
    free(out_first);
    free(by_calls);
    free(g);
}

/* ---- time ------------------------------------------------------------------- */

static int cmp_total(const void *a, const void *b, void *ctx)
{
    const hs_profile *p = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const hs_prof_time *x = hs_prof_time_get(p, i), *y = hs_prof_time_get(p, j);
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    int c = strcmp(p->funcs[i].name ? p->funcs[i].name : "", p->funcs[j].name ? p->funcs[j].name : "");
    return c ? c : (i < j ? -1 : i > j);
}

#define HIST_TOP 5

/* calls of a timed function seen to enter but neither to return nor to
 * be unwound */
static uint64_t unseen_calls(const hs_profile *p, uint32_t i)
{
    const hs_prof_func *f = &p->funcs[i];
    const hs_prof_time *t = hs_prof_time_get(p, i);
    if (!f->hooked || !f->wrapped || f->calls <= t->calls + t->open)
        return 0;
    return f->calls - t->calls - t->open;
}

static int cmp_calls_desc(const void *a, const void *b, void *ctx)
{
    const hs_profile *p = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (p->funcs[x].calls != p->funcs[y].calls)
        return p->funcs[x].calls > p->funcs[y].calls ? -1 : 1;
    return strcmp(hs_func_label(p, x), hs_func_label(p, y));
}

/* The called functions with an entry probe only, by calls, each with why. */
static void write_untimed(const hs_profile *p, FILE *out, size_t untimed)
{
    if (!untimed)
        return;
    uint32_t *idx = hs_xcalloc(untimed, sizeof *idx);
    size_t n = 0;
    for (size_t i = 0; i < p->nfuncs && n < untimed; i++) {
        const hs_prof_func *f = &p->funcs[i];
        if (f->hooked && f->calls && !f->wrapped)
            idx[n++] = (uint32_t)i;
    }
    hs_sort(idx, n, sizeof *idx, cmp_calls_desc, (void *)p);
    fprintf(out, "\n%12s  %-22s %s\n", "untimed", "why", "function");
    for (size_t k = 0; k < n; k++)
        fprintf(out, "%12llu  %-22s %s\n", (unsigned long long)p->funcs[idx[k]].calls,
                hs_entry_only_name(p->funcs[idx[k]].entry_only), hs_func_label(p, idx[k]));
    free(idx);
}

/* Beside a timed function's row: the functions it called that are not
 * timed, whose time is in its self time (module!function when in another
 * module; ten at most). */
static void write_untimed_callees(const hs_profile *p, const hs_untimed_callees *u, uint32_t func, FILE *out)
{
    size_t first, n = hs_untimed_of(p, u, func, &first);
    if (!n)
        return;
    fprintf(out, "  (self includes untimed callees:");
    for (size_t j = 0; j < n; j++) {
        if (j == 10) {
            fprintf(out, " ...");
            break;
        }
        uint32_t g = p->edges[u->edge[first + j]].callee;
        if (p->funcs[g].module != p->funcs[func].module)
            fprintf(out, "%s %s!%s", j ? "," : "", p->modules[p->funcs[g].module].name, hs_func_label(p, g));
        else
            fprintf(out, "%s %s", j ? "," : "", hs_func_label(p, g));
    }
    fputc(')', out);
}

static void write_time(const hs_profile *p, FILE *out)
{
    uint32_t *idx = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *idx);
    size_t n = 0, untimed = 0, open_funcs = 0;
    uint64_t untimed_calls = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        const hs_prof_func *f = &p->funcs[i];
        const hs_prof_time *t = hs_prof_time_get(p, (uint32_t)i);
        if (!f->hooked || !f->calls)
            continue;
        if (!f->wrapped) {
            untimed++;
            untimed_calls += f->calls;
        } else if (t->calls) {
            idx[n++] = (uint32_t)i;
        }
        if (t->open)
            open_funcs++;
    }
    hs_sort(idx, n, sizeof *idx, cmp_total, (void *)p);
    hs_untimed_callees uc;
    hs_untimed_collect(p, &uc);

    fprintf(out, "\ntime: each timed function by total (inclusive) time, which counts only its\n"
                 "outermost call on a thread (a recursive call is inside it already); self = its\n"
                 "calls' time less the timed functions they called; avg, min, max: per call;\n"
                 "unwinds = calls ended by an exception or longjmp. hookscope's own slow paths\n"
                 "(entry stacks, new callers) are left out of every duration; a function's self\n"
                 "time includes its calls of functions with an entry probe only, named beside it\n");
    if (untimed)
        fprintf(out, "(%zu called functions with %llu calls had an entry probe only and are not timed)\n",
                untimed, (unsigned long long)untimed_calls);
    write_untimed(p, out, untimed);
    if (p->time_dropped)
        fprintf(out, "(%llu calls were not timed: nested too deep for the shadow stack)\n",
                (unsigned long long)p->time_dropped);
    fprintf(out, "\n%12s %11s %11s %11s %11s %11s %8s  %s\n", "calls", "total", "self", "avg", "min",
            "max", "unwinds", "function");
    for (size_t k = 0; k < n; k++) {
        const hs_prof_time *t = hs_prof_time_get(p, idx[k]);
        char a[32], b[32], c[32], d[32], e[32];
        fprintf(out, "%12llu %11s %11s %11s %11s %11s %8llu  %s", (unsigned long long)t->calls,
                hs_fmt_duration((double)t->total_ns, a, sizeof a),
                hs_fmt_duration((double)t->self_ns, b, sizeof b),
                hs_fmt_duration((double)t->sum_ns / (double)t->calls, c, sizeof c),
                hs_fmt_duration((double)t->min_ns, d, sizeof d),
                hs_fmt_duration((double)t->max_ns, e, sizeof e), (unsigned long long)t->unwinds,
                hs_func_label(p, idx[k]));
        write_untimed_callees(p, &uc, idx[k], out);
        fputc('\n', out);
    }
    hs_untimed_free(&uc);
    if (open_funcs) {
        fprintf(out, "still running when the trace ended (not in the table):");
        for (size_t i = 0, k = 0; i < p->nfuncs; i++) {
            const hs_prof_time *t = hs_prof_time_get(p, (uint32_t)i);
            if (!t->open)
                continue;
            if (k++ == 10) {
                fprintf(out, " ...");
                break;
            }
            fprintf(out, " %s (%llu)", hs_func_label(p, (uint32_t)i), (unsigned long long)t->open);
        }
        fputc('\n', out);
    }

    /* calls of timed functions seen to enter but neither to return nor to
     * be unwound: a longjmp that does not unwind (setjmp without a frame,
     * __builtin_longjmp), or calls not timed at all (no shadow stack room,
     * a thread counted in the shared overflow region) */
    uint64_t unseen = 0;
    size_t unseen_funcs = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        uint64_t u = unseen_calls(p, (uint32_t)i);
        if (u) {
            unseen += u;
            unseen_funcs++;
        }
    }
    if (unseen) {
        fprintf(out, "%llu calls of %zu timed functions were not seen to end (a longjmp that does not\n"
                     "unwind, or calls not timed):", (unsigned long long)unseen, unseen_funcs);
        for (size_t i = 0, k = 0; i < p->nfuncs; i++) {
            uint64_t u = unseen_calls(p, (uint32_t)i);
            if (!u)
                continue;
            if (k++ == 10) {
                fprintf(out, " ...");
                break;
            }
            fprintf(out, " %s (%llu)", hs_func_label(p, (uint32_t)i), (unsigned long long)u);
        }
        fputc('\n', out);
    }

    size_t top = n < HIST_TOP ? n : HIST_TOP;
    if (top) {
        fprintf(out, "\ndurations of the %zu function%s with the most total time\n", top,
                top == 1 ? "" : "s");
        for (size_t k = 0; k < top; k++) {
            const hs_prof_time *t = hs_prof_time_get(p, idx[k]);
            fprintf(out, "\n  %s  (%llu calls)\n", hs_func_label(p, idx[k]), (unsigned long long)t->calls);
            hs_fmt_quantize(out, t->hist, HS_PROF_HIST);
        }
    }
    free(idx);
}

/* ---- entry stacks ------------------------------------------------------------ */

#define STACKS_TOP 10

static int cmp_stack_count(const void *a, const void *b, void *ctx)
{
    const hs_profile *p = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const hs_prof_stack *x = &p->stacks[i], *y = &p->stacks[j];
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return i < j ? -1 : i > j;   /* the profile keeps them by function and frames */
}

static void write_stacks(const hs_profile *p, FILE *out)
{
    char policy[128];
    hs_fmt_stack_policy(p, policy, sizeof policy);
    uint64_t captures = 0;
    size_t nentry = 0;
    size_t *idx = hs_xcalloc(p->nstacks ? p->nstacks : 1, sizeof *idx);
    for (size_t i = 0; i < p->nstacks; i++) {
        if (p->stacks[i].kind != HS_STACK_ENTRY)
            continue;
        captures += p->stacks[i].count;
        idx[nentry++] = i;
    }
    fprintf(out, "\nentry stacks: up to %u frames, captured at %s\n", p->stack_depth, policy);
    fprintf(out, "%zu unique stacks, %llu captures, %llu dropped (tables full); written to\n"
                 "entry-stacks.folded (root first, for flame graphs)%s\n",
            nentry, (unsigned long long)captures, (unsigned long long)p->stacks_dropped,
            p->time_on ? ",\nand weighted by time to entry-time.folded" : "");
    hs_sort(idx, nentry, sizeof *idx, cmp_stack_count, (void *)p);
    size_t top = nentry < STACKS_TOP ? nentry : STACKS_TOP;
    if (top)
        fprintf(out, "the %zu most frequent, leaf first:\n", top);
    for (size_t k = 0; k < top; k++) {
        const hs_prof_stack *st = &p->stacks[idx[k]];
        fprintf(out, "\n%12llu  %s%s\n", (unsigned long long)st->count, hs_func_label(p, st->func),
                st->truncated ? "  (truncated)" : "");
        for (uint32_t d = 0; d < st->nframes; d++) {
            char buf[600];
            fprintf(out, "              %s", hs_loc_format(p, st->frames[d], true, true, buf, sizeof buf));
            if (st->src && st->src[d].file)
                fprintf(out, "  (%s:%u)", st->src[d].file, st->src[d].line);
            fputc('\n', out);
        }
    }
    free(idx);
}

/* ---- samples: the header's lines ------------------------------------------------ */

#define SERVED_TOP 3

/* by count (descending), then name */
static int cmp_served(const void *a, const void *b, void *ctx)
{
    const hs_profile *p = ((const void *const *)ctx)[0];
    const uint64_t *n = ((const void *const *)ctx)[1];
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    if (n[i] != n[j])
        return n[i] > n[j] ? -1 : 1;
    int c = strcmp(p->funcs[i].name ? p->funcs[i].name : "", p->funcs[j].name ? p->funcs[j].name : "");
    return c ? c : (i < j ? -1 : i > j);
}

/* The hooked functions whose hooks cost the most: hookscope's own samples
 * by the function they served. */
static void write_served(const hs_profile *p, FILE *out)
{
    uint64_t *n = hs_leaf_counts(p, HS_STACK_HOOKSCOPE);
    uint32_t *idx = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *idx);
    size_t k = 0;
    for (size_t i = 0; i < p->nfuncs; i++)
        if (n[i])
            idx[k++] = (uint32_t)i;
    const void *ctx[2] = { p, n };
    hs_sort(idx, k, sizeof *idx, cmp_served, ctx);
    if (k) {
        fprintf(out, "           spent on the hooks of");
        for (size_t r = 0; r < k && r < SERVED_TOP; r++)
            fprintf(out, "%s %s (%llu)", r ? "," : "", hs_func_label(p, idx[r]), (unsigned long long)n[idx[r]]);
        fprintf(out, "%s: stacks in hookscope-stacks.folded\n", k > SERVED_TOP ? ", ..." : "");
    }
    free(idx);
    free(n);
}

/* How many samples of each kind, the CPU time, the sampler's own cost
 * (the time it held the threads) and hookscope's in the target, with the
 * hooked functions it served most. */
static void write_sampling(const hs_profile *p, FILE *out)
{
    const hs_prof_sampling *sm = &p->sampling;
    char states[80];
    if (sm->off_cpu_unknown)
        snprintf(states, sizeof states, "ready and wait unknown (no context switches)");
    else
        snprintf(states, sizeof states, "%llu ready, %llu wait", (unsigned long long)sm->ready_samples,
                 (unsigned long long)sm->wait_samples);
    fprintf(out, "samples    %llu CPU, %s, %llu in hookscope (%s sampler, %g Hz, %u thread%s, %llu lost)\n",
            (unsigned long long)sm->samples, states, (unsigned long long)sm->hookscope_samples, sm->backend,
            sm->rate_hz, sm->threads, sm->threads == 1 ? "" : "s", (unsigned long long)sm->lost);
    if (sm->off_cpu_unknown)
        fprintf(out, "off cpu    the trace has no context switches (CSwitch): whether a thread was ready or "
                     "waiting is not known, and its samples are all CPU samples\n");
    if (sm->wait_no_stack || sm->ready_no_stack)
        fprintf(out, "no stack   %llu wait and %llu ready samples: no stack was walked where their time off the "
                     "CPU ended\n",
                (unsigned long long)sm->wait_no_stack, (unsigned long long)sm->ready_no_stack);
    if (sm->lost_why[0])
        fprintf(out, "lost       %llu samples: %s\n", (unsigned long long)sm->lost, sm->lost_why);
    if (sm->rate_reason[0])
        fprintf(out, "rate       %g Hz: %s\n", sm->rate_hz, sm->rate_reason);
    if (sm->suspensions >= 0 && sm->reused >= 0)
        fprintf(out, "suspended  %lld times; %lld samples reused the stack of a thread that had not run\n",
                (long long)sm->suspensions, (long long)sm->reused);
    if (sm->cpu_s >= 0)
        fprintf(out, "cpu time   %.3f s\n", sm->cpu_s);
    if (sm->held_s >= 0 && sm->threads_s > 0)
        fprintf(out, "sampler    held the threads %.3f s, %.1f%% of their sampled time (%.3f s)\n", sm->held_s,
                100.0 * sm->held_s / sm->threads_s, sm->threads_s);
    else if (sm->held_s >= 0)
        fprintf(out, "sampler    held the threads %.3f s\n", sm->held_s);
    if (sm->hookscope_samples) {
        fprintf(out, "hookscope  %llu samples in its own code in the target, %.1f%% of the running samples",
                (unsigned long long)sm->hookscope_samples,
                100.0 * (double)sm->hookscope_samples / (double)hs_running_samples(p));
        if (sm->cpu_s >= 0) {
            char t[32];
            hs_cpu_estimate e = hs_cpu_estimate_of(p, sm->hookscope_samples, 0, -1);
            fprintf(out, " (%s of CPU)", hs_fmt_estimate(&e, e.ns, t, sizeof t));
        }
        fputc('\n', out);
        write_served(p, out);
    }
    if (sm->etl_kept)
        fprintf(out, "etw trace  hookscope.etl (kept: --keep-etl)\n");
}

/* The calls the views a browser opens left out, when the timeline has
 * more than they hold (HS_TRACE_VIEW_CALLS, HS_TIMELINE_VIEW_CALLS): a
 * line each. 0, or -1 after printing why (the timeline's file could not
 * be read). */
static int write_view_cuts(const hs_profile *p, FILE *out)
{
    const hs_prof_timeline *t = p->timeline;
    hs_prof_tl_thread sum = hs_timeline_totals(t);
    uint64_t cut, kept, total;
    char err[400] = "";
    if (sum.events + sum.open > HS_TRACE_VIEW_CALLS) {
        hs_tl_longest l;
        char which[300];
        if (hs_timeline_longest(t, p->nfuncs, HS_TRACE_VIEW_CALLS, &l, err, sizeof err))
            goto failed;
        if (l.kept < l.total)
            fprintf(out, "views      trace.json holds the longest %llu of the timeline's %llu calls (%s: speedscope "
                         "takes minutes to import more); timeline.bin has them all\n",
                    (unsigned long long)l.kept, (unsigned long long)l.total,
                    hs_fmt_longest_kept(t, &l, which, sizeof which));
    }
    if (sum.events + sum.open > HS_TIMELINE_VIEW_CALLS) {
        if (hs_timeline_cutoff(t, p->nfuncs, HS_TIMELINE_VIEW_CALLS, &cut, &kept, &total, err, sizeof err))
            goto failed;
        if (kept < total)
            fprintf(out, "views      profile.firefox.json and profile.speedscope.json hold the first %llu of the "
                         "timeline's %llu calls (those from %.3f ms on left out: a browser opens no larger file)\n",
                    (unsigned long long)kept, (unsigned long long)total, (double)hs_timeline_ns(t, cut) / 1e6);
    }
    return 0;
failed:
    if (err[0])
        hs_err("%s", err);
    return -1;
}

/* --timeline: the calls it kept, left out and dropped, and its file. */
static int write_timeline(const hs_profile *p, FILE *out)
{
    const hs_prof_timeline *t = p->timeline;
    hs_prof_tl_thread sum = hs_timeline_totals(t);
    uint64_t kept = sum.events, filtered = sum.filtered, dropped = sum.dropped_buffer + sum.dropped_file;
    fprintf(out, "timeline   %llu calls kept on %zu thread%s (and %llu open at the end), %llu left out by the filters",
            (unsigned long long)kept, t->nthreads, t->nthreads == 1 ? "" : "s", (unsigned long long)sum.open,
            (unsigned long long)filtered);
    if (t->min_ns || t->depths) {
        fputs(" (", out);
        if (t->min_ns)
            fprintf(out, "shorter than %llu ns%s", (unsigned long long)t->min_ns, t->depths ? ", " : "");
        if (t->depths)
            fprintf(out, "deeper than %u levels", t->depths);
        fputc(')', out);
    }
    fprintf(out, ", %llu dropped; %llu samples; timeline.bin %llu bytes\n", (unsigned long long)dropped,
            (unsigned long long)t->nsamples, (unsigned long long)t->bytes);
    if (sum.waits)
        fprintf(out, "           threads found their buffer full %llu times and waited %.1f ms in all for hookscope "
                     "to take it (--timeline-wait): the times of the calls around each wait leave it out\n",
                (unsigned long long)sum.waits, t->tsc_hz > 0 ? (double)sum.wait_ticks * 1e3 / t->tsc_hz : 0.0);
    return write_view_cuts(p, out);
}

/* ---- threads (--threads) ------------------------------------------------------ */

/* A thread's value of --sort's key: calls; self and cpu: its CPU samples;
 * total: all its samples; avg: its CPU time. */
static double thread_key(const hs_prof_thread *t, int key)
{
    switch (key) {
    case HS_SORT_CALLS:
        return (double)t->calls;
    case HS_SORT_TOTAL:
        return (double)(t->cpu_samples + t->ready_samples + t->wait_samples + t->hookscope_samples);
    case HS_SORT_AVG:
        return t->cpu_s;
    default:
        return (double)t->cpu_samples;
    }
}

typedef struct thread_order {
    const hs_profile *p;
    int key;
} thread_order;

/* by the key (descending), then as listed */
static int cmp_thread(const void *a, const void *b, void *ctx)
{
    const thread_order *o = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    double x = thread_key(&o->p->threads_list[i], o->key), y = thread_key(&o->p->threads_list[j], o->key);
    if (x != y)
        return x > y ? -1 : 1;
    return i < j ? -1 : i > j;
}

static void write_threads(const hs_profile *p, const hs_txt_view *v, FILE *out)
{
    static const char *const by[HS_SORT__COUNT] = {
        [HS_SORT_CALLS] = "calls", [HS_SORT_SELF] = "CPU samples", [HS_SORT_CPU] = "CPU samples",
        [HS_SORT_TOTAL] = "all samples", [HS_SORT_AVG] = "CPU time",
    };
    fprintf(out, "\nthreads: the calls the hooks counted and the samples of each kind on each thread");
    if (v->sorted && p->nthreads_list)
        fprintf(out, ", by %s", by[v->sort]);
    fputc('\n', out);
    if (!p->nthreads_list) {
        fprintf(out, "(this run has no per-thread figures)\n");
        return;
    }
    size_t nt = p->nthreads_list;
    uint32_t *order = hs_xcalloc(nt, sizeof *order);
    for (size_t i = 0; i < nt; i++)
        order[i] = (uint32_t)i;
    if (v->sorted) {
        thread_order o = { p, v->sort };
        hs_sort(order, nt, sizeof *order, cmp_thread, &o);
    }
    size_t rows = v->top && nt > v->top ? v->top : nt;
    bool states = false;   /* the times of each state, where measured (ETW's context switches) */
    for (size_t i = 0; i < p->nthreads_list; i++)
        states |= p->threads_list[i].running_s >= 0;
    fprintf(out, "%10s %14s %9s %9s %9s %9s %10s", "tid", "calls", "cpu", "ready", "wait", "hookscope", "cpu time");
    if (states)
        fprintf(out, " %10s %10s %10s", "running", "ready", "waiting");
    fputc('\n', out);
    for (size_t r = 0; r < rows; r++) {
        const hs_prof_thread *t = &p->threads_list[order[r]];
        char cpu[32] = "-", ready[24] = "-", wait[24] = "-";
        if (t->cpu_s >= 0)
            hs_fmt_duration(t->cpu_s * 1e9, cpu, sizeof cpu);
        if (!p->sampling.off_cpu_unknown) {
            snprintf(ready, sizeof ready, "%llu", (unsigned long long)t->ready_samples);
            snprintf(wait, sizeof wait, "%llu", (unsigned long long)t->wait_samples);
        }
        fprintf(out, "%10u %14llu %9llu %9s %9s %9llu %10s", t->tid, (unsigned long long)t->calls,
                (unsigned long long)t->cpu_samples, ready, wait, (unsigned long long)t->hookscope_samples, cpu);
        if (states) {
            char run_t[32] = "-", ready_t[32] = "-", wait_t[32] = "-";
            if (t->running_s >= 0) {
                hs_fmt_duration(t->running_s * 1e9, run_t, sizeof run_t);
                hs_fmt_duration(t->ready_s * 1e9, ready_t, sizeof ready_t);
                hs_fmt_duration(t->wait_s * 1e9, wait_t, sizeof wait_t);
            }
            fprintf(out, " %10s %10s %10s", run_t, ready_t, wait_t);
        }
        fputc('\n', out);
    }
    if (rows < nt)
        fprintf(out, "(the first %zu of %zu threads)\n", rows, nt);
    free(order);
}

int hs_write_txt(const hs_profile *p, FILE *out)
{
    hs_txt_view v = { HS_SORT_CALLS, 0, false, false };
    return hs_write_txt_view(p, &v, out);
}

int hs_write_txt_view(const hs_profile *p, const hs_txt_view *v, FILE *out)
{
    char stop[160];
    hs_fmt_stop(p, stop, sizeof stop);
    fprintf(out, "hookscope %s report\n\n", HOOKSCOPE_VERSION);
    fprintf(out, "target     %s", p->target_path ? p->target_path : "?");
    for (int i = 0; i < p->nargs; i++)
        fprintf(out, " %s", p->args[i]);
    if (p->bits == 32)
        fprintf(out, "  (32-bit: i386 code under WOW64)");
    fprintf(out, "\npid        %u\n", p->pid);
    if (p->target_rights)
        fprintf(out, "rights     %s\n", hs_fmt_rights(p->target_rights));
    fprintf(out, "end        %s\n", stop);
    if (p->trace.file) {
        const hs_prof_trace *tr = &p->trace;
        fprintf(out, "trace      %s (its header: %s%s%s, %.3f s of events)\n", tr->file,
                tr->machine[0] ? tr->machine : "machine unknown", tr->start[0] ? "; began " : "", tr->start, tr->span_s);
        if (tr->named > 1)
            fprintf(out, "process    the one with the most samples of the %u named %s ('hookscope report --etl %s' "
                         "lists them; --pid N takes another)\n", tr->named, p->target_path ? p->target_path : "?",
                    tr->file);
    }
    if (p->exited)
        fprintf(out, "exit code  %u (0x%X)\n", p->exit_code, p->exit_code);
    fprintf(out, "wall time  %.3f s\n", p->wall_s);
    bool hooks = false;
    for (size_t m = 0; m < p->nmodules; m++)
        hooks |= p->modules[m].traced;
    if (hooks) {
        fprintf(out, "threads    %u", p->threads);
        if (p->regions_reused)
            fprintf(out, " counter regions (reused %u times for threads that came after others ended)",
                    p->regions_reused);
        fputc('\n', out);
        fprintf(out, "calls      %llu\n", (unsigned long long)p->total_calls);
        if (p->overflow_calls)
            fprintf(out, "           %lld calls counted in the shared overflow region (calls of threads without "
                         "a region of their own: under the loader lock at their start or end, or past "
                         "--max-threads)\n",
                    (long long)p->overflow_calls);
    }
    if (p->timeline && write_timeline(p, out) != 0)
        return -1;
    if (p->sampling.on)
        write_sampling(p, out);
    for (size_t i = 0; i < p->nwarnings; i++)
        fprintf(out, "warning    %s\n", p->warnings[i]);
    if (p->sampling.on) {
        hs_write_txt_samples(p, v, out, hooks);
        if (!v->threads)
            write_threads(p, v, out);
    }
    if (!hooks)
        return ferror(out) ? -1 : 0;

    fprintf(out, "\n%-28s %9s %7s %7s  %-18s %s\n", "module", "functions", "hooked", "skipped",
            "base", "install");
    for (size_t m = 0; m < p->nmodules; m++) {
        const hs_prof_module *mod = &p->modules[m];
        if (!mod->traced)
            continue;
        fprintf(out, "%-28s %9u %7u %7u  0x%-16llx %.3f s\n", mod->name, mod->funcs_found,
                mod->funcs_hooked, mod->funcs_found - mod->funcs_hooked, (unsigned long long)mod->base,
                mod->install_s);
        count_summary(out, "  skipped: ", mod->skip_counts, HS_SKIP__COUNT, hs_skip_reason_name);
        uint32_t pk[HS_PATCH__COUNT];
        memcpy(pk, mod->patch_counts, sizeof pk);
        pk[HS_PATCH_JMP32] = 0;   /* the usual kind is not worth a line */
        count_summary(out, "  patched with: ", pk, HS_PATCH__COUNT, hs_patch_kind_name);
        count_summary(out, "  entry probe only: ", mod->entry_only_counts, HS_WRAP__COUNT,
                      hs_entry_only_name);
    }

    size_t n, called = 0;
    uint32_t *idx = hs_funcs_sorted(p, v->sort, &n);
    if (v->sort == HS_SORT_CALLS) {
        fprintf(out, "\n%20s  %-40s %s\n", "calls", "function", "module");
    } else {
        char head[32];
        snprintf(head, sizeof head, "%s%s", hs_sort_key_name(v->sort),
                 hs_sort_key_is_time(p, v->sort) ? "" : " samples");
        fprintf(out, "\n%20s %14s  %-40s %s\n", "calls", head, "function", "module");
    }
    for (size_t k = 0; k < n; k++)
        called += p->funcs[idx[k]].calls > 0;
    if (v->top && n > v->top)
        n = v->top;
    for (size_t k = 0; k < n; k++) {
        /* the rows' functions lie anywhere: ask for the next ones early */
        if (k + 8 < n)
            __builtin_prefetch(&p->funcs[idx[k + 8]]);
        if (k + 4 < n)
            __builtin_prefetch(hs_func_label(p, idx[k + 4]));
        const hs_prof_func *f = &p->funcs[idx[k]];
        if (v->sort == HS_SORT_CALLS) {
            fprintf(out, "%20llu  %-40s %s", (unsigned long long)f->calls, hs_func_label(p, idx[k]),
                    p->modules[f->module].name);
        } else {
            char val[32];
            hs_fmt_sort_key(p, idx[k], v->sort, val, sizeof val);
            fprintf(out, "%20llu %14s  %-40s %s", (unsigned long long)f->calls, val, hs_func_label(p, idx[k]),
                    p->modules[f->module].name);
        }
        if (f->file)
            fprintf(out, "  %s:%u", f->file, f->line);
        fputc('\n', out);
    }
    size_t hooked = 0;
    for (size_t i = 0; i < p->nfuncs; i++)
        hooked += p->funcs[i].hooked;
    fprintf(out, "\n%zu of %zu hooked functions were called.\n", called, hooked);
    if (v->top && called > v->top)
        fprintf(out, "(the tables show the first %u by %s)\n", v->top, hs_sort_key_name(v->sort));
    if (v->threads)
        write_threads(p, v, out);
    if (p->edges_on) {
        size_t ng = 0;   /* the call graph: the functions with calls */
        for (size_t k = 0; k < n; k++)
            if (p->funcs[idx[k]].calls)
                idx[ng++] = idx[k];
        write_graph(p, out, idx, ng);
    }
    if (p->time_on)
        write_time(p, out);
    if (p->stack_depth)
        write_stacks(p, out);
    free(idx);
    if (hs_write_txt_longest(p, v->top, out) != 0)
        return -1;
    return ferror(out) ? -1 : 0;
}
