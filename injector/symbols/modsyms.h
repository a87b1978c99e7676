/*
 * injector/symbols/modsyms.h - the symbols of one module image: which
 * functions it has and what they are called. One table per module file,
 * used by everything that names code (the profile's naming pass, the
 * `functions` command, the filters), so that every output and every
 * filter sees the same names.
 *
 * Sources, best first for a function's own address:
 *   exports and the COFF symbol table (read from the file by hook/pe.c),
 *   then the debug-information backends (backend.h: DbgHelp on Windows).
 * Function extents come from .pdata. Names are undecorated (undecorate.h).
 */
#ifndef HOOKSCOPE_MODSYMS_H
#define HOOKSCOPE_MODSYMS_H

#include <stdbool.h>
#include <stdint.h>

#include "pe.h"

/* Where a name came from. */
typedef enum hs_name_source {
    HS_NAMESRC_NONE = 0,
    HS_NAMESRC_EXPORT,
    HS_NAMESRC_COFF,
    HS_NAMESRC_DEBUG,       /* a debug-information backend (DbgHelp: PDB, DWARF) */
    HS_NAMESRC__COUNT
} hs_name_source;

/* "export", "coff", "debug" (for the `functions` listing). */
const char *hs_name_source_name(int source);

typedef struct hs_modsyms hs_modsyms;

typedef enum hs_modsyms_status {
    HS_MODSYMS_OK = 0,
    HS_MODSYMS_UNREADABLE,  /* the file cannot be read (why says why) */
    HS_MODSYMS_NOT_PE,      /* no PE signature */
    HS_MODSYMS_BAD_PE,      /* a PE file hookscope cannot read (why says why) */
    HS_MODSYMS_MISMATCH,    /* readable, but not the image that was loaded
                              (another timestamp or size): opened anyway */
} hs_modsyms_status;

/* Open the image file at `path` (UTF-8) loaded at `base`; when timestamp
 * or size is nonzero, check the file against them. Returns NULL for
 * UNREADABLE, NOT_PE and BAD_PE; *status and *why (static text) say what was found. */
hs_modsyms *hs_modsyms_open(const char *path, uint64_t base, uint32_t size, uint32_t timestamp,
                          hs_modsyms_status *status, const char **why);
void hs_modsyms_close(hs_modsyms *t);

/* The parsed image (for analysis of its code, e.g. by `functions`). */
const hs_pe *hs_modsyms_pe(const hs_modsyms *t);

typedef struct hs_sym_name {
    const char *name;      /* undecorated; owned by the table */
    const char *raw;       /* as recorded (decorated), or the same as name */
    uint8_t source;        /* hs_name_source */
} hs_sym_name;

/* The name of the code that starts exactly at rva. Returns false (and
 * zeros) when no source names it. */
bool hs_modsyms_name_at(hs_modsyms *t, uint32_t rva, hs_sym_name *out);

/* The function containing rva: a .pdata extent, named by the name at its
 * start; when no named extent holds rva, the nearest code symbol below.
 * Returns false when nothing names the place. */
typedef struct hs_sym_hit {
    uint32_t start, size;  /* size 0: a symbol without a known extent */
    hs_sym_name n;
} hs_sym_hit;
bool hs_modsyms_lookup(hs_modsyms *t, uint32_t rva, hs_sym_hit *out);

#endif
