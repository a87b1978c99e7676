/*
 * injector/profile/profile.c - building and querying a profile (see profile.h).
 */
#include "injector/profile/profile.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"

static const char *const stop_names[HS_STOP__COUNT] = {
    "exit", "crash", "duration", "interrupt", "detach", "target-exited", "recorded",
};

const char *hs_stop_name(int stop)
{
    return stop >= 0 && stop < HS_STOP__COUNT ? stop_names[stop] : NULL;
}

int hs_stop_from_name(const char *name)
{
    for (int i = 0; i < HS_STOP__COUNT; i++)
        if (!strcmp(stop_names[i], name))
            return i;
    return -1;
}

const char *hs_crash_name(uint32_t code)
{
    switch (code) {
    case 0xC0000005: return "access violation";
    case 0xC00000FD: return "stack overflow";
    case 0xC000001D: return "illegal instruction";
    case 0xC0000094: return "integer divide by zero";
    case 0xC0000095: return "integer overflow";
    case 0xC0000096: return "privileged instruction";
    case 0xC000008C: return "array bounds exceeded";
    case 0xC000008E: return "float divide by zero";
    case 0xC0000409: return "stack buffer overrun";
    case 0xC0000374: return "heap corruption";
    case 0xC0000006: return "in-page error";
    case 0xC0000025: return "noncontinuable exception";
    case 0xC0000026: return "invalid disposition";
    case 0x80000003: return "breakpoint";
    case 0x80000004: return "single step";
    case 0xE06D7363: return "unhandled C++ exception";
    case 0xC0000420: return "assertion failure";
    }
    if ((code & 0xF0000000u) == 0xC0000000u)
        return "unhandled exception";
    return NULL;
}

const char *hs_stack_kind_key(int kind)
{
    switch (kind) {
    case HS_STACK_CPU: return "sample_stacks";
    case HS_STACK_WAIT: return "wait_stacks";
    case HS_STACK_READY: return "ready_stacks";
    case HS_STACK_HOOKSCOPE: return "hookscope_stacks";
    default: return NULL;
    }
}

/* Capacities of the growing arrays, kept beside the profile. */
typedef struct caps {
    size_t modules, funcs, edges, stacks, threads, strings;
} caps;

typedef struct profile_box {
    hs_profile p;
    caps c;
    hs_map interned;             /* hash of a string -> its index in strings */
    hs_map by_name;              /* (hash of a name, module) -> the functions of that name */
    hs_map by_rva;               /* (module, rva) -> the functions at that rva */
} profile_box;

static caps *caps_of(hs_profile *p) { return &((profile_box *)p)->c; }

hs_profile *hs_profile_new(void)
{
    profile_box *b = hs_xcalloc(1, sizeof *b);
    b->p.stack_every = 1;
    b->p.crash_at = (hs_loc){ -1, -1, 0 };
    b->p.sampling.held_s = b->p.sampling.threads_s = -1;
    b->p.sampling.suspensions = b->p.sampling.reused = -1;
    return &b->p;
}

