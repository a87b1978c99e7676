/*
 * hook/base/map.h - the hash map: keys are pairs of 64-bit numbers (a
 * single number is (n, 0)), values 32-bit; open addressing with linear
 * probing, removals marked, the table doubled (and cleaned) at 60% load.
 *
 * A key holds one value (hs_map_put replaces it), or several when they are
 * added with hs_map_add and walked with hs_map_next: callers that key by a
 * hash of something longer (a stack, a string) add under the hash and
 * compare the real thing themselves.
 *
 * Out of memory: the calls that can grow return -1 and leave the map as
 * it was; hs_map_xadd and hs_map_xput exit instead (hs_xmalloc's policy).
 */
#ifndef HOOKSCOPE_BASE_MAP_H
#define HOOKSCOPE_BASE_MAP_H

#include <stddef.h>
#include <stdint.h>

#define HS_MAP_NONE UINT32_MAX

typedef struct hs_map_slot {
    uint64_t a, b;
    uint32_t value;
    uint32_t state;                 /* 0 empty, 1 used, 2 removed */
} hs_map_slot;

typedef struct hs_map {
    hs_map_slot *slots;
    size_t cap, used, removed;
} hs_map;

/* The (first) value under (a, b), or HS_MAP_NONE. */
uint32_t hs_map_get(const hs_map *m, uint64_t a, uint64_t b);
/* Set the value under (a, b) (the first one, when there are several). */
int hs_map_put(hs_map *m, uint64_t a, uint64_t b, uint32_t value);
/* One more value under (a, b), beside those already there. */
int hs_map_add(hs_map *m, uint64_t a, uint64_t b, uint32_t value);
/* The values under (a, b), one per call: start with *cursor = 0; returns
 * 0 when there are no more. */
int hs_map_next(const hs_map *m, uint64_t a, uint64_t b, size_t *cursor, uint32_t *value);
/* Remove (the first value under) (a, b), if there. */
void hs_map_del(hs_map *m, uint64_t a, uint64_t b);
void hs_map_free(hs_map *m);

void hs_map_xput(hs_map *m, uint64_t a, uint64_t b, uint32_t value);
void hs_map_xadd(hs_map *m, uint64_t a, uint64_t b, uint32_t value);

#endif
