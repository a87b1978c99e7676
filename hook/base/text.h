/*
 * hook/base/text.h - strings as they come in files and in other processes'
 * memory: find where a NUL-terminated UTF-16LE or 8-bit string ends within
 * the bytes there are (never past them), and convert it to UTF-8. Plain C.
 */
#ifndef HOOKSCOPE_BASE_TEXT_H
#define HOOKSCOPE_BASE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Length in bytes of the UTF-16LE string at p (avail bytes there), without
 * its terminator; *next is the offset just past the terminator (or avail
 * when the string runs to the end without one). */
size_t hs_u16le_len(const uint8_t *p, size_t avail, size_t *next);
/* The same for an 8-bit string. */
size_t hs_u8_len(const uint8_t *p, size_t avail, size_t *next);

/* Convert n bytes of UTF-16LE to UTF-8 into out (cap bytes, NUL-terminated,
 * truncated at a character boundary if it does not fit). Unpaired
 * surrogates become U+FFFD. Returns the UTF-8 length written. */
size_t hs_utf16le_to_utf8(const uint8_t *p, size_t n, char *out, size_t cap);
/* Length of the valid UTF-8 sequence at p (n >= 1 bytes left): 1 to 4, or
 * 0 when it is not one (a stray continuation byte, a sequence cut short,
 * an overlong form, a surrogate, past U+10FFFF). */
size_t hs_utf8_seq(const uint8_t *p, size_t n);
/* Copy n bytes of an 8-bit ("ANSI") string as UTF-8: valid UTF-8 stays as
 * it is; otherwise bytes >= 0x80 are read as Latin-1. */
size_t hs_ansi_to_utf8(const uint8_t *p, size_t n, char *out, size_t cap);

#endif
