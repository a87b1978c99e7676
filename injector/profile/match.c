/*
 * injector/profile/match.c - see match.h.
 */
#include "injector/profile/match.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/profile/views.h"

static bool active(const hs_profile *p, size_t i)
{
    const hs_prof_func *f = &p->funcs[i];
    return f->calls || f->cpu_total || (f->time && f->time->calls);
}

/* The module part of a function's key: by role, the program's exe
 * matches the other program's exe whatever their file names (two builds
 * of one program), other modules by name (case-insensitive); else every
 * module by its name. */
static const char *module_key(const hs_profile *p, uint32_t m, bool by_role)
{
    return by_role && p->modules[m].main ? "" : p->modules[m].name;
}

static int cmp_module_key(const char *x, const char *y, bool by_role)
{
    if (!by_role)
        return strcmp(x, y);
    for (; *x && *y; x++, y++)
        if (tolower((unsigned char)*x) != tolower((unsigned char)*y))
            return tolower((unsigned char)*x) - tolower((unsigned char)*y);
    return (unsigned char)*x - (unsigned char)*y;
}

/* a's function i and b's function j by key: module, then name */
static int cmp_key(const hs_profile *a, uint32_t i, const hs_profile *b, uint32_t j, bool by_role)
{
    const hs_prof_func *f = &a->funcs[i], *g = &b->funcs[j];
    int c = cmp_module_key(module_key(a, f->module, by_role), module_key(b, g->module, by_role), by_role);
    return c ? c : strcmp(f->name ? f->name : "", g->name ? g->name : "");
}

typedef struct key_order {
    const hs_profile *p;
    bool by_role;
} key_order;

/* by key, then (functions of one key) by rva, module and index */
static int cmp_keyed(const void *x, const void *y, void *ctx)
{
    const key_order *o = ctx;
    uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
    int c = cmp_key(o->p, i, o->p, j, o->by_role);
    if (c)
        return c;
    const hs_prof_func *f = &o->p->funcs[i], *g = &o->p->funcs[j];
    if (f->rva != g->rva)
        return f->rva < g->rva ? -1 : 1;
    if (f->module != g->module)
        return f->module < g->module ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* p's functions that `want` takes, by key and rva; malloc'd, *n of them */
static uint32_t *keyed(const hs_profile *p, bool (*want)(const hs_profile *, size_t), bool by_role, size_t *n)
{
    uint32_t *v = hs_xcalloc(p->nfuncs + 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < p->nfuncs; i++)
        if (want(p, i))
            v[k++] = (uint32_t)i;
    key_order o = { p, by_role };
    hs_sort(v, k, sizeof *v, cmp_keyed, &o);
    *n = k;
    return v;
}

/* Pair a's and b's functions that `want` takes and whose keys are equal;
 * of several functions of one key in a profile (two of one name in a
 * module), the first by rva with the other's first, the second with its
 * second, and so on. a_of_b[j]: a's function paired with b's j, or -1. */
static void link_funcs(const hs_profile *a, const hs_profile *b, bool (*want)(const hs_profile *, size_t),
                       bool by_role, int32_t *a_of_b)
{
    size_t na, nb;
    uint32_t *ka = keyed(a, want, by_role, &na), *kb = keyed(b, want, by_role, &nb);
    for (size_t j = 0; j < b->nfuncs; j++)
        a_of_b[j] = -1;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        int c = cmp_key(a, ka[i], b, kb[j], by_role);
        if (c < 0) {
            i++;
        } else if (c > 0) {
            j++;
        } else {
            size_t ei = i + 1, ej = j + 1;   /* the ends of the two runs of this key */
            while (ei < na && !cmp_key(a, ka[ei], a, ka[i], by_role))
                ei++;
            while (ej < nb && !cmp_key(b, kb[ej], b, kb[j], by_role))
                ej++;
            for (; i < ei && j < ej; i++, j++)
                a_of_b[kb[j]] = (int32_t)ka[i];
            i = ei;
            j = ej;
        }
    }
    free(ka);
    free(kb);
}

static bool named(const hs_profile *p, size_t i)
{
    return p->funcs[i].name != NULL;
}

int32_t *hs_match_funcs(const hs_profile *a, const hs_profile *b)
{
    int32_t *b_of_a = hs_xcalloc(a->nfuncs + 1, sizeof *b_of_a);
    int32_t *a_of_b = hs_xcalloc(b->nfuncs + 1, sizeof *a_of_b);
    for (size_t i = 0; i < a->nfuncs; i++)
        b_of_a[i] = -1;
    link_funcs(a, b, named, false, a_of_b);
    for (size_t j = 0; j < b->nfuncs; j++)
        if (a_of_b[j] >= 0)
            b_of_a[a_of_b[j]] = (int32_t)j;
    free(a_of_b);
    return b_of_a;
}

