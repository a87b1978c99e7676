/*
 * injector/functions_cmd.c - `hookscope functions FILE`: the functions of a
 * PE file, and for each whether it can be hooked (and how) or why not,
 * decided by the same engine the agent uses, on the file's bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "filter.h"
#include "hook.h"
#include "pe.h"
#include "symbols.h"
#include "util.h"

int hs_cmd_functions(const hs_options *o)
{
    char *shown = hs_utf8(o->file);
    size_t size = 0;
    unsigned long err = 0;
    uint8_t *data = hs_read_file(o->file, &size, &err);
    if (!data) {
        hs_err("cannot read '%s': %s", shown, hs_win_error(err));
        return HS_EXIT_FAILED;
    }
    hs_pe pe;
    int st = hs_pe_load_file(&pe, data, size);
    if (st != HS_PE_OK) {
        if (st == HS_PE_NOT_PE)
            hs_err("'%s' is not a PE file", shown);
        else
            hs_err("'%s': %s", shown, hs_pe_status_text(st));
        return HS_EXIT_FAILED;
    }
    hs_pe_func *funcs = NULL;
    size_t n = 0;
    hs_pe_symtab syms;
    hs_engine *eng = hs_engine_new();
    if (hs_pe_functions(&pe, &funcs, &n) < 0 || hs_pe_symbols(&pe, &syms) < 0 || !eng) {
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
    uint32_t kind_counts[HS_PATCH__COUNT] = { 0 };
    size_t total = 0, ok = 0;
    hs_image_view view = { &pe, pe.image_base };   /* jump tables, as the agent reads them */
    printf("%-10s %8s  %-34s %s\n", "rva", "size", "hook", "name");
    for (size_t i = 0; i < n; i++) {
        const hs_pe_func *f = &funcs[i];
        if (f->src & HS_SRC_FRAGMENT)
            continue;
        total++;
        hs_func_input in;
        memset(&in, 0, sizeof in);
        in.code = pe.image + f->rva;
        in.addr = pe.image_base + f->rva;
        in.size = f->size;
        in.gap_before = f->gap_before;
        in.gap_after = f->gap_after;
        in.image_lo = pe.image_base;
        in.image_hi = pe.image_base + pe.size_of_image;
        in.read = hs_image_read;
        in.read_ctx = &view;
        hs_plan plan;
        const char *nm = hs_pe_symtab_at(&syms, f->rva);
        char *name = nm ? hs_undecorate(nm) : NULL;
        hs_skip_reason r = HS_OK;
        if (flt.n && !hs_filter_admits(&flt, modname, nm, name, f->rva))
            r = HS_SKIP_FILTERED;
        else
            r = hs_analyze(eng, &in, 0, &plan);
        char status[64];
        if (r == HS_OK) {
            ok++;
            kind_counts[plan.kind]++;
            if (plan.kind == HS_PATCH_JMP32)
                snprintf(status, sizeof status, "yes");
            else
                snprintf(status, sizeof status, "yes (%s)", hs_patch_kind_name(plan.kind));
        } else {
            skip_counts[r]++;
            snprintf(status, sizeof status, "no: %s", hs_skip_reason_name(r));
        }
        char fallback[32];
        if (!name) {
            snprintf(fallback, sizeof fallback, "sub_%x", f->rva);
            name = hs_xstrdup(fallback);
        }
        printf("0x%08x %8u  %-34s %s\n", f->rva, f->size, status, name);
        free(name);
    }
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
            hs_err("function filter '%s' matched no function", flt.pattern[i]);
            bad = 1;
        }
    }
    hs_engine_free(eng);
    hs_pe_symtab_free(&syms);
    free(funcs);
    hs_pe_close(&pe);
    free(data);
    return bad ? HS_EXIT_FAILED : 0;
}
