/*
 * sampler/sampleset.c - the sample set (see sampler.h): unique stacks per
 * thread with their counts of each kind, the modules the samples point
 * into, the threads (with the times a backend measured), and the losses.
 *
 * Stacks are interned by a hash of (thread, truncated, frames) in an
 * hs_map, whose colliding keys are told apart by comparing the frames;
 * frames live in one pool.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"
#include "sampler/sampler.h"

typedef struct set_stack {
    uint32_t tid;
    uint32_t nframes;
    size_t frames;             /* offset in the pool */
    size_t modules;            /* offset in the module pool, or SIZE_MAX: not given */
    bool truncated;
    uint64_t count[HS_SAMPLE__KINDS];   /* by hs_sample_kind */
} set_stack;

typedef struct set_module {
    char *path;
    char *name;                /* NULL: the path's file name */
    uint64_t base;
    uint32_t size, timestamp;
    bool unloaded, agent;
    bool kernel, pdb_known;      /* hs_sampleset_module_identity */
    uint8_t pdb_guid[16];
    uint32_t pdb_age;
    char *pdb_name;
    hs_sample_func *funcs;     /* hs_sampleset_module_func */
    size_t nfuncs, cap_funcs;
} set_module;

typedef struct set_thread {
    uint32_t tid;
    double cpu_s;
    double running_s, wait_s, ready_s;
    uint64_t count[HS_SAMPLE__KINDS];
} set_thread;

struct hs_sampleset {
    set_stack *stacks;
    size_t nstacks, cap_stacks;
    uint64_t *pool;
    size_t npool, cap_pool;
    int32_t *mpool;            /* frames' modules, for stacks that give them */
    size_t nmpool, cap_mpool;
    hs_map index;              /* hash -> stack */
    set_module *modules;
    size_t nmodules, cap_modules;
    set_thread *threads;
    size_t nthreads, cap_threads;
    hs_map thread_index;       /* tid -> thread */
    uint64_t total[HS_SAMPLE__KINDS];
    volatile uint64_t taken;   /* hs_sampleset_taken_add */
    uint64_t lost;
    bool off_cpu_unknown;      /* hs_sampleset_off_cpu_unknown */
    hs_sample_time *times;     /* hs_sampleset_keep_times: [0, ntimes) of at most max_times */
    size_t ntimes, cap_times, max_times;
    uint64_t times_dropped;
};

hs_sampleset *hs_sampleset_new(void)
{
    return hs_xcalloc(1, sizeof(hs_sampleset));
}

void hs_sampleset_free(hs_sampleset *s)
{
    if (!s)
        return;
    free(s->stacks);
    free(s->pool);
    free(s->mpool);
    hs_map_free(&s->index);
    for (size_t i = 0; i < s->nmodules; i++) {
        free(s->modules[i].path);
        free(s->modules[i].name);
        free(s->modules[i].pdb_name);
        for (size_t f = 0; f < s->modules[i].nfuncs; f++)
            free((char *)s->modules[i].funcs[f].name);
        free(s->modules[i].funcs);
    }
    free(s->modules);
    free(s->threads);
    free(s->times);
    hs_map_free(&s->thread_index);
    free(s);
}

void hs_sampleset_keep_times(hs_sampleset *s, size_t max)
{
    s->max_times = max;
}

size_t hs_sampleset_time(hs_sampleset *s, uint32_t stack, int64_t qpc)
{
    if (!s->max_times || stack >= s->nstacks)
        return HS_NO_TIME;
    if (s->ntimes == s->max_times) {
        s->times_dropped++;
        return HS_NO_TIME;
    }
    hs_xgrow(&s->times, &s->cap_times, s->ntimes + 1, sizeof *s->times);
    s->times[s->ntimes] = (hs_sample_time){ stack, 0, qpc };
    return s->ntimes++;
}

void hs_sampleset_time_kind(hs_sampleset *s, size_t i, uint8_t kind)
{
    if (i < s->ntimes && kind < HS_SAMPLE__KINDS)
        s->times[i].kind = kind;
}

size_t hs_sampleset_ntimes(const hs_sampleset *s)
{
    return s->ntimes;
}

hs_sample_time hs_sampleset_time_at(const hs_sampleset *s, size_t i)
{
    return s->times[i];
}

uint64_t hs_sampleset_times_dropped(const hs_sampleset *s)
{
    return s->times_dropped;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
}

