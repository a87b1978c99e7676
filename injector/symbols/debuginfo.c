/*
 * injector/symbols/debuginfo.c - one image's symbols and lines from its PDB or
 * its DWARF line table (see debuginfo.h).
 */
#include "injector/symbols/debuginfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injector/symbols/dwarf.h"
#include "injector/symbols/pdb.h"

/* Read the PDB the search found (m->status HS_LOC_FOUND); frees f. 0 or -1. */
static int read_found(hs_debuginfo *m, hs_pdb_found *f)
{
    char err[512];
    m->message[0] = 0;
    if (hs_pdb_read(&f->pdb, &m->syms, &m->lines, err, sizeof err)) {
        snprintf(m->message, sizeof m->message, "%s: %s", f->path, err);
        hs_pdb_found_free(f);
        hs_symtab_free(&m->syms);
        hs_linetab_free(&m->lines);
        m->status = HS_LOC_BAD;
        return -1;
    }
    m->source = HS_SYMSRC_PDB;
    m->pdb_path = f->path;        /* kept; the rest is freed */
    f->path = NULL;
    hs_pdb_found_free(f);
    return 0;
}

int hs_debuginfo_load(hs_debuginfo *m, const hs_pe *pe, const hs_pdb_search *s)
{
    memset(m, 0, sizeof *m);
    hs_pdb_found found;
    char err[512];
    m->status = hs_pdb_locate(pe, s, &found, m->message, sizeof m->message);
    if (m->status == HS_LOC_FOUND)
        return read_found(m, &found);
    if (m->status != HS_LOC_NO_RSDS) {
        hs_symtab_finish(&m->syms);
        hs_linetab_finish(&m->lines);
        return -1;
    }
    /* no PDB named: DWARF lines, if any */
    m->message[0] = 0;
    hs_symtab_finish(&m->syms);
    if (hs_dwarf_lines(pe, &m->lines, err, sizeof err)) {
        snprintf(m->message, sizeof m->message, "%s", err);
        hs_linetab_free(&m->lines);
        hs_linetab_finish(&m->lines);
        return -1;
    }
    m->source = m->lines.count ? HS_SYMSRC_DWARF : 0;
    return 0;
}

int hs_debuginfo_load_rsds(hs_debuginfo *m, const hs_rsds *rsds, const hs_pdb_search *s)
{
    memset(m, 0, sizeof *m);
    hs_pdb_found found;
    m->status = hs_pdb_locate_rsds(rsds, s, &found, m->message, sizeof m->message);
    if (m->status == HS_LOC_FOUND)
        return read_found(m, &found);
    hs_symtab_finish(&m->syms);
    hs_linetab_finish(&m->lines);
    return -1;
}

void hs_debuginfo_free(hs_debuginfo *m)
{
    hs_symtab_free(&m->syms);
    hs_linetab_free(&m->lines);
    free(m->pdb_path);
    memset(m, 0, sizeof *m);
}
