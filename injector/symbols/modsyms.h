/*
 * injector/symbols/modsyms.h - what hookscope's own readers know about one
 * image, in one call: the PDB it names (found and checked as locate.h says,
 * read by pdb.h) or, for an image that names none, its DWARF line table
 * (dwarf.h; the functions of a gcc build are named by its COFF symbols,
 * read elsewhere). Portable C: the naming pass, `functions`, the filters and
 * --srcline use it on Windows; native tests on Linux.
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
 * hs_modsyms_load returns 0 when something was read or the image simply has
 * no debug information, -1 when it names a PDB that could not be used or a
 * debug section is malformed (message set; the caller warns and goes on with
 * exports and .pdata).
 */
#ifndef HOOKSCOPE_MODSYMS_H
#define HOOKSCOPE_MODSYMS_H

#include "locate.h"
#include "pe.h"
#include "symtab.h"

typedef struct hs_modsyms {
    hs_symtab syms;
    hs_linetab lines;
    int source;
    int status;
    char *pdb_path;
    char message[1024];
} hs_modsyms;

int hs_modsyms_load(hs_modsyms *m, const hs_pe *pe, const hs_pdb_search *s);
void hs_modsyms_free(hs_modsyms *m);

#endif