static set_thread *thread_of(hs_sampleset *s, uint32_t tid)
{
    uint32_t i;
    if ((i = hs_map_get(&s->thread_index, tid, 0)) != HS_MAP_NONE)
        return &s->threads[i];
    hs_xgrow(&s->threads, &s->cap_threads, s->nthreads + 1, sizeof *s->threads);
    set_thread *t = &s->threads[s->nthreads];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->cpu_s = t->running_s = t->wait_s = t->ready_s = -1;
    hs_map_xput(&s->thread_index, tid, 0, (uint32_t)s->nthreads);
    s->nthreads++;
    return t;
}

uint32_t hs_sampleset_stack_in(hs_sampleset *s, uint32_t tid, bool truncated, const uint64_t *frames,
                               const int32_t *modules, uint32_t nframes)
{
    uint64_t h = mix(mix(tid, truncated), nframes);
    for (uint32_t i = 0; i < nframes; i++)
        h = mix(h, frames[i]);
    if (modules)
        for (uint32_t i = 0; i < nframes; i++)
            h = mix(h, (uint64_t)(uint32_t)modules[i] + 1);
    size_t cursor = 0;
    uint32_t id;
    while (hs_map_next(&s->index, h, 0, &cursor, &id)) {
        const set_stack *st = &s->stacks[id];
        if (st->tid == tid && st->truncated == truncated && st->nframes == nframes &&
            !memcmp(s->pool + st->frames, frames, (size_t)nframes * 8) &&
            (modules ? st->modules != SIZE_MAX &&
                           !memcmp(s->mpool + st->modules, modules, (size_t)nframes * sizeof *modules)
                     : st->modules == SIZE_MAX))
            return id;
    }
    hs_xgrow(&s->pool, &s->cap_pool, s->npool + nframes, sizeof *s->pool);
    memcpy(s->pool + s->npool, frames, (size_t)nframes * 8);
    hs_xgrow(&s->stacks, &s->cap_stacks, s->nstacks + 1, sizeof *s->stacks);
    set_stack *st = &s->stacks[s->nstacks];
    memset(st, 0, sizeof *st);
    st->tid = tid;
    st->nframes = nframes;
    st->frames = s->npool;
    st->modules = SIZE_MAX;
    st->truncated = truncated;
    s->npool += nframes;
    if (modules) {
        hs_xgrow(&s->mpool, &s->cap_mpool, s->nmpool + nframes, sizeof *s->mpool);
        memcpy(s->mpool + s->nmpool, modules, (size_t)nframes * sizeof *modules);
        st->modules = s->nmpool;
        s->nmpool += nframes;
    }
    id = (uint32_t)s->nstacks++;
    hs_map_xadd(&s->index, h, 0, id);
    thread_of(s, tid);
    return id;
}

uint32_t hs_sampleset_stack(hs_sampleset *s, uint32_t tid, bool truncated, const uint64_t *frames,
                            uint32_t nframes)
{
    return hs_sampleset_stack_in(s, tid, truncated, frames, NULL, nframes);
}

void hs_sampleset_count(hs_sampleset *s, uint32_t stack, uint8_t kind, uint64_t n)
{
    if (stack >= s->nstacks || kind < HS_SAMPLE_CPU || kind >= HS_SAMPLE__KINDS || !n)
        return;
    s->stacks[stack].count[kind] += n;
    thread_of(s, s->stacks[stack].tid)->count[kind] += n;
    s->total[kind] += n;
}

void hs_sampleset_add(hs_sampleset *s, const hs_sample *smp)
{
    uint32_t id = hs_sampleset_stack(s, smp->tid, smp->truncated, smp->frames, smp->nframes);
    hs_sampleset_count(s, id, smp->kind, 1);
}

void hs_sampleset_lost(hs_sampleset *s, uint64_t n)
{
    s->lost += n;
}

uint32_t hs_sampleset_module(hs_sampleset *s, const char *path, uint64_t base, uint32_t size,
                             uint32_t timestamp, bool unloaded, bool agent)
{
    for (size_t i = 0; i < s->nmodules; i++) {
        set_module *m = &s->modules[i];
        if (m->base == base && m->size == size && !strcmp(m->path, path)) {
            m->unloaded |= unloaded;
            return (uint32_t)i;
        }
    }
    hs_xgrow(&s->modules, &s->cap_modules, s->nmodules + 1, sizeof *s->modules);
    set_module *m = &s->modules[s->nmodules++];
    memset(m, 0, sizeof *m);
    m->path = hs_xstrdup(path);
    m->base = base;
    m->size = size;
    m->timestamp = timestamp;
    m->unloaded = unloaded;
    m->agent = agent;
    return (uint32_t)(s->nmodules - 1);
}

