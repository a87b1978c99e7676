/*
 * injector/symbols/symtab.h - what one symbol source knows about one image:
 * a table of symbols (functions and public names, by rva) and a table of
 * source lines. Every backend (PDB reader, DWARF line reader, DbgHelp) fills
 * these two containers; the naming pass, `functions` and the filters read
 * them. Portable C (Windows and Linux).
 *
 * Symbols
 *   rva, size     size 0 when the source does not know it (a public name)
 *   name          undecorated, UTF-8: what a report shows. For a PDB
 *                 procedure the compiler's display name (`ns::Rect::area`,
 *                 `sum_of<int>`, no parameters, as Windows tools show it);
 *                 for a public name without a procedure its undecoration
 *   raw           as stored, UTF-8 (a decorated name when the source has one:
 *                 `_ZNK2ns4Rect4areaEv`, `?area@Rect@ns@@QEBAJXZ`); for a PDB
 *                 procedure the decorated public name at the same rva if
 *                 there is one, else the same text as name
 *   source        HS_SYMSRC_*: where the symbol came from
 *   kind          HS_SYMK_*: a procedure with exact bounds, a thunk, a public
 *                 name (flagged as code or not)
 *   is_global     external linkage (S_GPROC32, a public) vs static (S_LPROC32)
 *   line, file    the first line entry of a procedure (its declaration or
 *                 opening brace, what a report prints next to the function),
 *                 0 / NULL when unknown
 * The table owns its strings (one pool). Sorted by rva, then by kind
 * (procedures first), then by name; several symbols can share an rva.
 *
 * Lines
 *   entries (rva, line, file) and, for each, an end: the PDB reader gives
 *   the end of the code the entry covers (up to the next entry of its
 *   DEBUG_S_LINES subsection), the DWARF reader the end of its sequence. The line
 *   of an address is the LAST entry (in table order) whose rva is <= the
 *   address, provided the address is below that entry's range end: an entry
 *   covers the bytes up to the next entry, so of several entries at one
 *   address the last one covers the code (a zero-length entry covers
 *   nothing). This is what addr2line does for DWARF and what the PDB's line
 *   table (llvm-pdbutil dump -l) says covers a byte. Two readers differ: Wine's
 *   DbgHelp keeps only the first entry at an address (symbol.c,
 *   symt_add_func_line drops the others as duplicates) and llvm-symbolizer's
 *   PDB reader answers the first one at exactly that address; see
 *   FINDINGS.md. Line numbers 0xfeefee and 0xf00f00 (MSVC's "hidden" code)
 *   are kept out: such code has no line.
 */
#ifndef HOOKSCOPE_SYMTAB_H
#define HOOKSCOPE_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

enum hs_symsrc { HS_SYMSRC_PDB = 1, HS_SYMSRC_DWARF = 2, HS_SYMSRC_COFF = 3, HS_SYMSRC_EXPORT = 4,
                 HS_SYMSRC_DBGHELP = 5 };
const char *hs_symsrc_name(int source);   /* "pdb", "dwarf", "coff", "export", "dbghelp" */

enum hs_symkind {
    HS_SYMK_PROC = 1,        /* a function with exact bounds (S_*PROC32, DWARF subprogram) */
    HS_SYMK_THUNK = 2,       /* S_THUNK32: exact bounds, linker-made */
    HS_SYMK_PUBLIC_CODE = 3, /* a public name flagged as code/function, no size */
    HS_SYMK_PUBLIC = 4,      /* a public name not flagged as code (data, or an import thunk) */
};

typedef struct hs_sym {
    uint32_t rva, size;
    const char *name;
    const char *raw;
    const char *file;        /* first line's file, or NULL */
    uint32_t line;           /* first line, or 0 */
    uint8_t source, kind, is_global;
} hs_sym;

typedef struct hs_symtab {
    hs_sym *syms;
    size_t count, cap;
    char *pool;              /* strings; syms point into it only after hs_symtab_finish */
    size_t pool_len, pool_cap;
    uintptr_t last_file;     /* pool offset + 1 of the last file set */
    int finished;
} hs_symtab;

/* Add a symbol (strings are copied; raw may be NULL = same as name, file may
 * be NULL). Returns 0, or -1 when out of memory. */
int hs_symtab_add(hs_symtab *t, uint32_t rva, uint32_t size, const char *name, const char *raw,
                  int source, int kind, int is_global, const char *file, uint32_t line);
/* Set the file and line of symbol i (before hs_symtab_finish). 0 / -1. */
int hs_symtab_set_line(hs_symtab *t, size_t i, const char *file, uint32_t line);
/* Sort and fix the string pointers; call once after the last add. */
int hs_symtab_finish(hs_symtab *t);
void hs_symtab_free(hs_symtab *t);
/* The first symbol at exactly rva (procedures before publics), or NULL. */
const hs_sym *hs_symtab_at(const hs_symtab *t, uint32_t rva);
/* The procedure or thunk whose [rva, rva+size) holds rva, or NULL. */
const hs_sym *hs_symtab_containing(const hs_symtab *t, uint32_t rva);

typedef struct hs_line {
    uint32_t rva, end;       /* end: exclusive; the lookup never goes past it */
    uint32_t line;
    uint32_t file;           /* index into files */
    uint32_t seq;            /* order of addition (ties of rva keep it) */
} hs_line;

typedef struct hs_linetab {
    hs_line *lines;
    size_t count, cap;
    char **files;            /* UTF-8 file names as stored */
    size_t nfiles, files_cap;
    int finished;
} hs_linetab;

/* Index of a file name (added once; copied). Returns the index, or -1. */
int hs_linetab_file(hs_linetab *t, const char *name);
/* Add one entry; end is the end (exclusive) of its code range. 0 / -1. */
int hs_linetab_add(hs_linetab *t, uint32_t rva, uint32_t end, uint32_t line, int file);
/* Sort by rva (stable); call once after the last add. 0 / -1. */
int hs_linetab_finish(hs_linetab *t);
void hs_linetab_free(hs_linetab *t);
/* Line of an address (the rule above): 1 with *file and *line set, or 0. */
int hs_linetab_lookup(const hs_linetab *t, uint32_t rva, const char **file, uint32_t *line);
/* The first entry (in table order) at exactly rva: 1 / 0. What a function's
 * first line is (its declaration), when rva is the function's start. */
int hs_linetab_first_at(const hs_linetab *t, uint32_t rva, const char **file, uint32_t *line);

#endif
