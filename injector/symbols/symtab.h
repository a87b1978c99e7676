/*
 * injector/symbols/symtab.h - the symbols of one module image: which
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
#ifndef HOOKSCOPE_SYMTAB_H
#define HOOKSCOPE_SYMTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "pe.h"

/* Where a name came from. */
typedef enum hs_sym_source {
    HS_SYMSRC_NONE = 0,
    HS_SYMSRC_EXPORT,
    HS_SYMSRC_COFF,
    HS_SYMSRC_DEBUG,       /* a debug-information backend (DbgHelp: PDB, DWARF) */
    HS_SYMSRC__COUNT
} hs_sym_source;

/* "export", "coff", "debug" (for the `functions` listing). */
const char *hs_sym_source_name(int source);

typedef struct hs_symtab hs_symtab;

typedef enum hs_symtab_status {
    HS_SYMTAB_OK = 0,
    HS_SYMTAB_UNREADABLE,  /* the file cannot be read (why says why) */
    HS_SYMTAB_NOT_PE,      /* no PE signature */
    HS_SYMTAB_BAD_PE,      /* a PE file hookscope cannot read (why says why) */
    HS_SYMTAB_MISMATCH,    /* readable, but not the image that was loaded
                              (another timestamp or size): opened anyway */
} hs_symtab_status;

/* Open the image file at `path` (UTF-8) loaded at `base`; when timestamp
 * or size is nonzero, check the file against them. Returns NULL for
 * UNREADABLE, NOT_PE and BAD_PE; *status and *why (static text) say what was found. */
hs_symtab *hs_symtab_open(const char *path, uint64_t base, uint32_t size, uint32_t timestamp,
                          hs_symtab_status *status, const char **why);
void hs_symtab_close(hs_symtab *t);

/* The parsed image (for analysis of its code, e.g. by `functions`). */
const hs_pe *hs_symtab_pe(const hs_symtab *t);

typedef struct hs_sym_name {
    const char *name;      /* undecorated; owned by the table */
    const char *raw;       /* as recorded (decorated), or the same as name */
    uint8_t source;        /* hs_sym_source */
} hs_sym_name;

/* The name of the code that starts exactly at rva. Returns false (and
 * zeros) when no source names it. */
bool hs_symtab_name_at(hs_symtab *t, uint32_t rva, hs_sym_name *out);

/* The function containing rva: a .pdata extent, named by the name at its
 * start; when no named extent holds rva, the nearest code symbol below.
 * Returns false when nothing names the place. */
typedef struct hs_sym_hit {
    uint32_t start, size;  /* size 0: a symbol without a known extent */
    hs_sym_name n;
} hs_sym_hit;
bool hs_symtab_lookup(hs_symtab *t, uint32_t rva, hs_sym_hit *out);

#endif
