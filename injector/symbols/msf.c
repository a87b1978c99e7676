/*
 * injector/symbols/msf.c - the MSF 7.00 block container of a PDB (see msf.h).
 */
#include "injector/symbols/msf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"

static const char msf7_magic[32] = "Microsoft C/C++ MSF 7.00\r\n\x1a" "DS\0\0\0";
static const char jg_magic[] = "Microsoft C/C++ program database 2.00\r\n\x1a" "JG";

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static uint32_t nblocks_for(uint32_t bytes, uint32_t block_size)
{
    return bytes / block_size + (bytes % block_size != 0);
}

int hs_msf_open(hs_msf *m, const void *data, size_t size, char *err, size_t errlen)
{
    const uint8_t *d = data;
    memset(m, 0, sizeof *m);
    if (size >= sizeof jg_magic - 1 && memcmp(d, jg_magic, sizeof jg_magic - 1) == 0)
        return fail(err, errlen, HS_MSF_OLD,
                    "a PDB 2.00 file (Visual C++ 6 or older), which is not supported");
    if (size < 56 || memcmp(d, msf7_magic, sizeof msf7_magic) != 0)
        return fail(err, errlen, HS_MSF_NOT_MSF, "not a PDB (no MSF 7.00 header)");
    uint32_t bs = hs_le32(d + 32), nblocks = hs_le32(d + 40), dir_bytes = hs_le32(d + 44);
    uint32_t map_block = hs_le32(d + 52);
    if (bs < 512 || bs > 32768 || (bs & (bs - 1)))
        return fail(err, errlen, HS_MSF_CORRUPT, "corrupt PDB: block size %u", bs);
    if (nblocks == 0 || (uint64_t)nblocks * bs > size)
        return fail(err, errlen, HS_MSF_CORRUPT,
                    "corrupt PDB: %u blocks of %u bytes, the file has %zu bytes", nblocks, bs,
                    size);
    if (dir_bytes < 4 || map_block >= nblocks)
        return fail(err, errlen, HS_MSF_CORRUPT, "corrupt PDB: stream directory");
    uint32_t ndir = nblocks_for(dir_bytes, bs);
    if (ndir > bs / 4 || ndir > nblocks)
        return fail(err, errlen, HS_MSF_CORRUPT, "corrupt PDB: stream directory of %u bytes",
                    dir_bytes);
    m->data = d;
    m->size = size;
    m->block_size = bs;
    m->nblocks = nblocks;

    /* the directory, gathered from its blocks */
    m->dir = malloc((size_t)ndir * bs);
    if (!m->dir)
        return fail(err, errlen, HS_MSF_NOMEM, "out of memory");
    const uint8_t *map = d + (size_t)map_block * bs;
    for (uint32_t i = 0; i < ndir; i++) {
        uint32_t b = hs_le32(map + 4 * i);
        if (b >= nblocks) {
            hs_msf_close(m);
            return fail(err, errlen, HS_MSF_CORRUPT, "corrupt PDB: directory block %u", b);
        }
        memcpy(m->dir + (size_t)i * bs, d + (size_t)b * bs, bs);
    }
    uint32_t nstreams = hs_le32(m->dir);
    if (nstreams > (dir_bytes - 4) / 4) {
        hs_msf_close(m);
        return fail(err, errlen, HS_MSF_CORRUPT, "corrupt PDB: %u streams", nstreams);
    }
    m->nstreams = nstreams;
    /* block lists follow the sizes */
    uint64_t total = 0;
    for (uint32_t i = 0; i < nstreams; i++) {
        uint32_t s = hs_le32(m->dir + 4 + 4 * (size_t)i);
        if (s == 0xffffffffu)
            continue;
        if ((uint64_t)s > (uint64_t)nblocks * bs) {
            hs_msf_close(m);
            return fail(err, errlen, HS_MSF_CORRUPT,
                        "corrupt PDB: stream %u of %u bytes in a file of %zu", i, s, size);
        }
        total += nblocks_for(s, bs);
    }
    if (4 + 4 * (uint64_t)nstreams + 4 * total > dir_bytes) {
        hs_msf_close(m);
        return fail(err, errlen, HS_MSF_CORRUPT,
                    "corrupt PDB: stream directory of %u bytes lists %llu blocks", dir_bytes,
                    (unsigned long long)total);
    }
    m->first_block = malloc(((size_t)nstreams + 1) * sizeof *m->first_block);
    m->blocks = malloc((size_t)(total ? total : 1) * sizeof *m->blocks);
    if (!m->first_block || !m->blocks) {
        hs_msf_close(m);
        return fail(err, errlen, HS_MSF_NOMEM, "out of memory");
    }
    const uint8_t *p = m->dir + 4 + 4 * (size_t)nstreams;
    uint32_t k = 0;
    for (uint32_t i = 0; i < nstreams; i++) {
        uint32_t s = hs_le32(m->dir + 4 + 4 * (size_t)i);
        m->first_block[i] = k;
        uint32_t n = s == 0xffffffffu ? 0 : nblocks_for(s, bs);
        for (uint32_t j = 0; j < n; j++, k++, p += 4) {
            uint32_t b = hs_le32(p);
            if (b >= nblocks) {
                hs_msf_close(m);
                return fail(err, errlen, HS_MSF_CORRUPT,
                            "corrupt PDB: stream %u lists block %u of %u", i, b, nblocks);
            }
            m->blocks[k] = b;
        }
    }
    m->first_block[nstreams] = k;
    return HS_MSF_OK;
}

void hs_msf_close(hs_msf *m)
{
    free(m->dir);
    free(m->first_block);
    free(m->blocks);
    memset(m, 0, sizeof *m);
}

uint32_t hs_msf_stream_size(const hs_msf *m, uint32_t i)
{
    if (i >= m->nstreams)
        return 0;
    uint32_t s = hs_le32(m->dir + 4 + 4 * (size_t)i);
    return s == 0xffffffffu ? 0 : s;
}

uint8_t *hs_msf_stream(const hs_msf *m, uint32_t i, uint32_t *size)
{
    *size = 0;
    if (i >= m->nstreams)
        return NULL;
    uint32_t s = hs_msf_stream_size(m, i);
    uint8_t *out = malloc(s ? s : 1);
    if (!out) {
        *size = (uint32_t)-1;
        return NULL;
    }
    uint32_t bs = m->block_size, off = 0;
    const uint32_t *bl = m->blocks + m->first_block[i];
    while (off < s) {
        uint32_t n = s - off < bs ? s - off : bs;
        memcpy(out + off, m->data + (size_t)*bl++ * bs, n);
        off += n;
    }
    *size = s;
    return out;
}