void hs_sampleset_module_func(hs_sampleset *s, uint32_t module, uint32_t rva, uint32_t size, const char *name)
{
    if (module >= s->nmodules)
        return;
    set_module *m = &s->modules[module];
    hs_xgrow(&m->funcs, &m->cap_funcs, m->nfuncs + 1, sizeof *m->funcs);
    m->funcs[m->nfuncs++] = (hs_sample_func){rva, size, hs_xstrdup(name)};
}

void hs_sampleset_module_identity(hs_sampleset *s, uint32_t module, const char *name, bool kernel,
                                  const uint8_t guid[16], uint32_t age, const char *pdb_name)
{
    if (module >= s->nmodules)
        return;
    set_module *m = &s->modules[module];
    if (name) {
        free(m->name);
        m->name = hs_xstrdup(name);
    }
    m->kernel = kernel;
    if (guid) {
        m->pdb_known = true;
        memcpy(m->pdb_guid, guid, 16);
        m->pdb_age = age;
        free(m->pdb_name);
        m->pdb_name = hs_xstrdup(pdb_name ? pdb_name : "");
    }
}

void hs_sampleset_thread(hs_sampleset *s, uint32_t tid, double cpu_s)
{
    thread_of(s, tid)->cpu_s = cpu_s;
}

void hs_sampleset_thread_states(hs_sampleset *s, uint32_t tid, double running_s, double wait_s, double ready_s)
{
    set_thread *t = thread_of(s, tid);
    t->running_s = running_s;
    t->wait_s = wait_s;
    t->ready_s = ready_s;
}

void hs_sampleset_off_cpu_unknown(hs_sampleset *s)
{
    s->off_cpu_unknown = true;
}

bool hs_sampleset_off_cpu_known(const hs_sampleset *s)
{
    return !s->off_cpu_unknown;
}

void hs_sampleset_taken_add(hs_sampleset *s, uint64_t n)
{
    __atomic_add_fetch(&s->taken, n, __ATOMIC_RELAXED);
}

uint64_t hs_sampleset_taken(const hs_sampleset *s)
{
    return __atomic_load_n(&s->taken, __ATOMIC_RELAXED);
}

uint64_t hs_sampleset_total(const hs_sampleset *s, uint8_t kind)
{
    return kind >= HS_SAMPLE_CPU && kind < HS_SAMPLE__KINDS ? s->total[kind] : 0;
}

size_t hs_sampleset_unique(const hs_sampleset *s)
{
    return s->nstacks;
}

size_t hs_sampleset_nstacks(const hs_sampleset *s)
{
    return s->nstacks;
}

hs_sample_stack hs_sampleset_stack_at(const hs_sampleset *s, size_t i)
{
    const set_stack *st = &s->stacks[i];
    hs_sample_stack r;
    r.tid = st->tid;
    r.nframes = st->nframes;
    r.frames = s->pool + st->frames;
    r.modules = st->modules == SIZE_MAX ? NULL : s->mpool + st->modules;
    r.truncated = st->truncated;
    memcpy(r.count, st->count, sizeof r.count);
    return r;
}

size_t hs_sampleset_nmodules(const hs_sampleset *s)
{
    return s->nmodules;
}

hs_sample_module hs_sampleset_module_at(const hs_sampleset *s, size_t i)
{
    const set_module *m = &s->modules[i];
    hs_sample_module r;
    r.path = m->path;
    r.name = m->name;
    r.base = m->base;
    r.size = m->size;
    r.timestamp = m->timestamp;
    r.unloaded = m->unloaded;
    r.agent = m->agent;
    r.kernel = m->kernel;
    r.pdb_known = m->pdb_known;
    memcpy(r.pdb_guid, m->pdb_guid, 16);
    r.pdb_age = m->pdb_age;
    r.pdb_name = m->pdb_name;
    r.funcs = m->funcs;
    r.nfuncs = m->nfuncs;
    return r;
}

size_t hs_sampleset_nthreads(const hs_sampleset *s)
{
    return s->nthreads;
}

hs_sample_thread hs_sampleset_thread_at(const hs_sampleset *s, size_t i)
{
    hs_sample_thread r;
    r.tid = s->threads[i].tid;
    r.cpu_s = s->threads[i].cpu_s;
    r.running_s = s->threads[i].running_s;
    r.wait_s = s->threads[i].wait_s;
    r.ready_s = s->threads[i].ready_s;
    memcpy(r.count, s->threads[i].count, sizeof r.count);
    return r;
}

uint64_t hs_sampleset_lost_total(const hs_sampleset *s)
{
    return s->lost;
}
