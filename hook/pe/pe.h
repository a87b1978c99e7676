/*
 * hook/pe/pe.h - the one reader of PE images, x86-64 (PE32+) and i386
 * (PE32; `bits` says which, and what would run or patch an image's code
 * checks it), alike but for ImageBase's width and where the data
 * directories are: headers, sections and reading by rva (this file,
 * headers.c); the functions (functions.h), the
 * names the image carries (symbols.h) and its unwind data (unwind_info.h)
 * are read by the files beside it.
 *
 * It works on an image laid out by RVA: a module mapped by the loader
 * (hs_pe_open_mapped), a file, which hs_pe_load_file lays out itself, or
 * the headers of an image in another process (hs_pe_read_headers, through
 * a read callback). The COFF symbol table is not mapped by the loader; it
 * is only available when the file bytes are given (hs_pe_load_file, or
 * hs_pe_attach_file for a mapped module). Builds on Windows and Linux.
 */
#ifndef HOOKSCOPE_PE_H
#define HOOKSCOPE_PE_H

#include <stddef.h>
#include <stdint.h>

enum hs_pe_status {
    HS_PE_OK = 0,
    HS_PE_NOT_PE,        /* no MZ/PE signature */
    HS_PE_OTHER_MACHINE, /* neither i386 nor x86-64 */
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
    uint8_t bits;              /* 32: PE32 for i386; 64: PE32+ for x86-64 */
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

/* The page that holds every header of an image (what is read of one
 * known only through a read callback). */
#define HS_PE_HEADER_PAGE 4096

/* The headers of the image at `base` of another address space, through
 * read (0, or -1 when unreadable): pe then has the headers, sections and
 * directories, and only the header page to read by rva. Returns HS_PE_*. */
typedef int (*hs_pe_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
int hs_pe_read_headers(hs_pe *pe, hs_pe_read_fn read, void *ctx, uint64_t base);
/* The SizeOfImage of a module mapped in this process, from its headers
 * (0 when they are not a PE image's), and its timestamp (may be NULL). */
uint32_t hs_pe_mapped_size(const void *module, uint32_t *timestamp);

int hs_pe_is_dll(const hs_pe *pe);
/* Pointer to [rva, rva+len) inside the image, or NULL. */
const uint8_t *hs_pe_ptr(const hs_pe *pe, uint32_t rva, uint32_t len);
/* Index of the section containing rva, or -1. */
int hs_pe_section_of(const hs_pe *pe, uint32_t rva);
int hs_pe_is_exec(const hs_pe *pe, uint32_t rva);
/* A section's real name: a long one ("/N" in the header, as `.eh_frame`
 * and `.debug_*`) is read from the COFF string table, so only with the
 * file bytes; NULL when it cannot be read. */
const char *hs_pe_section_name(const hs_pe *pe, const hs_pe_section *s);
/* The section called name, or NULL. */
const hs_pe_section *hs_pe_section_named(const hs_pe *pe, const char *name);

/* Reading a module's bytes by address, for hs_func_input.read (jump
 * tables): `pe` laid out by RVA, running at `base`. Reads only inside one
 * section. Returns 0, or -1 outside. */
typedef struct hs_image_view {
    const hs_pe *pe;
    uint64_t base;
} hs_image_view;
int hs_image_read(void *ctx, uint64_t addr, void *out, size_t n);

/* Is rva an entry of the image's import address table? */
int hs_pe_is_iat(const hs_pe *pe, uint32_t rva);
/* Exported name -> rva (0 if not found). */
uint32_t hs_pe_export_rva(const hs_pe *pe, const char *name);

#endif
