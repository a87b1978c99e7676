/*
 * injector/output/txt_cpu.c - the sampled sections of report.txt: where
 * the CPU went, next to the exact calls, and where the threads waited.
 *
 *   CPU      every function with CPU (or ready) samples, by self CPU
 *            samples: its self share, its total (inclusive, recursion
 *            once per stack) samples and their share of all CPU samples,
 *            the estimated CPU time (the process's CPU time shared out
 *            over the running samples: the program's and hookscope's own
 *            in the target), its ready samples (runnable, not running:
 *            never CPU), the calls the hooks counted, CPU per call, and
 *            with --time the measured wall time per call. An estimate
 *            from few samples is marked "~"; one above the measured wall
 *            time of the same calls is that time, marked "<="
 *            (profile/views.h, hs_cpu_estimate).
 *   modules  where not every CPU sample's function is named (a foreign
 *            trace, code without symbols): the samples by module (self:
 *            the leaf frame in it; total: stacks through it), then the
 *            unnamed leaf places (module+offset) by samples
 *   wait     the functions threads were found blocked in (a system call:
 *            sleep, wait, I/O), by self wait samples; ready samples are
 *            not waits
 *
 * (then txt.c adds the threads: calls, samples of each kind, CPU time)
 * Sorted with full tie-breaks, so that the same profile gives the same text.
 * report --sort KEY orders both sections by the key first (calls; self and
 * cpu: self samples; total: total samples, the wait section then listing
 * every function on a waiting stack; avg: per call) and --top N sets how
 * many rows they show.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/output/format.h"
#include "injector/output/writers.h"

#define CPU_ROWS 40
#define WAIT_ROWS 15

typedef struct by_samples {
    const hs_profile *p;
    bool cpu;
    int key;                     /* --sort's key first (-1: none) */
} by_samples;

/* A function's value of --sort's key in a section: calls; self and cpu:
 * its self samples of the section's kind; total: its total samples of
 * that kind; avg: time (or CPU) per call, -1 where it has none. */
static double key_value(const by_samples *k, uint32_t i)
{
    const hs_prof_func *f = &k->p->funcs[i];
    switch (k->key) {
    case HS_SORT_CALLS:
        return (double)f->calls;
    case HS_SORT_TOTAL:
        return (double)(k->cpu ? f->cpu_total : f->wait_total);
    case HS_SORT_AVG:
        return hs_sort_key_value(k->p, i, HS_SORT_AVG);
    default:
        return (double)(k->cpu ? f->cpu_self : f->wait_self);
    }
}

/* What --sort's key orders a section by, in words. */
static const char *key_words(const hs_profile *p, int key)
{
    switch (key) {
    case HS_SORT_CALLS:
        return "calls";
    case HS_SORT_TOTAL:
        return "total samples";
    case HS_SORT_AVG:
        return p->time_on ? "time per call" : "CPU time per call";
    default:
        return "self samples";
    }
}

/* --sort's key first (when given); then CPU: by self, total, then ready
 * samples; wait: by self and total wait samples; then name, module, rva */
static int cmp_samples(const void *a, const void *b, void *ctx)
{
    const by_samples *k = ctx;
    if (k->key >= 0) {
        double kx = key_value(k, *(const uint32_t *)a), ky = key_value(k, *(const uint32_t *)b);
        if (kx != ky)
            return kx > ky ? -1 : 1;
    }
    const hs_prof_func *x = &k->p->funcs[*(const uint32_t *)a], *y = &k->p->funcs[*(const uint32_t *)b];
    uint64_t xs = k->cpu ? x->cpu_self : x->wait_self, ys = k->cpu ? y->cpu_self : y->wait_self;
    uint64_t xt = k->cpu ? x->cpu_total : x->wait_total, yt = k->cpu ? y->cpu_total : y->wait_total;
    uint64_t xr = k->cpu ? x->ready_total : 0, yr = k->cpu ? y->ready_total : 0;
    if (xs != ys)
        return xs > ys ? -1 : 1;
    if (xt != yt)
        return xt > yt ? -1 : 1;
    if (xr != yr)
        return xr > yr ? -1 : 1;
    int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");
    if (c)
        return c;
    c = strcmp(k->p->modules[x->module].name, k->p->modules[y->module].name);
    if (c)
        return c;
    return x->rva < y->rva ? -1 : x->rva > y->rva;
}

