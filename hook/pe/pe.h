/*
 * hook/pe/pe.h - a reader for x86-64 PE images: headers, sections, the
 * exception directory (.pdata), exports and the COFF symbol table.
 *
 * It works on an image laid out by RVA: either a module mapped by the
 * loader (hs_pe_open_mapped) or a file, which hs_pe_load_file lays out
 * itself. The COFF symbol table is not mapped by the loader; it is only
 * available when the file bytes are given (hs_pe_load_file, or
 * hs_pe_attach_file for a mapped module). Builds on Windows and Linux.
 */
#ifndef HOOKSCOPE_PE_H
#define HOOKSCOPE_PE_H

#include <stddef.h>
#include <stdint.h>

enum hs_pe_status {
    HS_PE_OK = 0,
    HS_PE_NOT_PE,        /* no MZ/PE signature */
    HS_PE_32BIT,         /* i386 / PE32 */
    HS_PE_OTHER_MACHINE, /* not x86-64 */
    HS_PE_CORRUPT,       /* headers point outside the file */
    HS_PE_NOMEM,
};
const char *hs_pe_status_text(int status);

#define HS_SCN_EXEC 0x20000000u   /* IMAGE_SCN_MEM_EXECUTE */
#define HS_SCN_CODE 0x00000020u   /* IMAGE_SCN_CNT_CODE */

enum {
    HS_DIR_EXPORT = 0, HS_DIR_IMPORT = 1, HS_DIR_EXCEPTION = 3, HS_DIR_BASERELOC = 5,
    HS_DIR_DEBUG = 6, HS_DIR_TLS = 9,
};

typedef struct hs_pe_section {
    char name[9];
    uint32_t rva, vsize, raw_off, raw_size, chars;
} hs_pe_section;

typedef struct hs_pe {
    const uint8_t *image;      /* laid out by RVA, image_size bytes */
    size_t image_size;
    uint8_t *owned;            /* image copy made by hs_pe_load_file */
    const uint8_t *file;       /* file bytes, if known (for COFF symbols) */
    size_t file_size;
    uint16_t machine, characteristics;
    uint64_t image_base;       /* preferred base from the header */
    uint32_t entry_rva, timestamp, size_of_image;
    int nsections;
    hs_pe_section *sections;
    uint32_t dir_rva[16], dir_size[16];
    uint32_t symtab_off, nsyms;
} hs_pe;

/* Parse a file's bytes and lay it out as the loader would (no relocation). */
int hs_pe_load_file(hs_pe *pe, const void *file, size_t size);
/* Parse a mapped module at its load address. */
int hs_pe_open_mapped(hs_pe *pe, const void *base, size_t size_of_image);
/* Give a mapped module its file bytes so the COFF symbols can be read. */
void hs_pe_attach_file(hs_pe *pe, const void *file, size_t size);
void hs_pe_close(hs_pe *pe);

int hs_pe_is_dll(const hs_pe *pe);
/* Pointer to [rva, rva+len) inside the image, or NULL. */
const uint8_t *hs_pe_ptr(const hs_pe *pe, uint32_t rva, uint32_t len);
/* Index of the section containing rva, or -1. */
int hs_pe_section_of(const hs_pe *pe, uint32_t rva);
int hs_pe_is_exec(const hs_pe *pe, uint32_t rva);

/* Reading a module's bytes by address, for hs_func_input.read (jump
 * tables): `pe` laid out by RVA, running at `base`. Reads only inside one
 * section. Returns 0, or -1 outside. */
typedef struct hs_image_view {
    const hs_pe *pe;
    uint64_t base;
} hs_image_view;
int hs_image_read(void *ctx, uint64_t addr, void *out, size_t n);

/* Functions, from .pdata (non-chained entries), exports into executable
 * sections and COFF function symbols; sorted by rva, unique. */
enum {
    HS_SRC_PDATA = 1, HS_SRC_EXPORT = 2, HS_SRC_SYMBOL = 4,
    HS_SRC_FRAGMENT = 8, /* chained .pdata entry: part of another function, never hooked */
    HS_SRC_DEBUG = 16,   /* a procedure of the debug information (PDB): exact extent */
};
typedef struct hs_pe_func {
    uint32_t rva, size;
    uint32_t unwind_rva;       /* UNWIND_INFO of the .pdata entry, 0 if none */
    uint32_t gap_before, gap_after; /* bytes to the neighbouring code or section edge */
    uint16_t src;              /* HS_SRC_* */
} hs_pe_func;

/* The functions of one image running at `base`, as hs_pe_functions gives
 * them, and a hs_func_input.part_at over them (ctx: a hs_func_list). */
typedef struct hs_func_list {
    const hs_pe_func *f;
    size_t n;
    uint64_t base;
} hs_func_list;
int hs_pe_part_at(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi);

/* Fills a malloc'd array (free with free()). Fragments are included with
 * HS_SRC_FRAGMENT so that callers can see what surrounds a function. */
int hs_pe_functions(const hs_pe *pe, hs_pe_func **out, size_t *count);

/* The same, with the procedures of the image's debug information (exact
 * extents, leaf functions without .pdata included): a procedure's extent
 * wins over .pdata's (which can cover data after the code, e.g. a jump
 * table), and export or COFF entries inside it are dropped. */
typedef struct hs_pe_extent {
    uint32_t rva, size;
} hs_pe_extent;
int hs_pe_functions_ex(const hs_pe *pe, const hs_pe_extent *procs, size_t nprocs, hs_pe_func **out,
                       size_t *count);

/* Symbols: exports and COFF symbols that name a location in the image. */
enum { HS_SYM_EXPORT = 1, HS_SYM_FUNC = 2, HS_SYM_OTHER = 3 };
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

/* UNWIND_INFO essentials. */
typedef struct hs_unwind {
    uint8_t version, flags, prolog_size, count_codes;
    uint8_t frame_reg, frame_off;   /* frame register number, offset/16 */
    uint32_t handler_rva;           /* if flags & (EHANDLER|UHANDLER) */
    uint32_t chained_begin;         /* if flags & CHAININFO: begin of the parent */
    const uint8_t *codes;           /* count_codes * 2 bytes */
} hs_unwind;
#define HS_UNW_EHANDLER 1
#define HS_UNW_UHANDLER 2
#define HS_UNW_CHAININFO 4
int hs_pe_unwind(const hs_pe *pe, uint32_t unwind_rva, hs_unwind *out);
/* Does the code enter with a frame already set up (an unwind code at
 * prologue offset 0): a part of a function reached by a jump, like gcc's
 * .cold parts, not a function entered by a call? */
int hs_unwind_entered_with_frame(const hs_unwind *u);
/* Is rva an entry of the image's import address table? */
int hs_pe_is_iat(const hs_pe *pe, uint32_t rva);
/* Total stack the prologue allocates (pushes + allocations), in bytes, or -1. */
int hs_unwind_frame_size(const hs_unwind *u);

/* Exported name -> rva (0 if not found). */
uint32_t hs_pe_export_rva(const hs_pe *pe, const char *name);

#endif
