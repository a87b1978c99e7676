/*
 * injector/symbols/modsyms.c - the symbols of one module image (see modsyms.h).
 */
#include "injector/symbols/modsyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/search.h"
#include "hook/base/util.h"
#include "hook/engine/calls.h"
#include "hook/pe/functions.h"
#include "hook/pe/symbols.h"
#include "injector/symbols/debuginfo.h"
#include "injector/symbols/undecorate.h"
#ifdef _WIN32
#include "injector/symbols/dbghelp_win.h"
#endif

/* A .pdata function extent. */
typedef struct range {
    uint32_t rva, size;
} range;

struct hs_modsyms {
    char *path;
    uint64_t base;
    uint8_t *file;
    hs_pe pe;
    hs_debuginfo di;         /* the PDB's procedures and lines, or DWARF lines */
    hs_symtab fallback;      /* DbgHelp's symbols for a PDB the reader could not read */
    char **di_full, **fb_full; /* per debug symbol: its decorated name undecorated, on first use */
    int debug_source;
    hs_pe_symtab syms;       /* exports and COFF symbols, sorted by rva */
    char **undecorated;      /* per entry of syms, made on first use */
    range *ranges;           /* sorted by rva */
    size_t nranges;
    char **range_names;      /* per range no symbol names: "sub_RVA", made on first use */
};

/* malloc'd: C++ names as people write them, an i386 image's C names
 * without their decoration, else a copy */
static char *undecorate(const hs_modsyms *t, const hs_pe_sym *s)
{
    char *u = t->pe.bits == 32 ? hs_undecorate_sym32(s->name, HS_UND_FULL, s->kind != HS_SYM_EXPORT)
                               : hs_undecorate_sym(s->name, HS_UND_FULL);
    return u ? u : hs_xstrdup(s->name);
}

/* DbgHelp's symbols, for an image whose PDB hookscope's reader refused as
 * unreadable (not for a missing or mismatched one: DbgHelp would not do
 * better there, see FINDINGS.md). */
static void load_fallback(hs_modsyms *t)
{
#ifdef _WIN32
    char err[256];
    hs_dbghelp *d = hs_dbghelp_open(t->path, t->base, NULL, err, sizeof err);
    if (!d)
        return;
    if (hs_dbghelp_symtype(d) == 3 /* SymPdb */ && hs_dbghelp_symbols(d, &t->fallback, err, sizeof err) == 0 &&
        t->fallback.count)
        t->debug_source = HS_SYMSRC_DBGHELP;
    hs_dbghelp_close(d);
#else
    (void)t;
#endif
}

static hs_pdb_search search_of(const char *image, const hs_symconf *conf)
{
    hs_pdb_search s = { image, conf ? conf->symbols : NULL, conf ? conf->nt_symbol_path : NULL, NULL,
                        conf ? conf->fetch : NULL, false };
    return s;
}

hs_fpo32 *hs_modsyms_frames32(const char *path, const hs_symconf *conf)
{
    size_t fsize = 0;
    const char *why = NULL;
    uint8_t *file = hs_load_file(path, &fsize, &why);
    hs_pe pe;
    hs_fpo32 *t = NULL;
    if (file && hs_pe_load_file(&pe, file, fsize) == HS_PE_OK) {
        hs_pdb_search s = search_of(path, conf);
        s.fetch = NULL;
        hs_pdb_found found;
        char msg[512];
        if (pe.bits == 32 && hs_pdb_locate(&pe, &s, &found, msg, sizeof msg) == HS_LOC_FOUND) {
            t = hs_fpo32_new();
            if (t && (hs_pdb_frames(&found.pdb, t, msg, sizeof msg) || !hs_fpo32_count(t))) {
                hs_fpo32_free(t);
                t = NULL;
            }
            hs_pdb_found_free(&found);
        }
        hs_pe_close(&pe);
    }
    free(file);
    return t;
}

static void load_debug_info(hs_modsyms *t, const hs_symconf *conf)
{
    hs_pdb_search s = search_of(t->path, conf);
    int rc = hs_debuginfo_load(&t->di, &t->pe, &s);
    t->debug_source = t->di.source;
    if (rc < 0 && t->di.status == HS_LOC_BAD)
        load_fallback(t);
    if (!t->di.message[0] && t->di.status == HS_LOC_NO_RSDS && !t->syms.count)
        snprintf(t->di.message, sizeof t->di.message,
                 "no symbols for %s (no PDB, no COFF symbols, no exports): its functions are named sub_<rva>",
                 hs_basename(t->path));
}