static double pct(uint64_t n, uint64_t of)
{
    return of ? 100.0 * (double)n / (double)of : 0.0;
}

/* "  function   module": the function in a column of `width`, and at
 * least two spaces before the module however long its name */
static void name_module(FILE *out, const char *name, const char *module, int width)
{
    int len = (int)strlen(name);
    fprintf(out, "  %s%*s%s\n", name, len < width ? width - len + 1 : 2, "", module);
}

/* text in lines of at most `width` columns, broken at spaces */
static void put_wrapped(FILE *out, const char *text, size_t width)
{
    while (*text) {
        size_t n = strlen(text);
        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ')
                n--;
            if (!n)
                n = strcspn(text, " ");
        }
        fprintf(out, "%.*s\n", (int)n, text);
        text += n;
        while (*text == ' ')
            text++;
    }
}

/* The rows a section shows: --top's N, else its own limit. */
static size_t rows_of(const hs_txt_view *v, size_t n, size_t limit)
{
    size_t max = v->top ? v->top : limit;
    return n < max ? n : max;
}

typedef struct module_order {
    const hs_profile *p;
    const uint64_t *total;
} module_order;

/* by self samples, total samples, then name */
static int cmp_module(const void *a, const void *b, void *ctx)
{
    const module_order *o = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const hs_prof_module *x = &o->p->modules[i], *y = &o->p->modules[j];
    if (x->cpu_self != y->cpu_self)
        return x->cpu_self > y->cpu_self ? -1 : 1;
    if (o->total[i] != o->total[j])
        return o->total[i] > o->total[j] ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : (i < j ? -1 : i > j);
}

/* Where not every CPU sample's function is named (a foreign trace, code
 * without symbols): the samples by module, and the unnamed leaf places. */
static void write_modules(const hs_profile *p, const hs_txt_view *v, FILE *out)
{
    const hs_prof_sampling *s = &p->sampling;
    uint64_t *total = hs_module_totals(p, HS_STACK_CPU);
    uint32_t *idx = hs_xcalloc(p->nmodules ? p->nmodules : 1, sizeof *idx);
    size_t n = 0;
    for (size_t m = 0; m < p->nmodules; m++)
        if (total[m])
            idx[n++] = (uint32_t)m;
    module_order o = { p, total };
    hs_sort(idx, n, sizeof *idx, cmp_module, &o);
    fprintf(out, "\nmodules: the CPU samples by module, as not every sample's function has a name\n"
                 "(self: the leaf frame in it; total: the stacks through it)\n\n");
    fprintf(out, "%8s %6s %8s %6s  %s\n", "self", "self%", "total", "total%", "module");
    size_t rows = rows_of(v, n, CPU_ROWS);
    for (size_t r = 0; r < rows; r++) {
        const hs_prof_module *m = &p->modules[idx[r]];
        fprintf(out, "%8llu %5.1f%% %8llu %5.1f%%  %s", (unsigned long long)m->cpu_self, pct(m->cpu_self, s->samples),
                (unsigned long long)total[idx[r]], pct(total[idx[r]], s->samples), m->name);
        /* two modules of one name (a 32-bit program's two ntdll.dll): their folders tell them apart */
        bool twin = false;
        for (size_t k = 0; k < n && !twin; k++)
            twin = k != r && !strcasecmp(p->modules[idx[k]].name, m->name);
        const char *base = twin && m->path ? hs_basename(m->path) : NULL;
        if (base && base > m->path) {
            const char *end = base - 1, *start = end;   /* the folder it is in */
            while (start > m->path && start[-1] != '\\' && start[-1] != '/')
                start--;
            if (end > start)
                fprintf(out, " (%.*s)", (int)(end - start), start);
        }
        fputc('\n', out);
    }
    if (n > rows)
        fprintf(out, "(%zu more modules)\n", n - rows);
    size_t np;
    hs_place_count *pl = hs_unnamed_leaves(p, HS_STACK_CPU, &np);
    fprintf(out, "\ncode no function name covers, by self samples (the leaf's module and offset)\n\n");
    fprintf(out, "%8s %6s  %s\n", "self", "self%", "place");
    rows = rows_of(v, np, WAIT_ROWS);
    for (size_t r = 0; r < rows; r++) {
        char buf[600];
        fprintf(out, "%8llu %5.1f%%  %s\n", (unsigned long long)pl[r].count, pct(pl[r].count, s->samples),
                hs_loc_format(p, pl[r].loc, true, false, buf, sizeof buf));
    }
    if (np > rows)
        fprintf(out, "(%zu more places)\n", np - rows);
    free(pl);
    free(idx);
    free(total);
}

