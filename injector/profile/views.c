/*
 * injector/profile/views.c - sort keys, stacks and CPU time of a profile
 * (see views.h).
 */
#include "injector/profile/views.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/search.h"
#include "hook/base/util.h"

/* ---- sort keys ---------------------------------------------------------------- */

bool hs_func_timed(const hs_profile *p, uint32_t func)
{
    const hs_prof_func *f = &p->funcs[func];
    return p->time_on && f->time && f->time->calls;
}

static double calls_of(const hs_profile *p, uint32_t i)
{
    return (double)p->funcs[i].calls;
}

static double self_of(const hs_profile *p, uint32_t i)
{
    if (!p->time_on)
        return (double)p->funcs[i].cpu_self;
    return hs_func_timed(p, i) ? (double)p->funcs[i].time->self_ns : -1;
}

static double total_of(const hs_profile *p, uint32_t i)
{
    if (!p->time_on)
        return (double)p->funcs[i].cpu_total;
    return hs_func_timed(p, i) ? (double)p->funcs[i].time->total_ns : -1;
}

static double cpu_of(const hs_profile *p, uint32_t i)
{
    return (double)p->funcs[i].cpu_self;
}

static double avg_of(const hs_profile *p, uint32_t i)
{
    if (!p->time_on)
        return hs_cpu_per_call_ns(p, i);
    const hs_prof_time *t = p->funcs[i].time;
    return hs_func_timed(p, i) ? (double)t->sum_ns / (double)t->calls : -1;
}

const hs_sort_key hs_sort_keys[HS_SORT__COUNT] = {
    [HS_SORT_CALLS] = { "calls", HS_NEEDS_NOTHING, HS_UNIT_COUNT, HS_UNIT_COUNT, calls_of },
    [HS_SORT_SELF] = { "self", HS_NEEDS_TIME_OR_SAMPLES, HS_UNIT_COUNT, HS_UNIT_NS, self_of },
    [HS_SORT_TOTAL] = { "total", HS_NEEDS_TIME_OR_SAMPLES, HS_UNIT_COUNT, HS_UNIT_NS, total_of },
    [HS_SORT_CPU] = { "cpu", HS_NEEDS_SAMPLES, HS_UNIT_COUNT, HS_UNIT_COUNT, cpu_of },
    [HS_SORT_AVG] = { "avg", HS_NEEDS_TIME_OR_SAMPLES, HS_UNIT_NS, HS_UNIT_NS, avg_of },
};

int hs_sort_key_from_name(const char *name)
{
    for (int i = 0; i < HS_SORT__COUNT; i++)
        if (!strcmp(hs_sort_keys[i].name, name))
            return i;
    return -1;
}

const char *hs_sort_key_name(int key)
{
    return key >= 0 && key < HS_SORT__COUNT ? hs_sort_keys[key].name : "?";
}

const char *hs_sort_unavailable(const hs_profile *p, int key)
{
    bool sampled = hs_stacks_total(p, HS_STACK_CPU) > 0;
    switch (key >= 0 && key < HS_SORT__COUNT ? hs_sort_keys[key].needs : HS_NEEDS_NOTHING) {
    case HS_NEEDS_TIME_OR_SAMPLES:
        return p->time_on || sampled ? NULL : "durations (--time) or CPU samples, and this run has neither";
    case HS_NEEDS_SAMPLES:
        return sampled ? NULL : "CPU samples, and this run has none";
    default:
        return NULL;
    }
}

bool hs_sort_key_is_time(const hs_profile *p, int key)
{
    if (key < 0 || key >= HS_SORT__COUNT)
        return false;
    const hs_sort_key *k = &hs_sort_keys[key];
    return (p->time_on ? k->unit_timed : k->unit) == HS_UNIT_NS;
}

double hs_sort_key_value(const hs_profile *p, uint32_t func, int key)
{
    return hs_sort_keys[key].value(p, func);
}

/* What functions are ordered by calls by, side by side (not read from
 * the functions at each comparison): the name's first 16 bytes as two
 * big-endian numbers (zeros after its end) order it as strcmp does, and
 * only names that share them are compared past them. */
typedef struct calls_key {
    uint64_t calls;
    uint64_t head[2];
    const char *name;
    uint32_t module, rva, func;
    bool longer;                 /* the name is 16 bytes or more */
} calls_key;