hs_modsyms *hs_modsyms_open(const char *path, uint64_t base, uint32_t size, uint32_t timestamp,
                            const hs_symconf *conf, hs_modsyms_status *status, const char **why)
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
    t->file = file;
    *status = (timestamp && t->pe.timestamp != timestamp) || (size && t->pe.size_of_image != size)
                  ? HS_MODSYMS_MISMATCH : HS_MODSYMS_OK;
    *why = *status == HS_MODSYMS_MISMATCH ? "the file changed since it was loaded" : NULL;
    if (hs_pe_symbols(&t->pe, &t->syms) < 0)
        memset(&t->syms, 0, sizeof t->syms);
    t->undecorated = hs_xcalloc(t->syms.count ? t->syms.count : 1, sizeof *t->undecorated);
    load_debug_info(t, conf);
    hs_pe_func *funcs = NULL;
    size_t n = 0;
    if (hs_pe_functions(&t->pe, &funcs, &n) == 0) {
        t->ranges = hs_xcalloc(n ? n : 1, sizeof *t->ranges);
        for (size_t i = 0; i < n; i++) {
            if (!(funcs[i].src & HS_SRC_PDATA))
                continue;
            t->ranges[t->nranges].rva = funcs[i].rva;
            t->ranges[t->nranges].size = funcs[i].size;
            t->nranges++;
        }
        free(funcs);
    }
    return t;
}

hs_modsyms *hs_modsyms_open_pdb(const char *name, uint64_t base, const uint8_t guid[16], uint32_t age,
                                const char *pdb_path, const hs_symconf *conf)
{
    hs_modsyms *t = hs_xcalloc(1, sizeof *t);
    t->path = hs_xstrdup(name);
    t->base = base;
    t->undecorated = hs_xcalloc(1, sizeof *t->undecorated);
    hs_rsds rsds;
    memset(&rsds, 0, sizeof rsds);
    memcpy(rsds.guid, guid, 16);
    rsds.age = age;
    snprintf(rsds.path, sizeof rsds.path, "%s", pdb_path ? pdb_path : "");
    hs_pdb_search s = search_of(name, conf);
    hs_debuginfo_load_rsds(&t->di, &rsds, &s);
    t->debug_source = t->di.source;
    return t;
}

hs_modsyms *hs_modsyms_open_stored(const char *name, uint64_t base, uint32_t size, uint32_t timestamp,
                                   const hs_symconf *conf)
{
    hs_pdb_search s = search_of(name, conf);
    char *path = hs_image_locate(name, timestamp, size, &s);
    if (!path)
        return NULL;
    hs_modsyms_status st;
    const char *why = NULL;
    hs_modsyms *t = hs_modsyms_open(path, base, size, timestamp, conf, &st, &why);
    free(path);
    return t;
}

void hs_modsyms_prefetch(const char *path, uint32_t size, uint32_t timestamp, bool any_version,
                         const char *name, const uint8_t *pdb_guid, uint32_t pdb_age, const char *pdb_path,
                         const hs_symconf *conf)
{
    if (!conf || !conf->fetch)
        return;
    hs_pdb_search s = search_of(path ? path : name, conf);
    s.prefetch = true;
    hs_pdb_found found;
    char msg[256];
    size_t fsize = 0;
    const char *why = NULL;
    uint8_t *file = path ? hs_load_file(path, &fsize, &why) : NULL;
    char *stored = NULL;
    if (!file && !pdb_guid && !any_version && timestamp && size) {
        /* not here, no PDB named: the image from a store (its download
         * started, or its file there) */
        stored = hs_image_locate(name, timestamp, size, &s);
        file = stored ? hs_load_file(stored, &fsize, &why) : NULL;
        s.image_path = stored;
        any_version = true;
    }
    /* the file is used as the naming pass uses it (resolve.c): any version
     * of a traced one, else only the version loaded, else the PDB named */
    hs_pe pe;
    if (file && hs_pe_load_file(&pe, file, fsize) == HS_PE_OK) {
        if (any_version || ((!timestamp || pe.timestamp == timestamp) && (!size || pe.size_of_image == size))) {
            if (hs_pdb_locate(&pe, &s, &found, msg, sizeof msg) == HS_LOC_FOUND)
                hs_pdb_found_free(&found);
            pdb_guid = NULL;
        }
        hs_pe_close(&pe);
    }
    free(file);
    free(stored);
    if (pdb_guid) {
        hs_rsds rsds;
        memset(&rsds, 0, sizeof rsds);
        memcpy(rsds.guid, pdb_guid, 16);
        rsds.age = pdb_age;
        snprintf(rsds.path, sizeof rsds.path, "%s", pdb_path ? pdb_path : "");
        s.image_path = name;
        if (hs_pdb_locate_rsds(&rsds, &s, &found, msg, sizeof msg) == HS_LOC_FOUND)
            hs_pdb_found_free(&found);
    }
}

