/*
 * hook/base/bytes.h - little-endian bytes: reads at a pointer whose bounds
 * the caller has checked (hs_le*), and a cursor that checks them itself
 * (hs_cur_*). Files and other processes' memory are little-endian whatever
 * the host (PE, PDB, DWARF, ETL, the session).
 *
 * The cursor never reads outside [p, p + len): a read that would sets
 * `bad` and returns 0 (or NULL, or an empty cursor), and every later read
 * of a bad cursor does the same, so a parser reads on and checks `bad`
 * once where it matters.
 */
#ifndef HOOKSCOPE_BASE_BYTES_H
#define HOOKSCOPE_BASE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t hs_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t hs_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t hs_le64(const uint8_t *p)
{
    return (uint64_t)hs_le32(p) | (uint64_t)hs_le32(p + 4) << 32;
}

/* A pointer-sized field of a trace with ptr-byte pointers (4 or 8). */
static inline uint64_t hs_leptr(const uint8_t *p, unsigned ptr)
{
    return ptr == 8 ? hs_le64(p) : hs_le32(p);
}

/* ---- the cursor ------------------------------------------------------------- */

typedef struct hs_cur {
    const uint8_t *p;
    size_t len, off;
    bool bad;
} hs_cur;

static inline hs_cur hs_cur_of(const void *p, size_t len)
{
    hs_cur c = { (const uint8_t *)p, len, 0, false };
    return c;
}

/* Are n more bytes there? If not, the cursor turns bad. */
static inline bool hs_cur_need(hs_cur *c, size_t n)
{
    if (c->bad || n > c->len - c->off) {
        c->bad = true;
        return false;
    }
    return true;
}

static inline size_t hs_cur_left(const hs_cur *c)
{
    return c->bad ? 0 : c->len - c->off;
}

/* The next n bytes (n <= 8) as a little-endian number. */
static inline uint64_t hs_cur_un(hs_cur *c, unsigned n)
{
    if (n > 8 || !hs_cur_need(c, n)) {
        c->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | c->p[c->off + i];
    c->off += n;
    return v;
}

static inline uint8_t hs_cur_u8(hs_cur *c)
{
    return hs_cur_need(c, 1) ? c->p[c->off++] : 0;
}

static inline uint16_t hs_cur_u16(hs_cur *c)
{
    if (!hs_cur_need(c, 2))
        return 0;
    c->off += 2;
    return hs_le16(c->p + c->off - 2);
}

static inline uint32_t hs_cur_u32(hs_cur *c)
{
    if (!hs_cur_need(c, 4))
        return 0;
    c->off += 4;
    return hs_le32(c->p + c->off - 4);
}

static inline uint64_t hs_cur_u64(hs_cur *c)
{
    if (!hs_cur_need(c, 8))
        return 0;
    c->off += 8;
    return hs_le64(c->p + c->off - 8);
}

/* LEB128 (DWARF): bits beyond 64 are dropped. */
static inline uint64_t hs_cur_uleb(hs_cur *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (!hs_cur_need(c, 1))
            return 0;
        uint8_t b = c->p[c->off++];
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
}

static inline int64_t hs_cur_sleb(hs_cur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (!hs_cur_need(c, 1))
            return 0;
        b = c->p[c->off++];
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

static inline void hs_cur_skip(hs_cur *c, uint64_t n)
{
    if (n > SIZE_MAX || !hs_cur_need(c, (size_t)n)) {
        c->bad = true;
        return;
    }
    c->off += (size_t)n;
}

/* A pointer to the next n bytes (and past them), or NULL. */
static inline const uint8_t *hs_cur_bytes(hs_cur *c, size_t n)
{
    if (!hs_cur_need(c, n))
        return NULL;
    c->off += n;
    return c->p + c->off - n;
}

/* A NUL-terminated string within the cursor's range (and past it); NULL
 * (and bad) when the range ends before its terminator. */
static inline const char *hs_cur_cstr(hs_cur *c)
{
    if (c->bad || c->off >= c->len) {
        c->bad = true;
        return NULL;
    }
    const uint8_t *s = c->p + c->off;
    const uint8_t *z = (const uint8_t *)memchr(s, 0, c->len - c->off);
    if (!z) {
        c->bad = true;
        return NULL;
    }
    c->off += (size_t)(z - s) + 1;
    return (const char *)s;
}

/* The next n bytes as a cursor of their own (and past them); a bad empty
 * cursor when they are not there. */
static inline hs_cur hs_cur_sub(hs_cur *c, uint64_t n)
{
    hs_cur s = { NULL, 0, 0, true };
    if (n > SIZE_MAX || !hs_cur_need(c, (size_t)n)) {
        c->bad = true;
        return s;
    }
    s = hs_cur_of(c->p + c->off, (size_t)n);
    c->off += (size_t)n;
    return s;
}

#endif
