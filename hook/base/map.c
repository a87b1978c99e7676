/*
 * hook/base/map.c - see map.h.
 */
#include "hook/base/map.h"

#include <stdlib.h>

#include "hook/base/util.h"

/* Slots hold key + 1 (0 marks an empty slot), so every key can be stored
 * except UINT64_MAX, which is folded onto UINT64_MAX - 1 (values under
 * the two are kept apart by their callers' own comparison). */
static uint64_t slot_key(uint64_t key) { return key == UINT64_MAX ? UINT64_MAX : key + 1; }

static size_t home(const hs_map *m, uint64_t sk)
{
    return (size_t)((sk * 0x9E3779B97F4A7C15ull) >> 20) & (m->cap - 1);
}

static void insert(hs_map *m, uint64_t sk, uint32_t val)
{
    size_t i = home(m, sk);
    while (m->keys[i])
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = sk;
    m->vals[i] = val;
    m->n++;
}

void hs_map_put(hs_map *m, uint64_t key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        hs_map old = *m;
        m->cap = old.cap ? old.cap * 2 : 256;
        m->keys = hs_xcalloc(m->cap, sizeof *m->keys);
        m->vals = hs_xcalloc(m->cap, sizeof *m->vals);
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i])
                insert(m, old.keys[i], old.vals[i]);
        free(old.keys);
        free(old.vals);
    }
    insert(m, slot_key(key), val);
}

int hs_map_next(const hs_map *m, uint64_t key, size_t *cursor, uint32_t *val)
{
    if (!m->cap)
        return 0;
    uint64_t sk = slot_key(key);
    /* *cursor counts the slots already walked from the key's home */
    for (size_t i = (home(m, sk) + *cursor) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
        (*cursor)++;
        if (m->keys[i] == sk) {
            *val = m->vals[i];
            return 1;
        }
    }
    return 0;
}

int hs_map_get(const hs_map *m, uint64_t key, uint32_t *val)
{
    size_t cursor = 0;
    return hs_map_next(m, key, &cursor, val);
}

void hs_map_free(hs_map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}
