/*
 * injector/output/callgrind.c - callgrind.out: the profile in the
 * callgrind format (valgrind's docs/callgrind-format; read by
 * KCachegrind, QCachegrind and callgrind_annotate), with the *real* call
 * counts of the hooks on the call edges and the CPU samples as the cost:
 *
 *   # callgrind format
 *   version: 1
 *   creator: hookscope 0.1.0
 *   pid: 100
 *   cmd: C:\work\burn.exe 3
 *   positions: line
 *   event: Samples : CPU samples (suspend, 1000 Hz)
 *   events: Samples
 *
 *   ob=(1) burn.exe
 *   fl=(1) ???
 *   fn=(1) main
 *   0 0                     self cost: samples with main as the leaf
 *   cob=(1)
 *   cfn=(2) burn_a
 *   calls=100 0             100 calls counted by the hooks
 *   0 60                    inclusive cost of those calls
 *
 * One block per function that was called (hooks) or sampled, in the
 * profile's order, then the places in no known function (named
 * "module+0xoff" or "0xaddr"; two functions of one name in a module as
 * "name@0xrva", hs_func_label). Names are compressed ("(id) name" the first
 * time, "(id)" after); there is no source information, so every cost is
 * at line 0 of file "???" (callgrind's own name for it). No summary or
 * totals line: readers sum the self costs, which add up to the CPU
 * samples of the run.
 *
 * Call lines: one per caller edge the hooks counted (calls=N, N > 0),
 * with the CPU samples whose stack holds that caller directly above that
 * callee at the caller's outermost place in the stack: a reader's
 * inclusive cost of a function (self plus its call lines) then counts a
 * stack once however often recursion repeats the function, as report.json's
 * total does (f -> g -> f -> h gives f -> g the sample, not f -> h too;
 * in f -> g -> f the leaf f has it as self cost, so f -> g has none).
 * A caller/callee pair seen in samples whose calls
 * were not counted (the callee was not hooked, or edges were off) gets
 * no call line: the format has no way to say "calls unknown" (calls=0
 * reads as self cost to callgrind_annotate), so those samples are in the
 * callee's self cost only, not in the caller's inclusive cost.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"
#include "injector/output/stackset.h"
#include "injector/output/writers.h"

typedef struct names {
    hs_strtab seen;              /* names given an id (id = index + 1) */
    const char *last;            /* the last name that stays where it is (a module's), and its id */
    uint32_t last_id;
} names;

/* "(id) name" the first time, "(id)" after; `kept`: name stays where it
 * is while the file is written (the same place is then the same name) */
static void put_name(FILE *out, const char *key, names *t, const char *name, bool kept)
{
    if (kept && t->last == name) {
        fprintf(out, "%s=(%u)\n", key, t->last_id + 1);
        return;
    }
    size_t known = t->seen.n;
    uint32_t id = hs_strtab_add(&t->seen, name);
    if (kept) {
        t->last = name;
        t->last_id = id;
    }
    if (t->seen.n == known) {
        fprintf(out, "%s=(%u)\n", key, id + 1);
        return;
    }
    fprintf(out, "%s=(%u) ", key, id + 1);
    for (const char *c = name; *c; c++)
        fputc(*c == '\n' || *c == '\r' ? '?' : *c, out);
    fputc('\n', out);
}

typedef struct pair_cost {
    uint32_t caller, callee;
    uint64_t cost;
} pair_cost;

typedef struct cg {
    const hs_profile *p;
    hs_frametab frames;
    uint64_t *self;              /* per frame: CPU samples as the leaf */
    pair_cost *pairs;
    size_t npairs, cap;
    hs_map pair_map;
    names obs, fls, fns;
} cg;

