/*
 * sampler/etl/text.h - the strings of ETL payloads, converted to UTF-8
 * (hook/base/text.h) and kept in an arena (one allocation per 64 KiB, not
 * one per string).
 */
#ifndef HOOKSCOPE_ETL_TEXT_H
#define HOOKSCOPE_ETL_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "hook/base/text.h"

typedef struct hs_etl_arena {
    struct hs_etl_chunk *chunks;
} hs_etl_arena;

/* Room for n bytes that live until hs_etl_arena_free, or NULL. */
char *hs_etl_arena_alloc(hs_etl_arena *a, size_t n);
/* Convert and keep: UTF-16LE (n bytes) or 8-bit (n bytes) as UTF-8. NULL if out of memory. */
char *hs_etl_arena_u16(hs_etl_arena *a, const uint8_t *p, size_t n);
char *hs_etl_arena_u8(hs_etl_arena *a, const uint8_t *p, size_t n);
void hs_etl_arena_free(hs_etl_arena *a);

#endif
