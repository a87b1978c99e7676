/*
 * injector/symbols/modsyms.c - the symbols of one module image (see modsyms.h).
 */
#include "symbols/modsyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <windows.h>
#include <dbghelp.h>
#endif

#include "base/util.h"
#include "symbols/backend.h"

/* from the C++ runtime (libstdc++) */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* C++ names as people write them: Itanium names (_Z...) through the C++
 * runtime's demangler, MSVC names (?...) through DbgHelp on Windows;
 * malloc'd, a copy of name when it is neither. */
static char *undecorate(const char *name)
{
    if (name[0] == '_' && name[1] == 'Z') {
        int status = 0;
        char *d = __cxa_demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
            char *r = hs_xstrdup(d);
            free(d);
            return r;
        }
        free(d);
    }
#ifdef _WIN32
    else if (name[0] == '?') {
        char buf[2048];
        if (UnDecorateSymbolName(name, buf, sizeof buf, UNDNAME_NAME_ONLY) && buf[0])
            return hs_xstrdup(buf);
    }
#endif
    return hs_xstrdup(name);
}

/* A .pdata function extent; its name is looked up on first use. */
typedef struct range {
    uint32_t rva, size;
} range;

struct hs_modsyms {
    char *path;
    uint64_t base;
    uint32_t size;
    uint8_t *file;
    hs_pe pe;
    hs_pe_symtab syms;       /* exports and COFF symbols, sorted by rva */
    char **undecorated;      /* per entry of syms, made on first use */
    range *ranges;           /* sorted by rva */
    size_t nranges;
    /* debug-information backends, opened on first use */
    int backend_tried;
    const hs_sym_backend *backend;
    void *backend_h;
    char **owned;            /* names from the backends */
    size_t nowned, owned_cap;
};

const char *hs_name_source_name(int source)
{
    static const char *const names[HS_NAMESRC__COUNT] = { "none", "export", "coff", "debug" };
    return source >= 0 && source < HS_NAMESRC__COUNT ? names[source] : "unknown";
}

hs_modsyms *hs_modsyms_open(const char *path, uint64_t base, uint32_t size, uint32_t timestamp,
                          hs_modsyms_status *status, const char **why)
{
    size_t fsize = 0;
    const char *reason = NULL;
    uint8_t *file = hs_load_file(path, &fsize, &reason);
    if (!file) {
        *status = HS_MODSYMS_UNREADABLE;
        *why = reason ? reason : "cannot read";
        return NULL;
    }
    hs_modsyms *t = hs_xcalloc(1, sizeof *t);
    int st = hs_pe_load_file(&t->pe, file, fsize);
    if (st != HS_PE_OK) {
        *status = st == HS_PE_NOT_PE ? HS_MODSYMS_NOT_PE : HS_MODSYMS_BAD_PE;
        *why = hs_pe_status_text(st);
        free(file);
        free(t);
        return NULL;
    }
    t->path = hs_xstrdup(path);
    t->base = base;
    t->size = size;
    t->file = file;
    *status = (timestamp && t->pe.timestamp != timestamp) || (size && t->pe.size_of_image != size)
                  ? HS_MODSYMS_MISMATCH : HS_MODSYMS_OK;
    *why = *status == HS_MODSYMS_MISMATCH ? "the file changed since it was loaded" : NULL;
    if (hs_pe_symbols(&t->pe, &t->syms) < 0)
        memset(&t->syms, 0, sizeof t->syms);
    t->undecorated = hs_xcalloc(t->syms.count ? t->syms.count : 1, sizeof *t->undecorated);
    hs_pe_func *funcs = NULL;
    size_t n = 0;
    if (hs_pe_functions(&t->pe, &funcs, &n) == 0) {
        t->ranges = hs_xcalloc(n ? n : 1, sizeof *t->ranges);
        for (size_t i = 0; i < n; i++) {
            if (funcs[i].src & HS_SRC_FRAGMENT)
                continue;
            t->ranges[t->nranges].rva = funcs[i].rva;
            t->ranges[t->nranges].size = funcs[i].size;
            t->nranges++;
        }
        free(funcs);
    }
    return t;
}

