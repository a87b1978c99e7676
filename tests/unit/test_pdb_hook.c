/*
 * tests/unit/test_pdb_hook.c - the hooking engine on functions known only
 * from a PDB: every S_GPROC32/S_LPROC32 of the clang-built fixtures
 * (build/fixtures/pdb, build/fixtures/pdblua), analyzed with its PDB bounds
 * the way the agent analyzes a .pdata function, its trampoline and patch
 * emitted, and a sample run side by side original vs hooked (xcase.c).
 *
 * The gaps around a procedure are the bytes to the neighbouring procedure or
 * .pdata function (or the section edge), what the engine may use as padding.
 *
 *   pdbhook/<exe>/hookable     the share of the PDB's procedures hooked
 *                              (goal 97%); with the skip reasons, and how
 *                              many have no .pdata (leaf functions)
 *   pdbhook/<exe>/leaves       leaf functions are hooked like the others
 *   pdbhook/<exe>/exec         hooked procedures (all leaves, a sample of
 *                              the rest) run alike through their hook; a
 *                              run that faults at a call inside the patched
 *                              window (an import called through memory the
 *                              harness does not map) cannot be compared:
 *                              counted apart
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/engine/hook.h"
#include "hook/pe/functions.h"
#include "hook/pe/pe.h"
#include "injector/symbols/pdb.h"
#include "injector/symbols/symfs.h"
#include "injector/symbols/symtab.h"
#include "tests/unit/tap.h"
#include "tests/unit/xcase.h"

typedef struct img_ctx {
    const hs_pe *pe;
    uint64_t base;
} img_ctx;

static int img_read(void *ctx, uint64_t addr, void *out, size_t n)
{
    const img_ctx *c = ctx;
    if (addr < c->base || addr - c->base > c->pe->image_size ||
        n > c->pe->image_size - (addr - c->base))
        return -1;
    memcpy(out, c->pe->image + (addr - c->base), n);
    return 0;
}

typedef struct span {
    uint32_t lo, hi;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void scan(hs_engine *e, const char *exe, const char *pdb_path)
{
    const char *base = strrchr(exe, '/') + 1;
    char name[160], err[512];
    uint8_t *file = NULL, *pdbdata = NULL;
    size_t fsize = 0, psize = 0;
    const hs_symfs *fs = hs_symfs_host();
    hs_pe pe;
    hs_pdb pdb;
    hs_symtab st;
    memset(&st, 0, sizeof st);
    snprintf(name, sizeof name, "pdbhook/%s/hookable", base);
    if (fs->read(NULL, exe, &file, &fsize, err, sizeof err) ||
        fs->read(NULL, pdb_path, &pdbdata, &psize, err, sizeof err)) {
        tap_fail(name, "%s or its PDB is not built (make fixtures)", exe);
        free(file);
        return;
    }
    if (hs_pe_load_file(&pe, file, fsize) != HS_PE_OK || hs_pdb_open(&pdb, pdbdata, psize, err, sizeof err) ||
        hs_pdb_read(&pdb, &st, NULL, err, sizeof err)) {
        tap_fail(name, "cannot read %s with its PDB: %s", exe, err);
        free(file);
        free(pdbdata);
        return;
    }
    hs_pdb_close(&pdb);
    hs_pe_func *pf;
    size_t npf;
    hs_pe_functions(&pe, &pf, &npf);

    /* everything that is code of some function: PDB procedures and .pdata */
    size_t nspan = 0;
    span *spans = malloc((st.count + npf + 1) * sizeof *spans);
    for (size_t i = 0; i < st.count; i++)
        if (st.syms[i].kind == HS_SYMK_PROC && st.syms[i].size)
            spans[nspan++] = (span){ st.syms[i].rva, st.syms[i].rva + st.syms[i].size };
    for (size_t i = 0; i < npf; i++)
        if ((pf[i].src & HS_SRC_PDATA) && pf[i].size)
            spans[nspan++] = (span){ pf[i].rva, pf[i].rva + pf[i].size };
    qsort(spans, nspan, sizeof *spans, cmp_span);

    img_ctx ic = { &pe, pe.image_base };
    int counted = 0, hooked = 0, leaves = 0, leaves_hooked = 0, reasons[HS_SKIP__COUNT] = { 0 };
    int ran = 0, differ = 0, uncomparable = 0, k = 0;
    char first_diff[400] = "";
    for (size_t i = 0; i < st.count; i++) {
        const hs_sym *s = &st.syms[i];
        if (s->kind != HS_SYMK_PROC || !s->size)
            continue;
        int sec = hs_pe_section_of(&pe, s->rva);
        if (sec < 0)
            continue;
        const hs_pe_section *sc = &pe.sections[sec];
        uint32_t lo = sc->rva, hi = sc->rva + sc->vsize;
        for (size_t j = 0; j < nspan; j++) {
            if (spans[j].hi <= s->rva && spans[j].hi > lo)
                lo = spans[j].hi;
            if (spans[j].lo >= s->rva + s->size && spans[j].lo < hi)
                hi = spans[j].lo;
        }
        int leaf = 1;
        for (size_t j = 0; j < npf; j++)
            if ((pf[j].src & HS_SRC_PDATA) && pf[j].rva == s->rva)
                leaf = 0;
        counted++;
        leaves += leaf;
        hs_func_input fn = {
            .code = pe.image + s->rva, .addr = pe.image_base + s->rva, .size = s->size,
            .gap_before = s->rva - lo, .gap_after = hi - (s->rva + s->size),
            .image_lo = pe.image_base, .image_hi = pe.image_base + pe.size_of_image,
            .read = img_read, .read_ctx = &ic,
        };
        hs_plan plan;
        hs_analyze(e, &fn, 0, &plan);
        reasons[plan.reason]++;
        if (plan.reason != HS_OK) {
            if (getenv("HS_TEST_VERBOSE"))
                tap_diag("%s %s rva %#x size %u: %s", base, s->name, s->rva, s->size,
                         hs_skip_reason_name(plan.reason));
            continue;
        }
        hooked++;
        leaves_hooked += leaf;
        if (!leaf && k++ % 4)
            continue;
        uint32_t gb = fn.gap_before > 16 ? 16 : fn.gap_before, ga = fn.gap_after > 16 ? 16 : fn.gap_after;
        xc_func xf = { s->name, pe.image + s->rva - gb, gb, s->size, ga };
        xc_opts o = { XR_T_NEAR, 0, 3, NULL, NULL, 1, 0, NULL, 0 };
        xc_out out;
        char why[300];
        int r = xc_diff(e, &xf, &o, &out, why, sizeof why);
        if (r == XC_SAME) {
            ran++;
        } else if (r == XC_DIFFERENT && (out.plan.flags & HS_FN_HAS_CALL_IN_WINDOW) &&
                   out.end_kind == XR_END_FAULT) {
            /* the window calls through memory the harness does not map: both
             * runs fault there, at the original call and at its relocated
             * copy, and xr_compare compares the two addresses as they are */
            uncomparable++;
        } else if (r == XC_DIFFERENT) {
            if (!differ)
                snprintf(first_diff, sizeof first_diff, "%s (rva %#x): %s", s->name, s->rva, why);
            differ++;
        }
    }
    double pct = counted ? 100.0 * hooked / counted : 0;
    tap_check(pct >= 97.0, name, "%.2f%% of %d PDB procedures hooked (goal 97%%)", pct, counted);
    tap_diag("%s: %d PDB procedures, %d hooked (%.2f%%); %d without .pdata, %d of them hooked", base,
             counted, hooked, pct, leaves, leaves_hooked);
    for (int r = 1; r < HS_SKIP__COUNT; r++)
        if (reasons[r])
            tap_diag("%s:   skipped %-26s %d", base, hs_skip_reason_name(r), reasons[r]);
    snprintf(name, sizeof name, "pdbhook/%s/leaves", base);
    tap_check(leaves > 0 && leaves_hooked * 100 >= leaves * 97, name,
              "%d of %d leaf functions hooked", leaves_hooked, leaves);
    snprintf(name, sizeof name, "pdbhook/%s/exec", base);
    tap_check(differ == 0 && ran > 0, name, "%d of %d differ; first: %s", differ, ran + differ,
              first_diff);
    tap_diag("%s: %d hooked procedures ran alike through their hook; %d end in a fault at a call in "
             "the patched window (not comparable by the harness)", base, ran, uncomparable);
    free(spans);
    free(pf);
    hs_symtab_free(&st);
    hs_pe_close(&pe);
    free(file);
    free(pdbdata);
}

int main(void)
{
    if (xr_init() < 0) {
        tap_fail("pdbhook/harness", "cannot set up the execution harness");
        return 1;
    }
    hs_engine *e = hs_engine_new();
    scan(e, "build/fixtures/pdb/pdbc.exe", "build/fixtures/pdb/pdbc.pdb");
    scan(e, "build/fixtures/pdb/pdbcxx.exe", "build/fixtures/pdb/pdbcxx.pdb");
    scan(e, "build/fixtures/pdblua/lua.exe", "build/fixtures/pdblua/lua.pdb");
    hs_engine_free(e);
    return tap_status();
}
