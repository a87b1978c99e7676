/*
 * tests/unit/test_etl_decompress.c - the two decompressors of compressed
 * ETL buffers against [MS-XCA]:
 *   - XPRESS (plain LZ77): the spec's examples (section 3.1: 26 literals;
 *     "abc" x 100 in 13 bytes), streams built by hand from section 2.4
 *     for each way a match length is written (3 bits, a half byte shared
 *     by two matches, a byte, 16 and 32 bits), and malformed streams;
 *   - LZNT1: the spec's example (section 3.3: 142 bytes from 59), an
 *     uncompressed chunk, a short chunk padded to 4096 bytes when another
 *     follows (as RtlDecompressBuffer does), and malformed streams;
 *   - round trips through the test-side compressors (etl_build.c) of data
 *     with every kind of repetition, including a 32-bit XPRESS length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/etl/decompress.h"
#include "tests/unit/etl_build.h"
#include "tests/unit/tap.h"

static void hex(const char *s, uint8_t *out, size_t *n)
{
    *n = 0;
    for (; *s; s++) {
        if (*s == ' ')
            continue;
        unsigned v;
        sscanf(s, "%2x", &v);
        out[(*n)++] = (uint8_t)v;
        s++;
    }
}

static void check_xpress(const char *name, const char *in_hex, const void *want, size_t want_n)
{
    uint8_t in[256], out[1024];
    size_t n, at = 0;
    const char *why = "";
    hex(in_hex, in, &n);
    long got = hs_xpress_decompress(in, n, out, sizeof out, &at, &why);
    tap_check(got == (long)want_n && !memcmp(out, want, want_n), name, "got %ld bytes (%s at %zu), want %zu",
              got, got < 0 ? why : "ok", at, want_n);
}

static void check_xpress_fails(const char *name, const char *in_hex, size_t cap, const char *want_why,
                               size_t want_at)
{
    uint8_t in[256], out[1024];
    size_t n, at = 0;
    const char *why = "";
    hex(in_hex, in, &n);
    long got = hs_xpress_decompress(in, n, out, cap, &at, &why);
    tap_check(got == -1 && !strcmp(why, want_why) && at == want_at, name, "got %ld, \"%s\" at %zu", got, why, at);
}

static void check_lznt1(const char *name, const uint8_t *in, size_t n, size_t cap, const void *want,
                        size_t want_n)
{
    uint8_t *out = malloc(cap + 1);
    size_t at = 0;
    const char *why = "";
    long got = hs_lznt1_decompress(in, n, out, cap, &at, &why);
    tap_check(got == (long)want_n && !memcmp(out, want, want_n), name, "got %ld bytes (%s at %zu), want %zu",
              got, got < 0 ? why : "ok", at, want_n);
    free(out);
}

static void check_lznt1_fails(const char *name, const char *in_hex, const char *want_why, size_t want_at)
{
    uint8_t in[256], out[8192];
    size_t n, at = 0;
    const char *why = "";
    hex(in_hex, in, &n);
    long got = hs_lznt1_decompress(in, n, out, sizeof out, &at, &why);
    tap_check(got == -1 && !strcmp(why, want_why) && at == want_at, name, "got %ld, \"%s\" at %zu", got, why, at);
}

static void roundtrip(const char *name, const uint8_t *data, size_t n)
{
    uint8_t *c = malloc(n + n / 8 + 64), *d = malloc(n + 1);
    char nm[96];
    size_t at = 0;
    const char *why = "";
    size_t cn = etlb_xpress(data, n, c);
    long got = hs_xpress_decompress(c, cn, d, n, &at, &why);
    snprintf(nm, sizeof nm, "xpress/roundtrip/%s", name);
    tap_check(got == (long)n && !memcmp(d, data, n), nm, "%zu -> %zu -> %ld (%s)", n, cn, got, got < 0 ? why : "");
    cn = etlb_lznt1(data, n, c);
    got = hs_lznt1_decompress(c, cn, d, n, &at, &why);
    snprintf(nm, sizeof nm, "lznt1/roundtrip/%s", name);
    tap_check(got == (long)n && !memcmp(d, data, n), nm, "%zu -> %zu -> %ld (%s)", n, cn, got, got < 0 ? why : "");
    free(c);
    free(d);
}

int main(void)
{
    /* [MS-XCA] 3.1: 26 literals, then the padding flags (ones) end the stream */
    check_xpress("xpress/spec-3.1-literals", "3f000000 6162636465666768696a6b6c6d6e6f707172737475767778797a",
                 "abcdefghijklmnopqrstuvwxyz", 26);
    /* [MS-XCA] 3.1: "abc" x 100: 3 literals, one match of distance 3 and
     * length 297 written as 7 | half byte 15 | byte 255 | u16 294 */
    {
        char abc[301];
        for (int i = 0; i < 300; i++)
            abc[i] = "abc"[i % 3];
        check_xpress("xpress/spec-3.1-abc", "ffffff1f 616263 1700 0f ff 2601", abc, 300);
    }
    /* by hand (2.4): 'x', a match of length 12 (3 bits 7, half byte 2 in a
     * new byte), a match of length 14 (half byte 4 in that byte's high nibble) */
    {
        char x[27];
        memset(x, 'x', sizeof x);
        check_xpress("xpress/half-bytes-shared", "ffffff7f 78 0700 42 0700", x, 27);
    }
    {
        char x[41];
        memset(x, 'x', sizeof x);
        /* length 40: 3 bits 7, half byte 15, byte 15 (40 - 3 - 7 - 15) */
        check_xpress("xpress/length-byte", "ffffff7f 78 0700 0f 0f", x, 41);
        /* distance 2: "ab" then a match of length 5 at distance 2 */
        check_xpress("xpress/distance-2", "ffffff3f 6162 0a00", "abababa", 7);
        /* a literal flagged with no input left ends the stream too */
        check_xpress("xpress/ends-at-literal", "00000000 6162", "ab", 2);
        check_xpress("xpress/empty", "", "", 0);
    }
    check_xpress_fails("xpress/match-before-start", "ffffffff 0000", 64, "match reaches before the start of the output", 6);
    check_xpress_fails("xpress/truncated-flags", "ffff", 64, "truncated flag word", 0);
    check_xpress_fails("xpress/truncated-match", "ffffff7f 78 07", 64, "truncated match", 5);
    check_xpress_fails("xpress/truncated-length", "ffffff7f 78 0700", 64, "truncated match length", 7);
    check_xpress_fails("xpress/bad-u16-length", "ffffff7f 78 0700 0f ff 0500", 64, "bad match length", 11);
    check_xpress_fails("xpress/output-overflow", "ffffff1f 616263 1700 0f ff 2601", 100, "output larger than expected", 13);
    check_xpress_fails("xpress/literal-overflow", "00000000 616263", 2, "output larger than expected", 6);

    /* [MS-XCA] 3.3: one compressed chunk of 59 bytes (header 0xB038) */
    {
        uint8_t in[128];
        size_t n;
        hex("38b08846232000204720410010a24701a04520440008450150790" "0c0452005241388"
            "05b4024a44ef0358028c0916014845" "00be009e00040118" "9000", in, &n);
        const char *s = "F# F# G A A G F# E D D E F# F# E E F# F# G A A G F# E D D E F# E D D E E F# D E F# G F# D E "
                        "F# G F# E D E A F# F# G A A G F# E D D E F# E D D";
        check_lznt1("lznt1/spec-3.3", in, n, 4096, s, strlen(s) + 1);
        tap_check(n == 59, "lznt1/spec-3.3-size", "the example is %zu bytes", n);
        /* the same into exactly 142 bytes: stops when the output is full */
        check_lznt1("lznt1/spec-3.3-exact-output", in, n, 142, s, 142);
    }
    {
        /* an uncompressed chunk (bit 15 clear) of 5 bytes, then the end marker */
        uint8_t in[] = {0x04, 0x30, 'h', 'e', 'l', 'l', 'o', 0, 0};
        check_lznt1("lznt1/uncompressed-chunk", in, sizeof in, 4096, "hello", 5);
        /* two chunks: the first writes 5 bytes and stands for 4096 (zeros
         * follow), the second a literal "z" in a compressed chunk */
        uint8_t two[] = {0x04, 0x30, 'h', 'e', 'l', 'l', 'o', 0x01, 0xB0, 0x00, 'z'};
        uint8_t *want = calloc(1, 4097);
        memcpy(want, "hello", 5);
        want[4096] = 'z';
        check_lznt1("lznt1/short-chunk-padded", two, sizeof two, 8192, want, 4097);
        free(want);
        /* copy tokens: "ab" then (disp 2, len 3) -> "ababa" with 4-bit
         * displacements at position 2: token (2-1) << 12 | (3-3) = 0x1000 */
        uint8_t cp[] = {0x04, 0xB0, 0x04, 'a', 'b', 0x00, 0x10};
        check_lznt1("lznt1/copy-token", cp, sizeof cp, 4096, "ababa", 5);
    }
    check_lznt1_fails("lznt1/bad-signature", "04 20 68656c6c6f", "bad chunk signature", 0);
    check_lznt1_fails("lznt1/truncated-chunk", "10 b0 00 61", "truncated chunk", 2);
    check_lznt1_fails("lznt1/copy-at-chunk-start", "02 b0 01 0000", "copy token at the start of a chunk", 3);
    check_lznt1_fails("lznt1/copy-before-start", "03 b0 02 61 0010", "copy reaches before the start of the chunk", 4);
    check_lznt1_fails("lznt1/truncated-token", "02 b0 02 61 00", "truncated copy token", 4);

    /* round trips through the test compressors */
    {
        size_t n = 70000;
        uint8_t *d = malloc(n);
        uint32_t x = 12345;
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245 + 12345;
            d[i] = (uint8_t)(x >> 24);
        }
        roundtrip("random", d, n);
        for (size_t i = 0; i < n; i++)
            d[i] = (uint8_t)("ETW event header "[i % 17] + (i / 4000));
        roundtrip("text", d, n);
        for (size_t i = 0; i < n; i++)
            d[i] = i % 1000 < 600 ? 0 : (uint8_t)i;
        roundtrip("runs", d, n);
        free(d);
        /* one match longer than 65538: XPRESS writes its length in 32 bits */
        n = 200000;
        d = calloc(1, n);
        roundtrip("zeros-200k", d, n);
        uint8_t c[64];
        size_t at;
        const char *why;
        size_t cn = etlb_xpress(d, n, c);
        uint8_t *o = malloc(n);
        long got = hs_xpress_decompress(c, cn, o, n, &at, &why);
        tap_check(cn == 4 + 1 + 2 + 1 + 1 + 2 + 4 && got == (long)n, "xpress/u32-length",
                  "200000 zeros: %zu compressed bytes (want 15: flags, literal, match word, half byte, 255, 0, "
                  "u32), %ld back", cn, got);
        free(o);
        free(d);
    }
    return tap_status();
}
