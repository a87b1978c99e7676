/*
 * hook/base/map.c - the hash map (see map.h).
 */
#include "hook/base/map.h"

#include <stdlib.h>

#include "hook/base/util.h"

enum { EMPTY = 0, USED = 1, REMOVED = 2 };

static size_t hash(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (size_t)h;
}

int hs_map_next(const hs_map *m, uint64_t a, uint64_t b, size_t *cursor, uint32_t *value)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    /* *cursor counts the slots already walked from the key's home */
    for (size_t i = (hash(a, b) + *cursor) & mask; m->slots[i].state != EMPTY; i = (i + 1) & mask) {
        const hs_map_slot *s = &m->slots[i];
        (*cursor)++;
        if (s->state == USED && s->a == a && s->b == b) {
            *value = s->value;
            return 1;
        }
        if (*cursor > m->cap)
            return 0;
    }
    return 0;
}

uint32_t hs_map_get(const hs_map *m, uint64_t a, uint64_t b)
{
    size_t cursor = 0;
    uint32_t v;
    return hs_map_next(m, a, b, &cursor, &v) ? v : HS_MAP_NONE;
}

static int grow(hs_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    if (m->used * 4 < m->cap)
        ncap = m->cap;                  /* mostly removed slots: clean up at the same size */
    hs_map_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        hs_map_slot *s = &m->slots[i];
        if (s->state != USED)
            continue;
        size_t j = hash(s->a, s->b) & (ncap - 1);
        while (ns[j].state)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->removed = 0;
    return 0;
}

/* Store (a, b) -> value: over the first value under the key when replace,
 * else in a slot of its own. */
static int store(hs_map *m, uint64_t a, uint64_t b, uint32_t value, int replace)
{
    if ((m->used + m->removed + 1) * 10 > m->cap * 6 && grow(m) < 0)
        return -1;
    size_t mask = m->cap - 1;
    size_t tomb = (size_t)-1;
    for (size_t i = hash(a, b) & mask;; i = (i + 1) & mask) {
        hs_map_slot *s = &m->slots[i];
        if (replace && s->state == USED && s->a == a && s->b == b) {
            s->value = value;
            return 0;
        }
        if (s->state == REMOVED && tomb == (size_t)-1)
            tomb = i;
        if (s->state == EMPTY) {
            /* added values keep their order along the probe: never into
             * an earlier tombstone, so that hs_map_next walks them in order */
            if (replace && tomb != (size_t)-1) {
                s = &m->slots[tomb];
                m->removed--;
            }
            s->a = a;
            s->b = b;
            s->value = value;
            s->state = USED;
            m->used++;
            return 0;
        }
    }
}

int hs_map_put(hs_map *m, uint64_t a, uint64_t b, uint32_t value)
{
    return store(m, a, b, value, 1);
}

int hs_map_add(hs_map *m, uint64_t a, uint64_t b, uint32_t value)
{
    return store(m, a, b, value, 0);
}

void hs_map_del(hs_map *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return;
    size_t mask = m->cap - 1;
    for (size_t i = hash(a, b) & mask;; i = (i + 1) & mask) {
        hs_map_slot *s = &m->slots[i];
        if (s->state == EMPTY)
            return;
        if (s->state == USED && s->a == a && s->b == b) {
            s->state = REMOVED;
            m->used--;
            m->removed++;
            return;
        }
    }
}

void hs_map_free(hs_map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->used = m->removed = 0;
}

void hs_map_xput(hs_map *m, uint64_t a, uint64_t b, uint32_t value)
{
    if (hs_map_put(m, a, b, value) < 0)
        hs_out_of_memory();
}

void hs_map_xadd(hs_map *m, uint64_t a, uint64_t b, uint32_t value)
{
    if (hs_map_add(m, a, b, value) < 0)
        hs_out_of_memory();
}
