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
    size_t at, len;              /* the record's text before the value, in the texts */
    uint64_t count;
} rec;

typedef struct recs {
    rec *v;
    size_t n, cap;
    hs_textbuf text;             /* the records' texts, one after another */
} recs;

/* A record whose text is what was put into r->text since `at`. */
static void add(recs *r, size_t at, uint64_t count)
{
    hs_xgrow(&r->v, &r->cap, r->n + 1, sizeof *r->v);
    r->v[r->n].at = at;
    r->v[r->n].len = r->text.n - at;
    r->v[r->n].count = count;
    r->n++;
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
    const char *mod = p->modules[p->funcs[key.func].module].name, *name = hs_func_label(p, (uint32_t)key.func);
    if (!name)
        return 0;
    /* frame_text's snprintf into 700 bytes, without it */
    size_t ml = strlen(mod), nl = strlen(name), n = ml + 1 + nl;
    if (n + 20 >= 700 || n + 1 > cap)
        return 0;
    memcpy(buf, mod, ml);
    buf[ml] = '`';
    memcpy(buf + ml + 1, name, nl);
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\n' || buf[i] == '\r')
            buf[i] = '?';
    buf[n] = 0;
    return n;
}

static void stack_text(const hs_profile *p, const hs_prof_stack *st, uint32_t max, hs_textbuf *b, hs_frametexts *texts)
{
    static const char indent[] = "              ";
    uint32_t n = max && st->nframes > max ? max : st->nframes;
    hs_textbuf_put(b, "\n", 1);
    for (uint32_t d = 0; d < n; d++) {
        hs_loc l = st->frames[d];
        size_t len = 0;
        const char *text = l.func >= 0 ? hs_frametext(texts, p, hs_frame_key(l), &len) : NULL;
        if (!len) {
            char buf[700];
            frame_text(p, l, buf, sizeof buf);
            hs_textbuf_put(b, indent, sizeof indent - 1);
            hs_textbuf_put(b, buf, strlen(buf));
            hs_textbuf_put(b, "\n", 1);
            continue;
        }
        /* indent, text, +0xoff, newline */
        char *w = hs_textbuf_room(b, sizeof indent + len + HS_HEX_TEXT + 2);
        memcpy(w, indent, sizeof indent - 1);
        w += sizeof indent - 1;
        memcpy(w, text, len);
        w += len;
        if (l.off) {
            *w++ = '+';
            w += hs_hex_text(l.off, w);
        }
        *w++ = '\n';
        b->n = (size_t)(w - b->s);
    }
}

static void func_key(const char *name, hs_textbuf *b)
{
    char buf[600];
    snprintf(buf, sizeof buf, "  %-50s", name);
    for (char *c = buf; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = '?';
    hs_textbuf_put(b, buf, strlen(buf));
}

/* Records' texts compared as strcmp compares them (they hold no NUL). */
static int cmp_text(const char *base, const rec *x, const rec *y)
{
    int c = memcmp(base + x->at, base + y->at, x->len < y->len ? x->len : y->len);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

static int cmp_count(const void *a, const void *b, void *ctx)
{
    const rec *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? -1 : 1;
    return cmp_text(ctx, x, y);
}

static uint64_t text_hash(const char *s, size_t n)
{
    uint64_t h = n * 0x9E3779B97F4A7C15ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xC2B2AE3D27D4EB4Full;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001B3ull;
    return h;
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
            size_t at = r->text.n;
            func_key(f->name, &r->text);
            add(r, at, f->calls);
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
        add(r, r->text.n, st->count);
    }
    hs_map_free(&same);
    hs_frametexts texts = { .make = func_text };
    hs_frametexts_premake(&texts, p, a->kind, a->frames);
    for (size_t k = start; k < r->n; k++) {
        const hs_prof_stack *st = &p->stacks[first[k - start]];
        r->v[k].at = r->text.n;
        if (by_func)
            func_key(p->funcs[st->func].name, &r->text);
        stack_text(p, st, a->frames, &r->text, &texts);
        r->v[k].len = r->text.n - r->v[k].at;
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
     * name): one record, at the first one's place */
    const char *text = r.text.s;
    hs_map same = { 0 };
    size_t w = 0;
    for (size_t i = 0; i < r.n; i++) {
        rec *x = &r.v[i];
        uint64_t h = text_hash(text + x->at, x->len);
        size_t cursor = 0;
        uint32_t k;
        bool found = false;
        while (!found && hs_map_next(&same, h, 0, &cursor, &k))
            if (!cmp_text(text, &r.v[k], x)) {
                r.v[k].count += x->count;
                found = true;
            }
        if (found)
            continue;
        hs_map_xadd(&same, h, 0, (uint32_t)w);
        r.v[w++] = *x;
    }
    hs_map_free(&same);
    r.n = w;
    hs_sort(r.v, r.n, sizeof *r.v, cmp_count, (void *)text);
    fputc('\n', out);
    for (size_t i = 0; i < r.n; i++) {
        fwrite(text + r.v[i].at, 1, r.v[i].len, out);
        fprintf(out, " %16llu\n", (unsigned long long)r.v[i].count);
    }
    free(r.v);
    free(r.text.s);
    return ferror(out) ? -1 : 0;
}

int hs_write_dtrace(const hs_profile *p, FILE *out)
{
    hs_dtrace_agg a = { HS_DKEY_STACK, hs_flame_kind(p), 0 };
    return hs_write_dtrace_agg(p, &a, out);
}
