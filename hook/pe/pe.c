/*
 * hook/pe/pe.c - the PE/COFF reader (see pe.h).
 *
 * Every offset read from the image is bounds-checked: the reader is fed
 * arbitrary files by `hookscope functions`.
 */
#include "hook/pe/pe.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/search.h"
#include "hook/base/vec.h"


const char *hs_pe_status_text(int status)
{
    switch (status) {
    case HS_PE_OK: return "ok";
    case HS_PE_NOT_PE: return "not a PE file";
    case HS_PE_32BIT: return "32-bit targets are not supported yet";
    case HS_PE_OTHER_MACHINE: return "not an x86-64 PE file";
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
    if (pe->machine == 0x14C)
        return HS_PE_32BIT;
    const uint8_t *opt = fh + 20;
    if ((size_t)(opt - hdr) + 2 > size)
        return HS_PE_CORRUPT;
    uint16_t magic = hs_le16(opt);
    if (magic == 0x10B)
        return HS_PE_32BIT;
    if (pe->machine != 0x8664)
        return HS_PE_OTHER_MACHINE;
    if (magic != 0x20B || opt_size < 112 || (size_t)(opt - hdr) + opt_size > size)
        return HS_PE_CORRUPT;
    pe->entry_rva = hs_le32(opt + 16);
    pe->image_base = hs_le64(opt + 24);
    pe->size_of_image = hs_le32(opt + 56);
    uint32_t ndirs = hs_le32(opt + 108);
    if (ndirs > 16)
        ndirs = 16;
    if (112 + ndirs * 8 > opt_size)
        ndirs = (opt_size - 112) / 8;
    for (uint32_t i = 0; i < ndirs; i++) {
        pe->dir_rva[i] = hs_le32(opt + 112 + i * 8);
        pe->dir_size[i] = hs_le32(opt + 116 + i * 8);
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

/* ---- unwind info ---------------------------------------------------------- */

int hs_pe_unwind(const hs_pe *pe, uint32_t unwind_rva, hs_unwind *u)
{
    const uint8_t *p = hs_pe_ptr(pe, unwind_rva, 4);
    if (!p)
        return -1;
    memset(u, 0, sizeof *u);
    u->version = p[0] & 7;
    u->flags = p[0] >> 3;
    u->prolog_size = p[1];
    u->count_codes = p[2];
    u->frame_reg = p[3] & 15;
    u->frame_off = p[3] >> 4;
    uint32_t codes_len = ((u->count_codes + 1u) & ~1u) * 2;
    const uint8_t *all = hs_pe_ptr(pe, unwind_rva, 4 + codes_len + 12);
    if (!all) {
        all = hs_pe_ptr(pe, unwind_rva, 4 + codes_len);
        if (!all)
            return -1;
        u->codes = all + 4;
        return (u->flags & (HS_UNW_CHAININFO | HS_UNW_EHANDLER | HS_UNW_UHANDLER)) ? -1 : 0;
    }
    u->codes = all + 4;
    const uint8_t *tail = all + 4 + codes_len;
    if (u->flags & HS_UNW_CHAININFO)
        u->chained_begin = hs_le32(tail);
    else if (u->flags & (HS_UNW_EHANDLER | HS_UNW_UHANDLER))
        u->handler_rva = hs_le32(tail);
    return 0;
}

int hs_unwind_frame_size(const hs_unwind *u)
{
    int total = 0;
    for (int i = 0; i < u->count_codes; i++) {
        uint8_t op = u->codes[i * 2 + 1] & 15, info = u->codes[i * 2 + 1] >> 4;
        switch (op) {
        case 0: total += 8; break;                                   /* PUSH_NONVOL */
        case 1:                                                      /* ALLOC_LARGE */
            if (info == 0) {
                if (i + 1 >= u->count_codes) return -1;
                total += hs_le16(u->codes + (i + 1) * 2) * 8;
                i += 1;
            } else {
                if (i + 2 >= u->count_codes) return -1;
                total += (int)hs_le32(u->codes + (i + 1) * 2);
                i += 2;
            }
            break;
        case 2: total += info * 8 + 8; break;                        /* ALLOC_SMALL */
        case 3: break;                                               /* SET_FPREG */
        case 4: i += 1; break;                                       /* SAVE_NONVOL */
        case 5: i += 2; break;                                       /* SAVE_NONVOL_FAR */
        case 6: i += 1; break;                                       /* EPILOG (v2) */
        case 8: i += 1; break;                                       /* SAVE_XMM128 */
        case 9: i += 2; break;                                       /* SAVE_XMM128_FAR */
        case 10: total += info ? 48 : 40; break;                     /* PUSH_MACHFRAME */
        default: return -1;
        }
    }
    return total;
}

int hs_unwind_entered_with_frame(const hs_unwind *u)
{
    for (int i = 0; i < u->count_codes; i++) {
        uint8_t off = u->codes[i * 2], op = u->codes[i * 2 + 1] & 15, info = u->codes[i * 2 + 1] >> 4;
        if (op != 6 && off == 0)
            return 1;
        switch (op) {
        case 1: i += info ? 2 : 1; break;
        case 4: case 6: case 8: i += 1; break;
        case 5: case 9: i += 2; break;
        default: break;
        }
    }
    return 0;
}

/* ---- imports ---------------------------------------------------------------- */

#define HS_DIR_IAT 12

int hs_pe_is_iat(const hs_pe *pe, uint32_t rva)
{
    uint32_t irva = pe->dir_rva[HS_DIR_IAT], isize = pe->dir_size[HS_DIR_IAT];
    if (isize)
        return rva >= irva && rva - irva < isize && ((rva - irva) & 7) == 0;
    /* no IAT directory: the FirstThunk arrays of the import descriptors */
    uint32_t drva = pe->dir_rva[HS_DIR_IMPORT], dsize = pe->dir_size[HS_DIR_IMPORT];
    for (uint32_t d = 0; d + 20 <= dsize; d += 20) {
        const uint8_t *desc = hs_pe_ptr(pe, drva + d, 20);
        if (!desc || hs_le32(desc + 12) == 0)
            break;
        uint32_t first = hs_le32(desc + 16);
        for (uint32_t k = 0; k < 65536; k++) {
            const uint8_t *e = hs_pe_ptr(pe, first + 8 * k, 8);
            if (!e || (hs_le32(e) == 0 && hs_le32(e + 4) == 0))
                break;
            if (first + 8 * k == rva)
                return 1;
        }
    }
    return 0;
}

/* ---- functions ------------------------------------------------------------ */

int hs_pe_part_at(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
    const hs_func_list *l = ctx;
    if (addr < l->base || addr - l->base >= UINT32_MAX)
        return -1;
    uint32_t rva = (uint32_t)(addr - l->base);
    size_t a = 0, b = l->n;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (l->f[m].rva <= rva)
            a = m + 1;
        else
            b = m;
    }
    /* the last function starting at or before rva, or one before it that
     * is longer (a function with a nested symbol) */
    for (size_t k = a; k-- > 0 && k + 4 > a;) {
        if (rva - l->f[k].rva < l->f[k].size) {
            *lo = l->base + l->f[k].rva;
            *hi = *lo + l->f[k].size;
            return 0;
        }
    }
    return -1;
}

static int cmp_func(const void *a, const void *b)
{
    const hs_pe_func *x = a, *y = b;
    if (x->rva != y->rva)
        return x->rva < y->rva ? -1 : 1;
    /* longer first, so that a duplicate is merged into the real extent */
    return x->size > y->size ? -1 : x->size < y->size;
}

typedef struct func_vec {
    hs_pe_func *v;
    size_t n, cap;
} func_vec;

static int push_func(func_vec *fv, uint32_t rva, uint32_t size, uint32_t unwind, uint16_t src)
{
    if (hs_grow(&fv->v, &fv->cap, fv->n, sizeof *fv->v) < 0)
        return -1;
    hs_pe_func *f = &fv->v[fv->n++];
    memset(f, 0, sizeof *f);
    f->rva = rva;
    f->size = size;
    f->unwind_rva = unwind;
    f->src = src;
    return 0;
}

/* Is the function whose unwind info is at `unwind` a chained fragment? */
static int is_fragment(const hs_pe *pe, uint32_t unwind)
{
    if (unwind & 1)     /* RUNTIME_FUNCTION_INDIRECT: points at another entry */
        return 1;
    const uint8_t *p = hs_pe_ptr(pe, unwind, 1);
    return p && ((p[0] >> 3) & HS_UNW_CHAININFO);
}

/* Section end for an rva inside an executable section. */
static uint32_t section_end(const hs_pe *pe, uint32_t rva, uint32_t *start)
{
    int i = hs_pe_section_of(pe, rva);
    if (i < 0) {
        *start = rva;
        return rva;
    }
    *start = pe->sections[i].rva;
    return pe->sections[i].rva + pe->sections[i].vsize;
}

int hs_pe_functions(const hs_pe *pe, hs_pe_func **out, size_t *count)
{
    return hs_pe_functions_ex(pe, NULL, 0, out, count);
}

int hs_pe_functions_ex(const hs_pe *pe, const hs_pe_extent *procs, size_t nprocs, hs_pe_func **out,
                       size_t *count)
{
    func_vec fv = { 0 };
    *out = NULL;
    *count = 0;

    /* .pdata */
    uint32_t prva = pe->dir_rva[HS_DIR_EXCEPTION], psize = pe->dir_size[HS_DIR_EXCEPTION];
    const uint8_t *pd = psize ? hs_pe_ptr(pe, prva, psize) : NULL;
    if (pd) {
        for (uint32_t off = 0; off + 12 <= psize; off += 12) {
            uint32_t b = hs_le32(pd + off), e = hs_le32(pd + off + 4), u = hs_le32(pd + off + 8);
            if (b == 0 && e == 0)
                continue;
            if (e <= b || !hs_pe_is_exec(pe, b))
                continue;
            if (push_func(&fv, b, e - b, u & ~1u, is_fragment(pe, u) ? HS_SRC_FRAGMENT : HS_SRC_PDATA) < 0)
                goto nomem;
        }
    }

    /* exports into executable sections (not forwarders) */
    uint32_t erva = pe->dir_rva[HS_DIR_EXPORT], esize = pe->dir_size[HS_DIR_EXPORT];
    const uint8_t *ed = esize >= 40 ? hs_pe_ptr(pe, erva, 40) : NULL;
    if (ed) {
        uint32_t nfun = hs_le32(ed + 20), afun = hs_le32(ed + 28);
        const uint8_t *funs = hs_pe_ptr(pe, afun, nfun * 4);
        if (funs && nfun < (1u << 20)) {
            for (uint32_t i = 0; i < nfun; i++) {
                uint32_t r = hs_le32(funs + i * 4);
                if (r == 0 || (r >= erva && r < erva + esize) || !hs_pe_is_exec(pe, r))
                    continue;
                if (push_func(&fv, r, 0, 0, HS_SRC_EXPORT) < 0)
                    goto nomem;
            }
        }
    }

    /* COFF function symbols (type 0x20), from the file */
    if (pe->file && pe->symtab_off && pe->nsyms &&
        pe->symtab_off < pe->file_size && (pe->file_size - pe->symtab_off) / 18 >= pe->nsyms) {
        const uint8_t *st = pe->file + pe->symtab_off;
        for (uint32_t i = 0; i < pe->nsyms; i++) {
            const uint8_t *s = st + i * 18;
            int16_t secno = (int16_t)hs_le16(s + 12);
            uint16_t type = hs_le16(s + 14);
            uint8_t cls = s[16], naux = s[17];
            if (secno > 0 && secno <= pe->nsections && (type & 0xF0) == 0x20 && (cls == 2 || cls == 3)) {
                uint32_t r = pe->sections[secno - 1].rva + hs_le32(s + 8);
                if (hs_pe_is_exec(pe, r) && push_func(&fv, r, 0, 0, HS_SRC_SYMBOL) < 0)
                    goto nomem;
            }
            i += naux;
        }
    }

    /* debug-information procedures */
    for (size_t i = 0; i < nprocs; i++)
        if (procs[i].size && hs_pe_is_exec(pe, procs[i].rva) &&
            push_func(&fv, procs[i].rva, procs[i].size, 0, HS_SRC_DEBUG) < 0)
            goto nomem;

    if (fv.n == 0) {
        free(fv.v);
        return 0;
    }
    qsort(fv.v, fv.n, sizeof *fv.v, cmp_func);

    /* merge entries with the same rva */
    size_t w = 0;
    for (size_t i = 0; i < fv.n; i++) {
        if (w > 0 && fv.v[w - 1].rva == fv.v[i].rva) {
            hs_pe_func *d = &fv.v[w - 1];
            const hs_pe_func *x = &fv.v[i];
            if (x->src & (HS_SRC_PDATA | HS_SRC_FRAGMENT)) {
                d->unwind_rva = x->unwind_rva;
                if (!(d->src & (HS_SRC_PDATA | HS_SRC_FRAGMENT | HS_SRC_DEBUG)))
                    d->size = x->size;
            }
            if (x->src & HS_SRC_DEBUG)
                d->size = x->size;   /* the procedure's own extent */
            d->src |= x->src;
            /* a chained entry that is also exported or named is still a fragment */
            continue;
        }
        fv.v[w++] = fv.v[i];
    }
    fv.n = w;

    /* drop symbol/export-only entries that fall inside a .pdata range, and
     * give the remaining ones a size: up to the next start or section end */
    w = 0;
    uint32_t covered_end = 0;
    for (size_t i = 0; i < fv.n; i++) {
        hs_pe_func *f = &fv.v[i];
        int has_extent = (f->src & (HS_SRC_PDATA | HS_SRC_FRAGMENT | HS_SRC_DEBUG)) != 0;
        if (!has_extent && f->rva < covered_end)
            continue;
        if (!has_extent) {
            uint32_t sstart, send = section_end(pe, f->rva, &sstart);
            uint32_t next = send;
            if (i + 1 < fv.n && fv.v[i + 1].rva < next)
                next = fv.v[i + 1].rva;
            f->size = next - f->rva;
        }
        if (f->rva + f->size > covered_end)
            covered_end = f->rva + f->size;
        fv.v[w++] = *f;
    }
    fv.n = w;

    /* gaps to neighbours */
    for (size_t i = 0; i < fv.n; i++) {
        hs_pe_func *f = &fv.v[i];
        uint32_t sstart, send = section_end(pe, f->rva, &sstart);
        uint32_t lo = sstart, hi = send;
        if (i > 0 && fv.v[i - 1].rva + fv.v[i - 1].size > lo)
            lo = fv.v[i - 1].rva + fv.v[i - 1].size;
        if (i + 1 < fv.n && fv.v[i + 1].rva < hi)
            hi = fv.v[i + 1].rva;
        uint32_t end = f->rva + f->size;
        f->gap_before = f->rva > lo ? f->rva - lo : 0;
        f->gap_after = hi > end ? hi - end : 0;
        if (end > send)
            f->size = send > f->rva ? send - f->rva : 0;
    }
    *out = fv.v;
    *count = fv.n;
    return 0;
nomem:
    free(fv.v);
    return -1;
}

/* ---- symbols -------------------------------------------------------------- */

static int cmp_sym(const void *a, const void *b)
{
    const hs_pe_sym *x = a, *y = b;
    if (x->rva != y->rva)
        return x->rva < y->rva ? -1 : 1;
    /* preference: exports, global functions, static functions, others;
     * then names not starting with '.' or '_' sorted first */
    int px = x->kind * 2 + !x->global, py = y->kind * 2 + !y->global;
    if (px != py)
        return px - py;
    int dx = x->name[0] == '.', dy = y->name[0] == '.';
    if (dx != dy)
        return dx - dy;
    return strcmp(x->name, y->name);
}

int hs_pe_symbols(const hs_pe *pe, hs_pe_symtab *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0, pool_cap = 0, pool_len = 0;
    hs_pe_sym *syms = NULL;
    char *pool = NULL;
    size_t *name_off = NULL;   /* offsets into pool while it may move */
    size_t n = 0;

#define ADD_SYM(R, KIND, GLOBAL, NAME, NLEN) do {                                   \
        size_t nl_ = (NLEN);                                                        \
        if (n == cap) {                                                             \
            size_t nc_ = cap ? cap * 2 : 1024;                                      \
            hs_pe_sym *ns_ = realloc(syms, nc_ * sizeof *ns_);                      \
            size_t *no_ = realloc(name_off, nc_ * sizeof *no_);                     \
            if (!ns_ || !no_) { free(ns_ ? ns_ : syms); free(no_ ? no_ : name_off); \
                                free(pool); return -1; }                            \
            syms = ns_; name_off = no_; cap = nc_;                                  \
        }                                                                           \
        if (pool_len + nl_ + 1 > pool_cap) {                                        \
            size_t pc_ = pool_cap ? pool_cap * 2 : 65536;                           \
            while (pc_ < pool_len + nl_ + 1) pc_ *= 2;                              \
            char *np_ = realloc(pool, pc_);                                         \
            if (!np_) { free(syms); free(name_off); free(pool); return -1; }        \
            pool = np_; pool_cap = pc_;                                             \
        }                                                                           \
        memcpy(pool + pool_len, (NAME), nl_);                                       \
        pool[pool_len + nl_] = 0;                                                   \
        syms[n].rva = (R); syms[n].kind = (KIND); syms[n].global = (GLOBAL);        \
        name_off[n] = pool_len; pool_len += nl_ + 1; n++;                           \
    } while (0)

    /* exports */
    uint32_t erva = pe->dir_rva[HS_DIR_EXPORT], esize = pe->dir_size[HS_DIR_EXPORT];
    const uint8_t *ed = esize >= 40 ? hs_pe_ptr(pe, erva, 40) : NULL;
    if (ed) {
        uint32_t nfun = hs_le32(ed + 20), nnames = hs_le32(ed + 24);
        const uint8_t *funs = hs_pe_ptr(pe, hs_le32(ed + 28), nfun * 4);
        const uint8_t *names = hs_pe_ptr(pe, hs_le32(ed + 32), nnames * 4);
        const uint8_t *ords = hs_pe_ptr(pe, hs_le32(ed + 36), nnames * 2);
        if (funs && names && ords && nfun < (1u << 20) && nnames < (1u << 20)) {
            for (uint32_t i = 0; i < nnames; i++) {
                uint16_t o = hs_le16(ords + i * 2);
                if (o >= nfun)
                    continue;
                uint32_t r = hs_le32(funs + o * 4);
                if (r == 0 || (r >= erva && r < erva + esize))
                    continue;
                uint32_t nr = hs_le32(names + i * 4);
                const uint8_t *np = hs_pe_ptr(pe, nr, 1);
                if (!np)
                    continue;
                size_t maxl = pe->image_size - nr, l = 0;
                while (l < maxl && l < 4096 && np[l])
                    l++;
                ADD_SYM(r, HS_SYM_EXPORT, 1, np, l);
            }
        }
    }

    /* COFF symbols */
    if (pe->file && pe->symtab_off && pe->nsyms &&
        pe->symtab_off < pe->file_size && (pe->file_size - pe->symtab_off) / 18 >= pe->nsyms) {
        const uint8_t *st = pe->file + pe->symtab_off;
        const uint8_t *strtab = st + (size_t)pe->nsyms * 18;
        size_t strtab_len = 0;
        if ((size_t)(strtab - pe->file) + 4 <= pe->file_size) {
            strtab_len = hs_le32(strtab);
            if (strtab_len > pe->file_size - (size_t)(strtab - pe->file))
                strtab_len = pe->file_size - (size_t)(strtab - pe->file);
        }
        for (uint32_t i = 0; i < pe->nsyms; i++) {
            const uint8_t *s = st + i * 18;
            int16_t secno = (int16_t)hs_le16(s + 12);
            uint16_t type = hs_le16(s + 14);
            uint8_t cls = s[16], naux = s[17];
            i += naux;
            if (secno <= 0 || secno > pe->nsections || (cls != 2 && cls != 3 && cls != 6))
                continue;
            uint32_t r = pe->sections[secno - 1].rva + hs_le32(s + 8);
            const char *nm;
            size_t l = 0;
            if (hs_le32(s) == 0) {
                uint32_t off = hs_le32(s + 4);
                if (off < 4 || off >= strtab_len)
                    continue;
                nm = (const char *)strtab + off;
                while (off + l < strtab_len && nm[l])
                    l++;
            } else {
                nm = (const char *)s;
                while (l < 8 && nm[l])
                    l++;
            }
            if (l == 0)
                continue;
            /* section names (.text, .data$foo) are not symbols of interest */
            if (cls == 3 && type == 0 && nm[0] == '.' && hs_le32(s + 8) == 0)
                continue;
            int kind = (type & 0xF0) == 0x20 ? HS_SYM_FUNC : HS_SYM_OTHER;
            ADD_SYM(r, kind, cls == 2, nm, l);
        }
    }
#undef ADD_SYM
    for (size_t i = 0; i < n; i++)
        syms[i].name = pool + name_off[i];
    free(name_off);
    if (n)
        qsort(syms, n, sizeof *syms, cmp_sym);
    out->syms = syms;
    out->count = n;
    out->pool = pool;
    return 0;
}

void hs_pe_symtab_free(hs_pe_symtab *t)
{
    free(t->syms);
    free(t->pool);
    memset(t, 0, sizeof *t);
}

const char *hs_pe_symtab_at(const hs_pe_symtab *t, uint32_t rva)
{
    size_t lo = HS_LOWER_BOUND_U32(t->syms, t->count, rva, rva);
    return lo < t->count && t->syms[lo].rva == rva ? t->syms[lo].name : NULL;
}

uint32_t hs_pe_export_rva(const hs_pe *pe, const char *name)
{
    uint32_t erva = pe->dir_rva[HS_DIR_EXPORT], esize = pe->dir_size[HS_DIR_EXPORT];
    const uint8_t *ed = esize >= 40 ? hs_pe_ptr(pe, erva, 40) : NULL;
    if (!ed)
        return 0;
    uint32_t nfun = hs_le32(ed + 20), nnames = hs_le32(ed + 24);
    const uint8_t *funs = hs_pe_ptr(pe, hs_le32(ed + 28), nfun * 4);
    const uint8_t *names = hs_pe_ptr(pe, hs_le32(ed + 32), nnames * 4);
    const uint8_t *ords = hs_pe_ptr(pe, hs_le32(ed + 36), nnames * 2);
    if (!funs || !names || !ords)
        return 0;
    size_t len = strlen(name);
    for (uint32_t i = 0; i < nnames; i++) {
        const uint8_t *np = hs_pe_ptr(pe, hs_le32(names + i * 4), (uint32_t)len + 1);
        if (np && memcmp(np, name, len + 1) == 0) {
            uint16_t o = hs_le16(ords + i * 2);
            return o < nfun ? hs_le32(funs + o * 4) : 0;
        }
    }
    return 0;
}
