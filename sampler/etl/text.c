/*
 * sampler/etl/text.c - the string arena (see text.h).
 */
#include "sampler/etl/text.h"

#include <stdlib.h>
#include <string.h>


/* ---- arena ---------------------------------------------------------------- */

#define CHUNK_SIZE 65536

struct hs_etl_chunk {
    struct hs_etl_chunk *next;
    size_t used, cap;
    char data[];
};

char *hs_etl_arena_alloc(hs_etl_arena *a, size_t n)
{
    struct hs_etl_chunk *c = a->chunks;
    n = (n + 7) & ~(size_t)7;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_SIZE ? n : CHUNK_SIZE;
        struct hs_etl_chunk *nc = malloc(sizeof *nc + cap);
        if (!nc)
            return NULL;
        nc->used = 0;
        nc->cap = cap;
        if (c && n > CHUNK_SIZE) {
            /* a big string gets its own chunk behind the current one */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->chunks = nc;
        }
        c = nc;
    }
    char *r = c->data + c->used;
    c->used += n;
    return r;
}

char *hs_etl_arena_u16(hs_etl_arena *a, const uint8_t *p, size_t n)
{
    size_t cap = n / 2 * 3 + 1;
    char *s = hs_etl_arena_alloc(a, cap);
    if (s)
        hs_utf16le_to_utf8(p, n, s, cap);
    return s;
}

char *hs_etl_arena_u8(hs_etl_arena *a, const uint8_t *p, size_t n)
{
    size_t cap = n * 2 + 1;
    char *s = hs_etl_arena_alloc(a, cap);
    if (s)
        hs_ansi_to_utf8(p, n, s, cap);
    return s;
}

void hs_etl_arena_free(hs_etl_arena *a)
{
    struct hs_etl_chunk *c = a->chunks;
    while (c) {
        struct hs_etl_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->chunks = NULL;
}
