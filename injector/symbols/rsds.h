/*
 * injector/symbols/rsds.h - which PDB an image wants: the CodeView record
 * ("RSDS": GUID, age, PDB path as the linker wrote it) of the image's debug
 * directory. Portable C over hook/pe.h.
 *
 * The record is found through a debug directory entry of type
 * IMAGE_DEBUG_TYPE_CODEVIEW: at its AddressOfRawData when that is mapped,
 * else at PointerToRawData in the file bytes. Images with no such record
 * (gcc builds, stripped images) want no PDB. The COFF characteristics bit
 * IMAGE_FILE_DEBUG_STRIPPED (0x200) is reported too: Wine's DbgHelp then
 * looks for a .DBG file instead of the PDB (FINDINGS.md); hookscope's own
 * search ignores it.
 */
#ifndef HOOKSCOPE_RSDS_H
#define HOOKSCOPE_RSDS_H

#include <stdint.h>

#include "hook/pe/pe.h"

typedef struct hs_rsds {
    uint8_t guid[16];          /* as stored */
    uint32_t age;
    char path[1024];           /* UTF-8 as stored (may be a Unix or Windows path) */
    int debug_stripped;        /* COFF characteristics has 0x200 */
} hs_rsds;

/* 1 when the image has an RSDS record (out filled), 0 when it has none, -1
 * when its debug directory is malformed (err set, one line). */
int hs_pe_rsds(const hs_pe *pe, hs_rsds *out, char *err, size_t errlen);

#endif
