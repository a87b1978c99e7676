/*
 * sampler/etl/map.h - a hash map from a pair of 64-bit keys to a 32-bit
 * value (open addressing): tids, (pid, base) of images, stack keys.
 */
#ifndef HOOKSCOPE_ETL_MAP_H
#define HOOKSCOPE_ETL_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct hs_etl_map_slot {
    uint64_t a, b;
    uint32_t value;
    uint32_t state;                 /* 0 empty, 1 used, 2 deleted */
} hs_etl_map_slot;

typedef struct hs_etl_map {
    hs_etl_map_slot *slots;
    size_t cap, used, deleted;
} hs_etl_map;

/* The value for (a, b), or HS_ETL_NONE (0xFFFFFFFF) when absent. */
uint32_t hs_etl_map_get(const hs_etl_map *m, uint64_t a, uint64_t b);
/* Set (a, b) to value. Returns 0, or -1 when out of memory. */
int hs_etl_map_put(hs_etl_map *m, uint64_t a, uint64_t b, uint32_t value);
/* Remove (a, b) if present. */
void hs_etl_map_del(hs_etl_map *m, uint64_t a, uint64_t b);
void hs_etl_map_free(hs_etl_map *m);

#endif
