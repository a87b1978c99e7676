/*
 * injector/symbols/debuginfo.h - what hookscope's own readers know about one
 * image, in one call: the PDB it names (found and checked as locate.h says,
 * read by pdb.h) or, for an image that names none, its DWARF line table
 * (dwarf.h; the functions of a gcc build are named by its COFF symbols,
 * read elsewhere). Portable C; a source for the per-module facade
 * (modsyms.h: the naming pass, `functions`, the filters, --srcline) on
 * Windows, and for native tests on Linux.
 *
 * Result
 *   syms       procedures, thunks and public names (symtab.h), finished;
 *              empty for a DWARF-only image
 *   lines      the line table (symtab.h), finished; line_for_rva is
 *              hs_linetab_lookup(&m->lines, rva, &file, &line)
 *   source     HS_SYMSRC_PDB, HS_SYMSRC_DWARF, or 0 (nothing read)
 *   status     HS_LOC_* of the PDB search (HS_LOC_NO_RSDS for a gcc build)
 *   pdb_path   where the PDB was found (NULL if none)
 *   message    when the image names a PDB and none was read: one line for
 *              the user, without the "hookscope: " prefix (mismatch, not
 *              found, corrupt); empty otherwise
 * hs_debuginfo_load returns 0 when something was read or the image simply has
 * no debug information, -1 when it names a PDB that could not be used or a
 * debug section is malformed (message set; the caller warns and goes on with
 * exports and .pdata).
 */
#ifndef HOOKSCOPE_DEBUGINFO_H
#define HOOKSCOPE_DEBUGINFO_H

#include "hook/pe/pe.h"
#include "injector/symbols/locate.h"
#include "injector/symbols/symtab.h"

typedef struct hs_debuginfo {
    hs_symtab syms;
    hs_linetab lines;
    int source;
    int status;
    char *pdb_path;
    char message[1024];
} hs_debuginfo;

int hs_debuginfo_load(hs_debuginfo *m, const hs_pe *pe, const hs_pdb_search *s);
/* The same for an image that is not here, known by its RSDS record (ETW's
 * DbgID_RSDS): only its PDB can be read. */
int hs_debuginfo_load_rsds(hs_debuginfo *m, const hs_rsds *rsds, const hs_pdb_search *s);
void hs_debuginfo_free(hs_debuginfo *m);

#endif