static void side(const hs_profile *p, int32_t i, hs_diff_side *s)
{
    memset(s, 0, sizeof *s);
    s->func = i;
    if (i < 0)
        return;
    const hs_prof_func *f = &p->funcs[i];
    s->calls = f->calls;
    s->cpu_self = f->cpu_self;
    s->cpu_total = f->cpu_total;
    if (hs_func_timed(p, (uint32_t)i)) {
        s->self_ns = f->time->self_ns;
        s->total_ns = f->time->total_ns;
        s->timed = true;
    }
}

/* The sort key (profile/views.h) of each measure: self CPU samples, self
 * time and total time (with --time in both), calls; total CPU samples is
 * read from the function (the key "total" is time in a run with --time). */
static const int measure_key[] = {
    [HS_DIFF_BY_SAMPLES] = HS_SORT_CPU,
    [HS_DIFF_BY_TIME] = HS_SORT_SELF,
    [HS_DIFF_BY_CALLS] = HS_SORT_CALLS,
    [HS_DIFF_BY_TOTAL_TIME] = HS_SORT_TOTAL,
    [HS_DIFF_BY_TOTAL_SAMPLES] = -1,
};

/* A side's value of the ordering measure (0 where it has none). */
static double measure(const hs_diff *d, const hs_profile *p, const hs_diff_side *s)
{
    if (s->func < 0)
        return 0;
    if (measure_key[d->by] < 0)
        return (double)s->cpu_total;
    double v = hs_sort_key_value(p, (uint32_t)s->func, measure_key[d->by]);
    return v < 0 ? 0 : v;
}

/* The file name of a profile's target, without its folder. */
static const char *target_name(const hs_profile *p)
{
    return p->target_path ? hs_basename(p->target_path) : "";
}

double hs_diff_change(const hs_diff *d, const hs_diff_row *r)
{
    return measure(d, d->b, &r->b) - measure(d, d->a, &r->a);
}

static int cmp_row(const void *x, const void *y, void *ctx)
{
    const hs_diff *d = ctx;
    const hs_diff_row *r = x, *s = y;
    double cr = fabs(hs_diff_change(d, r)), cs = fabs(hs_diff_change(d, s));
    if (cr != cs)
        return cr > cs ? -1 : 1;
    double kr = fabs((double)r->b.calls - (double)r->a.calls), ks = fabs((double)s->b.calls - (double)s->a.calls);
    if (kr != ks)
        return kr > ks ? -1 : 1;
    int c = strcmp(r->name, s->name);
    return c ? c : strcmp(r->module, s->module);
}

void hs_diff_build(const hs_profile *a, const hs_profile *b, int by, hs_diff *d)
{
    memset(d, 0, sizeof *d);
    d->a = a;
    d->b = b;
    d->samples = !hs_sort_unavailable(a, HS_SORT_CPU) && !hs_sort_unavailable(b, HS_SORT_CPU);
    d->time = a->time_on && b->time_on;
    if (by == HS_DIFF_BY_CALLS || (by == HS_DIFF_BY_SAMPLES && d->samples))
        d->by = by;
    else if (by == HS_DIFF_BY_TOTAL && (d->time || d->samples))
        d->by = d->time ? HS_DIFF_BY_TOTAL_TIME : HS_DIFF_BY_TOTAL_SAMPLES;
    else
        d->by = d->time ? HS_DIFF_BY_TIME : d->samples ? HS_DIFF_BY_SAMPLES : HS_DIFF_BY_CALLS;
    /* match, then link: each of b's functions with a's of the same key */
    int32_t *a_of_b = hs_xcalloc(b->nfuncs + 1, sizeof *a_of_b);
    link_funcs(a, b, active, true, a_of_b);
    bool *linked = hs_xcalloc(a->nfuncs + 1, sizeof *linked);
    d->rows = hs_xcalloc(a->nfuncs + b->nfuncs + 1, sizeof *d->rows);
    for (size_t j = 0; j < b->nfuncs; j++) {
        if (!active(b, j))
            continue;
        int32_t match = a_of_b[j];
        if (match >= 0)
            linked[match] = true;
        hs_diff_row *r = &d->rows[d->n++];
        side(a, match, &r->a);
        side(b, (int32_t)j, &r->b);
        r->module = b->modules[b->funcs[j].module].name;
        r->name = b->funcs[j].name ? hs_func_label(b, (uint32_t)j) : "";
    }
    for (size_t i = 0; i < a->nfuncs; i++) {
        if (!active(a, i) || linked[i])
            continue;
        hs_diff_row *r = &d->rows[d->n++];
        side(a, (int32_t)i, &r->a);
        side(b, -1, &r->b);
        r->module = a->modules[a->funcs[i].module].name;
        r->name = a->funcs[i].name ? hs_func_label(a, (uint32_t)i) : "";
    }
    free(linked);
    free(a_of_b);
    for (size_t i = 0; i < d->n; i++)
        d->both += d->rows[i].a.func >= 0 && d->rows[i].b.func >= 0;
    d->other_program = strcasecmp(target_name(a), target_name(b)) != 0 && d->both * 2 < d->n;
    hs_sort(d->rows, d->n, sizeof *d->rows, cmp_row, d);
}

void hs_diff_free(hs_diff *d)
{
    free(d->rows);
    memset(d, 0, sizeof *d);
}
