/*
 * injector/output/dtrace_agg.c - DTrace's aggregation output (see dtrace.h),
 * and the "dtrace" writer of the writers table: @[ustack()] = count() of
 * the stacks a flame graph shows (CPU samples, else entry stacks).
 *
 * Layout, as libdtrace's dt_consume.c prints it: dtrace(1) prints "\n"
 * once the tracing stops, then each aggregation record: every key (a
 * string key as "  %-50s"; a ustack() key as "\n" and one line per frame,
 * indented 14 spaces), then the value as " %16lld", then "\n". Records
 * come in ascending order of value.
 */
#include "injector/output/dtrace_agg.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"
#include "injector/output/stackset.h"
#include "injector/output/writers.h"

typedef struct rec {
    char *key;                   /* the record's text before the value */
    uint64_t count;
} rec;

typedef struct recs {
    rec *v;
    size_t n, cap;
} recs;

static void add(recs *r, char *key, uint64_t count)
{
    hs_xgrow(&r->v, &r->cap, r->n + 1, sizeof *r->v);
    r->v[r->n].key = key;
    r->v[r->n].count = count;
    r->n++;
}

/* A growing string. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    hs_xgrow(&b->s, &b->cap, b->n + n + 1, 1);
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void sb_add(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

/* One frame as ustack() prints it. */
static void frame_text(const hs_profile *p, hs_loc l, char *buf, size_t len)
{
    if (l.func >= 0) {
        const char *mod = p->modules[p->funcs[l.func].module].name, *name = hs_func_label(p, (uint32_t)l.func);
        if (l.off)
            snprintf(buf, len, "%s`%s+0x%llx", mod, name, (unsigned long long)l.off);
        else
            snprintf(buf, len, "%s`%s", mod, name);
    } else if (l.module >= 0) {
        snprintf(buf, len, "%s`0x%llx", p->modules[l.module].name,
                 (unsigned long long)(p->modules[l.module].base + l.off));
    } else {
        snprintf(buf, len, "0x%llx", (unsigned long long)l.off);
    }
    for (char *c = buf; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = '?';
}

/* A function's frame up to its offset, "module`function", made once per
 * function (hs_frametexts); 0 for a name so long that the offset would
 * be cut (the frame is then made whole by frame_text). */
static size_t func_text(const hs_profile *p, hs_loc key, char *buf, size_t cap, void *ctx)
{
    (void)ctx;
    char t[700];
    frame_text(p, key, t, sizeof t);
    size_t n = strlen(t);
    if (n + 20 >= sizeof t || n + 1 > cap)
        return 0;
    memcpy(buf, t, n + 1);
    return n;
}

static void stack_text(const hs_profile *p, const hs_prof_stack *st, uint32_t max, sbuf *b, hs_frametexts *texts)
{
    static const char indent[] = "              ";
    uint32_t n = max && st->nframes > max ? max : st->nframes;
    sb_put(b, "\n", 1);
    for (uint32_t d = 0; d < n; d++) {
        hs_loc l = st->frames[d];
        size_t len = 0;
        const char *text = l.func >= 0 ? hs_frametext(texts, p, hs_frame_key(l), &len) : NULL;
        sb_put(b, indent, sizeof indent - 1);
        if (!len) {
            char buf[700];
            frame_text(p, l, buf, sizeof buf);
            sb_add(b, buf);
        } else {
            sb_put(b, text, len);
            if (l.off) {
                char hex[HS_HEX_TEXT];
                sb_put(b, "+", 1);
                sb_put(b, hex, hs_hex_text(l.off, hex));
            }
        }
        sb_put(b, "\n", 1);
    }
}

static void func_key(const char *name, sbuf *b)
{
    char buf[600];
    snprintf(buf, sizeof buf, "  %-50s", name);
    for (char *c = buf; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = '?';
    sb_add(b, buf);
}

static int cmp_key(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    return strcmp(((const rec *)a)->key, ((const rec *)b)->key);
}

static int cmp_count(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const rec *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* The frames of a stack that its record keeps (max 0: all). */
static uint32_t kept(const hs_prof_stack *st, uint32_t max)
{
    return max && st->nframes > max ? max : st->nframes;
}

static uint64_t key_hash(const hs_prof_stack *st, uint32_t max, bool by_func)
{
    uint64_t h = by_func ? st->func * 0x9E3779B97F4A7C15ull : 0;
    for (uint32_t d = 0; d < kept(st, max); d++) {
        hs_loc l = st->frames[d];
        h = (h ^ (uint64_t)(uint32_t)l.func) * 0x100000001B3ull;
        h = (h ^ ((uint64_t)(uint32_t)l.module << 32 ^ l.off)) * 0xC2B2AE3D27D4EB4Full;
        h ^= h >> 29;
    }
    return h;
}

/* The two stacks have one record: the same frames kept (and function). */
static bool same_key(const hs_prof_stack *a, const hs_prof_stack *b, uint32_t max, bool by_func)
{
    uint32_t n = kept(a, max);
    if (n != kept(b, max) || (by_func && a->func != b->func))
        return false;
    for (uint32_t d = 0; d < n; d++)
        if (!hs_loc_same(a->frames[d], b->frames[d]))
            return false;
    return true;
}

/* The records of one profile. */
static void collect(const hs_profile *p, const hs_dtrace_agg *a, recs *r)
{
    if (a->key == HS_DKEY_FUNC) {
        for (size_t i = 0; i < p->nfuncs; i++) {
            const hs_prof_func *f = &p->funcs[i];
            if (!f->calls)
                continue;
            sbuf b = { 0 };
            func_key(f->name, &b);
            add(r, b.s, f->calls);
        }
        return;
    }
    /* stacks with the same key (they differ in threads, or below the
     * frames kept) are one record before their text is put together */
    bool by_func = a->key == HS_DKEY_FUNC_STACK;
    size_t start = r->n;
    size_t *first = hs_xcalloc(p->nstacks ? p->nstacks : 1, sizeof *first);   /* per record: its first stack */
    hs_map same = { 0 };
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind != a->kind || !st->nframes || !st->count)
            continue;
        uint64_t h = key_hash(st, a->frames, by_func);
        size_t cursor = 0;
        uint32_t k;
        bool found = false;
        while (!found && hs_map_next(&same, h, 0, &cursor, &k))
            if (same_key(&p->stacks[first[k]], st, a->frames, by_func)) {
                r->v[start + k].count += st->count;
                found = true;
            }
        if (found)
            continue;
        hs_map_xadd(&same, h, 0, (uint32_t)(r->n - start));
        first[r->n - start] = i;
        add(r, NULL, st->count);
    }
    hs_map_free(&same);
    hs_frametexts texts = { .make = func_text };
    for (size_t k = start; k < r->n; k++) {
        const hs_prof_stack *st = &p->stacks[first[k - start]];
        sbuf b = { 0 };
        if (by_func)
            func_key(p->funcs[st->func].name, &b);
        stack_text(p, st, a->frames, &b, &texts);
        r->v[k].key = b.s;
    }
    hs_frametexts_free(&texts);
    free(first);
}

int hs_write_dtrace_agg(const hs_profile *p, const hs_dtrace_agg *a, FILE *out)
{
    return hs_write_dtrace_aggs(&p, 1, a, out);
}

int hs_write_dtrace_aggs(const hs_profile *const *ps, size_t np, const hs_dtrace_agg *a, FILE *out)
{
    recs r = { 0 };
    for (size_t i = 0; i < np; i++)
        collect(ps[i], a, &r);
    /* the same key (stacks cut to the same frames, functions of the same
     * name): one record */
    hs_sort(r.v, r.n, sizeof *r.v, cmp_key, NULL);
    size_t w = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (w && !strcmp(r.v[w - 1].key, r.v[i].key)) {
            r.v[w - 1].count += r.v[i].count;
            free(r.v[i].key);
        } else {
            r.v[w++] = r.v[i];
        }
    }
    r.n = w;
    hs_sort(r.v, r.n, sizeof *r.v, cmp_count, NULL);
    fputc('\n', out);
    for (size_t i = 0; i < r.n; i++) {
        fprintf(out, "%s %16llu\n", r.v[i].key, (unsigned long long)r.v[i].count);
        free(r.v[i].key);
    }
    free(r.v);
    return ferror(out) ? -1 : 0;
}

int hs_write_dtrace(const hs_profile *p, FILE *out)
{
    hs_dtrace_agg a = { HS_DKEY_STACK, hs_flame_kind(p), 0 };
    return hs_write_dtrace_agg(p, &a, out);
}