void hs_modsyms_close(hs_modsyms *t)
{
    if (!t)
        return;
    for (size_t i = 0; t->di_full && i < t->di.syms.count; i++)
        free(t->di_full[i]);
    for (size_t i = 0; t->fb_full && i < t->fallback.count; i++)
        free(t->fb_full[i]);
    free(t->di_full);
    free(t->fb_full);
    hs_debuginfo_free(&t->di);
    hs_symtab_free(&t->fallback);
    for (size_t i = 0; i < t->syms.count; i++)
        free(t->undecorated[i]);
    free(t->undecorated);
    hs_pe_symtab_free(&t->syms);
    for (size_t i = 0; t->range_names && i < t->nranges; i++)
        free(t->range_names[i]);
    free(t->range_names);
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

int hs_modsyms_debug_source(const hs_modsyms *t)
{
    return t->debug_source;
}

const char *hs_modsyms_message(const hs_modsyms *t)
{
    return t->di.message;
}

/* Index of the best exports/COFF entry exactly at rva (syms is sorted by
 * rva, then by preference), or -1. */
static ptrdiff_t sym_index_at(const hs_modsyms *t, uint32_t rva)
{
    size_t lo = HS_LOWER_BOUND_U32(t->syms.syms, t->syms.count, rva, rva);
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
        t->undecorated[i] = undecorate(t, &t->syms.syms[i]);
    out->name = t->undecorated[i];
    out->raw = t->syms.syms[i].name;
    out->source = t->syms.syms[i].kind == HS_SYM_EXPORT ? HS_SYMSRC_EXPORT : HS_SYMSRC_COFF;
}

/* A debug symbol's name: its decorated public name undecorated in full
 * ("scale(long)", "geo::Rect::area() const": overloads stay apart, and a
 * clang build's names equal a gcc build's COFF names), else the name the
 * debug information gives ("scale", a static function's). */
static void name_from_debug(hs_modsyms *t, const hs_sym *s, hs_sym_name *out)
{
    const hs_symtab *tab = s >= t->di.syms.syms && s < t->di.syms.syms + t->di.syms.count ? &t->di.syms : &t->fallback;
    char ***full = tab == &t->di.syms ? &t->di_full : &t->fb_full;
    size_t i = (size_t)(s - tab->syms);
    out->name = s->name;
    out->raw = s->raw ? s->raw : s->name;
    out->source = s->source;
    if (!s->raw || s->raw == s->name || !strcmp(s->raw, s->name))
        return;
    if (!*full)
        *full = hs_xcalloc(tab->count ? tab->count : 1, sizeof **full);
    if (!(*full)[i]) {
        char *u = hs_undecorate_sym(s->raw, HS_UND_FULL);
        (*full)[i] = u ? u : hs_xstrdup(s->name);
    }
    out->name = (*full)[i];
}

/* The debug information's symbol at rva (procedures first), or NULL. */
static const hs_sym *debug_at(const hs_modsyms *t, uint32_t rva)
{
    const hs_sym *s = hs_symtab_at(&t->di.syms, rva);
    return s ? s : hs_symtab_at(&t->fallback, rva);
}

static const hs_sym *debug_containing(const hs_modsyms *t, uint32_t rva)
{
    const hs_sym *s = hs_symtab_containing(&t->di.syms, rva);
    return s ? s : hs_symtab_containing(&t->fallback, rva);
}

bool hs_modsyms_name_at(hs_modsyms *t, uint32_t rva, hs_sym_name *out)
{
    memset(out, 0, sizeof *out);
    const hs_sym *s = debug_at(t, rva);
    if (s) {
        name_from_debug(t, s, out);
        return true;
    }
    ptrdiff_t i = sym_index_at(t, rva);
    if (i >= 0) {
        name_from_sym(t, (size_t)i, out);
        return true;
    }
    return false;
}

bool hs_modsyms_lookup(hs_modsyms *t, uint32_t rva, hs_sym_hit *out)
{
    memset(out, 0, sizeof *out);
    const hs_sym *proc = debug_containing(t, rva);
    if (proc) {
        name_from_debug(t, proc, &out->n);
        out->start = proc->rva;
        out->size = proc->size;
        return true;
    }
    size_t lo = HS_UPPER_BOUND_U32(t->ranges, t->nranges, rva, rva);
    const range *in = NULL;      /* the image's unwind data's extent around rva */
    size_t in_index = 0;
    if (lo > 0 && rva < t->ranges[lo - 1].rva + t->ranges[lo - 1].size) {
        const range *r = &t->ranges[lo - 1];
        if (hs_modsyms_name_at(t, r->rva, &out->n)) {
            out->start = r->rva;
            out->size = r->size;
            return true;
        }
        in = r;
        in_index = lo - 1;
    }
    /* no extent names it: the nearest symbol below (exports of a module
     * without .pdata for that code, e.g. hand-written assembly), unless
     * it lies before the extent around rva: that extent is then a
     * function no symbol names, named as `hookscope functions` names one */
    const hs_pe_symtab *st = &t->syms;
    lo = HS_UPPER_BOUND_U32(st->syms, st->count, rva, rva);
    /* the preferred entry at the nearest rva below: a function's name, not
     * the section symbol after it at that rva (`.text` where an object's
     * first function starts, as in i386 images, which have no .pdata
     * extents to name it first) */
    ptrdiff_t best = lo > 0 ? sym_index_at(t, st->syms[lo - 1].rva) : -1;
    size_t k = best >= 0 ? (size_t)best : lo - 1;
    bool below_in = lo > 0 && st->syms[k].kind != HS_SYM_OTHER && (!in || st->syms[k].rva >= in->rva);
    if (in && !below_in) {
        if (!t->range_names)
            t->range_names = hs_xcalloc(t->nranges, sizeof *t->range_names);
        if (!t->range_names[in_index])
            t->range_names[in_index] = hs_xasprintf("sub_%x", in->rva);
        out->n.name = out->n.raw = t->range_names[in_index];
        out->start = in->rva;
        out->size = in->size;
        return true;
    }
    if (below_in) {
        name_from_sym(t, k, &out->n);
        out->start = st->syms[k].rva;
        return true;
    }
    return false;
}

bool hs_modsyms_line(hs_modsyms *t, uint32_t rva, bool function, const char **file, uint32_t *line)
{
    if (function) {
        const hs_sym *s = debug_at(t, rva);
        if (s && s->line) {
            *file = s->file;
            *line = s->line;
            return true;
        }
        return hs_linetab_first_at(&t->di.lines, rva, file, line) == 1;
    }
    return hs_linetab_lookup(&t->di.lines, rva, file, line) == 1;
}

int hs_modsyms_functions(hs_modsyms *t, hs_pe_func **out, size_t *count)
{
    const hs_symtab *d = t->di.syms.count ? &t->di.syms : &t->fallback;
    hs_pe_extent *procs = hs_xcalloc(d->count ? d->count : 1, sizeof *procs);
    size_t n = 0;
    for (size_t i = 0; i < d->count; i++) {
        const hs_sym *s = &d->syms[i];
        if ((s->kind == HS_SYMK_PROC || s->kind == HS_SYMK_THUNK) && s->size) {
            procs[n].rva = s->rva;
            procs[n++].size = s->size;
        }
    }
    int rc = hs_pe_functions_ex(&t->pe, procs, n, out, count);
    /* an i386 image: where symbols and .eh_frame stop, the targets of the
     * calls its known code makes */
    uint32_t *calls = NULL;
    size_t ncalls = 0;
    if (rc == 0 && t->pe.bits == 32 && hs_call_targets(&t->pe, *out, *count, &calls, &ncalls) == 0 && ncalls) {
        free(*out);
        rc = hs_pe_functions_calls(&t->pe, procs, n, calls, ncalls, out, count);
    }
    free(calls);
    free(procs);
    return rc;
}
