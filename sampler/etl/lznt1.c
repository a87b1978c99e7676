/*
 * sampler/etl/lznt1.c - [MS-XCA] LZNT1 decompression.
 *
 * The stream is chunks, each led by a 16-bit header: bits 0-11 = the
 * chunk's size in bytes after the header minus 1, bits 12-14 = the
 * signature 3, bit 15 = compressed. A header of 0 (or the end of input)
 * ends the stream. An uncompressed chunk is copied. A compressed chunk is
 * groups of 8 items led by a flag byte read from its low bit up: 0 = a
 * literal byte, 1 = a 16-bit copy token whose split between displacement
 * (high bits) and length (low bits) depends on how much of the chunk is
 * already written: 4 displacement bits up to 16 bytes, one more each time
 * that doubles, so that the displacement can reach the chunk's start.
 * A chunk stands for 4096 bytes of output: one that writes fewer and is
 * followed by another is padded with zeros, as RtlDecompressBuffer does.
 */
#include <string.h>

#include "hook/base/bytes.h"
#include "sampler/etl/decompress.h"

#define CHUNK 4096
#define FAIL(msg) do { *at = ip; *why = (msg); return -1; } while (0)

long hs_lznt1_decompress(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_cap,
                         size_t *at, const char **why)
{
    size_t ip = 0, op = 0;

    while (in_size - ip >= 2) {
        uint32_t hdr = hs_le16(in + ip);
        if (hdr == 0)
            break;
        if ((hdr >> 12 & 7) != 3)
            FAIL("bad chunk signature");
        size_t size = (hdr & 0xFFF) + 1;
        ip += 2;
        if (size > in_size - ip)
            FAIL("truncated chunk");
        size_t end = ip + size, start = op;
        if (!(hdr & 0x8000)) {
            size_t n = size < out_cap - op ? size : out_cap - op;
            memcpy(out + op, in + ip, n);
            op += n;
            ip = end;
        } else {
            size_t limit = out_cap - op < CHUNK ? out_cap - op : CHUNK;
            while (ip < end) {
                uint32_t flags = in[ip++];
                for (int i = 0; i < 8 && ip < end; i++, flags >>= 1) {
                    if (!(flags & 1)) {
                        if (op - start == limit)
                            FAIL(limit == CHUNK ? "chunk larger than 4096 bytes" : "output larger than expected");
                        out[op++] = in[ip++];
                        continue;
                    }
                    if (end - ip < 2)
                        FAIL("truncated copy token");
                    uint32_t tok = hs_le16(in + ip);
                    size_t pos = op - start;
                    if (pos == 0)
                        FAIL("copy token at the start of a chunk");
                    unsigned lbits = 12;
                    for (size_t p = pos - 1; p >= 16; p >>= 1)
                        lbits--;
                    size_t len = (tok & ((1u << lbits) - 1)) + 3;
                    size_t disp = (tok >> lbits) + 1;
                    if (disp > pos)
                        FAIL("copy reaches before the start of the chunk");
                    if (len > limit - pos)
                        FAIL(limit == CHUNK ? "chunk larger than 4096 bytes" : "output larger than expected");
                    for (size_t k = 0; k < len; k++, op++)
                        out[op] = out[op - disp];
                    ip += 2;
                }
            }
        }
        if (op == out_cap)
            break;
        /* a short chunk followed by another one stands for 4096 bytes */
        if (in_size - ip >= 2 && hs_le16(in + ip) != 0 && op - start < CHUNK) {
            size_t pad = CHUNK - (op - start);
            if (pad >= out_cap - op)
                break;
            memset(out + op, 0, pad);
            op += pad;
        }
    }
    return (long)op;
}