static void write_cpu(const hs_profile *p, const hs_txt_view *v, FILE *out, bool hooks)
{
    const hs_prof_sampling *s = &p->sampling;
    uint32_t *idx = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *idx);
    size_t n = 0;
    uint64_t named = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        if (p->funcs[i].cpu_total || p->funcs[i].ready_total)
            idx[n++] = (uint32_t)i;
        named += p->funcs[i].cpu_self;
    }
    by_samples k = { p, true, v->sorted ? v->sort : -1 };
    hs_sort_top(idx, n, sizeof *idx, rows_of(v, n, CPU_ROWS), cmp_samples, &k);   /* the rows shown */

    char legend[1200];
    snprintf(legend, sizeof legend,
             "CPU: where the program's CPU went, by %s%s; total: "
             "samples with it on the stack (%% of all CPU samples); cpu: the process's CPU time x total / "
             "the running samples (hookscope's own included, so that its work is not charged here); "
             "ready: samples with it on the stack while its thread was runnable but not running "
             "(preempted, or held by the sampler): not CPU, in no estimate%s%s; ~: from fewer than %d "
             "samples%s",
             v->sorted ? key_words(p, v->sort) : "self samples",
             !v->sorted || v->sort == HS_SORT_SELF || v->sort == HS_SORT_CPU ? " (the function at the leaf)" : "",
             hooks ? "; per call: cpu / calls" : "",
             hooks && p->time_on ? "; wall/call: the measured inclusive time per call" : "", HS_FEW_SAMPLES,
             hooks && p->time_on ? "; <=: at most this, the measured wall time (the estimate was above it)" : "");
    fputc('\n', out);
    put_wrapped(out, legend, 80);
    fputc('\n', out);
    if (!s->samples && !s->ready_samples) {
        fprintf(out, "no CPU samples\n");
        free(idx);
        return;
    }
    fprintf(out, "%6s %7s %6s %9s %6s", "self%", "total", "total%", "cpu", "ready");
    if (hooks)
        fprintf(out, " %10s %9s", "calls", "per call");
    if (hooks && p->time_on)
        fprintf(out, " %9s", "wall/call");
    fprintf(out, "  %-20s %s\n", "function", "module");
    size_t rows = rows_of(v, n, CPU_ROWS);
    for (size_t r = 0; r < rows; r++) {
        const hs_prof_func *f = &p->funcs[idx[r]];
        char cpu[32] = "-", per[32] = "-", wall[32] = "-", calls[32] = "-";
        if (s->cpu_s >= 0 && f->cpu_total) {
            hs_cpu_estimate e = hs_func_cpu_estimate(p, idx[r]);
            hs_fmt_estimate(&e, e.ns, cpu, sizeof cpu);
            if (f->hooked)
                hs_fmt_estimate(&e, e.per_call_ns, per, sizeof per);
        }
        if (f->hooked)
            snprintf(calls, sizeof calls, "%llu", (unsigned long long)f->calls);
        const hs_prof_time *t = hs_prof_time_get(p, idx[r]);
        if (f->wrapped && t->calls)
            hs_fmt_duration((double)t->total_ns / (double)t->calls, wall, sizeof wall);
        char ready[24] = "-";
        if (!s->off_cpu_unknown)
            snprintf(ready, sizeof ready, "%llu", (unsigned long long)f->ready_total);
        fprintf(out, "%5.1f%% %7llu %5.1f%% %9s %6s", pct(f->cpu_self, s->samples), (unsigned long long)f->cpu_total,
                pct(f->cpu_total, s->samples), cpu, ready);
        if (hooks)
            fprintf(out, " %10s %9s", calls, per);
        if (hooks && p->time_on)
            fprintf(out, " %9s", wall);
        name_module(out, f->name ? hs_func_label(p, idx[r]) : "?", p->modules[f->module].name, 20);
    }
    if (n > rows)
        fprintf(out, "(%zu more functions with CPU or ready samples: report.json)\n", n - rows);
    if (named < s->samples) {
        fprintf(out, "(%llu samples in code no function name covers)\n", (unsigned long long)(s->samples - named));
        write_modules(p, v, out);
    }
    free(idx);
}

