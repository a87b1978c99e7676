/*
 * injector/symbols/fnlist.c - see fnlist.h.
 */
#include "injector/symbols/fnlist.h"

#include <stdlib.h>
#include <string.h>

#include "hook/engine/names.h"
#include "hook/pe/functions.h"

long hs_fnlist_build(hs_modsyms *t, hs_filter *flt, const char *modname, hs_fn_entry *out, size_t cap)
{
    hs_pe_func *funcs = NULL;
    size_t n = 0;
    if (hs_modsyms_functions(t, &funcs, &n) < 0)
        return -1;
    if (n > cap) {
        free(funcs);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const hs_pe_func *f = &funcs[i];
        hs_fn_entry *e = &out[i];
        memset(e, 0, sizeof *e);
        e->rva = f->rva;
        e->size = f->size;
        e->gap_before = f->gap_before;
        e->gap_after = f->gap_after;
        e->unwind_rva = f->unwind_rva;
        e->src = f->src;
        if (f->src & HS_SRC_FRAGMENT)
            continue;
        hs_sym_name nm;
        bool named = hs_modsyms_name_at(t, f->rva, &nm);
        if (!flt || !flt->n ||
            hs_filter_admits(flt, modname, named ? nm.raw : NULL, named ? nm.name : NULL, f->rva))
            e->flags |= HS_FNE_ADMIT;
        if (named && (hs_name_returns_twice(nm.raw) || hs_name_returns_twice(nm.name)))
            e->flags |= HS_FNE_RETURNS_TWICE;
        if (named && (hs_name_stack_probe(nm.raw) || hs_name_stack_probe(nm.name)))
            e->flags |= HS_FNE_STACK_PROBE;
    }
    free(funcs);
    return (long)n;
}
