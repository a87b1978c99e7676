/*
 * hook/pe/headers.c - the PE reader's core (see pe.h): headers and
 * sections of PE32 (i386) and PE32+ (x86-64) images, from a file, a
 * mapped module, or another process's memory;
 * reading by rva or by address; the import address table.
 *
 * Every offset read from the image is bounds-checked: the reader is fed
 * arbitrary files by `hookscope functions`.
 */
#include "hook/pe/pe.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"

const char *hs_pe_status_text(int status)
{
    switch (status) {
    case HS_PE_OK: return "ok";
    case HS_PE_NOT_PE: return "not a PE file";
    case HS_PE_OTHER_MACHINE: return "not an x86 or x86-64 PE file";
    case HS_PE_CORRUPT: return "corrupt PE headers";
    case HS_PE_NOMEM: return "out of memory";
    }
    return "unknown PE error";
}

/* Parse headers from `hdr` (file bytes or a mapped image: the headers are
 * identical in both). */
static int parse_headers(hs_pe *pe, const uint8_t *hdr, size_t size)
{
    if (size < 0x40 || hdr[0] != 'M' || hdr[1] != 'Z')
        return HS_PE_NOT_PE;
    uint32_t lfanew = hs_le32(hdr + 0x3C);
    if (lfanew > size || size - lfanew < 24 || memcmp(hdr + lfanew, "PE\0\0", 4) != 0)
        return HS_PE_NOT_PE;
    const uint8_t *fh = hdr + lfanew + 4;
    pe->machine = hs_le16(fh);
    uint16_t nsec = hs_le16(fh + 2);
    pe->timestamp = hs_le32(fh + 4);
    pe->symtab_off = hs_le32(fh + 8);
    pe->nsyms = hs_le32(fh + 12);
    uint16_t opt_size = hs_le16(fh + 16);
    pe->characteristics = hs_le16(fh + 18);
    const uint8_t *opt = fh + 20;
    if ((size_t)(opt - hdr) + 2 > size)
        return HS_PE_CORRUPT;
    /* PE32 (i386) and PE32+ (x86-64) differ in ImageBase's width and where
     * the data directories start */
    uint16_t magic = hs_le16(opt);
    uint32_t dirs_at;
    if (magic == 0x10B && pe->machine == 0x14C) {
        pe->bits = 32;
        dirs_at = 96;
    } else if (magic == 0x20B && pe->machine == 0x8664) {
        pe->bits = 64;
        dirs_at = 112;
    } else if (pe->machine != 0x14C && pe->machine != 0x8664) {
        return HS_PE_OTHER_MACHINE;
    } else {
        return HS_PE_CORRUPT;   /* a machine and an optional header of different widths */
    }
    if (opt_size < dirs_at || (size_t)(opt - hdr) + opt_size > size)
        return HS_PE_CORRUPT;
    pe->entry_rva = hs_le32(opt + 16);
    pe->image_base = pe->bits == 32 ? hs_le32(opt + 28) : hs_le64(opt + 24);
    pe->size_of_image = hs_le32(opt + 56);
    uint32_t ndirs = hs_le32(opt + dirs_at - 4);
    if (ndirs > 16)
        ndirs = 16;
    if (dirs_at + ndirs * 8 > opt_size)
        ndirs = (opt_size - dirs_at) / 8;
    for (uint32_t i = 0; i < ndirs; i++) {
        pe->dir_rva[i] = hs_le32(opt + dirs_at + i * 8);
        pe->dir_size[i] = hs_le32(opt + dirs_at + 4 + i * 8);
    }
    const uint8_t *sh = opt + opt_size;
    if ((size_t)(sh - hdr) + (size_t)nsec * 40 > size)
        return HS_PE_CORRUPT;
    pe->sections = calloc(nsec ? nsec : 1, sizeof *pe->sections);
    if (!pe->sections)
        return HS_PE_NOMEM;
    pe->nsections = nsec;
    for (int i = 0; i < nsec; i++) {
        const uint8_t *s = sh + i * 40;
        hs_pe_section *d = &pe->sections[i];
        memcpy(d->name, s, 8);
        d->name[8] = 0;
        d->vsize = hs_le32(s + 8);
        d->rva = hs_le32(s + 12);
        d->raw_size = hs_le32(s + 16);
        d->raw_off = hs_le32(s + 20);
        d->chars = hs_le32(s + 36);
        if (d->vsize == 0)
            d->vsize = d->raw_size;
    }
    return HS_PE_OK;
}

