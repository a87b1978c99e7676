/*
 * injector/symbols/backend.h - a source of names from debug information
 * (DbgHelp on Windows: PDB and DWARF), consulted by symtab.c for code that
 * exports and COFF symbols do not name.
 */
#ifndef HOOKSCOPE_SYM_BACKEND_H
#define HOOKSCOPE_SYM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

typedef struct hs_sym_backend {
    const char *name;
    /* Load the image's debug information; NULL if there is none. */
    void *(*open)(const char *path, uint64_t base, uint32_t size);
    /* The (possibly decorated) name of the symbol starting exactly at rva
     * into buf; 0 if none. */
    int (*name_at)(void *h, uint32_t rva, char *buf, size_t len);
    void (*close)(void *h);
} hs_sym_backend;

/* The backends of this build, NULL-terminated. */
extern const hs_sym_backend *const hs_sym_backends[];

#endif
