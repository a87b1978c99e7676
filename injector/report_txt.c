/*
 * injector/report_txt.c - report.txt: a header saying what was traced and
 * how it ended, the modules with their hook statistics, and the functions
 * sorted by calls; then, by the options of the trace:
 *
 *   call graph   (edges, the default) each called function with its
 *                callers and callees and the calls on each edge, in the
 *                spirit of `uftrace graph`;
 *   time         (--time) calls, total, self, avg, min, max and unwinds per
 *                timed function, by total time, and DTrace-quantize-style
 *                histograms of the durations of the top functions;
 *   entry stacks (--stacks) the sampling policy and the most frequent
 *                stacks.
 *
 * Everything is sorted with full tie-breaks, so the same trace gives the
 * same text.
 */
#include <stdlib.h>
#include <string.h>

#include "hookscope/skip.h"
#include "hookscope/session.h"
#include "report.h"
#include "util.h"

static const hs_results *sort_r;

static int cmp_calls(const void *a, const void *b)
{
    const hs_res_func *x = &sort_r->funcs[*(const size_t *)a];
    const hs_res_func *y = &sort_r->funcs[*(const size_t *)b];
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");
    if (c)
        return c;
    return x->module != y->module ? (x->module < y->module ? -1 : 1) : (x->rva < y->rva ? -1 : x->rva > y->rva);
}

size_t *hs_sorted_by_calls(const hs_results *r, size_t *n)
{
    size_t *idx = malloc((r->nfuncs ? r->nfuncs : 1) * sizeof *idx);
    size_t k = 0;
    if (!idx) {
        *n = 0;
        return NULL;
    }
    for (size_t i = 0; i < r->nfuncs; i++)
        if (r->funcs[i].calls > 0)
            idx[k++] = i;
    sort_r = r;
    qsort(idx, k, sizeof *idx, cmp_calls);
    *n = k;
    return idx;
}

void hs_describe_stop(const hs_results *r, char *buf, size_t len)
{
    switch (r->stop) {
    case HS_STOP_CRASH:
        if (r->crash_address)
            snprintf(buf, len, "crashed: 0x%08X (%s) at 0x%llx", r->crash_code,
                     r->crash_what ? r->crash_what : "exception", (unsigned long long)r->crash_address);
        else
            snprintf(buf, len, "crashed: 0x%08X (%s)", r->crash_code, r->crash_what ? r->crash_what : "exception");
        break;
    case HS_STOP_DURATION:
        snprintf(buf, len, "stopped after --duration %.3g s", r->duration_s);
        break;
    case HS_STOP_INTERRUPT:
        snprintf(buf, len, "interrupted (Ctrl+C)");
        break;
    case HS_STOP_DETACH:
        snprintf(buf, len, "detached; the target keeps running");
        break;
    case HS_STOP_TARGET_GONE:
        snprintf(buf, len, "the target exited with code %u (0x%X)", r->exit_code, r->exit_code);
        break;
    default:
        snprintf(buf, len, "exited with code %u (0x%X)", r->exit_code, r->exit_code);
        break;
    }
}

