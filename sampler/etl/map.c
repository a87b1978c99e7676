/*
 * sampler/etl/map.c - the pair-keyed hash map (see map.h): linear probing,
 * deleted slots marked, the table doubled (and cleaned) at 60% load.
 */
#include "sampler/etl/map.h"

#include <stdlib.h>

#include "sampler/etl/etl.h"

static size_t hash(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (size_t)h;
}

uint32_t hs_etl_map_get(const hs_etl_map *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return HS_ETL_NONE;
    size_t mask = m->cap - 1;
    for (size_t i = hash(a, b) & mask;; i = (i + 1) & mask) {
        const hs_etl_map_slot *s = &m->slots[i];
        if (s->state == 0)
            return HS_ETL_NONE;
        if (s->state == 1 && s->a == a && s->b == b)
            return s->value;
    }
}

static int grow(hs_etl_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    if (m->used * 4 < m->cap)
        ncap = m->cap;                  /* mostly deleted slots: clean up at the same size */
    hs_etl_map_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        hs_etl_map_slot *s = &m->slots[i];
        if (s->state != 1)
            continue;
        size_t j = hash(s->a, s->b) & (ncap - 1);
        while (ns[j].state)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->deleted = 0;
    return 0;
}

int hs_etl_map_put(hs_etl_map *m, uint64_t a, uint64_t b, uint32_t value)
{
    if ((m->used + m->deleted + 1) * 10 > m->cap * 6 && grow(m) < 0)
        return -1;
    size_t mask = m->cap - 1;
    size_t tomb = (size_t)-1;
    for (size_t i = hash(a, b) & mask;; i = (i + 1) & mask) {
        hs_etl_map_slot *s = &m->slots[i];
        if (s->state == 1 && s->a == a && s->b == b) {
            s->value = value;
            return 0;
        }
        if (s->state == 2 && tomb == (size_t)-1)
            tomb = i;
        if (s->state == 0) {
            if (tomb != (size_t)-1) {
                s = &m->slots[tomb];
                m->deleted--;
            }
            s->a = a;
            s->b = b;
            s->value = value;
            s->state = 1;
            m->used++;
            return 0;
        }
    }
}

void hs_etl_map_del(hs_etl_map *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return;
    size_t mask = m->cap - 1;
    for (size_t i = hash(a, b) & mask;; i = (i + 1) & mask) {
        hs_etl_map_slot *s = &m->slots[i];
        if (s->state == 0)
            return;
        if (s->state == 1 && s->a == a && s->b == b) {
            s->state = 2;
            m->used--;
            m->deleted++;
            return;
        }
    }
}

void hs_etl_map_free(hs_etl_map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->used = m->deleted = 0;
}