static void write_wait(const hs_profile *p, const hs_txt_view *v, FILE *out)
{
    const hs_prof_sampling *s = &p->sampling;
    uint32_t *idx = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *idx);
    size_t n = 0;
    uint64_t named = 0;
    /* by total: every function on a waiting stack; else those it waited in */
    bool total = v->sorted && v->sort == HS_SORT_TOTAL;
    for (size_t i = 0; i < p->nfuncs; i++) {
        if (p->funcs[i].wait_self || (total && p->funcs[i].wait_total))
            idx[n++] = (uint32_t)i;
        named += p->funcs[i].wait_self;
    }
    by_samples k = { p, false, v->sorted ? v->sort : -1 };
    hs_sort_top(idx, n, sizeof *idx, rows_of(v, n, WAIT_ROWS), cmp_samples, &k);   /* the rows shown */
    if (v->sorted && v->sort != HS_SORT_SELF && v->sort != HS_SORT_CPU)
        fprintf(out, "\nwait: where threads were blocked in a system call (sleep, wait, I/O),\n"
                     "by %s (self: the function it waited in); stacks in wait-stacks.folded\n\n",
                key_words(p, v->sort));
    else
        fprintf(out, "\nwait: where threads were blocked in a system call (sleep, wait, I/O), by self\n"
                     "wait samples; the stacks are in wait-stacks.folded\n\n");
    if (s->off_cpu_unknown) {
        fprintf(out, "wait samples unknown: the trace has no context switches\n");
        free(idx);
        return;
    }
    if (!s->wait_samples) {
        fprintf(out, "no wait samples\n");
        free(idx);
        return;
    }
    if (n) {
        fprintf(out, "%8s %6s", "self", "self%");
        if (total)
            fprintf(out, " %8s %6s", "total", "total%");
        fprintf(out, "  %-32s %s\n", "function", "module");
    }
    size_t rows = rows_of(v, n, WAIT_ROWS);
    for (size_t r = 0; r < rows; r++) {
        const hs_prof_func *f = &p->funcs[idx[r]];
        fprintf(out, "%8llu %5.1f%%", (unsigned long long)f->wait_self, pct(f->wait_self, s->wait_samples));
        if (total)
            fprintf(out, " %8llu %5.1f%%", (unsigned long long)f->wait_total, pct(f->wait_total, s->wait_samples));
        name_module(out, f->name ? hs_func_label(p, idx[r]) : "?", p->modules[f->module].name, 32);
    }
    if (n > rows)
        fprintf(out, "(%zu more)\n", n - rows);
    if (s->wait_no_stack)
        fprintf(out, "(%llu of the %llu wait samples without a stack: no stack was walked where the wait ended)\n",
                (unsigned long long)s->wait_no_stack, (unsigned long long)s->wait_samples);
    if (named + s->wait_no_stack < s->wait_samples)
        fprintf(out, "(%llu wait samples in code no function name covers)\n",
                (unsigned long long)(s->wait_samples - s->wait_no_stack - named));
    free(idx);
}

void hs_write_txt_samples(const hs_profile *p, const hs_txt_view *v, FILE *out, bool hooks)
{
    write_cpu(p, v, out, hooks);
    write_wait(p, v, out);
}