static void skip_summary(FILE *out, const char *label, const uint32_t *counts, int n,
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

static const hs_named_edge *sort_e;

/* by calls (descending), then caller module and name */
static int cmp_edge_calls(const void *a, const void *b)
{
    const hs_named_edge *x = &sort_e[*(const size_t *)a], *y = &sort_e[*(const size_t *)b];
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    if (x->caller_module != y->caller_module)
        return x->caller_module < y->caller_module ? -1 : 1;
    int c = strcmp(x->caller, y->caller);
    if (c)
        return c;
    return x->callee < y->callee ? -1 : x->callee > y->callee;
}

/* "name" for a function of module `home`, else "module!name" */
static void caller_label(const hs_results *r, const hs_named_edge *e, uint32_t home, char *buf,
                         size_t len)
{
    if (e->caller_module >= 0 && (uint32_t)e->caller_module != home && !strchr(e->caller, '+'))
        snprintf(buf, len, "%s!%s", r->mods[e->caller_module].name, e->caller);
    else
        snprintf(buf, len, "%s", e->caller);
}

static void write_graph(const hs_results *r, FILE *out, const size_t *order, size_t norder)
{
    hs_addrsym *as = hs_addrsym_new(r);
    hs_named_edge *e;
    size_t ne = hs_named_edges(r, as, &e);
    size_t *by_calls = hs_xcalloc(ne ? ne : 1, sizeof *by_calls);
    for (size_t i = 0; i < ne; i++)
        by_calls[i] = i;
    sort_e = e;
    qsort(by_calls, ne, sizeof *by_calls, cmp_edge_calls);
    /* edges of each callee and of each caller function, in by_calls order */
    size_t *in_first = hs_xcalloc(r->nfuncs + 1, sizeof *in_first);
    size_t *out_first = hs_xcalloc(r->nfuncs + 1, sizeof *out_first);
    for (size_t i = 0; i < ne; i++) {
        in_first[e[i].callee + 1]++;
        if (e[i].caller_func >= 0)
            out_first[e[i].caller_func + 1]++;
    }
    for (size_t f = 0; f < r->nfuncs; f++) {
        in_first[f + 1] += in_first[f];
        out_first[f + 1] += out_first[f];
    }
    size_t *in_list = hs_xcalloc(ne ? ne : 1, sizeof *in_list);
    size_t *out_list = hs_xcalloc(ne ? ne : 1, sizeof *out_list);
    size_t *in_fill = hs_xcalloc(r->nfuncs + 1, sizeof *in_fill);
    size_t *out_fill = hs_xcalloc(r->nfuncs + 1, sizeof *out_fill);
    int via_wrapper = 0;
    for (size_t k = 0; k < ne; k++) {
        const hs_named_edge *x = &e[by_calls[k]];
        in_list[in_first[x->callee] + in_fill[x->callee]++] = by_calls[k];
        if (x->caller_func >= 0)
            out_list[out_first[x->caller_func] + out_fill[x->caller_func]++] = by_calls[k];
        if (x->caller_module >= 0 && (r->mods[x->caller_module].flags & HS_MOD_AGENT))
            via_wrapper = 1;
    }

    fprintf(out, "\ncall graph: each called function, its callers (<-) and its callees (->),\n"
                 "with the calls on each edge; callers in other modules as module!function\n");
    if (r->edges_lost)
        fprintf(out, "(%llu edge increments were lost: the edge tables were full)\n",
                (unsigned long long)r->edges_lost);
    for (size_t k = 0; k < norder; k++) {
        size_t fi = order[k];
        const hs_res_func *f = &r->funcs[fi];
        fprintf(out, "\n%-48s %12llu  %s\n", f->name, (unsigned long long)f->calls,
                r->mods[f->module].name);
        uint64_t seen = 0;
        for (size_t j = in_first[fi]; j < in_first[fi + 1]; j++) {
            const hs_named_edge *x = &e[in_list[j]];
            char label[600];
            caller_label(r, x, f->module, label, sizeof label);
            fprintf(out, "    <- %12llu  %s\n", (unsigned long long)x->calls, label);
            seen += x->calls;
        }
        if (seen < f->calls)
            fprintf(out, "    <- %12llu  (no caller recorded)\n", (unsigned long long)(f->calls - seen));
        for (size_t j = out_first[fi]; j < out_first[fi + 1]; j++) {
            const hs_named_edge *x = &e[out_list[j]];
            const hs_res_func *c = &r->funcs[x->callee];
            if (c->module != f->module)
                fprintf(out, "    -> %12llu  %s!%s\n", (unsigned long long)x->calls, r->mods[c->module].name,
                        c->name);
            else
                fprintf(out, "    -> %12llu  %s\n", (unsigned long long)x->calls, c->name);
        }
    }
    if (via_wrapper)
        fprintf(out, "\n(hookscope-agent.dll!hs_wrapper as a caller: a call made by a tail jump from a\n"
                     " timed function; the function that made it is not recorded)\n");
    free(in_fill);
    free(out_fill);
    free(in_list);
    free(out_list);
    free(in_first);
    free(out_first);
    free(by_calls);
    free(e);
    hs_addrsym_free(as);
}

/* ---- time ------------------------------------------------------------------- */

/* a duration with a unit that keeps 3-4 significant digits */
static const char *dur(double ns, char *buf, size_t len)
{
    if (ns < 1e3)
        snprintf(buf, len, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.3f s", ns / 1e9);
    return buf;
}

static int cmp_total(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const hs_res_time *x = &sort_r->time[i], *y = &sort_r->time[j];
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    if (x->exits != y->exits)
        return x->exits > y->exits ? -1 : 1;
    int c = strcmp(sort_r->funcs[i].name ? sort_r->funcs[i].name : "",
                   sort_r->funcs[j].name ? sort_r->funcs[j].name : "");
    return c ? c : (i < j ? -1 : i > j);
}

/* DTrace's quantize() layout: one row per power of two, from the bucket
 * below the first non-empty one to the one above the last, a 40-column
 * bar of '@' in proportion to the count. */
static void histogram(FILE *out, const hs_res_time *t)
{
    int lo = -1, hi = -1;
    uint64_t total = 0;
    for (int b = 0; b < 40; b++) {
        if (!t->hist[b])
            continue;
        if (lo < 0)
            lo = b;
        hi = b;
        total += t->hist[b];
    }
    if (lo < 0 || !total)
        return;
    if (lo > 0)
        lo--;
    if (hi < 39)
        hi++;
    fprintf(out, "%16s  %s %s\n", "value (ns)", "------------- Distribution -------------", "count");
    for (int b = lo; b <= hi; b++) {
        char bar[41];
        int w = (int)((t->hist[b] * 40 + total / 2) / total);
        memset(bar, '@', (size_t)w);
        bar[w] = 0;
        fprintf(out, "%16llu |%-40s %llu\n", 1ull << b, bar, (unsigned long long)t->hist[b]);
    }
}

#define HIST_TOP 5

static void write_time(const hs_results *r, FILE *out)
{
    size_t *idx = hs_xcalloc(r->nfuncs ? r->nfuncs : 1, sizeof *idx);
    size_t n = 0, untimed = 0, open_funcs = 0;
    uint64_t untimed_calls = 0;
    for (size_t i = 0; i < r->nfuncs; i++) {
        const hs_res_func *f = &r->funcs[i];
        if (!(f->flags & 1) || !f->calls)
            continue;
        if (!(f->flags & 4)) {
            untimed++;
            untimed_calls += f->calls;
        } else if (r->time[i].exits) {
            idx[n++] = i;
        }
        if (r->time[i].open)
            open_funcs++;
    }
    sort_r = r;
    qsort(idx, n, sizeof *idx, cmp_total);

    fprintf(out, "\ntime: each timed function by total (inclusive) time; self = total minus\n"
                 "the timed functions it called; unwinds = calls ended by an exception or longjmp\n");
    if (untimed)
        fprintf(out, "(%zu called functions with %llu calls had an entry probe only and are not timed)\n",
                untimed, (unsigned long long)untimed_calls);
    if (r->time_dropped)
        fprintf(out, "(%llu calls were not timed: nested too deep for the shadow stack)\n",
                (unsigned long long)r->time_dropped);
    fprintf(out, "\n%12s %11s %11s %11s %11s %11s %8s  %s\n", "calls", "total", "self", "avg", "min",
            "max", "unwinds", "function");
    for (size_t k = 0; k < n; k++) {
        const hs_res_time *t = &r->time[idx[k]];
        char a[32], b[32], c[32], d[32], e[32];
        fprintf(out, "%12llu %11s %11s %11s %11s %11s %8llu  %s\n", (unsigned long long)t->exits,
                dur(hs_ticks_ns(r, t->total), a, sizeof a), dur(hs_ticks_ns(r, t->self), b, sizeof b),
                dur(hs_ticks_ns(r, t->total) / (double)t->exits, c, sizeof c),
                dur(hs_ticks_ns(r, t->min), d, sizeof d), dur(hs_ticks_ns(r, t->max), e, sizeof e),
                (unsigned long long)t->unwinds, r->funcs[idx[k]].name);
    }
    if (open_funcs) {
        fprintf(out, "still running when the trace ended (not in the table):");
        for (size_t i = 0, k = 0; i < r->nfuncs; i++) {
            if (!r->time[i].open)
                continue;
            if (k++ == 10) {
                fprintf(out, " ...");
                break;
            }
            fprintf(out, " %s (%llu)", r->funcs[i].name, (unsigned long long)r->time[i].open);
        }
        fputc('\n', out);
    }

    /* calls of timed functions seen to enter but neither to return nor to
     * be unwound: a longjmp that does not unwind (setjmp without a frame,
     * __builtin_longjmp), or calls not timed at all (no shadow stack room,
     * a thread counted in the shared overflow region) */
    uint64_t unseen = 0;
    size_t unseen_funcs = 0;
    for (size_t i = 0; i < r->nfuncs; i++) {
        const hs_res_func *f = &r->funcs[i];
        if ((f->flags & 5) == 5 && f->calls > r->time[i].exits + r->time[i].open) {
            unseen += f->calls - r->time[i].exits - r->time[i].open;
            unseen_funcs++;
        }
    }
    if (unseen) {
        fprintf(out, "%llu calls of %zu timed functions were not seen to end (a longjmp that does not\n"
                     "unwind, or calls not timed):", (unsigned long long)unseen, unseen_funcs);
        for (size_t i = 0, k = 0; i < r->nfuncs; i++) {
            const hs_res_func *f = &r->funcs[i];
            if ((f->flags & 5) != 5 || f->calls <= r->time[i].exits + r->time[i].open)
                continue;
            if (k++ == 10) {
                fprintf(out, " ...");
                break;
            }
            fprintf(out, " %s (%llu)", f->name,
                    (unsigned long long)(f->calls - r->time[i].exits - r->time[i].open));
        }
        fputc('\n', out);
    }

    size_t top = n < HIST_TOP ? n : HIST_TOP;
    if (top) {
        fprintf(out, "\ndurations of the %zu function%s with the most total time\n", top,
                top == 1 ? "" : "s");
        for (size_t k = 0; k < top; k++) {
            const hs_res_time *t = &r->time[idx[k]];
            fprintf(out, "\n  %s  (%llu calls)\n", r->funcs[idx[k]].name, (unsigned long long)t->exits);
            histogram(out, t);
        }
    }
    free(idx);
}

/* ---- entry stacks ------------------------------------------------------------ */

#define STACKS_TOP 10

static int cmp_stack_count(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const hs_res_stack *x = &sort_r->stacks[i], *y = &sort_r->stacks[j];
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return i < j ? -1 : i > j;   /* the collector sorted them by function and frames */
}

static void write_stacks(const hs_results *r, FILE *out)
{
    char policy[128];
    hs_stack_policy(r, policy, sizeof policy);
    uint64_t captures = 0;
    for (size_t i = 0; i < r->nstacks; i++)
        captures += r->stacks[i].count;
    fprintf(out, "\nentry stacks: up to %u frames, captured at %s\n", r->stack_depth, policy);
    fprintf(out, "%zu unique stacks, %llu captures, %llu dropped (tables full); written to\n"
                 "entry-stacks.folded (root first, for flame graphs)\n",
            r->nstacks, (unsigned long long)captures, (unsigned long long)r->stacks_dropped);
    size_t *idx = hs_xcalloc(r->nstacks ? r->nstacks : 1, sizeof *idx);
    for (size_t i = 0; i < r->nstacks; i++)
        idx[i] = i;
    sort_r = r;
    qsort(idx, r->nstacks, sizeof *idx, cmp_stack_count);
    size_t top = r->nstacks < STACKS_TOP ? r->nstacks : STACKS_TOP;
    if (top)
        fprintf(out, "the %zu most frequent, leaf first:\n", top);
    hs_addrsym *as = hs_addrsym_new(r);
    for (size_t k = 0; k < top; k++) {
        const hs_res_stack *st = &r->stacks[idx[k]];
        fprintf(out, "\n%12llu  %s%s\n", (unsigned long long)st->count, r->funcs[st->func].name,
                st->truncated ? "  (truncated)" : "");
        for (uint32_t d = 0; d < st->depth; d++) {
            char buf[600];
            if (hs_stack_frame_name(r, as, st, d, 1, buf, sizeof buf))
                fprintf(out, "              %s\n", buf);
        }
    }
    hs_addrsym_free(as);
    free(idx);
}

int hs_write_report_txt(const hs_results *r, FILE *out)
{
    char stop[160];
    hs_describe_stop(r, stop, sizeof stop);
    fprintf(out, "hookscope %s report\n\n", HOOKSCOPE_VERSION);
    fprintf(out, "target     %s", r->target_path ? r->target_path : "?");
    for (int i = 0; i < r->nargs; i++)
        fprintf(out, " %s", r->args[i]);
    fprintf(out, "\npid        %u\n", r->pid);
    fprintf(out, "end        %s\n", stop);
    if (r->exited)
        fprintf(out, "exit code  %u (0x%X)\n", r->exit_code, r->exit_code);
    fprintf(out, "wall time  %.3f s\n", r->wall_s);
    fprintf(out, "threads    %u", r->threads);
    if (r->regions_reused)
        fprintf(out, " counter regions (reused %u times for threads that came after others ended)",
                r->regions_reused);
    fputc('\n', out);
    fprintf(out, "calls      %llu\n", (unsigned long long)r->total_calls);
    if (r->overflow_calls)
        fprintf(out, "           %lld calls counted in the shared overflow region (too many threads)\n",
                (long long)r->overflow_calls);
    for (size_t i = 0; i < r->nwarnings; i++)
        fprintf(out, "warning    %s\n", r->warnings[i]);

    fprintf(out, "\n%-28s %9s %7s %7s  %-18s %s\n", "module", "functions", "hooked", "skipped",
            "base", "install");
    for (size_t m = 0; m < r->nmods; m++) {
        const hs_res_module *mod = &r->mods[m];
        if (!mod->traced)
            continue;
        fprintf(out, "%-28s %9u %7u %7u  0x%-16llx %.3f s\n", mod->name, mod->found, mod->hooked,
                mod->found - mod->hooked, (unsigned long long)mod->base, mod->install_s);
        skip_summary(out, "  skipped: ", mod->skip_counts, HS_SKIP__COUNT, hs_skip_reason_name);
        uint32_t pk[HS_PATCH__COUNT];
        memcpy(pk, mod->patch_counts, sizeof pk);
        pk[HS_PATCH_JMP32] = 0;   /* the usual kind is not worth a line */
        skip_summary(out, "  patched with: ", pk, HS_PATCH__COUNT, hs_patch_kind_name);
        skip_summary(out, "  entry probe only: ", mod->entry_only_counts, HS_WRAP__COUNT,
                     hs_entry_only_name);
    }

    size_t n;
    size_t *idx = hs_sorted_by_calls(r, &n);
    fprintf(out, "\n%20s  %-40s %s\n", "calls", "function", "module");
    for (size_t k = 0; k < n; k++) {
        const hs_res_func *f = &r->funcs[idx[k]];
        fprintf(out, "%20llu  %-40s %s\n", (unsigned long long)f->calls, f->name,
                r->mods[f->module].name);
    }
    size_t hooked = 0;
    for (size_t i = 0; i < r->nfuncs; i++)
        hooked += (r->funcs[i].flags & 1) != 0;
    fprintf(out, "\n%zu of %zu hooked functions were called.\n", n, hooked);
    if (r->edges_on)
        write_graph(r, out, idx, n);
    if (r->time_on && r->time)
        write_time(r, out);
    if (r->stack_depth)
        write_stacks(r, out);
    free(idx);
    return ferror(out) ? -1 : 0;
}
