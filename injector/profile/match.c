/*
 * injector/profile/match.c - see diff.h.
 */
#include "injector/profile/match.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"

static bool active(const hs_profile *p, size_t i)
{
    const hs_prof_func *f = &p->funcs[i];
    return f->calls || f->cpu_total || (f->time && f->time->calls);
}

/* The module part of a function's key: the program's exe matches the
 * other program's exe whatever their file names (two builds of one
 * program), other modules by name. */
static const char *module_key(const hs_profile *p, uint32_t m)
{
    return p->modules[m].main ? "" : p->modules[m].name;
}

static uint64_t key_hash(const hs_profile *p, size_t i)
{
    const hs_prof_func *f = &p->funcs[i];
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *c = (const unsigned char *)module_key(p, f->module); *c; c++)
        h = (h ^ (unsigned char)tolower(*c)) * 1099511628211ull;
    h = (h ^ '!') * 1099511628211ull;
    for (const unsigned char *c = (const unsigned char *)(f->name ? f->name : ""); *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    return h;
}

static bool same_key(const hs_profile *a, size_t i, const hs_profile *b, size_t j)
{
    const hs_prof_func *f = &a->funcs[i], *g = &b->funcs[j];
    const char *x = module_key(a, f->module), *y = module_key(b, g->module);
    for (; *x && *y; x++, y++)
        if (tolower((unsigned char)*x) != tolower((unsigned char)*y))
            return false;
    return *x == *y && !strcmp(f->name ? f->name : "", g->name ? g->name : "");
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
    if (p->time_on && f->time && f->time->calls) {
        s->self_ns = f->time->self_ns;
        s->timed = true;
    }
}

static double measure(const hs_diff *d, const hs_diff_side *s)
{
    switch (d->by) {
    case HS_DIFF_BY_SAMPLES: return (double)s->cpu_self;
    case HS_DIFF_BY_TIME: return (double)s->self_ns;
    default: return (double)s->calls;
    }
}

double hs_diff_change(const hs_diff *d, const hs_diff_row *r)
{
    return measure(d, &r->b) - measure(d, &r->a);
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

static bool sampled(const hs_profile *p)
{
    for (size_t i = 0; i < p->nstacks; i++)
        if (p->stacks[i].kind == HS_STACK_CPU && p->stacks[i].count)
            return true;
    return false;
}

void hs_diff_build(const hs_profile *a, const hs_profile *b, int by, hs_diff *d)
{
    memset(d, 0, sizeof *d);
    d->samples = sampled(a) && sampled(b);
    d->time = a->time_on && b->time_on;
    if (by == HS_DIFF_BY_CALLS || (by == HS_DIFF_BY_SAMPLES && d->samples))
        d->by = by;
    else
        d->by = d->time ? HS_DIFF_BY_TIME : d->samples ? HS_DIFF_BY_SAMPLES : HS_DIFF_BY_CALLS;
    /* match: a's functions by key */
    hs_map keys = { 0 };
    for (size_t i = 0; i < a->nfuncs; i++)
        if (active(a, i))
            hs_map_xadd(&keys, key_hash(a, i), 0, (uint32_t)i);
    bool *linked = hs_xcalloc(a->nfuncs + 1, sizeof *linked);
    d->rows = hs_xcalloc(a->nfuncs + b->nfuncs + 1, sizeof *d->rows);
    /* link: each of b's functions with the first unlinked one of a */
    for (size_t j = 0; j < b->nfuncs; j++) {
        if (!active(b, j))
            continue;
        int32_t match = -1;
        size_t cursor = 0;
        uint32_t i;
        while (hs_map_next(&keys, key_hash(b, j), 0, &cursor, &i))
            if (!linked[i] && same_key(a, i, b, j) && (match < 0 || i < (uint32_t)match))
                match = (int32_t)i;
        if (match >= 0)
            linked[match] = true;
        hs_diff_row *r = &d->rows[d->n++];
        side(a, match, &r->a);
        side(b, (int32_t)j, &r->b);
        r->module = b->modules[b->funcs[j].module].name;
        r->name = b->funcs[j].name ? b->funcs[j].name : "";
    }
    for (size_t i = 0; i < a->nfuncs; i++) {
        if (!active(a, i) || linked[i])
            continue;
        hs_diff_row *r = &d->rows[d->n++];
        side(a, (int32_t)i, &r->a);
        side(b, -1, &r->b);
        r->module = a->modules[a->funcs[i].module].name;
        r->name = a->funcs[i].name ? a->funcs[i].name : "";
    }
    free(linked);
    hs_map_free(&keys);
    hs_sort(d->rows, d->n, sizeof *d->rows, cmp_row, d);
}

void hs_diff_free(hs_diff *d)
{
    free(d->rows);
    memset(d, 0, sizeof *d);
}