int hs_pe_load_file(hs_pe *pe, const void *file, size_t size)
{
    memset(pe, 0, sizeof *pe);
    const uint8_t *f = file;
    int st = parse_headers(pe, f, size);
    if (st != HS_PE_OK) {
        hs_pe_close(pe);
        return st;
    }
    if (pe->size_of_image == 0 || pe->size_of_image > (1u << 30)) {
        hs_pe_close(pe);
        return HS_PE_CORRUPT;
    }
    pe->owned = calloc(1, pe->size_of_image);
    if (!pe->owned) {
        hs_pe_close(pe);
        return HS_PE_NOMEM;
    }
    /* headers, then each section's raw data at its rva */
    size_t hdr_len = size < pe->size_of_image ? size : pe->size_of_image;
    if (hdr_len > 4096)
        hdr_len = 4096;
    memcpy(pe->owned, f, hdr_len);
    for (int i = 0; i < pe->nsections; i++) {
        const hs_pe_section *s = &pe->sections[i];
        if (s->rva >= pe->size_of_image)
            continue;
        uint32_t n = s->raw_size < s->vsize ? s->raw_size : s->vsize;
        if (n > pe->size_of_image - s->rva)
            n = pe->size_of_image - s->rva;
        if (s->raw_off >= size)
            continue;
        if (n > size - s->raw_off)
            n = (uint32_t)(size - s->raw_off);
        memcpy(pe->owned + s->rva, f + s->raw_off, n);
    }
    pe->image = pe->owned;
    pe->image_size = pe->size_of_image;
    pe->file = f;
    pe->file_size = size;
    return HS_PE_OK;
}

int hs_pe_open_mapped(hs_pe *pe, const void *base, size_t size_of_image)
{
    memset(pe, 0, sizeof *pe);
    size_t hdr = size_of_image < 4096 ? size_of_image : 4096;
    int st = parse_headers(pe, base, hdr);
    if (st != HS_PE_OK) {
        hs_pe_close(pe);
        return st;
    }
    pe->image = base;
    pe->image_size = size_of_image;
    return HS_PE_OK;
}

int hs_pe_read_headers(hs_pe *pe, hs_pe_read_fn read, void *ctx, uint64_t base)
{
    memset(pe, 0, sizeof *pe);
    pe->owned = malloc(HS_PE_HEADER_PAGE);
    if (!pe->owned)
        return HS_PE_NOMEM;
    if (read(ctx, base, pe->owned, HS_PE_HEADER_PAGE) < 0) {
        hs_pe_close(pe);
        return HS_PE_NOT_PE;
    }
    int st = parse_headers(pe, pe->owned, HS_PE_HEADER_PAGE);
    if (st != HS_PE_OK) {
        hs_pe_close(pe);
        return st;
    }
    pe->image = pe->owned;
    pe->image_size = HS_PE_HEADER_PAGE;
    return HS_PE_OK;
}

uint32_t hs_pe_mapped_size(const void *module, uint32_t *timestamp)
{
    const uint8_t *h = module;
    if (h[0] != 'M' || h[1] != 'Z')
        return 0;
    uint32_t lfanew = hs_le32(h + 0x3C);
    if (lfanew > HS_PE_HEADER_PAGE - 24 - 60 || memcmp(h + lfanew, "PE\0\0", 4) != 0)
        return 0;
    if (timestamp)
        *timestamp = hs_le32(h + lfanew + 8);   /* FileHeader.TimeDateStamp */
    return hs_le32(h + lfanew + 24 + 56);       /* OptionalHeader.SizeOfImage, PE32 and PE32+ alike */
}

void hs_pe_attach_file(hs_pe *pe, const void *file, size_t size)
{
    pe->file = file;
    pe->file_size = size;
}

