/*
 * injector/output/txt_cpu.c - the sampled sections of report.txt: where
 * the CPU went, next to the exact calls, and where the threads waited.
 *
 *   CPU      every function with CPU samples, by self samples: self and
 *            total (inclusive, recursion once per stack) samples, their
 *            share of all CPU samples, the estimated CPU time (total
 *            share x the process's CPU time), the calls the hooks
 *            counted, CPU per call (that time / calls), and with --time
 *            the measured wall time per call (the difference is time the
 *            calls spent waiting)
 *   wait     the functions threads were found waiting in, by self wait
 *            samples
 *
 * (then txt.c adds the threads: calls, CPU and wait samples, CPU time)
 * Sorted with full tie-breaks, so that the same profile gives the same text.
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
} by_samples;

static int cmp_samples(const void *a, const void *b, void *ctx)
{
    const by_samples *k = ctx;
    const hs_prof_func *x = &k->p->funcs[*(const uint32_t *)a], *y = &k->p->funcs[*(const uint32_t *)b];
    uint64_t xs = k->cpu ? x->cpu_self : x->wait_self, ys = k->cpu ? y->cpu_self : y->wait_self;
    uint64_t xt = k->cpu ? x->cpu_total : x->wait_total, yt = k->cpu ? y->cpu_total : y->wait_total;
    if (xs != ys)
        return xs > ys ? -1 : 1;
    if (xt != yt)
        return xt > yt ? -1 : 1;
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

static void write_cpu(const hs_profile *p, FILE *out, bool hooks)
{
    const hs_prof_sampling *s = &p->sampling;
    uint32_t *idx = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *idx);
    size_t n = 0;
    uint64_t named = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        if (p->funcs[i].cpu_total)
            idx[n++] = (uint32_t)i;
        named += p->funcs[i].cpu_self;
    }
    by_samples k = { p, true };
    hs_sort(idx, n, sizeof *idx, cmp_samples, &k);

    fprintf(out, "\nCPU: where the CPU went, by self samples; total = the function or its callees\n"
                 "on the stack; cpu = total share x the process's CPU time");
    if (hooks)
        fprintf(out, "; per call = cpu / calls%s", p->time_on ? ";\nwall/call = the measured inclusive time per call (wall - cpu: waiting)" : "");
    fprintf(out, "\n\n");
    if (!s->samples) {
        fprintf(out, "no CPU samples\n");
        free(idx);
        return;
    }
    fprintf(out, "%8s %6s %8s %6s %10s", "self", "self%", "total", "total%", "cpu");
    if (hooks)
        fprintf(out, " %12s %10s", "calls", "per call");
    if (hooks && p->time_on)
        fprintf(out, " %10s", "wall/call");
    fprintf(out, "  %-32s %s\n", "function", "module");
    size_t rows = n < CPU_ROWS ? n : CPU_ROWS;
    for (size_t r = 0; r < rows; r++) {
        const hs_prof_func *f = &p->funcs[idx[r]];
        char cpu[32] = "-", per[32] = "-", wall[32] = "-", calls[32] = "-";
        double cpu_ns = s->cpu_s >= 0 ? hs_samples_cpu_ns(p, f->cpu_total) : -1;
        if (cpu_ns >= 0)
            hs_fmt_duration(cpu_ns, cpu, sizeof cpu);
        if (f->hooked)
            snprintf(calls, sizeof calls, "%llu", (unsigned long long)f->calls);
        if (f->hooked && f->calls && cpu_ns >= 0)
            hs_fmt_duration(cpu_ns / (double)f->calls, per, sizeof per);
        const hs_prof_time *t = hs_prof_time_get(p, idx[r]);
        if (f->wrapped && t->calls)
            hs_fmt_duration((double)t->total_ns / (double)t->calls, wall, sizeof wall);
        fprintf(out, "%8llu %5.1f%% %8llu %5.1f%% %10s", (unsigned long long)f->cpu_self, pct(f->cpu_self, s->samples),
                (unsigned long long)f->cpu_total, pct(f->cpu_total, s->samples), cpu);
        if (hooks)
            fprintf(out, " %12s %10s", calls, per);
        if (hooks && p->time_on)
            fprintf(out, " %10s", wall);
        fprintf(out, "  %-32s %s\n", f->name ? hs_func_label(p, idx[r]) : "?", p->modules[f->module].name);
    }
    if (n > rows)
        fprintf(out, "(%zu more functions with CPU samples: report.json)\n", n - rows);
    if (named < s->samples)
        fprintf(out, "(%llu samples in code no function name covers)\n", (unsigned long long)(s->samples - named));
    free(idx);
}

static void write_wait(const hs_profile *p, FILE *out)
{
    const hs_prof_sampling *s = &p->sampling;
    uint32_t *idx = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *idx);
    size_t n = 0;
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].wait_self)
            idx[n++] = (uint32_t)i;
    by_samples k = { p, false };
    hs_sort(idx, n, sizeof *idx, cmp_samples, &k);
    fprintf(out, "\nwait: where threads were found not running, by self wait samples; the stacks\n"
                 "are in wait-stacks.folded\n\n");
    if (!n) {
        fprintf(out, "no wait samples\n");
        free(idx);
        return;
    }
    fprintf(out, "%8s %6s  %-32s %s\n", "self", "self%", "function", "module");
    size_t rows = n < WAIT_ROWS ? n : WAIT_ROWS;
    for (size_t r = 0; r < rows; r++) {
        const hs_prof_func *f = &p->funcs[idx[r]];
        fprintf(out, "%8llu %5.1f%%  %-32s %s\n", (unsigned long long)f->wait_self, pct(f->wait_self, s->wait_samples),
                f->name ? hs_func_label(p, idx[r]) : "?", p->modules[f->module].name);
    }
    if (n > rows)
        fprintf(out, "(%zu more)\n", n - rows);
    free(idx);
}

void hs_write_txt_samples(const hs_profile *p, FILE *out, bool hooks)
{
    write_cpu(p, out, hooks);
    write_wait(p, out);
}
