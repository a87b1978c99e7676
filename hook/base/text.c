/*
 * hook/base/text.c - strings of files and of other processes' memory as
 * UTF-8 (see text.h).
 */
#include "hook/base/text.h"

#include <string.h>

#include "hook/base/bytes.h"

size_t hs_u16le_len(const uint8_t *p, size_t avail, size_t *next)
{
    size_t i = 0;
    while (i + 1 < avail) {
        if (p[i] == 0 && p[i + 1] == 0) {
            *next = i + 2;
            return i;
        }
        i += 2;
    }
    *next = avail;
    return avail & ~(size_t)1;
}

size_t hs_u8_len(const uint8_t *p, size_t avail, size_t *next)
{
    const uint8_t *z = memchr(p, 0, avail);
    if (z) {
        *next = (size_t)(z - p) + 1;
        return (size_t)(z - p);
    }
    *next = avail;
    return avail;
}

/* Append code point c as UTF-8 if it fits (keeping room for the NUL). */
static int put_utf8(char *out, size_t cap, size_t *o, uint32_t c)
{
    uint8_t b[4];
    size_t n;
    if (c < 0x80) {
        b[0] = (uint8_t)c;
        n = 1;
    } else if (c < 0x800) {
        b[0] = (uint8_t)(0xC0 | c >> 6);
        b[1] = (uint8_t)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (uint8_t)(0xE0 | c >> 12);
        b[1] = (uint8_t)(0x80 | (c >> 6 & 0x3F));
        b[2] = (uint8_t)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        b[0] = (uint8_t)(0xF0 | c >> 18);
        b[1] = (uint8_t)(0x80 | (c >> 12 & 0x3F));
        b[2] = (uint8_t)(0x80 | (c >> 6 & 0x3F));
        b[3] = (uint8_t)(0x80 | (c & 0x3F));
        n = 4;
    }
    if (*o + n + 1 > cap)
        return -1;
    memcpy(out + *o, b, n);
    *o += n;
    return 0;
}

size_t hs_utf16le_to_utf8(const uint8_t *p, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        uint32_t c = hs_le16(p + i);
        if (c >= 0xD800 && c < 0xDC00 && i + 3 < n) {
            uint32_t d = hs_le16(p + i + 2);
            if (d >= 0xDC00 && d < 0xE000) {
                c = 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00);
                i += 2;
            } else {
                c = 0xFFFD;
            }
        } else if (c >= 0xD800 && c < 0xE000) {
            c = 0xFFFD;
        }
        if (put_utf8(out, cap, &o, c) < 0)
            break;
    }
    out[o] = 0;
    return o;
}

size_t hs_utf8_seq(const uint8_t *p, size_t n)
{
    size_t len;
    uint32_t c;
    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xE0) == 0xC0) {
        len = 2;
        c = p[0] & 0x1F;
    } else if ((p[0] & 0xF0) == 0xE0) {
        len = 3;
        c = p[0] & 0x0F;
    } else if ((p[0] & 0xF8) == 0xF0) {
        len = 4;
        c = p[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3F);
    }
    if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
        (c >= 0xD800 && c < 0xE000))
        return 0;
    return len;
}

size_t hs_ansi_to_utf8(const uint8_t *p, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    int valid = 1;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < n;) {
        size_t l = hs_utf8_seq(p + i, n - i);
        if (!l) {
            valid = 0;
            break;
        }
        i += l;
    }
    if (valid) {
        size_t k = n < cap - 1 ? n : cap - 1;
        while (k > 0 && k < n && (p[k] & 0xC0) == 0x80)
            k--;                       /* do not cut a character */
        memcpy(out, p, k);
        out[k] = 0;
        return k;
    }
    for (size_t i = 0; i < n; i++)
        if (put_utf8(out, cap, &o, p[i]) < 0)
            break;
    out[o] = 0;
    return o;
}
