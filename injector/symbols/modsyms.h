/*
 * injector/symbols/modsyms.h - the symbols of one module image: which
 * functions it has, what they are called, and their source lines. One
 * table per module file, used by everything that names code (the
 * profile's naming pass, the `functions` command, the filters, the list of
 * functions handed to the agent), so that every output and every filter
 * sees the same names.
 *
 * Names, best first for a function's own address:
 *   the PDB's procedures and public names (found by locate.h, read by
 *   pdb.h; a PDB of another build is refused with one line),
 *   exports and the COFF symbol table (hook/pe/),
 *   DbgHelp, only for a PDB hookscope's reader cannot read (Windows).
 * C++ names are undecorated (Itanium and MSVC, undecorate.h).
 * Functions: .pdata, exports, COFF function symbols and the PDB's
 * procedures with their exact extents (leaf functions included).
 * Lines: the PDB's line table, or the DWARF line table of a gcc build.
 */
#ifndef HOOKSCOPE_MODSYMS_H
#define HOOKSCOPE_MODSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/pe/functions.h"
#include "hook/pe/pe.h"
#include "hook/pe/symbols.h"
#include "hook/unwind/fpo32.h"
#include "injector/symbols/symstore.h"
#include "injector/symbols/symtab.h"

typedef struct hs_modsyms hs_modsyms;

/* Where to look for PDBs besides the image's own RSDS path and folder. */
typedef struct hs_symconf {
    const char *symbols;         /* --symbols PATH[;PATH...], or NULL */
    const char *nt_symbol_path;  /* _NT_SYMBOL_PATH, or NULL */
    const hs_symfetch *fetch;    /* symbol servers (symstore.h); NULL: never downloads */
} hs_symconf;

typedef enum hs_modsyms_status {
    HS_MODSYMS_OK = 0,
    HS_MODSYMS_UNREADABLE,  /* the file cannot be read (why says why) */
    HS_MODSYMS_NOT_PE,      /* no PE signature */
    HS_MODSYMS_BAD_PE,      /* a PE file hookscope cannot read (why says why) */
    HS_MODSYMS_MISMATCH,    /* readable, but not the image that was loaded
                               (another timestamp or size): opened anyway */
} hs_modsyms_status;

/* Open the image file at `path` (UTF-8) loaded at `base`; when timestamp
 * or size is nonzero, check the file against them. conf may be NULL.
 * Returns NULL for UNREADABLE, NOT_PE and BAD_PE; *status and *why
 * (static text) say what was found. */
hs_modsyms *hs_modsyms_open(const char *path, uint64_t base, uint32_t size, uint32_t timestamp,
                            const hs_symconf *conf, hs_modsyms_status *status, const char **why);
/* The symbols of an image whose file is not here, known by its PDB's
 * identity (GUID, age, PDB path: an ETW trace's DbgID_RSDS record): its
 * PDB, found by the same search, is all there is to read. name names the
 * image in messages. Never NULL; hs_modsyms_message says what is missing. */
hs_modsyms *hs_modsyms_open_pdb(const char *name, uint64_t base, const uint8_t guid[16], uint32_t age,
                                const char *pdb_path, const hs_symconf *conf);
void hs_modsyms_close(hs_modsyms *t);

/* An image whose file is not here, known by name, TimeDateStamp and
 * SizeOfImage (a module of a trace that names no PDB for it), from a
 * folder or store of conf's search paths, or a symbol server
 * (hs_image_locate), then opened as hs_modsyms_open opens a file (its PDB
 * looked for as its own). NULL when no such file is found. */
hs_modsyms *hs_modsyms_open_stored(const char *name, uint64_t base, uint32_t size, uint32_t timestamp,
                                   const hs_symconf *conf);

/* Start the downloads from symbol servers that opening this module would
 * wait for (the same arguments as hs_modsyms_open, and the PDB's identity
 * when pdb_guid is not NULL, for an image whose file is not here; without
 * either, the image by name, timestamp and size), so that the files of
 * many modules come at once (the naming pass calls it only when conf
 * names a symbol server). */
void hs_modsyms_prefetch(const char *path, uint32_t size, uint32_t timestamp, bool any_version,
                         const char *name, const uint8_t *pdb_guid, uint32_t pdb_age, const char *pdb_path,
                         const hs_symconf *conf);

/* The x86 frame data (hook/unwind/fpo32.h) of the i386 image file at
 * path (UTF-8): its PDB's FPO and FrameData records, the PDB found by
 * conf's search without asking a symbol server (the sampler asks while
 * the target runs). NULL when the image is not i386, names no PDB, its
 * PDB is not found or has no frame data. */
hs_fpo32 *hs_modsyms_frames32(const char *path, const hs_symconf *conf);

/* The parsed image (for analysis of its code, e.g. by `functions`). */
const hs_pe *hs_modsyms_pe(const hs_modsyms *t);

/* What the debug information gave: HS_SYMSRC_PDB, HS_SYMSRC_DWARF (lines
 * only), HS_SYMSRC_DBGHELP, or 0; and a one-line problem with it ("" if
 * none): a PDB not found, of another build, unreadable; or, for an image
 * with no PDB, no COFF symbols and no exports, that it has no symbols. */
int hs_modsyms_debug_source(const hs_modsyms *t);
const char *hs_modsyms_message(const hs_modsyms *t);

typedef struct hs_sym_name {
    const char *name;      /* undecorated; owned by the table */
    const char *raw;       /* as recorded (decorated), or the same as name */
    uint8_t source;        /* HS_SYMSRC_* */
} hs_sym_name;

/* The name of the code that starts exactly at rva. Returns false (and
 * zeros) when no source names it. */
bool hs_modsyms_name_at(hs_modsyms *t, uint32_t rva, hs_sym_name *out);

/* The function containing rva: a PDB procedure, else a .pdata extent
 * named by the name at its start, else the nearest code symbol below
 * within that extent, else the extent itself as "sub_RVA" (what
 * `hookscope functions` calls it: an image at hand without symbols still
 * bounds its functions), else the nearest code symbol below. Returns
 * false when nothing names the place. */
typedef struct hs_sym_hit {
    uint32_t start, size;  /* size 0: a symbol without a known extent */
    hs_sym_name n;
} hs_sym_hit;
bool hs_modsyms_lookup(hs_modsyms *t, uint32_t rva, hs_sym_hit *out);

/* The source line of the instruction at rva, or of a function (its first
 * line entry: the declaration) when `function` is true. */
bool hs_modsyms_line(hs_modsyms *t, uint32_t rva, bool function, const char **file, uint32_t *line);

/* The functions of the image: .pdata, exports, COFF symbols and the PDB's
 * procedures (hook/pe.h's hs_pe_functions_ex), and for an i386 image the
 * targets of its known code's calls (hook/engine/calls.h); malloc'd. */
int hs_modsyms_functions(hs_modsyms *t, hs_pe_func **out, size_t *count);

#endif
