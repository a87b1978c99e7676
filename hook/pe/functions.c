/*
 * hook/pe/functions.c - the functions of an image (see functions.h): the
 * policy that turns .pdata, .eh_frame, exports, COFF symbols and
 * debug-information extents into one sorted list of functions.
 */
#include "hook/pe/functions.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/search.h"
#include "hook/base/vec.h"
#include "hook/pe/eh_frame.h"
#include "hook/pe/unwind_info.h"

int hs_pe_part_at(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
    const hs_func_list *l = ctx;
    if (addr < l->base || addr - l->base >= UINT32_MAX)
        return -1;
    uint32_t rva = (uint32_t)(addr - l->base);
    size_t a = HS_UPPER_BOUND_U32(l->f, l->n, rva, rva);
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

/* An i386 hot-patchable entry at p: `mov edi,edi; push ebp; mov ebp,esp`
 * after 5 bytes of int3 or nop padding (where the patch's long jump goes). */
static int hotpatch_at(const uint8_t *p)
{
    static const uint8_t entry[5] = { 0x8B, 0xFF, 0x55, 0x8B, 0xEC };
    if (memcmp(p, entry, sizeof entry) != 0 || (p[-1] != 0xCC && p[-1] != 0x90))
        return 0;
    for (int k = 2; k <= 5; k++)
        if (p[-k] != p[-1])
            return 0;
    return 1;
}

static int push_hotpatch(const hs_pe *pe, func_vec *fv)
{
    for (int i = 0; i < pe->nsections; i++) {
        const hs_pe_section *s = &pe->sections[i];
        if (!(s->chars & (HS_SCN_EXEC | HS_SCN_CODE)) || s->vsize < 10)
            continue;
        const uint8_t *code = hs_pe_ptr(pe, s->rva, s->vsize);
        if (!code)
            continue;
        for (uint32_t off = 5; off + 5 <= s->vsize; off++)
            if (code[off] == 0x8B && hotpatch_at(code + off) && push_func(fv, s->rva + off, 0, 0, HS_SRC_HOTPATCH) < 0)
                return -1;
    }
    return 0;
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
    return hs_pe_functions_calls(pe, procs, nprocs, NULL, 0, out, count);
}

int hs_pe_functions_calls(const hs_pe *pe, const hs_pe_extent *procs, size_t nprocs, const uint32_t *calls,
                          size_t ncalls, hs_pe_func **out, size_t *count)
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

    /* an i386 image's FDEs: its .pdata (x86-64 images have that) */
    if (pe->bits == 32) {
        hs_pe_extent *fde = NULL;
        size_t nfde = 0;
        if (hs_pe_eh_frame(pe, &fde, &nfde) < 0)
            goto nomem;
        for (size_t i = 0; i < nfde; i++)
            if (push_func(&fv, fde[i].rva, fde[i].size, 0, HS_SRC_EHFRAME) < 0) {
                free(fde);
                goto nomem;
            }
        free(fde);
        if (push_hotpatch(pe, &fv) < 0)
            goto nomem;
    }

    for (size_t i = 0; i < ncalls; i++)
        if (hs_pe_is_exec(pe, calls[i]) && push_func(&fv, calls[i], 0, 0, HS_SRC_CALL) < 0)
            goto nomem;

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
            if ((x->src & HS_SRC_EHFRAME) && !(d->src & (HS_SRC_PDATA | HS_SRC_FRAGMENT | HS_SRC_DEBUG)))
                d->size = x->size;
            if (x->src & HS_SRC_DEBUG)
                d->size = x->size;   /* the procedure's own extent */
            d->src |= x->src;
            /* a chained entry that is also exported or named is still a fragment */
            continue;
        }
        fv.v[w++] = fv.v[i];
    }
    fv.n = w;

    /* gcc's ms_hook_prologue (Wine's i386 DLLs' DECLSPEC_HOTPATCH) puts the
     * 5 bytes of the hot-patchable entry before `.cfi_startproc`: the FDE
     * starts 5 bytes in, nameless. One function from the entry to the FDE's
     * end, not a 5-byte one and a nameless one. */
    w = 0;
    for (size_t i = 0; i < fv.n; i++) {
        const hs_pe_func *x = &fv.v[i];
        if (w > 0) {
            hs_pe_func *d = &fv.v[w - 1];
            uint16_t extent = HS_SRC_PDATA | HS_SRC_FRAGMENT | HS_SRC_DEBUG | HS_SRC_EHFRAME;
            if ((d->src & HS_SRC_HOTPATCH) && !(d->src & extent) && x->rva == d->rva + 5 && x->src == HS_SRC_EHFRAME) {
                d->size = 5 + x->size;
                d->src |= x->src;
                continue;
            }
        }
        fv.v[w++] = *x;
    }
    fv.n = w;

    /* drop symbol/export-only entries that fall inside a .pdata range, and
     * give the remaining ones a size: up to the next start or section end */
    w = 0;
    uint32_t covered_end = 0;
    for (size_t i = 0; i < fv.n; i++) {
        hs_pe_func *f = &fv.v[i];
        int has_extent = (f->src & (HS_SRC_PDATA | HS_SRC_FRAGMENT | HS_SRC_DEBUG | HS_SRC_EHFRAME)) != 0;
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


int hs_pe_func_bounded(const hs_pe *pe, const hs_pe_func *f)
{
    if (pe->bits == 64 || (f->src & (HS_SRC_DEBUG | HS_SRC_EHFRAME)))
        return 1;
    const uint8_t *code = f->size >= 6 ? hs_pe_ptr(pe, f->rva, 6) : NULL;
    return code && code[0] == 0xFF && code[1] == 0x25;
}
