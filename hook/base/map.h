/*
 * hook/base/map.h - a hash map from 64-bit keys to 32-bit values
 * (open addressing, linear probing). A key may be added more than once:
 * hs_map_next walks every value stored under a key, so callers that key
 * by a hash of something longer compare the real thing themselves.
 */
#ifndef HOOKSCOPE_MAP_H
#define HOOKSCOPE_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct hs_map {
    uint64_t *keys;        /* key + 1; 0: an empty slot */
    uint32_t *vals;
    size_t cap, n;
} hs_map;

void hs_map_put(hs_map *m, uint64_t key, uint32_t val);
/* The values stored under key, one per call: start with *cursor = 0;
 * returns 0 when there are no more. */
int hs_map_next(const hs_map *m, uint64_t key, size_t *cursor, uint32_t *val);
/* The first value stored under key; 0 if none. */
int hs_map_get(const hs_map *m, uint64_t key, uint32_t *val);
void hs_map_free(hs_map *m);

#endif