static int cmp_calls(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const calls_key *x = a, *y = b;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    int c = x->head[0] != y->head[0] ? (x->head[0] < y->head[0] ? -1 : 1)
            : x->head[1] != y->head[1] ? (x->head[1] < y->head[1] ? -1 : 1)
            : x->longer ? strcmp(x->name + 16, y->name + 16) : 0;
    if (c)
        return c;
    return x->module != y->module ? (x->module < y->module ? -1 : 1) : (x->rva < y->rva ? -1 : x->rva > y->rva);
}

uint32_t *hs_funcs_by_calls(const hs_profile *p, size_t *n)
{
    calls_key *keys = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *keys);
    size_t k = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        const hs_prof_func *f = &p->funcs[i];
        if (!f->calls)
            continue;
        calls_key *e = &keys[k++];
        e->calls = f->calls;
        e->name = f->name ? f->name : "";
        e->module = f->module;
        e->rva = f->rva;
        e->func = (uint32_t)i;
        size_t len = 0;
        for (int j = 0; j < 16; j++) {
            unsigned char ch = len == (size_t)j ? (unsigned char)e->name[j] : 0;
            len += ch != 0;
            e->head[j / 8] = e->head[j / 8] << 8 | ch;
        }
        e->longer = len == 16;
    }
    hs_sort(keys, k, sizeof *keys, cmp_calls, NULL);
    uint32_t *idx = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *idx);
    for (size_t i = 0; i < k; i++)
        idx[i] = keys[i].func;
    free(keys);
    *n = k;
    return idx;
}

typedef struct key_ctx {
    const hs_profile *p;
    int key;
} key_ctx;

static int cmp_key(const void *a, const void *b, void *ctx)
{
    const key_ctx *k = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    double x = hs_sort_key_value(k->p, i, k->key), y = hs_sort_key_value(k->p, j, k->key);
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

/* ---- stacks ------------------------------------------------------------------- */

uint64_t hs_stacks_total(const hs_profile *p, int kind)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->nstacks; i++)
        if (p->stacks[i].kind == kind && p->stacks[i].nframes)
            n += p->stacks[i].count;
    return n;
}

uint64_t *hs_leaf_counts(const hs_profile *p, int kind)
{
    uint64_t *n = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *n);
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind == kind && st->nframes && st->frames[0].func >= 0)
            n[st->frames[0].func] += st->count;
    }
    return n;
}

uint64_t *hs_module_totals(const hs_profile *p, int kind)
{
    uint64_t *n = hs_xcalloc(p->nmodules ? p->nmodules : 1, sizeof *n);
    int32_t *seen = hs_xcalloc(p->nmodules ? p->nmodules : 1, sizeof *seen);   /* last stack index + 1 */
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind != kind)
            continue;
        for (uint32_t d = 0; d < st->nframes; d++) {
            int32_t m = hs_loc_module(p, st->frames[d]);
            if (m >= 0 && (size_t)m < p->nmodules && seen[m] != (int32_t)i + 1) {
                seen[m] = (int32_t)i + 1;
                n[m] += st->count;
            }
        }
    }
    free(seen);
    return n;
}

static int cmp_place_loc(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const hs_place_count *x = a, *y = b;
    if (x->loc.module != y->loc.module)
        return x->loc.module < y->loc.module ? -1 : 1;
    return x->loc.off < y->loc.off ? -1 : x->loc.off > y->loc.off;
}

static int cmp_place(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const hs_place_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return cmp_place_loc(a, b, NULL);
}

hs_place_count *hs_unnamed_leaves(const hs_profile *p, int kind, size_t *n)
{
    size_t k = 0;
    hs_place_count *v = hs_xcalloc(p->nstacks + 1, sizeof *v);
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind == kind && st->nframes && st->frames[0].func < 0)
            v[k++] = (hs_place_count){ st->frames[0], st->count };
    }
    /* merge the stacks of one leaf place, then order by samples */
    hs_sort(v, k, sizeof *v, cmp_place_loc, NULL);
    size_t w = 0;
    for (size_t i = 0; i < k; i++) {
        if (w && !cmp_place_loc(&v[w - 1], &v[i], NULL))
            v[w - 1].count += v[i].count;
        else
            v[w++] = v[i];
    }
    hs_sort(v, w, sizeof *v, cmp_place, NULL);
    *n = w;
    return v;
}

