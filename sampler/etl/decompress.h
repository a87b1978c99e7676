/*
 * sampler/etl/decompress.h - the two compression formats of compressed ETL
 * buffers, decompressed exactly as [MS-XCA] specifies them:
 *   - XPRESS, "plain LZ77" ([MS-XCA] 2.3/2.4), COMPRESSION_FORMAT_XPRESS;
 *   - LZNT1 ([MS-XCA] 2.5), COMPRESSION_FORMAT_LZNT1.
 * Both read only in[0..in_size) and write only out[0..out_cap).
 */
#ifndef HOOKSCOPE_ETL_DECOMPRESS_H
#define HOOKSCOPE_ETL_DECOMPRESS_H

#include <stddef.h>
#include <stdint.h>

/* Returns the number of bytes written, or -1 on malformed or oversized
 * input: then *why says what and *at is the input offset where it was. */
long hs_xpress_decompress(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_cap,
                          size_t *at, const char **why);
long hs_lznt1_decompress(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_cap,
                         size_t *at, const char **why);

#endif
