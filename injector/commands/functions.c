/*
 * injector/commands/functions.c - `hookscope functions FILE`: the functions
 * of a PE file, where each one's bounds come from, and for each whether it
 * can be hooked (and how) or why not, decided by the same engine the agent
 * uses, on the file's bytes, named by the same symbol tables as every
 * report. An i386 image's functions are listed the same way and decided
 * by the engine's 32-bit mode, those with exact bounds (its PDB's
 * procedures, its .eh_frame): one known only by its start says
 * `bounds-unknown` (without .pdata nothing bounds it), as the 32-bit agent
 * skips it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hook/engine/filter.h"
#include "hook/engine/hook.h"
#include "hook/pe/functions.h"
#include "hook/pe/pe.h"
#include "injector/commands/commands.h"
#include "injector/symbols/modsyms.h"
#include "injector/symbols/suggest.h"

/* Where a function's bounds come from: the debug information's procedure
 * (its exact extent), the .pdata entry, the .eh_frame FDE, or only its
 * start (a call's or tail jump's target found by decoding, a hot-patchable
 * entry, a symbol, an export), the function then running to the next
 * known start or its section's end. */
static const char *bounds_source(const hs_modsyms *syms, const hs_pe_func *f)
{
    if (f->src & HS_SRC_DEBUG)
        return hs_symsrc_name(hs_modsyms_debug_source(syms));
    if (f->src & HS_SRC_PDATA)
        return "pdata";
    if (f->src & HS_SRC_EHFRAME)
        return "eh_frame";
    if (f->src & HS_SRC_CALL)
        return "call";
    if (f->src & HS_SRC_HOTPATCH)
        return "hotpatch";
    return "next";
}

int hs_cmd_functions(const hs_options *o)
{
    char *shown = hs_utf8(o->file);
    char *path = hs_utf8(o->file);
    hs_modsyms_status status;
    const char *why = NULL;
    hs_symconf conf = hs_options_symconf(o);
    hs_modsyms *syms = hs_modsyms_open(path, 0, 0, 0, &conf, &status, &why);
    if (!syms) {
        if (status == HS_MODSYMS_UNREADABLE)
            hs_err("cannot read '%s': %s", shown, why);
        else if (status == HS_MODSYMS_NOT_PE)
            hs_err("'%s' is not a PE file", shown);
        else
            hs_err("'%s': %s", shown, why);
        return HS_EXIT_FAILED;
    }
    const hs_pe *pe = hs_modsyms_pe(syms);
    hs_pe_func *funcs = NULL;
    size_t n = 0;
    hs_engine *eng = pe->bits == 32 ? hs_engine_new_bits(32) : hs_engine_new();
    if (hs_modsyms_message(syms)[0])
        hs_err("%s", hs_modsyms_message(syms));
    if (hs_modsyms_functions(syms, &funcs, &n) < 0 || !eng) {
        hs_err("out of memory");
        return HS_EXIT_FAILED;
    }
    hs_filter flt;
    memset(&flt, 0, sizeof flt);
    for (int i = 0; i < o->nfilters; i++) {
        flt.pattern[flt.n] = hs_utf8(o->filters[i]);
        flt.exclude[flt.n++] = o->filter_exclude[i];
    }
    const char *modname = hs_basename(shown);
    uint32_t skip_counts[HS_SKIP__COUNT] = { 0 };
    size_t total = 0, ok = 0, all = 0;
    const char **names = hs_xcalloc(n ? n : 1, sizeof *names);   /* for suggestions */
    char **owned = hs_xcalloc(n ? n : 1, sizeof *owned);
    hs_image_view view = { pe, pe->image_base };   /* jump tables, as the agent reads them */
    printf("%-10s %8s  %-8s %-34s %-7s %s\n", "rva", "size", "bounds", "hook", "source", "name");
    for (size_t i = 0; i < n; i++) {
        const hs_pe_func *f = &funcs[i];
        if (f->src & HS_SRC_FRAGMENT)
            continue;
        all++;
        hs_func_input in;
        memset(&in, 0, sizeof in);
        in.code = pe->image + f->rva;
        in.addr = pe->image_base + f->rva;
        in.size = f->size;
        in.gap_before = f->gap_before;
        in.gap_after = f->gap_after;
        in.image_lo = pe->image_base;
        in.image_hi = pe->image_base + pe->size_of_image;
        in.read = hs_image_read;
        in.read_ctx = &view;
        hs_plan plan;
        hs_sym_name nm;
        bool named = hs_modsyms_name_at(syms, f->rva, &nm);
        owned[all - 1] = named ? hs_xstrdup(nm.name) : hs_xasprintf("sub_%x", f->rva);
        names[all - 1] = owned[all - 1];
        if (flt.n && !hs_filter_admits(&flt, modname, named ? nm.raw : NULL, named ? nm.name : NULL, f->rva))
            continue;   /* only what the filters select */
        total++;
        hs_skip_reason r = hs_pe_func_bounded(pe, f) ? hs_analyze(eng, &in, 0, &plan) : HS_SKIP_BOUNDS;
        char status_text[64];
        if (r == HS_OK) {
            ok++;
            if (plan.kind == HS_PATCH_JMP32)
                snprintf(status_text, sizeof status_text, "yes");
            else
                snprintf(status_text, sizeof status_text, "yes (%s)", hs_patch_kind_name(plan.kind));
        } else {
            skip_counts[r]++;
            snprintf(status_text, sizeof status_text, "no: %s", hs_skip_reason_name(r));
        }
        printf("0x%08x %8u  %-8s %-34s %-7s %s\n", f->rva, f->size, bounds_source(syms, f), status_text,
               named ? hs_symsrc_name(nm.source) : "-", owned[all - 1]);
    }
    if (flt.n)
        printf("\n%zu of %zu functions match the filters, %zu hookable (%.1f%%)", total, all, ok,
               total ? 100.0 * (double)ok / (double)total : 0.0);
    else
        printf("\n%zu functions, %zu hookable (%.1f%%)", total, ok, total ? 100.0 * (double)ok / (double)total : 0.0);
    int any = 0;
    for (int r = 1; r < HS_SKIP__COUNT; r++) {
        if (!skip_counts[r])
            continue;
        printf("%s%s %u", any ? ", " : "; not hookable: ", hs_skip_reason_name(r), skip_counts[r]);
        any = 1;
    }
    printf("\n");
    int bad = 0;
    for (int i = 0; i < flt.n; i++) {
        if (!(flt.matched & (1u << i))) {
            const char *best[3];
            size_t k = hs_suggest(flt.pattern[i], names, all, best, 3);
            if (k == 0)
                hs_err("function filter '%s' matched no function", flt.pattern[i]);
            else if (k == 1)
                hs_err("function filter '%s' matched no function; did you mean '%s'?", flt.pattern[i], best[0]);
            else if (k == 2)
                hs_err("function filter '%s' matched no function; did you mean '%s' or '%s'?", flt.pattern[i],
                       best[0], best[1]);
            else
                hs_err("function filter '%s' matched no function; did you mean '%s', '%s' or '%s'?",
                       flt.pattern[i], best[0], best[1], best[2]);
            bad = 1;
        }
    }
    for (size_t i = 0; i < all; i++)
        free(owned[i]);
    free(owned);
    free(names);
    hs_engine_free(eng);
    free(funcs);
    hs_modsyms_close(syms);
    return bad ? HS_EXIT_FAILED : 0;
}
