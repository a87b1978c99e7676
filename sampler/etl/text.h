/*
 * sampler/etl/text.h - the strings of ETL payloads: find where a
 * NUL-terminated UTF-16LE or 8-bit string ends inside a payload, convert
 * it to UTF-8, and keep the converted strings in an arena (one allocation
 * per 64 KiB, not one per string).
 */
#ifndef HOOKSCOPE_ETL_TEXT_H
#define HOOKSCOPE_ETL_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Length in bytes of the UTF-16LE string at p (avail bytes there), without
 * its terminator; *next is the offset just past the terminator (or avail
 * when the string runs to the end without one). */
size_t hs_etl_u16len(const uint8_t *p, size_t avail, size_t *next);
/* The same for an 8-bit string. */
size_t hs_etl_u8len(const uint8_t *p, size_t avail, size_t *next);

/* Convert n bytes of UTF-16LE to UTF-8 into out (cap bytes, NUL-terminated,
 * truncated at a character boundary if it does not fit). Unpaired
 * surrogates become U+FFFD. Returns the UTF-8 length written. */
size_t hs_etl_u16_to_utf8(const uint8_t *p, size_t n, char *out, size_t cap);
/* Copy n bytes of an 8-bit ("ANSI") string as UTF-8: valid UTF-8 stays as
 * it is; otherwise bytes >= 0x80 are read as Latin-1. */
size_t hs_etl_u8_to_utf8(const uint8_t *p, size_t n, char *out, size_t cap);

/* The file name part of a Windows or NT path (after the last \ or /). */
const char *hs_etl_basename(const char *path);

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
