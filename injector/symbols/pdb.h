/*
 * injector/symbols/pdb.h - hookscope's own PDB reader: what a PDB says about
 * the functions of its image and their source lines. Portable C, tested
 * natively against llvm-pdbutil (tests/test_pdb_native.py) and fuzzed
 * (tests/unit/test_pdb.c).
 *
 * Read, each part bounds-checked (a corrupt PDB gives a one-line error,
 * never a read outside the file):
 *   - the MSF container (msf.h);
 *   - the PDB info stream (1): version, GUID and age, the identity an image's
 *     RSDS record must match, and the named-stream map (for "/names");
 *   - the DBI stream (3): the module list, the optional debug header's
 *     section headers (stream "SectionHdr") that turn segment:offset into an
 *     rva, and OMAP (OmapFromSrc with OriginalSectionHdr) when the image was
 *     rearranged after linking;
 *   - every module's symbol stream: S_GPROC32 / S_LPROC32 and their _ID and
 *     _DPC forms (name, rva, exact code size, global or static), S_THUNK32;
 *   - the symbol record stream: S_PUB32 public names (decorated: the `raw`
 *     name of a procedure at the same rva, and symbols of their own for code
 *     that has no procedure, e.g. objects built without CodeView);
 *   - every module's C13 line information: DEBUG_S_LINES blocks with
 *     DEBUG_S_FILECHKSMS and the "/names" string table, for rva -> file:line.
 *   - the x86 frame data: the FPO_DATA and FrameData streams the DBI debug
 *     header names (hs_pdb_frames, for the 32-bit walker).
 * Not read: types (TPI/IPI), locals, inline sites, C11 lines (pre-2005).
 *
 * Names are stored as the PDB has them (UTF-8). A procedure's `name` is its
 * S_*PROC32 name (undecorated); a public's `name` is its undecoration
 * (undecorate.h) and `raw` the decorated text.
 */
#ifndef HOOKSCOPE_PDB_H
#define HOOKSCOPE_PDB_H

#include <stddef.h>
#include <stdint.h>

#include "hook/unwind/fpo32.h"
#include "injector/symbols/msf.h"
#include "injector/symbols/symtab.h"

typedef struct hs_pdb {
    hs_msf msf;
    uint32_t version;          /* PDB info stream version (20000404 for VC7+) */
    uint32_t signature;        /* its time stamp */
    uint32_t age;              /* PDB info stream age (what RSDS age must equal) */
    uint8_t guid[16];          /* as stored (Data1..3 little-endian) */
    uint32_t names_stream;     /* the "/names" stream, or UINT32_MAX */
} hs_pdb;

/* Open a PDB given as bytes (kept by the caller while the hs_pdb lives) and
 * read its identity. 0, or -1 with err set (one line). */
int hs_pdb_open(hs_pdb *p, const void *data, size_t size, char *err, size_t errlen);
void hs_pdb_close(hs_pdb *p);

/* Fill syms (procedures, thunks, publics in executable or any section) and
 * lines (may be NULL) and finish both. 0, or -1 with err set. */
int hs_pdb_read(const hs_pdb *p, hs_symtab *syms, hs_linetab *lines, char *err, size_t errlen);

/* Add the x86 frame data (the FPO and FrameData streams the DBI debug
 * header names, hook/unwind/fpo32.h) to t and finish it. 0 (also when there
 * is none), or -1 with err set (one line). */
int hs_pdb_frames(const hs_pdb *p, hs_fpo32 *t, char *err, size_t errlen);

/* "{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}" of a GUID as stored (out: 39 bytes). */
void hs_guid_text(const uint8_t guid[16], char out[39]);
/* The symbol server folder name of (guid, age): 32 hex digits of the GUID
 * (Data1..3 as numbers) and the age in hex, uppercase (out: 42 bytes). */
void hs_guid_age_key(const uint8_t guid[16], uint32_t age, char out[42]);

#endif
