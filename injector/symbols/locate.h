/*
 * injector/symbols/locate.h - find the PDB an image wants, and refuse one
 * that belongs to another build. Portable C (file access through symfs.h).
 *
 * The PDB's file name is the last part of the RSDS path (rsds.h). Places,
 * in this order (a place that does not exist is passed over):
 *   1. the RSDS path itself;
 *   2. the image's folder;
 *   3. each --symbols entry, then 4. each _NT_SYMBOL_PATH entry; entries are
 *      separated by ';' and are
 *        DIR                       DIR/name.pdb
 *        srv*DIR[*DIR...][*URL]    every local DIR as a symbol store:
 *        SRV*..., symsrv*symsrv.dll*DIR*URL
 *        cache*DIR                 DIR/name.pdb/<GUID><age>/name.pdb, and the
 *                                  two-tier form DIR/na/name.pdb/<key>/name.pdb
 *      A URL (http://, https://) in a srv* entry is asked through the
 *      search's fetch (symstore.h) once the entry's folders miss: the file
 *      it gets lands in the entry's first folder, or in the folder of the
 *      last cache*DIR before it; without a fetch, URLs are passed over.
 * <GUID><age> is hs_guid_age_key: the GUID's 32 hex digits and the age in hex
 * (what symstore and symbol servers use).
 *
 * Every file found is opened (pdb.h) and its GUID and age compared with the
 * image's; the first that matches is taken. When none matches the answer is
 * the first mismatch (or unreadable/corrupt PDB) met, else "not found".
 * Wine's DbgHelp reads srv* and cache* entries as plain folder names
 * (FINDINGS.md); this search does not depend on it.
 *
 * Messages (one line, without the "hookscope: " prefix the caller adds):
 *   mismatch   "<pdb path> does not match <image> (PDB GUID {...} age 1,
 *               image wants {...} age 2)"
 *   not found  "no symbols for <image>: <name>.pdb not found (looked at
 *               <RSDS path>, the image's folder, <n> --symbols places, <n>
 *               _NT_SYMBOL_PATH places)": a server asked counts as a place
 *   bad file   "<pdb path>: <what is wrong>"
 *   no RSDS    "<image> names no PDB (no CodeView record)"
 */
#ifndef HOOKSCOPE_LOCATE_H
#define HOOKSCOPE_LOCATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/pe/pe.h"
#include "injector/symbols/pdb.h"
#include "injector/symbols/rsds.h"
#include "injector/symbols/symfs.h"
#include "injector/symbols/symstore.h"

enum hs_locate_status {
    HS_LOC_FOUND = 0,
    HS_LOC_NO_RSDS = 1,    /* the image names no PDB */
    HS_LOC_NOT_FOUND = 2,  /* no file of that name in any place */
    HS_LOC_MISMATCH = 3,   /* only PDBs of other builds */
    HS_LOC_BAD = 4,        /* only unreadable or corrupt files (or a malformed image) */
};

typedef struct hs_pdb_search {
    const char *image_path;     /* UTF-8; its folder is a place */
    const char *symbols;        /* --symbols "PATH[;PATH...]", or NULL */
    const char *nt_symbol_path; /* the _NT_SYMBOL_PATH value, or NULL */
    const hs_symfs *fs;         /* NULL: hs_symfs_host() */
    const hs_symfetch *fetch;   /* symbol servers; NULL: never asked */
    bool prefetch;              /* only start the download the search would wait for:
                                   the search ends at the first place holding a file
                                   of the name (fs->exists; read when there is none)
                                   or at the first server, and finds nothing */
} hs_pdb_search;

typedef struct hs_pdb_found {
    char *path;                 /* where the PDB was found (malloc'd) */
    const char *via;            /* "rsds", "image folder", "--symbols", "_NT_SYMBOL_PATH" */
    uint8_t *data;              /* the PDB file (malloc'd; pdb reads from it) */
    size_t size;
    hs_pdb pdb;                 /* opened, identity checked */
    hs_rsds rsds;               /* what the image asked for */
} hs_pdb_found;

/* Returns a status; on HS_LOC_FOUND, out is filled (free with
 * hs_pdb_found_free); otherwise msg holds the one-line message. */
int hs_pdb_locate(const hs_pe *pe, const hs_pdb_search *s, hs_pdb_found *out, char *msg,
                  size_t msglen);
/* The same for an image known only by its RSDS record (a module of an
 * ETW trace whose file is not here): the record's GUID, age and path;
 * image_path in s names the image for messages and its folder. */
int hs_pdb_locate_rsds(const hs_rsds *rsds, const hs_pdb_search *s, hs_pdb_found *out, char *msg,
                       size_t msglen);
void hs_pdb_found_free(hs_pdb_found *f);

/* An image file known by name, TimeDateStamp and SizeOfImage (a module of
 * a trace that names no PDB for it): NAME in a folder of the search path,
 * NAME/KEY/NAME in a store (KEY: hs_symstore_image_key), or from a symbol
 * server; the first file that is that build (a PE image of that timestamp
 * and size) is taken. Returns its path (malloc'd), or NULL. A prefetch (s)
 * starts the first server's download and returns NULL, or returns the
 * first file of the name it finds without reading it. s->image_path is
 * not used. */
char *hs_image_locate(const char *name, uint32_t timestamp, uint32_t size, const hs_pdb_search *s);

#endif