void hs_profile_free(hs_profile *p)
{
    if (!p)
        return;
    free(p->command);
    free(p->target_path);
    hs_timeline_free(p->timeline);
    free(p->target_rights);
    free(p->crash_what);
    for (int i = 0; i < p->nargs; i++)
        free(p->args[i]);
    free(p->args);
    for (size_t i = 0; i < p->nwarnings; i++)
        free(p->warnings[i]);
    free(p->warnings);
    free(p->trace.file);
    for (size_t i = 0; i < p->nmodules; i++) {
        free(p->modules[i].name);
        free(p->modules[i].path);
        free(p->modules[i].pdb_name);
    }
    free(p->modules);
    for (size_t i = 0; i < p->nfuncs; i++) {
        free(p->funcs[i].name);
        free(p->funcs[i].label);
        free(p->funcs[i].time);
    }
    free(p->funcs);
    free(p->edges);
    for (size_t i = 0; i < p->nstacks; i++) {
        free(p->stacks[i].frames);
        free(p->stacks[i].addrs);
        free(p->stacks[i].addr_modules);
        free(p->stacks[i].src);
    }
    free(p->stacks);
    free(p->threads_list);
    for (size_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    free(p->strings);
    hs_map_free(&((profile_box *)p)->interned);
    hs_map_free(&((profile_box *)p)->by_name);
    hs_map_free(&((profile_box *)p)->by_rva);
    free(p);
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    return h;
}


const char *hs_profile_intern(hs_profile *p, const char *s)
{
    hs_map *m = &((profile_box *)p)->interned;
    uint64_t h = str_hash(s);
    size_t cursor = 0;
    uint32_t i;
    while (hs_map_next(m, h, 0, &cursor, &i))
        if (!strcmp(p->strings[i], s))
            return p->strings[i];
    hs_xgrow(&p->strings, &caps_of(p)->strings, p->nstrings + 1, sizeof *p->strings);
    p->strings[p->nstrings] = hs_xstrdup(s);
    hs_map_xadd(m, h, 0, (uint32_t)p->nstrings);
    return p->strings[p->nstrings++];
}

hs_prof_thread *hs_profile_thread(hs_profile *p, uint32_t tid)
{
    for (size_t i = 0; i < p->nthreads_list; i++)
        if (p->threads_list[i].tid == tid)
            return &p->threads_list[i];
    hs_xgrow(&p->threads_list, &caps_of(p)->threads, p->nthreads_list + 1, sizeof *p->threads_list);
    hs_prof_thread *t = &p->threads_list[p->nthreads_list++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->cpu_s = t->running_s = t->wait_s = t->ready_s = -1;
    return t;
}

static double to_us(double s)
{
    return s >= 0 ? round(s * 1e6) / 1e6 : s;   /* (negative: unknown) */
}

static double to_100ns(double s)
{
    return s >= 0 ? round(s * 1e7) / 1e7 : s;
}

void hs_profile_round_seconds(hs_profile *p)
{
    p->wall_s = to_us(p->wall_s);
    p->sampling.cpu_s = to_us(p->sampling.cpu_s);
    p->sampling.held_s = to_us(p->sampling.held_s);
    p->sampling.threads_s = to_us(p->sampling.threads_s);
    for (size_t i = 0; i < p->nmodules; i++)
        p->modules[i].install_s = to_us(p->modules[i].install_s);
    for (size_t i = 0; i < p->nthreads_list; i++) {
        p->threads_list[i].cpu_s = to_us(p->threads_list[i].cpu_s);
        p->threads_list[i].running_s = to_100ns(p->threads_list[i].running_s);
        p->threads_list[i].wait_s = to_100ns(p->threads_list[i].wait_s);
        p->threads_list[i].ready_s = to_100ns(p->threads_list[i].ready_s);
    }
}

void hs_profile_count_samples(hs_profile *p)
{
    for (size_t i = 0; i < p->nfuncs; i++) {
        hs_prof_func *f = &p->funcs[i];
        f->cpu_self = f->cpu_total = f->wait_self = f->wait_total = f->ready_self = f->ready_total = 0;
    }
    for (size_t i = 0; i < p->nmodules; i++)
        p->modules[i].cpu_self = p->modules[i].wait_self = p->modules[i].ready_self = 0;
    /* the last stack each function was counted in, so that recursion
     * counts once per stack */
    size_t *seen = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *seen);
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *s = &p->stacks[i];
        if ((s->kind != HS_STACK_CPU && s->kind != HS_STACK_WAIT && s->kind != HS_STACK_READY) || !s->nframes)
            continue;
        hs_loc leaf = s->frames[0];
        int32_t m = hs_loc_module(p, leaf);
        if (m >= 0)
            *(s->kind == HS_STACK_CPU ? &p->modules[m].cpu_self
              : s->kind == HS_STACK_WAIT ? &p->modules[m].wait_self : &p->modules[m].ready_self) += s->count;
        if (leaf.func >= 0) {
            hs_prof_func *f = &p->funcs[leaf.func];
            *(s->kind == HS_STACK_CPU ? &f->cpu_self : s->kind == HS_STACK_WAIT ? &f->wait_self : &f->ready_self) +=
                s->count;
        }
        for (uint32_t d = 0; d < s->nframes; d++) {
            int32_t fi = s->frames[d].func;
            if (fi < 0 || seen[fi] == i + 1)
                continue;
            seen[fi] = i + 1;
            hs_prof_func *f = &p->funcs[fi];
            *(s->kind == HS_STACK_CPU ? &f->cpu_total : s->kind == HS_STACK_WAIT ? &f->wait_total : &f->ready_total) +=
                s->count;
        }
    }
    free(seen);
}

