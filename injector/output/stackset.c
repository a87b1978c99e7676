/*
 * injector/output/stackset.c - see stackset.h.
 */
#include "injector/output/stackset.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"

static uint64_t loc_hash(hs_loc l)
{
    uint64_t h = (uint64_t)(uint32_t)l.func * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)(uint32_t)l.module + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= l.off * 0x165667B19E3779F9ull;
    return h ^ (h >> 29);
}

static bool func_key(hs_loc key)
{
    return key.func >= 0 && key.module == -1 && key.off == 0;
}

int64_t hs_frametab_find(const hs_frametab *t, hs_loc key)
{
    if (func_key(key))
        return (size_t)key.func < t->by_func_cap && t->by_func[key.func] ? (int64_t)t->by_func[key.func] - 1 : -1;
    size_t cursor = 0;
    uint32_t i;
    while (hs_map_next(&t->map, loc_hash(key), 0, &cursor, &i))
        if (hs_loc_same(t->v[i], key))
            return i;
    return -1;
}

uint32_t hs_frametab_add_key(hs_frametab *t, hs_loc key)
{
    int64_t i = hs_frametab_find(t, key);
    if (i >= 0)
        return (uint32_t)i;
    hs_xgrow(&t->v, &t->cap, t->n + 1, sizeof *t->v);
    t->v[t->n] = key;
    if (func_key(key)) {
        size_t old = t->by_func_cap;
        hs_xgrow(&t->by_func, &t->by_func_cap, (size_t)key.func + 1, sizeof *t->by_func);
        memset(t->by_func + old, 0, (t->by_func_cap - old) * sizeof *t->by_func);
        t->by_func[key.func] = (uint32_t)t->n + 1;
    } else {
        hs_map_xadd(&t->map, loc_hash(key), 0, (uint32_t)t->n);
    }
    return (uint32_t)t->n++;
}

void hs_frametab_free(hs_frametab *t)
{
    free(t->v);
    free(t->by_func);
    hs_map_free(&t->map);
    memset(t, 0, sizeof *t);
}

const char *hs_frametext_make(hs_frametexts *t, const hs_profile *p, hs_loc key, size_t *len)
{
    hs_frametext_at *at;
    if (func_key(key)) {
        size_t old = t->func_cap;
        hs_xgrow(&t->func_text, &t->func_cap, (size_t)key.func + 1, sizeof *t->func_text);
        memset(t->func_text + old, 0, (t->func_cap - old) * sizeof *t->func_text);
        at = &t->func_text[key.func];
    } else {
        size_t known = t->keys.n;
        uint32_t i = hs_frametab_add_key(&t->keys, key);
        if (t->keys.n > known) {
            hs_xgrow(&t->key_text, &t->key_cap, t->keys.n, sizeof *t->key_text);
            t->key_text[i].at = 0;
        }
        at = &t->key_text[i];
    }
    if (!at->at) {
        char buf[1200];
        size_t n = t->make(p, key, buf, sizeof buf, t->ctx);
        hs_xgrow(&t->buf, &t->buf_cap, t->used + n + 1, 1);
        memcpy(t->buf + t->used, buf, n);
        t->buf[t->used + n] = 0;
        at->at = (uint32_t)t->used + 1;
        at->len = (uint32_t)n;
        t->used += n + 1;
    }
    *len = at->len;
    return t->buf + at->at - 1;
}

void hs_frametexts_premake(hs_frametexts *t, const hs_profile *p, int kind, uint32_t max)
{
    uint8_t *used = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, 1);
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind != kind)
            continue;
        uint32_t n = max && st->nframes > max ? max : st->nframes;
        for (uint32_t d = 0; d < n; d++)
            if (st->frames[d].func >= 0)
                used[st->frames[d].func] = 1;
    }
    for (size_t f = 0; f < p->nfuncs; f++)
        if (used[f]) {
            size_t len;
            hs_frametext(t, p, (hs_loc){ (int32_t)f, -1, 0 }, &len);
        }
    free(used);
}

void hs_frametexts_free(hs_frametexts *t)
{
    free(t->key_text);
    free(t->func_text);
    free(t->buf);
    hs_frametab_free(&t->keys);
    t->key_text = t->func_text = NULL;
    t->buf = NULL;
    t->key_cap = t->func_cap = t->used = t->buf_cap = 0;
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    return h;
}

int64_t hs_strtab_find(const hs_strtab *t, const char *s)
{
    size_t cursor = 0;
    uint32_t i;
    while (hs_map_next(&t->map, str_hash(s), 0, &cursor, &i))
        if (!strcmp(t->v[i], s))
            return i;
    return -1;
}

/* A copy of s in the table's blocks (of 64 KB, or one of its own for a
 * longer string). */
static char *strtab_copy(hs_strtab *t, const char *s)
{
    size_t n = strlen(s) + 1;
    if (n > t->left) {
        size_t size = n > 65536 ? n : 65536;
        hs_xgrow(&t->blocks, &t->blocks_cap, t->nblocks + 1, sizeof *t->blocks);
        t->blocks[t->nblocks++] = t->next = hs_xmalloc(size);
        t->left = size;
    }
    char *d = t->next;
    memcpy(d, s, n);
    t->next += n;
    t->left -= n;
    return d;
}

uint32_t hs_strtab_add(hs_strtab *t, const char *s)
{
    uint64_t h = str_hash(s);
    size_t cursor = 0;
    uint32_t i;
    while (hs_map_next(&t->map, h, 0, &cursor, &i))
        if (!strcmp(t->v[i], s))
            return i;
    hs_xgrow(&t->v, &t->cap, t->n + 1, sizeof *t->v);
    t->v[t->n] = strtab_copy(t, s);
    hs_map_xadd(&t->map, h, 0, (uint32_t)t->n);
    return (uint32_t)t->n++;
}

void hs_strtab_free(hs_strtab *t)
{
    for (size_t i = 0; i < t->nblocks; i++)
        free(t->blocks[i]);
    free(t->blocks);
    free(t->v);
    hs_map_free(&t->map);
    memset(t, 0, sizeof *t);
}

static int cmp_u32(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

size_t hs_u32_sort_unique(uint32_t *v, size_t n)
{
    hs_sort(v, n, sizeof *v, cmp_u32, NULL);
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (!w || v[w - 1] != v[i])
            v[w++] = v[i];
    return w;
}

const char *hs_stack_unit(int kind)
{
    return kind == HS_STACK_ENTRY ? "captures" : "samples";
}