void hs_pe_close(hs_pe *pe)
{
    free(pe->owned);
    free(pe->sections);
    memset(pe, 0, sizeof *pe);
}

int hs_pe_is_dll(const hs_pe *pe) { return (pe->characteristics & 0x2000) != 0; }

const uint8_t *hs_pe_ptr(const hs_pe *pe, uint32_t rva, uint32_t len)
{
    if (rva > pe->image_size || len > pe->image_size - rva)
        return NULL;
    return pe->image + rva;
}

int hs_pe_section_of(const hs_pe *pe, uint32_t rva)
{
    for (int i = 0; i < pe->nsections; i++) {
        const hs_pe_section *s = &pe->sections[i];
        if (rva >= s->rva && rva - s->rva < s->vsize)
            return i;
    }
    return -1;
}

int hs_image_read(void *ctx, uint64_t addr, void *out, size_t n)
{
    const hs_image_view *v = ctx;
    if (addr < v->base || n == 0)
        return -1;
    uint64_t rva = addr - v->base;
    int i = rva < UINT32_MAX ? hs_pe_section_of(v->pe, (uint32_t)rva) : -1;
    if (i < 0)
        return -1;
    const hs_pe_section *s = &v->pe->sections[i];
    if (rva + n > (uint64_t)s->rva + s->vsize || rva + n > v->pe->image_size)
        return -1;
    memcpy(out, v->pe->image + rva, n);
    return 0;
}

int hs_pe_is_exec(const hs_pe *pe, uint32_t rva)
{
    int i = hs_pe_section_of(pe, rva);
    return i >= 0 && (pe->sections[i].chars & (HS_SCN_EXEC | HS_SCN_CODE)) != 0;
}

const char *hs_pe_section_name(const hs_pe *pe, const hs_pe_section *s)
{
    if (s->name[0] != '/')
        return s->name;
    if (!pe->file || !pe->symtab_off)
        return NULL;
    uint64_t strtab = (uint64_t)pe->symtab_off + (uint64_t)pe->nsyms * 18;
    if (strtab + 4 > pe->file_size)
        return NULL;
    uint32_t strsize = hs_le32(pe->file + strtab);
    unsigned long off = strtoul(s->name + 1, NULL, 10);
    if (strsize < 4 || strtab + strsize > pe->file_size || off < 4 || off >= strsize)
        return NULL;
    const char *n = (const char *)pe->file + strtab + off;
    if (!memchr(n, 0, strsize - off))
        return NULL;
    return n;
}

const hs_pe_section *hs_pe_section_named(const hs_pe *pe, const char *name)
{
    for (int i = 0; i < pe->nsections; i++) {
        const char *n = hs_pe_section_name(pe, &pe->sections[i]);
        if (n && !strcmp(n, name))
            return &pe->sections[i];
    }
    return NULL;
}

#define HS_DIR_IAT 12

int hs_pe_is_iat(const hs_pe *pe, uint32_t rva)
{
    uint32_t irva = pe->dir_rva[HS_DIR_IAT], isize = pe->dir_size[HS_DIR_IAT];
    uint32_t w = pe->bits == 32 ? 4 : 8;   /* an entry: a pointer of the image's width */
    if (isize)
        return rva >= irva && rva - irva < isize && ((rva - irva) % w) == 0;
    /* no IAT directory: the FirstThunk arrays of the import descriptors */
    uint32_t drva = pe->dir_rva[HS_DIR_IMPORT], dsize = pe->dir_size[HS_DIR_IMPORT];
    for (uint32_t d = 0; d + 20 <= dsize; d += 20) {
        const uint8_t *desc = hs_pe_ptr(pe, drva + d, 20);
        if (!desc || hs_le32(desc + 12) == 0)
            break;
        uint32_t first = hs_le32(desc + 16);
        for (uint32_t k = 0; k < 65536; k++) {
            const uint8_t *e = hs_pe_ptr(pe, first + w * k, w);
            if (!e || (hs_le32(e) == 0 && (w == 4 || hs_le32(e + 4) == 0)))
                break;
            if (first + w * k == rva)
                return 1;
        }
    }
    return 0;
}

