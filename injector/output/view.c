/*
 * injector/output/view.c - the report.txt view that `hookscope report`
 * shapes (--sort, --top, --threads; see writers.h): the sort keys, the
 * functions in a key's order, the key's column, the per-thread table.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/output/format.h"
#include "injector/output/stackset.h"
#include "injector/output/writers.h"

static const char *const key_names[HS_SORT__COUNT] = { "calls", "self", "total", "cpu", "avg" };

int hs_sort_key_from_name(const char *name)
{
    for (int i = 0; i < HS_SORT__COUNT; i++)
        if (!strcmp(key_names[i], name))
            return i;
    return -1;
}

const char *hs_sort_key_name(int key)
{
    return key >= 0 && key < HS_SORT__COUNT ? key_names[key] : "?";
}

static bool sampled(const hs_profile *p)
{
    return hs_stacks_total(p, HS_STACK_CPU) > 0;
}

const char *hs_sort_unavailable(const hs_profile *p, int key)
{
    switch (key) {
    case HS_SORT_SELF:
    case HS_SORT_TOTAL:
    case HS_SORT_AVG:
        return p->time_on || sampled(p) ? NULL : "durations (--time) or CPU samples, and this run has neither";
    case HS_SORT_CPU:
        return sampled(p) ? NULL : "CPU samples, and this run has none";
    default:
        return NULL;
    }
}

/* The key's value of a function, for sorting and for its column; < 0:
 * none (such functions come last). Durations in ns, samples as counts. */
static double key_value(const hs_profile *p, uint32_t i, int key)
{
    const hs_prof_func *f = &p->funcs[i];
    const hs_prof_time *t = hs_prof_time_get(p, i);
    bool timed = p->time_on && f->wrapped && t->calls;
    switch (key) {
    case HS_SORT_SELF:
        return p->time_on ? (timed ? (double)t->self_ns : -1) : (double)f->cpu_self;
    case HS_SORT_TOTAL:
        return p->time_on ? (timed ? (double)t->total_ns : -1) : (double)f->cpu_total;
    case HS_SORT_CPU:
        return (double)f->cpu_self;
    case HS_SORT_AVG:
        if (p->time_on)
            return timed ? (double)t->sum_ns / (double)t->calls : -1;
        return hs_cpu_per_call_ns(p, i);
    default:
        return (double)f->calls;
    }
}

bool hs_sort_key_is_time(const hs_profile *p, int key)
{
    return key == HS_SORT_AVG || ((key == HS_SORT_SELF || key == HS_SORT_TOTAL) && p->time_on);
}

typedef struct key_ctx {
    const hs_profile *p;
    int key;
} key_ctx;

static int cmp_key(const void *a, const void *b, void *ctx)
{
    const key_ctx *k = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    double x = key_value(k->p, i, k->key), y = key_value(k->p, j, k->key);
    if (x != y)
        return x > y ? -1 : 1;
    const hs_prof_func *f = &k->p->funcs[i], *g = &k->p->funcs[j];
    if (f->calls != g->calls)
        return f->calls > g->calls ? -1 : 1;
    int c = strcmp(f->name ? f->name : "", g->name ? g->name : "");
    return c ? c : (i < j ? -1 : i > j);
}

uint32_t *hs_funcs_sorted(const hs_profile *p, int key, size_t *n)
{
    if (key == HS_SORT_CALLS)
        return hs_funcs_by_calls(p, n);
    uint32_t *idx = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *idx);
    size_t k = 0;
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].calls || p->funcs[i].cpu_total)
            idx[k++] = (uint32_t)i;
    key_ctx ctx = { p, key };
    hs_sort(idx, k, sizeof *idx, cmp_key, &ctx);
    *n = k;
    return idx;
}

void hs_fmt_sort_key(const hs_profile *p, uint32_t func, int key, char *buf, size_t len)
{
    double v = key_value(p, func, key);
    if (v < 0)
        snprintf(buf, len, "-");
    else if (hs_sort_key_is_time(p, key))
        hs_fmt_duration(v, buf, len);
    else
        snprintf(buf, len, "%.0f", v);
}

void hs_write_thread_table(const hs_profile *p, FILE *out)
{
    fprintf(out, "\nthreads: the calls the hooks counted and the samples taken on each thread\n");
    if (!p->nthreads_list) {
        fprintf(out, "(this run has no per-thread figures)\n");
        return;
    }
    fprintf(out, "%12s %20s %14s %14s %12s\n", "tid", "calls", "cpu samples", "wait samples", "cpu time");
    for (size_t i = 0; i < p->nthreads_list; i++) {
        const hs_prof_thread *t = &p->threads_list[i];
        char cpu[32] = "-";
        if (t->cpu_s >= 0)
            hs_fmt_duration(t->cpu_s * 1e9, cpu, sizeof cpu);
        fprintf(out, "%12u %20llu %14llu %14llu %12s\n", t->tid, (unsigned long long)t->calls,
                (unsigned long long)t->cpu_samples, (unsigned long long)t->wait_samples, cpu);
    }
}