static uint64_t pair_hash(uint32_t a, uint32_t b)
{
    uint64_t h = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static pair_cost *pair_of(cg *c, uint32_t caller, uint32_t callee, int add)
{
    size_t cursor = 0;
    uint32_t k;
    while (hs_map_next(&c->pair_map, pair_hash(caller, callee), 0, &cursor, &k))
        if (c->pairs[k].caller == caller && c->pairs[k].callee == callee)
            return &c->pairs[k];
    if (!add)
        return NULL;
    hs_xgrow(&c->pairs, &c->cap, c->npairs + 1, sizeof *c->pairs);
    pair_cost *pc = &c->pairs[c->npairs];
    pc->caller = caller;
    pc->callee = callee;
    pc->cost = 0;
    hs_map_xadd(&c->pair_map, pair_hash(caller, callee), 0, (uint32_t)c->npairs++);
    return pc;
}

static void grow_self(cg *c, size_t *cap)
{
    size_t old = *cap;
    hs_xgrow(&c->self, cap, c->frames.n, sizeof *c->self);
    if (*cap > old)
        memset(c->self + old, 0, (*cap - old) * sizeof *c->self);
}

/* Frames, self costs and pair costs from the CPU stacks. Only the pairs
 * that can have a call line are costed: a counted edge's caller directly
 * above its callee (per callee function, the frames of its callers). */
static void scan(cg *c)
{
    const hs_profile *p = c->p;
    size_t self_cap = 0;
    /* functions first, in the profile's order, so the output follows it */
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].calls || p->funcs[i].cpu_total) {
            hs_loc l = { (int32_t)i, -1, 0 };
            hs_frametab_add(&c->frames, l);
        }
    size_t *callers_first = hs_xcalloc(p->nfuncs + 1, sizeof *callers_first);
    for (size_t i = 0; i < p->nedges; i++)
        if (p->edges[i].calls) {
            hs_frametab_add(&c->frames, hs_frame_key(p->edges[i].caller));
            callers_first[p->edges[i].callee + 1]++;
        }
    for (size_t f = 0; f < p->nfuncs; f++)
        callers_first[f + 1] += callers_first[f];
    uint32_t *callers = hs_xcalloc(callers_first[p->nfuncs] + 1, sizeof *callers);
    size_t *fill = hs_xcalloc(p->nfuncs + 1, sizeof *fill);
    for (size_t i = 0; i < p->nedges; i++)
        if (p->edges[i].calls) {
            uint32_t f = p->edges[i].callee;
            callers[callers_first[f] + fill[f]++] = hs_frametab_add(&c->frames, hs_frame_key(p->edges[i].caller));
        }
    free(fill);
    uint32_t *seen = NULL;       /* the callers whose outermost place a stack has passed */
    uint32_t *at = NULL;         /* the stack's frames' indices */
    size_t seen_cap = 0, at_cap = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind != HS_STACK_CPU || !st->nframes)
            continue;
        hs_xgrow(&at, &at_cap, st->nframes, sizeof *at);
        for (uint32_t d = 0; d < st->nframes; d++)
            at[d] = hs_frametab_add(&c->frames, hs_frame_key(st->frames[d]));
        grow_self(c, &self_cap);
        c->self[at[0]] += st->count;
        /* root first: each caller's outermost pair in the stack, costed
         * where a counted edge gives it a call line; the leaf's function
         * has the sample as self cost, so none of its pairs */
        size_t n = 0;
        hs_xgrow(&seen, &seen_cap, st->nframes, sizeof *seen);
        seen[n++] = at[0];
        for (uint32_t d = st->nframes - 1; d > 0; d--) {
            size_t k = 0;
            while (k < n && seen[k] != at[d])
                k++;
            if (k < n)
                continue;
            seen[n++] = at[d];
            int32_t f = st->frames[d - 1].func;
            if (f < 0 || callers_first[f] == callers_first[f + 1])
                continue;
            size_t j = callers_first[f];
            while (j < callers_first[f + 1] && callers[j] != at[d])
                j++;
            if (j < callers_first[f + 1])
                pair_of(c, at[d], at[d - 1], 1)->cost += st->count;
        }
    }
    free(seen);
    free(at);
    free(callers);
    free(callers_first);
    grow_self(c, &self_cap);
}

static void object_of(cg *c, FILE *out, const char *key, hs_loc l)
{
    int32_t m = hs_loc_module(c->p, l);
    put_name(out, key, &c->obs, m >= 0 ? c->p->modules[m].name : "???", true);
}

static int cmp_edge_callee(const void *a, const void *b, void *ctx)
{
    const hs_profile *p = ctx;
    const hs_prof_edge *x = *(const hs_prof_edge *const *)a, *y = *(const hs_prof_edge *const *)b;
    (void)p;
    return x->callee < y->callee ? -1 : x->callee > y->callee;
}

