/*
 * injector/symbols/dbghelp_win.h - the system's DbgHelp as a symbol source
 * (Windows only): what Windows tools use, and on Wine the reader of DWARF 2-4
 * when nothing else is at hand. hookscope's own readers (pdb.h, dwarf.h) are
 * exact where Wine's DbgHelp is not (FINDINGS.md); this backend serves images
 * they cannot read and the tests that compare the two.
 *
 * One session per image: SymInitializeW on a private handle (never the
 * process's), SymSetOptions(SYMOPT_UNDNAME | SYMOPT_LOAD_LINES |
 * SYMOPT_FAIL_CRITICAL_ERRORS | SYMOPT_NO_PROMPTS) - global to the process,
 * as DbgHelp's options are - and SymLoadModuleExW at the given base.
 * Facts of Wine 8's DbgHelp the code depends on:
 *   - it finds a PDB only at the RSDS path, next to the image and in plain
 *     folders of the search path; "srv*DIR" and "cache*DIR" are taken as
 *     folder names (path.c, path_find_symbol_file): give it the folder
 *     hookscope's locator found instead;
 *   - a PDB of another build is passed over silently: the module loads with
 *     SymType SymExport (4) and no error, so the type is what tells;
 *   - LoadedPdbName is the RSDS path even when the file was found elsewhere;
 *   - with IMAGE_FILE_DEBUG_STRIPPED (0x200) set it looks for a .DBG file
 *     and ignores the PDB;
 *   - public symbols come with size 1 (stored here as 0: unknown), Itanium
 *     names undemangled (SYMOPT_UNDNAME undecorates MSVC names only, to the
 *     bare name): the Itanium ones are demangled here;
 *   - SymSrvGetFileIndexInfo(W) is a stub that aborts the process: never
 *     called.
 */
#ifndef HOOKSCOPE_DBGHELP_WIN_H
#define HOOKSCOPE_DBGHELP_WIN_H

#include <stddef.h>
#include <stdint.h>

#include "injector/symbols/symtab.h"

typedef struct hs_dbghelp hs_dbghelp;

/* Load image_path (UTF-8) at base (its preferred base if 0) with search_path
 * (DbgHelp's form: folders separated by ';'; NULL: none). NULL on failure
 * with err set. */
hs_dbghelp *hs_dbghelp_open(const char *image_path, uint64_t base, const char *search_path,
                            char *err, size_t errlen);
/* DbgHelp's SymType of the module: 3 SymPdb, 4 SymExport (nothing else
 * found), 7 SymDia (DWARF under Wine), ... */
int hs_dbghelp_symtype(const hs_dbghelp *d);
/* Functions (tag SymTagFunction: kind PROC with size) and public names
 * (SymTagPublicSymbol: PUBLIC_CODE / PUBLIC) into out, finished. 0 / -1. */
int hs_dbghelp_symbols(hs_dbghelp *d, hs_symtab *out, char *err, size_t errlen);
/* SymGetLineFromAddrW64 at rva: 1 with file (UTF-8) and line, 0 if none. */
int hs_dbghelp_line(hs_dbghelp *d, uint32_t rva, char *file, size_t filelen, uint32_t *line);
void hs_dbghelp_close(hs_dbghelp *d);

#endif