uint32_t hs_profile_add_module(hs_profile *p, const char *path, uint64_t base, uint32_t size)
{
    hs_xgrow(&p->modules, &caps_of(p)->modules, p->nmodules + 1, sizeof *p->modules);
    hs_prof_module *m = &p->modules[p->nmodules];
    memset(m, 0, sizeof *m);
    m->id = (uint32_t)p->nmodules;
    m->path = hs_xstrdup(path);
    m->name = hs_xstrdup(hs_basename(path));
    m->base = base;
    m->size = size;
    return (uint32_t)p->nmodules++;
}

/* "name@0xrva" for a function whose name another one of its module has */
static void label_apart(hs_prof_func *f)
{
    if (!f->label && f->rva != HS_RVA_NONE)
        f->label = hs_xasprintf("%s@0x%x", f->name, f->rva);
}

void hs_profile_name_func(hs_profile *p, uint32_t func, const char *name)
{
    hs_map *m = &((profile_box *)p)->by_name;
    hs_prof_func *f = &p->funcs[func];
    f->name = hs_xstrdup(name);
    uint64_t h = str_hash(name);
    size_t cursor = 0;
    uint32_t i;
    while (hs_map_next(m, h, f->module, &cursor, &i)) {
        hs_prof_func *g = &p->funcs[i];
        if (g->module == f->module && !strcmp(g->name, name)) {
            label_apart(g);
            label_apart(f);
        }
    }
    hs_map_xadd(m, h, f->module, func);
}

uint32_t hs_profile_add_func(hs_profile *p, uint32_t module, uint32_t rva, uint32_t size,
                             const char *name)
{
    hs_xgrow(&p->funcs, &caps_of(p)->funcs, p->nfuncs + 1, sizeof *p->funcs);
    uint32_t fi = (uint32_t)p->nfuncs++;
    hs_prof_func *f = &p->funcs[fi];
    memset(f, 0, sizeof *f);
    f->module = module;
    f->rva = rva;
    f->size = size;
    if (rva != HS_RVA_NONE)
        hs_map_xadd(&((profile_box *)p)->by_rva, module, rva, fi);
    if (name)
        hs_profile_name_func(p, fi, name);
    return fi;
}

void hs_profile_add_edge(hs_profile *p, hs_loc caller, uint32_t callee, uint64_t calls, uint64_t site)
{
    hs_xgrow(&p->edges, &caps_of(p)->edges, p->nedges + 1, sizeof *p->edges);
    hs_prof_edge *e = &p->edges[p->nedges++];
    e->caller = caller;
    e->callee = callee;
    e->calls = calls;
    e->site = site;
}