int hs_flame_kind(const hs_profile *p)
{
    if (hs_stacks_total(p, HS_STACK_CPU))
        return HS_STACK_CPU;
    if (hs_stacks_total(p, HS_STACK_ENTRY))
        return HS_STACK_ENTRY;
    return -1;
}

/* ---- CPU time ----------------------------------------------------------------- */

uint64_t hs_running_samples(const hs_profile *p)
{
    return p->sampling.samples + p->sampling.hookscope_samples;
}

double hs_samples_cpu_ns(const hs_profile *p, uint64_t n)
{
    const hs_prof_sampling *s = &p->sampling;
    uint64_t running = hs_running_samples(p);
    if (!s->on)
        return -1;
    if (s->cpu_s >= 0 && running)
        return (double)n / (double)running * s->cpu_s * 1e9;
    if (s->rate_hz > 0)
        return (double)n / s->rate_hz * 1e9;
    return -1;
}

hs_cpu_estimate hs_cpu_estimate_of(const hs_profile *p, uint64_t n, uint64_t calls, double wall_ns)
{
    hs_cpu_estimate e = { hs_samples_cpu_ns(p, n), -1, n, n < HS_FEW_SAMPLES, false };
    if (e.ns >= 0 && wall_ns >= 0 && e.ns > wall_ns) {
        e.ns = wall_ns;
        e.capped = true;
    }
    if (e.ns >= 0 && calls)
        e.per_call_ns = e.ns / (double)calls;
    return e;
}

double hs_func_wall_ns(const hs_profile *p, uint32_t func)
{
    const hs_prof_func *f = &p->funcs[func];
    if (!hs_func_timed(p, func) || !f->wrapped)
        return -1;
    const hs_prof_time *t = f->time;
    return t->open || t->calls != f->calls ? -1 : (double)t->total_ns;
}

hs_cpu_estimate hs_func_cpu_estimate(const hs_profile *p, uint32_t func)
{
    const hs_prof_func *f = &p->funcs[func];
    return hs_cpu_estimate_of(p, f->cpu_total, f->calls, hs_func_wall_ns(p, func));
}

double hs_cpu_per_call_ns(const hs_profile *p, uint32_t func)
{
    return hs_func_cpu_estimate(p, func).per_call_ns;
}

/* ---- untimed callees ------------------------------------------------------------ */

static int cmp_untimed(const void *a, const void *b, void *ctx)
{
    const hs_profile *p = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int32_t cx = p->edges[x].caller.func, cy = p->edges[y].caller.func;
    if (cx != cy)
        return cx < cy ? -1 : 1;
    return x < y ? -1 : x > y;
}

void hs_untimed_collect(const hs_profile *p, hs_untimed_callees *u)
{
    u->edge = NULL;
    u->n = 0;
    if (!p->time_on || !p->nedges)
        return;
    u->edge = hs_xcalloc(p->nedges, sizeof *u->edge);
    for (size_t k = 0; k < p->nedges; k++) {
        const hs_prof_edge *e = &p->edges[k];
        const hs_prof_func *g = &p->funcs[e->callee];
        if (e->caller.func >= 0 && e->calls && g->hooked && !g->wrapped)
            u->edge[u->n++] = (uint32_t)k;
    }
    hs_sort(u->edge, u->n, sizeof *u->edge, cmp_untimed, (void *)p);
}

static bool untimed_before(const void *ctx, size_t i)
{
    const struct { const hs_profile *p; const hs_untimed_callees *u; int32_t caller; } *k = ctx;
    return k->p->edges[k->u->edge[i]].caller.func < k->caller;
}

size_t hs_untimed_of(const hs_profile *p, const hs_untimed_callees *u, uint32_t caller, size_t *first)
{
    struct { const hs_profile *p; const hs_untimed_callees *u; int32_t caller; } k = { p, u, (int32_t)caller };
    size_t lo = hs_partition_point(u->n, &k, untimed_before), hi = lo;
    while (hi < u->n && p->edges[u->edge[hi]].caller.func == (int32_t)caller)
        hi++;
    *first = lo;
    return hi - lo;
}

void hs_untimed_free(hs_untimed_callees *u)
{
    free(u->edge);
    u->edge = NULL;
    u->n = 0;
}
