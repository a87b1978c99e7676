/*
 * injector/symbols/msf.h - the MSF container of a PDB ("big MSF", the
 * "Microsoft C/C++ MSF 7.00" format every PDB since Visual C++ 7 uses): a
 * file of fixed-size blocks holding numbered streams, listed by a stream
 * directory. Portable C; reads a PDB given as bytes in memory.
 *
 * Layout (all little-endian):
 *   superblock at 0: the 32-byte magic, block size (512..32768, a power of
 *   two), free block map block, number of blocks, directory size in bytes,
 *   an unused word, and the block holding the directory's block list.
 *   directory: stream count, the size of every stream (0xffffffff: a nil
 *   stream, read as empty), then the blocks of each stream in turn.
 * Every offset and block number is checked against the file; a corrupt file
 * gives HS_MSF_CORRUPT and a one-line reason, never a read outside it. The
 * older "Microsoft C/C++ program database 2.00" format (before 2002) is
 * recognised and refused.
 */
#ifndef HOOKSCOPE_MSF_H
#define HOOKSCOPE_MSF_H

#include <stddef.h>
#include <stdint.h>

enum { HS_MSF_OK = 0, HS_MSF_NOT_MSF = -1, HS_MSF_OLD = -2, HS_MSF_CORRUPT = -3, HS_MSF_NOMEM = -4 };

typedef struct hs_msf {
    const uint8_t *data;     /* the whole file (not owned) */
    size_t size;
    uint32_t block_size, nblocks;
    uint32_t nstreams;
    uint32_t *first_block;   /* per stream: index into blocks[] of its first block */
    uint32_t *blocks;        /* every stream's block numbers, in order (owned) */
    uint8_t *dir;            /* the directory, copied contiguous (owned) */
} hs_msf;

/* Open; on failure fills err (one line, no trailing newline). */
int hs_msf_open(hs_msf *m, const void *data, size_t size, char *err, size_t errlen);
void hs_msf_close(hs_msf *m);

/* Size of stream i (0 for a nil or missing stream). */
uint32_t hs_msf_stream_size(const hs_msf *m, uint32_t i);
/* Copy stream i into a new buffer (malloc; free it). *size gets its size.
 * A missing stream (i >= nstreams) gives NULL with *size 0 and no error;
 * out of memory gives NULL and *size (uint32_t)-1. */
uint8_t *hs_msf_stream(const hs_msf *m, uint32_t i, uint32_t *size);

#endif
