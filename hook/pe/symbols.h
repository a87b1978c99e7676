/*
 * hook/pe/symbols.h - the names an image carries itself: exports and COFF
 * symbols that name a location in the image.
 */
#ifndef HOOKSCOPE_PE_SYMBOLS_H
#define HOOKSCOPE_PE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "hook/pe/pe.h"

/* Symbols: exports and COFF symbols that name a location in the image;
 * HS_SYM_SECTION: a function's COFF name made from the name of the section
 * g++ gave it alone (`.text$NAME`: `_NAME` on i386, else NAME), which any
 * symbol at the same rva is preferred to. */
enum { HS_SYM_EXPORT = 1, HS_SYM_FUNC = 2, HS_SYM_OTHER = 3, HS_SYM_SECTION = 4 };
typedef struct hs_pe_sym {
    uint32_t rva;
    uint8_t kind;     /* HS_SYM_* */
    uint8_t global;   /* external (vs static) */
    const char *name; /* points into `pool` */
} hs_pe_sym;
typedef struct hs_pe_symtab {
    hs_pe_sym *syms;  /* sorted by rva, then by preference (export, global func, ...) */
    size_t count;
    char *pool;
} hs_pe_symtab;
int hs_pe_symbols(const hs_pe *pe, hs_pe_symtab *out);
void hs_pe_symtab_free(hs_pe_symtab *t);
/* Best name exactly at rva (NULL if none). */
const char *hs_pe_symtab_at(const hs_pe_symtab *t, uint32_t rva);

#endif
