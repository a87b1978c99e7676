/*
 * hook/pe/symbols.c - the names an image carries itself (see symbols.h):
 * its exports and its COFF symbol table (read from the file: the loader
 * does not map it).
 */
#include "hook/pe/symbols.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/search.h"

static int cmp_sym(const void *a, const void *b)
{
    const hs_pe_sym *x = a, *y = b;
    if (x->rva != y->rva)
        return x->rva < y->rva ? -1 : 1;
    /* preference: exports, global functions, static functions, others,
     * names made from a function's section (HS_SYM_SECTION); then names
     * not starting with '.' sorted first */
    int px = x->kind * 2 + !x->global, py = y->kind * 2 + !y->global;
    if (px != py)
        return px - py;
    int dx = x->name[0] == '.', dy = y->name[0] == '.';
    if (dx != dy)
        return dx - dy;
    return strcmp(x->name, y->name);
}

/* Length of the prefix of a section name that g++ follows with the name
 * of the one function in it, or 0. */
static size_t func_section_prefix(const char *nm, size_t l)
{
    static const char *const prefixes[] = { ".text$", ".text.startup." };
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t pl = strlen(prefixes[i]);
        if (l > pl && memcmp(nm, prefixes[i], pl) == 0)
            return pl;
    }
    return 0;
}

int hs_pe_symbols(const hs_pe *pe, hs_pe_symtab *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0, pool_cap = 0, pool_len = 0;
    hs_pe_sym *syms = NULL;
    char *pool = NULL;
    size_t *name_off = NULL;   /* offsets into pool while it may move */
    size_t n = 0;

#define ADD_SYM(R, KIND, GLOBAL, PREFIX, NAME, NLEN) do {                           \
        size_t pl_ = strlen(PREFIX), nl_ = pl_ + (NLEN);                            \
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
        memcpy(pool + pool_len, (PREFIX), pl_);                                     \
        memcpy(pool + pool_len + pl_, (NAME), nl_ - pl_);                           \
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
                ADD_SYM(r, HS_SYM_EXPORT, 1, "", np, l);
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
            if (cls == 3 && type == 0 && nm[0] == '.') {
                /* a section's own symbol, at the section's place in its
                 * output section (offset 0 only for the first): its name
                 * is a section's, never a function's; but g++ gives a
                 * function a section of its own, `.text$NAME` (COMDAT and
                 * -ffunction-sections) or `.text.startup.NAME` (static
                 * constructors), NAME its assembler name. Where the
                 * archive's objects were stripped of local symbols (static
                 * i686 libstdc++) that section is all that names one.
                 * `.text.unlikely.NAME` holds NAME's cold part or all of
                 * NAME: no name */
                size_t skip = func_section_prefix(nm, l);
                if (skip)
                    ADD_SYM(r, HS_SYM_SECTION, 0, pe->bits == 32 ? "_" : "", nm + skip, l - skip);
                continue;
            }
            int kind = (type & 0xF0) == 0x20 ? HS_SYM_FUNC : HS_SYM_OTHER;
            ADD_SYM(r, kind, cls == 2, "", nm, l);
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
