/*
 * injector/addrsym.h - name an address in the traced process: which
 * module, which function, at what offset. Traced modules use the function
 * table the agent wrote (named by symbols.c); other loaded modules are
 * read from their files (.pdata extents, exports and COFF symbols for
 * names), when the file still matches what was loaded.
 */
#ifndef HOOKSCOPE_ADDRSYM_H
#define HOOKSCOPE_ADDRSYM_H

#include <stddef.h>
#include <stdint.h>

#include "results.h"

typedef struct hs_addrsym hs_addrsym;

typedef struct hs_addr_info {
    int module;            /* index into r->mods, -1 if in no known module */
    int64_t func;          /* index into r->funcs for a traced module's function, else -1 */
    const char *name;      /* function name, NULL if unknown (owned by the symbolizer or r) */
    uint64_t start;        /* address of the function's start (or of the name's symbol) */
} hs_addr_info;

hs_addrsym *hs_addrsym_new(const hs_results *r);
void hs_addrsym_free(hs_addrsym *s);
void hs_addrsym_lookup(hs_addrsym *s, uint64_t addr, hs_addr_info *out);

/* "module!function+0xoff" (or "module+0xrva", or "0xaddr") into buf. */
void hs_addrsym_format(hs_addrsym *s, uint64_t addr, int with_offset, char *buf, size_t len);

#endif
