/*
 * injector/symbols/rsds.c - the image's CodeView RSDS record (see rsds.h).
 */
#include "injector/symbols/rsds.h"

#include <stdio.h>
#include <string.h>

#include "hook/base/bytes.h"

enum { IMAGE_DEBUG_TYPE_CODEVIEW = 2, IMAGE_FILE_DEBUG_STRIPPED = 0x200 };

int hs_pe_rsds(const hs_pe *pe, hs_rsds *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->debug_stripped = (pe->characteristics & IMAGE_FILE_DEBUG_STRIPPED) != 0;
    uint32_t rva = pe->dir_rva[HS_DIR_DEBUG], size = pe->dir_size[HS_DIR_DEBUG];
    if (!rva || !size)
        return 0;
    const uint8_t *dir = hs_pe_ptr(pe, rva, size);
    if (!dir || size % 28) {
        snprintf(err, errlen, "malformed debug directory (%u bytes at rva 0x%x)", size, rva);
        return -1;
    }
    for (uint32_t i = 0; i < size / 28; i++) {
        const uint8_t *e = dir + 28 * i;
        uint32_t type = hs_le32(e + 12), len = hs_le32(e + 16), addr = hs_le32(e + 20), ptr = hs_le32(e + 24);
        if (type != IMAGE_DEBUG_TYPE_CODEVIEW)
            continue;
        const uint8_t *cv = NULL;
        if (addr && len)
            cv = hs_pe_ptr(pe, addr, len);
        if (!cv && ptr && len && pe->file && ptr <= pe->file_size && len <= pe->file_size - ptr)
            cv = pe->file + ptr;
        if (!cv || len < 24 || memcmp(cv, "RSDS", 4) != 0)
            continue;                 /* NB10 (VC6) and others: no GUID */
        memcpy(out->guid, cv + 4, 16);
        out->age = hs_le32(cv + 20);
        size_t n = 0;
        while (24 + n < len && cv[24 + n] && n < sizeof out->path - 1) {
            out->path[n] = (char)cv[24 + n];
            n++;
        }
        out->path[n] = 0;
        return 1;
    }
    return 0;
}
