/*
 * injector/profile/from_samples.c - see from_samples.h.
 */
#include "injector/profile/from_samples.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hook/base/util.h"

/* A sample's kind as a profile's stack kind. */
static uint8_t stack_kind(int kind)
{
    switch (kind) {
    case HS_SAMPLE_CPU: return HS_STACK_CPU;
    case HS_SAMPLE_READY: return HS_STACK_READY;
    case HS_SAMPLE_HOOKSCOPE: return HS_STACK_HOOKSCOPE;
    default: return HS_STACK_WAIT;
    }
}

/* by thread, then frames (shorter first), then truncated */
static int cmp_stack(const void *a, const void *b, void *ctx)
{
    const hs_sample_stack *st = ctx;
    const hs_sample_stack *x = &st[*(const uint32_t *)a], *y = &st[*(const uint32_t *)b];
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    uint32_t n = x->nframes < y->nframes ? x->nframes : y->nframes;
    for (uint32_t i = 0; i < n; i++)
        if (x->frames[i] != y->frames[i])
            return x->frames[i] < y->frames[i] ? -1 : 1;
    if (x->nframes != y->nframes)
        return x->nframes < y->nframes ? -1 : 1;
    return (int)x->truncated - (int)y->truncated;
}

/* A stack's place in that order, for the sort: its thread and leaf
 * frame beside it decide most comparisons without reading its frames. */
typedef struct stack_key {
    uint32_t tid;
    uint32_t stack;              /* its index */
    uint64_t leaf;               /* frames[0]; 0 when it has no frames */
} stack_key;

static int cmp_stack_key(const void *a, const void *b, void *ctx)
{
    const stack_key *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    const hs_sample_stack *st = ctx;
    if (x->leaf != y->leaf && st[x->stack].nframes && st[y->stack].nframes)
        return x->leaf < y->leaf ? -1 : 1;
    return cmp_stack(&x->stack, &y->stack, ctx);
}

static int cmp_tid(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint32_t x = ((const hs_sample_thread *)a)->tid, y = ((const hs_sample_thread *)b)->tid;
    return x < y ? -1 : x > y;
}

/* The profile's module at the same place with the same file name, or -1. */
static int64_t profile_module(const hs_profile *p, const hs_sample_module *m)
{
    const char *name = hs_basename(m->path);
    for (size_t i = 0; i < p->nmodules; i++) {
        const hs_prof_module *pm = &p->modules[i];
        if (pm->base == m->base && pm->size == m->size && !strcasecmp(hs_basename(pm->path), name))
            return (int64_t)i;
    }
    return -1;
}

/* The set's modules into p; returns where each went (malloc'd). */
static uint32_t *add_modules(hs_profile *p, const hs_sampleset *s)
{
    size_t n = hs_sampleset_nmodules(s);
    uint32_t *where = hs_xcalloc(n ? n : 1, sizeof *where);
    for (size_t i = 0; i < n; i++) {
        hs_sample_module m = hs_sampleset_module_at(s, i);
        int64_t at = profile_module(p, &m);
        if (at >= 0) {
            p->modules[at].unloaded |= m.unloaded;
            where[i] = (uint32_t)at;
            continue;
        }
        uint32_t k = hs_profile_add_module(p, m.path, m.base, m.size);
        where[i] = k;
        hs_prof_module *d = &p->modules[k];
        if (m.name) {
            free(d->name);
            d->name = hs_xstrdup(m.name);
        }
        d->timestamp = m.timestamp;
        d->unloaded = m.unloaded;
        d->agent = m.agent;
        d->kernel = m.kernel;
        d->jit = m.nfuncs > 0;
        for (size_t f = 0; f < m.nfuncs; f++)
            hs_profile_add_func(p, k, m.funcs[f].rva, m.funcs[f].size, m.funcs[f].name);
        if (m.pdb_known) {
            d->pdb_known = true;
            memcpy(d->pdb_guid, m.pdb_guid, 16);
            d->pdb_age = m.pdb_age;
            d->pdb_name = hs_xstrdup(m.pdb_name ? m.pdb_name : "");
        }
    }
    return where;
}

/* The set's stacks into p; samples without a stack (a stretch off the CPU
 * that had none) are counted in the sampling figures only. *of_kind
 * (malloc'd) gets, for each of the set's stacks and each kind, the
 * profile stack made of it (index stack * HS_SAMPLE__KINDS + kind; at
 * kind 0 the first made of it; UINT32_MAX: none). */
