/*
 * sampler/etl/xpress.c - [MS-XCA] plain LZ77 ("XPRESS") decompression.
 *
 * The stream is groups of 32 items led by a 32-bit little-endian flag word
 * read from its top bit down: 0 = one literal byte, 1 = a match given by a
 * 16-bit word (distance-1 in the high 13 bits, length-3 in the low 3). A
 * length field of 7 continues in a half byte (two matches share one byte,
 * low nibble first), then a byte, then 16 and 32 bits, as in 2.4.4 of the
 * spec. The stream ends where a match would start with no input left
 * (compressors pad the last flag word with ones); a literal wanted with no
 * input left, or a flag word with none, ends it too.
 */
#include <string.h>

#include "hook/base/bytes.h"
#include "sampler/etl/decompress.h"

#define FAIL(msg) do { *at = ip; *why = (msg); return -1; } while (0)

long hs_xpress_decompress(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_cap,
                          size_t *at, const char **why)
{
    size_t ip = 0, op = 0, half = 0;
    uint32_t flags = 0;
    int nflags = 0;

    for (;;) {
        if (nflags == 0) {
            if (ip == in_size)
                break;
            if (in_size - ip < 4)
                FAIL("truncated flag word");
            flags = hs_le32(in + ip);
            ip += 4;
            nflags = 32;
        }
        nflags--;
        if (!(flags >> nflags & 1)) {
            if (ip == in_size)
                break;
            if (op == out_cap)
                FAIL("output larger than expected");
            out[op++] = in[ip++];
            continue;
        }
        if (ip == in_size)
            break;
        if (in_size - ip < 2)
            FAIL("truncated match");
        uint32_t word = hs_le16(in + ip);
        ip += 2;
        size_t dist = (word >> 3) + 1;
        size_t len = word & 7;
        if (len == 7) {
            if (half == 0) {
                if (ip == in_size)
                    FAIL("truncated match length");
                len = in[ip] & 15;
                half = ip++;
            } else {
                len = in[half] >> 4;
                half = 0;
            }
            if (len == 15) {
                if (ip == in_size)
                    FAIL("truncated match length");
                len = in[ip++];
                if (len == 255) {
                    if (in_size - ip < 2)
                        FAIL("truncated match length");
                    len = hs_le16(in + ip);
                    ip += 2;
                    if (len == 0) {
                        if (in_size - ip < 4)
                            FAIL("truncated match length");
                        len = hs_le32(in + ip);
                        ip += 4;
                    }
                    if (len < 15 + 7)
                        FAIL("bad match length");
                    len -= 15 + 7;
                }
                len += 15;
            }
            len += 7;
        }
        len += 3;
        if (dist > op)
            FAIL("match reaches before the start of the output");
        if (len > out_cap - op)
            FAIL("output larger than expected");
        uint8_t *d = out + op;
        const uint8_t *s = d - dist;
        if (dist >= len) {
            memcpy(d, s, len);
        } else {
            for (size_t i = 0; i < len; i++)
                d[i] = s[i];
        }
        op += len;
    }
    return (long)op;
}