hs_prof_stack *hs_profile_add_stack(hs_profile *p, uint8_t kind, uint32_t func, uint64_t count,
                                    uint32_t nframes)
{
    hs_xgrow(&p->stacks, &caps_of(p)->stacks, p->nstacks + 1, sizeof *p->stacks);
    hs_prof_stack *s = &p->stacks[p->nstacks++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->func = func;
    s->count = count;
    s->nframes = nframes;
    s->frames = hs_xcalloc(nframes ? nframes : 1, sizeof *s->frames);
    return s;
}

void hs_profile_warn(hs_profile *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    p->warnings = hs_xrealloc(p->warnings, (p->nwarnings + 1) * sizeof *p->warnings);
    p->warnings[p->nwarnings++] = hs_xstrdup(buf);
}

hs_prof_time *hs_prof_time_of(hs_profile *p, uint32_t func)
{
    hs_prof_func *f = &p->funcs[func];
    if (!f->time)
        f->time = hs_xcalloc(1, sizeof *f->time);
    return f->time;
}

const hs_prof_time *hs_prof_time_get(const hs_profile *p, uint32_t func)
{
    static const hs_prof_time zero;
    return p->funcs[func].time ? p->funcs[func].time : &zero;
}

int64_t hs_profile_find_func(const hs_profile *p, uint32_t module, const char *name, uint32_t rva)
{
    const hs_map *m = &((const profile_box *)p)->by_name;
    size_t cursor = 0;
    uint32_t i;
    int64_t first = -1;
    while (hs_map_next(m, str_hash(name), module, &cursor, &i)) {
        const hs_prof_func *f = &p->funcs[i];
        if (f->module == module && (rva == HS_RVA_NONE || f->rva == rva) && !strcmp(f->name, name) &&
            (first < 0 || i < first))
            first = i;
    }
    return first;
}

int64_t hs_profile_func_at(const hs_profile *p, uint32_t module, uint32_t rva)
{
    const hs_map *m = &((const profile_box *)p)->by_rva;
    size_t cursor = 0;
    uint32_t i;
    int64_t first = -1;
    while (hs_map_next(m, module, rva, &cursor, &i))
        if (first < 0 || i < first)
            first = i;
    return first;
}

double hs_rate_as_saved(double hz)
{
    char kept[40];
    snprintf(kept, sizeof kept, "%.6g", hz);
    return strtod(kept, NULL);
}

int32_t hs_loc_module(const hs_profile *p, hs_loc l)
{
    return l.func >= 0 ? (int32_t)p->funcs[l.func].module : l.module;
}

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

int64_t hs_profile_find_module(const hs_profile *p, const char *name)
{
    for (size_t i = 0; i < p->nmodules; i++)
        if (ieq(p->modules[i].name, name))
            return (int64_t)i;
    return -1;
}

/* A bounded string under construction: as snprintf fills buf, cut at
 * len - 1 bytes and always terminated (len > 0). loc_format runs once per
 * frame of every stack in every writer, so it copies instead of parsing a
 * format. */
typedef struct tbuf {
    char *s;
    size_t n, room;              /* room: bytes that still fit before the terminator */
} tbuf;

static void put_n(tbuf *b, const char *s, size_t k)
{
    if (k > b->room) {
        /* cut at a character's start, never inside a UTF-8 sequence; and
         * nothing after it (no "+0x..." behind a cut name) */
        k = b->room;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
            k--;
        memcpy(b->s + b->n, s, k);
        b->n += k;
        b->room = 0;
        return;
    }
    memcpy(b->s + b->n, s, k);
    b->n += k;
    b->room -= k;
}

static void put(tbuf *b, const char *s)
{
    put_n(b, s ? s : "(null)", strlen(s ? s : "(null)"));
}

size_t hs_hex_text(uint64_t v, char out[HS_HEX_TEXT])
{
    char t[HS_HEX_TEXT];
    size_t i = sizeof t;
    do {
        t[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    t[--i] = 'x';
    t[--i] = '0';
    memcpy(out, t + i, sizeof t - i);
    return sizeof t - i;
}

size_t hs_dec_text(uint64_t v, char out[HS_DEC_TEXT])
{
    char t[HS_DEC_TEXT];
    size_t i = sizeof t;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    memcpy(out, t + i, sizeof t - i);
    return sizeof t - i;
}

static void put_hex(tbuf *b, uint64_t v)
{
    char t[HS_HEX_TEXT];
    put_n(b, t, hs_hex_text(v, t));
}

static char *loc_format(const hs_profile *p, hs_loc l, bool with_module, bool with_offset, bool label,
                        char *buf, size_t len)
{
    if (!len)
        return buf;
    tbuf b = { buf, 0, len - 1 };
    if (l.func >= 0) {
        const hs_prof_func *f = &p->funcs[l.func];
        if (with_module) {
            put(&b, p->modules[f->module].name);
            put_n(&b, "!", 1);
        }
        put(&b, label ? hs_func_label(p, (uint32_t)l.func) : f->name);
        if (with_offset) {
            put_n(&b, "+", 1);
            put_hex(&b, l.off);
        }
    } else if (l.module >= 0) {
        put(&b, p->modules[l.module].name);
        put_n(&b, "+", 1);
        put_hex(&b, l.off);
    } else {
        put_hex(&b, l.off);
    }
    buf[b.n] = 0;
    return buf;
}

char *hs_loc_format(const hs_profile *p, hs_loc l, bool with_module, bool with_offset, char *buf,
                    size_t len)
{
    return loc_format(p, l, with_module, with_offset, true, buf, len);
}

char *hs_loc_format_saved(const hs_profile *p, hs_loc l, bool with_module, bool with_offset, char *buf,
                          size_t len)
{
    return loc_format(p, l, with_module, with_offset, false, buf, len);
}

void hs_caller_key_of(const hs_profile *p, hs_loc caller, hs_caller_key *k)
{
    int32_t m = hs_loc_module(p, caller);
    k->mod = m >= 0 ? p->modules[m].name : "";
    k->base = m >= 0 ? p->modules[m].base : 0;
    k->module = m;
    k->rva = caller.func >= 0 ? p->funcs[caller.func].rva : 0;
    hs_loc_format_saved(p, caller, false, false, k->label, sizeof k->label);
}

int hs_caller_key_cmp(const hs_caller_key *a, const hs_caller_key *b)
{
    int c = strcmp(a->mod, b->mod);
    if (c)
        return c;
    if (a->base != b->base)
        return a->base < b->base ? -1 : 1;
    if (a->module != b->module)
        return a->module < b->module ? -1 : 1;
    c = strcmp(a->label, b->label);
    if (c)
        return c;
    return a->rva < b->rva ? -1 : a->rva > b->rva;
}

typedef struct edge_key {
    const hs_prof_edge *e;
    hs_caller_key k;
} edge_key;

/* by callee, then caller */
static int cmp_edge_key(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const edge_key *x = a, *y = b;
    if (x->e->callee != y->e->callee)
        return x->e->callee < y->e->callee ? -1 : 1;
    return hs_caller_key_cmp(&x->k, &y->k);
}

void hs_profile_merge_edges(hs_profile *p)
{
    if (!p->nedges)
        return;
    edge_key *k = hs_xcalloc(p->nedges, sizeof *k);
    for (size_t i = 0; i < p->nedges; i++) {
        k[i].e = &p->edges[i];
        hs_caller_key_of(p, p->edges[i].caller, &k[i].k);
    }
    hs_sort(k, p->nedges, sizeof *k, cmp_edge_key, NULL);
    hs_prof_edge *out = hs_xcalloc(p->nedges, sizeof *out);
    size_t w = 0;
    for (size_t i = 0; i < p->nedges; i++) {
        if (w && cmp_edge_key(&k[i - 1], &k[i], NULL) == 0) {
            out[w - 1].calls += k[i].e->calls;
        } else {
            out[w] = *k[i].e;
            out[w].site = 0;
            w++;
        }
    }
    free(k);
    free(p->edges);
    p->edges = out;
    p->nedges = w;
    caps_of(p)->edges = p->nedges;
}

uint64_t hs_profile_ticks_ns(const hs_profile *p, uint64_t ticks)
{
    if (!(p->tsc_hz > 0))
        return 0;
    double ns = (double)ticks * 1e9 / p->tsc_hz;
    return ns >= 1.8e19 ? UINT64_MAX : (uint64_t)(ns + 0.5);
}