static void add_stacks(hs_profile *p, const hs_sampleset *s, const uint32_t *module_at, uint32_t **of_kind)
{
    size_t n = hs_sampleset_nstacks(s);
    hs_sample_stack *st = hs_xcalloc(n ? n : 1, sizeof *st);
    stack_key *keys = hs_xcalloc(n ? n : 1, sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        st[i] = hs_sampleset_stack_at(s, i);
        keys[i] = (stack_key){ st[i].tid, (uint32_t)i, st[i].nframes ? st[i].frames[0] : 0 };
    }
    hs_sort(keys, n, sizeof *keys, cmp_stack_key, st);
    uint32_t *order = hs_xcalloc(n ? n : 1, sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = keys[i].stack;
    free(keys);
    size_t nk = (n ? n : 1) * HS_SAMPLE__KINDS;
    uint32_t *first = hs_xmalloc(nk * sizeof *first);
    memset(first, 0xff, nk * sizeof *first);
    for (int kind = HS_SAMPLE_CPU; kind < HS_SAMPLE__KINDS; kind++) {
        for (size_t k = 0; k < n; k++) {
            const hs_sample_stack *x = &st[order[k]];
            if (!x->nframes && kind == HS_SAMPLE_WAIT)
                p->sampling.wait_no_stack += x->count[kind];
            if (!x->nframes && kind == HS_SAMPLE_READY)
                p->sampling.ready_no_stack += x->count[kind];
            if (!x->count[kind] || !x->nframes)
                continue;
            uint32_t *at = &first[(size_t)order[k] * HS_SAMPLE__KINDS];
            if (at[0] == UINT32_MAX)
                at[0] = (uint32_t)p->nstacks;
            at[kind] = (uint32_t)p->nstacks;
            hs_prof_stack *d = hs_profile_add_stack(p, stack_kind(kind), 0, x->count[kind], x->nframes);
            d->tid = x->tid;
            d->truncated = x->truncated;
            d->addrs = hs_xmalloc((size_t)x->nframes * 8);
            memcpy(d->addrs, x->frames, (size_t)x->nframes * 8);
            if (x->modules) {
                d->addr_modules = hs_xmalloc((size_t)x->nframes * sizeof *d->addr_modules);
                for (uint32_t f = 0; f < x->nframes; f++)
                    d->addr_modules[f] = x->modules[f] >= 0 ? (int32_t)module_at[x->modules[f]] : -1;
            }
        }
    }
    free(order);
    free(st);
    *of_kind = first;
}

/* --timeline: each sample with its time, as a profile stack's: the one
 * of the kind it was counted as, where the backend told it, else the
 * first made of its stack. */
static void add_times(hs_profile *p, const hs_sampleset *s, const uint32_t *of_kind)
{
    hs_prof_timeline *t = p->timeline;
    size_t n = hs_sampleset_ntimes(s);
    t->samples_dropped += hs_sampleset_times_dropped(s);
    t->samples = hs_xrealloc(t->samples, (t->nsamples + n + 1) * sizeof *t->samples);
    for (size_t i = 0; i < n; i++) {
        hs_sample_time x = hs_sampleset_time_at(s, i);
        const uint32_t *at = &of_kind[(size_t)x.stack * HS_SAMPLE__KINDS];
        uint32_t stack = x.kind && at[x.kind] != UINT32_MAX ? at[x.kind] : at[0];
        if (stack == UINT32_MAX) {
            t->samples_dropped++;   /* a stack no kind counted */
            continue;
        }
        t->samples[t->nsamples].stack = stack;
        t->samples[t->nsamples].qpc = x.qpc;
        t->nsamples++;
    }
}

static uint32_t add_threads(hs_profile *p, const hs_sampleset *s)
{
    size_t n = hs_sampleset_nthreads(s);
    hs_sample_thread *threads = hs_xcalloc(n ? n : 1, sizeof *threads);
    for (size_t i = 0; i < n; i++)
        threads[i] = hs_sampleset_thread_at(s, i);
    hs_sort(threads, n, sizeof *threads, cmp_tid, NULL);
    uint32_t sampled = 0;
    for (size_t i = 0; i < n; i++) {
        const hs_sample_thread *t = &threads[i];
        hs_prof_thread *d = hs_profile_thread(p, t->tid);
        d->cpu_samples += t->count[HS_SAMPLE_CPU];
        d->wait_samples += t->count[HS_SAMPLE_WAIT];
        d->ready_samples += t->count[HS_SAMPLE_READY];
        d->hookscope_samples += t->count[HS_SAMPLE_HOOKSCOPE];
        if (t->cpu_s >= 0)
            d->cpu_s = t->cpu_s;
        if (t->running_s >= 0)
            d->running_s = t->running_s;
        if (t->wait_s >= 0)
            d->wait_s = t->wait_s;
        if (t->ready_s >= 0)
            d->ready_s = t->ready_s;
        if (t->count[HS_SAMPLE_CPU] || t->count[HS_SAMPLE_WAIT] || t->count[HS_SAMPLE_READY] ||
            t->count[HS_SAMPLE_HOOKSCOPE])
            sampled++;
    }
    free(threads);
    return sampled;
}

void hs_profile_add_samples(hs_profile *p, const hs_sampleset *s)
{
    uint32_t *module_at = add_modules(p, s), *of_kind;
    add_stacks(p, s, module_at, &of_kind);
    free(module_at);
    if (p->timeline)
        add_times(p, s, of_kind);
    free(of_kind);
    uint32_t sampled = add_threads(p, s);
    hs_prof_sampling *sm = &p->sampling;
    sm->on = true;
    sm->samples += hs_sampleset_total(s, HS_SAMPLE_CPU);
    sm->wait_samples += hs_sampleset_total(s, HS_SAMPLE_WAIT);
    sm->ready_samples += hs_sampleset_total(s, HS_SAMPLE_READY);
    sm->hookscope_samples += hs_sampleset_total(s, HS_SAMPLE_HOOKSCOPE);
    sm->off_cpu_unknown |= !hs_sampleset_off_cpu_known(s);
    sm->lost += hs_sampleset_lost_total(s);
    sm->threads += sampled;
}