bool hs_callgrind_wanted(const hs_profile *p)
{
    if (hs_stacks_total(p, HS_STACK_CPU))
        return true;
    for (size_t i = 0; i < p->nedges; i++)
        if (p->edges[i].calls)
            return true;
    return false;
}

int hs_write_callgrind(const hs_profile *p, FILE *out)
{
    cg c;
    memset(&c, 0, sizeof c);
    c.p = p;
    scan(&c);

    /* edges by caller frame, each caller's by callee */
    const hs_prof_edge **by = hs_xcalloc(p->nedges + 1, sizeof *by);
    size_t *first = hs_xcalloc(c.frames.n + 1, sizeof *first);
    for (size_t i = 0; i < p->nedges; i++)
        if (p->edges[i].calls)
            first[hs_frametab_find(&c.frames, hs_frame_key(p->edges[i].caller)) + 1]++;
    for (size_t f = 0; f < c.frames.n; f++)
        first[f + 1] += first[f];
    size_t *fill = hs_xcalloc(c.frames.n + 1, sizeof *fill);
    for (size_t i = 0; i < p->nedges; i++) {
        if (!p->edges[i].calls)
            continue;
        int64_t f = hs_frametab_find(&c.frames, hs_frame_key(p->edges[i].caller));
        by[first[f] + fill[f]++] = &p->edges[i];
    }
    for (size_t f = 0; f < c.frames.n; f++)
        hs_sort(by + first[f], first[f + 1] - first[f], sizeof *by, cmp_edge_callee, (void *)p);

    fprintf(out, "# callgrind format\nversion: 1\ncreator: hookscope %s\npid: %u\ncmd: ", HOOKSCOPE_VERSION, p->pid);
    for (const char *s = p->target_path ? p->target_path : "?"; *s; s++)
        fputc(*s == '\n' || *s == '\r' ? '?' : *s, out);
    for (int i = 0; i < p->nargs; i++) {
        fputc(' ', out);
        for (const char *s = p->args[i]; *s; s++)
            fputc(*s == '\n' || *s == '\r' ? '?' : *s, out);
    }
    fprintf(out, "\npositions: line\n");
    if (p->sampling.on)
        fprintf(out, "event: Samples : CPU samples (%s, %.6g Hz)\n", p->sampling.backend, p->sampling.rate_hz);
    else
        fprintf(out, "event: Samples : CPU samples (none: the run was not sampled)\n");
    fprintf(out, "events: Samples\n");

    char buf[600], cbuf[600];
    for (size_t f = 0; f < c.frames.n; f++) {
        hs_loc l = c.frames.v[f];
        fputc('\n', out);
        object_of(&c, out, "ob", l);
        put_name(out, "fl", &c.fls, "???", true);
        put_name(out, "fn", &c.fns, hs_loc_format(p, l, false, false, buf, sizeof buf), false);
        fprintf(out, "0 %llu\n", (unsigned long long)c.self[f]);
        for (size_t k = first[f]; k < first[f + 1]; k++) {
            const hs_prof_edge *e = by[k];
            hs_loc callee = { (int32_t)e->callee, -1, 0 };
            int64_t ci = hs_frametab_find(&c.frames, callee);
            pair_cost *pc = ci >= 0 ? pair_of(&c, (uint32_t)f, (uint32_t)ci, 0) : NULL;
            object_of(&c, out, "cob", callee);
            put_name(out, "cfn", &c.fns, hs_loc_format(p, callee, false, false, cbuf, sizeof cbuf), false);
            fprintf(out, "calls=%llu 0\n0 %llu\n", (unsigned long long)e->calls,
                    (unsigned long long)(pc ? pc->cost : 0));
        }
    }
    free(by);
    free(first);
    free(fill);
    free(c.self);
    free(c.pairs);
    hs_map_free(&c.pair_map);
    hs_frametab_free(&c.frames);
    hs_strtab_free(&c.obs.seen);
    hs_strtab_free(&c.fls.seen);
    hs_strtab_free(&c.fns.seen);
    return ferror(out) ? -1 : 0;
}