void hs_modsyms_close(hs_modsyms *t)
{
    if (!t)
        return;
    if (t->backend_h)
        t->backend->close(t->backend_h);
    for (size_t i = 0; i < t->syms.count; i++)
        free(t->undecorated[i]);
    free(t->undecorated);
    for (size_t i = 0; i < t->nowned; i++)
        free(t->owned[i]);
    free(t->owned);
    hs_pe_symtab_free(&t->syms);
    free(t->ranges);
    hs_pe_close(&t->pe);
    free(t->file);
    free(t->path);
    free(t);
}

const hs_pe *hs_modsyms_pe(const hs_modsyms *t)
{
    return &t->pe;
}

/* Index of the best exports/COFF entry exactly at rva (syms is sorted by
 * rva, then by preference), or -1. */
static ptrdiff_t sym_index_at(const hs_modsyms *t, uint32_t rva)
{
    size_t lo = 0, hi = t->syms.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->syms.syms[mid].rva < rva)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= t->syms.count || t->syms.syms[lo].rva != rva)
        return -1;
    /* the same choice as hs_pe_symtab_at */
    const char *best = hs_pe_symtab_at(&t->syms, rva);
    for (size_t i = lo; i < t->syms.count && t->syms.syms[i].rva == rva; i++)
        if (t->syms.syms[i].name == best)
            return (ptrdiff_t)i;
    return -1;
}

static void name_from_sym(hs_modsyms *t, size_t i, hs_sym_name *out)
{
    if (!t->undecorated[i])
        t->undecorated[i] = undecorate(t->syms.syms[i].name);
    out->name = t->undecorated[i];
    out->raw = t->syms.syms[i].name;
    out->source = t->syms.syms[i].kind == HS_SYM_EXPORT ? HS_NAMESRC_EXPORT : HS_NAMESRC_COFF;
}

static const char *own(hs_modsyms *t, char *s)
{
    hs_xgrow(&t->owned, &t->owned_cap, t->nowned + 1, sizeof *t->owned);
    t->owned[t->nowned++] = s;
    return s;
}

static bool backend_name_at(hs_modsyms *t, uint32_t rva, hs_sym_name *out)
{
    if (!t->backend_tried) {
        t->backend_tried = 1;
        for (int i = 0; hs_sym_backends[i] && !t->backend_h; i++) {
            t->backend_h = hs_sym_backends[i]->open(t->path, t->base, t->size);
            t->backend = hs_sym_backends[i];
        }
    }
    if (!t->backend_h)
        return false;
    char buf[2048];
    if (!t->backend->name_at(t->backend_h, rva, buf, sizeof buf))
        return false;
    out->raw = own(t, hs_xstrdup(buf));
    out->name = own(t, undecorate(buf));
    out->source = HS_NAMESRC_DEBUG;
    return true;
}

bool hs_modsyms_name_at(hs_modsyms *t, uint32_t rva, hs_sym_name *out)
{
    memset(out, 0, sizeof *out);
    ptrdiff_t i = sym_index_at(t, rva);
    if (i >= 0) {
        name_from_sym(t, (size_t)i, out);
        return true;
    }
    return backend_name_at(t, rva, out);
}

bool hs_modsyms_lookup(hs_modsyms *t, uint32_t rva, hs_sym_hit *out)
{
    memset(out, 0, sizeof *out);
    size_t lo = 0, hi = t->nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ranges[mid].rva <= rva)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && rva < t->ranges[lo - 1].rva + t->ranges[lo - 1].size) {
        const range *r = &t->ranges[lo - 1];
        ptrdiff_t i = sym_index_at(t, r->rva);
        if (i >= 0) {
            name_from_sym(t, (size_t)i, &out->n);
            out->start = r->rva;
            out->size = r->size;
            return true;
        }
    }
    /* no extent names it: the nearest symbol below (exports of a module
     * without .pdata for that code, e.g. hand-written assembly) */
    const hs_pe_symtab *st = &t->syms;
    lo = 0;
    hi = st->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->syms[mid].rva <= rva)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && st->syms[lo - 1].kind != HS_SYM_OTHER) {
        /* the preferred entry at that rva */
        ptrdiff_t i = sym_index_at(t, st->syms[lo - 1].rva);
        size_t k = i >= 0 ? (size_t)i : lo - 1;
        name_from_sym(t, k, &out->n);
        out->start = st->syms[k].rva;
        return true;
    }
    return false;
}
