/*
 * tests/unit/test_hook_dlls.c - the engine on the real DLLs of this machine.
 *
 * For each module found (Wine's ntdll, kernelbase, kernel32, msvcrt,
 * ucrtbase; mingw's libstdc++-6.dll, libgcrypt and libgpg-error; build/fixtures/ lua and sqlite when
 * they exist), every .pdata function is analyzed as the agent would
 * (no HS_ANALYZE_FULL), its trampoline emitted for an arena right after
 * the image, and its patch emitted:
 *
 *   dll/<module>/hookable       at least 97% of the functions hooked
 *   dll/<module>/consistent     every hooked plan is self-consistent
 *                               (window covers the patch, offsets, sizes)
 *   dll/<module>/exec-sample    a sample of the hooked functions run alike
 *                               original vs trampoline (xcase.c)
 *   dll/<module>/full           HS_ANALYZE_FULL (--time) gives every function the
 *                               same plan (hooked or not, and how)
 *
 * Diagnostics: skip reasons, patch kinds, µs per function. A module that
 * is not installed is reported as a diagnostic, not a failure.
 */
#define _GNU_SOURCE
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hook.h"
#include "pe.h"
#include "tap.h"
#include "xcase.h"

static const char *const modules[] = {
    "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/ntdll.dll",
    "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/kernelbase.dll",
    "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/kernel32.dll",
    "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/msvcrt.dll",
    "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/ucrtbase.dll",
    "/usr/lib/gcc/x86_64-w64-mingw32/12-win32/libstdc++-6.dll",
    "/usr/x86_64-w64-mingw32/bin/libgcrypt-20.dll",
    "/usr/x86_64-w64-mingw32/bin/libgpg-error-0.dll",
};

typedef struct img_ctx {
    const hs_pe *pe;
    uint64_t base;
} img_ctx;

static int img_read(void *ctx, uint64_t addr, void *out, size_t n)
{
    const img_ctx *c = ctx;
    if (addr < c->base || addr - c->base > c->pe->image_size || n > c->pe->image_size - (addr - c->base))
        return -1;
    memcpy(out, c->pe->image + (addr - c->base), n);
    return 0;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = n > 0 ? malloc((size_t)n) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Plan invariants that do not depend on the function. */
static const char *plan_inconsistent(const hs_plan *p, size_t tlen, const uint16_t *toff)
{
    if (p->n_insns == 0 || p->n_insns > HS_MAX_WINDOW_INSNS)
        return "instruction count";
    if (p->insn_off[0] != 0 || p->insn_off[p->n_insns] != p->window_len)
        return "instruction offsets";
    for (int i = 0; i < p->n_insns; i++)
        if (p->insn_off[i + 1] <= p->insn_off[i])
            return "instruction offsets not increasing";
    if (tlen == 0 || tlen > p->tramp_max || tlen > HS_TRAMP_MAX)
        return "trampoline longer than tramp_max";
    if (toff[p->n_insns] != tlen)
        return "tramp_off[n] is not the length";
    switch (p->kind) {
    case HS_PATCH_JMP32:
        if (p->patch_off != 0 || p->patch_len != 5)
            return "jmp32 patch range";
        if (p->window_len < 5 && !(p->flags & HS_FN_ENDS_IN_WINDOW))
            return "window shorter than the patch without a terminator";
        break;
    case HS_PATCH_SHORT_PAD:
        if (p->window_len < 2 && !(p->flags & HS_FN_ENDS_IN_WINDOW))
            return "short window";
        if (p->patch_len > HS_MAX_PATCH || p->pad_off - 2 < -128 || p->pad_off - 2 > 127)
            return "pad slot";
        if (p->pad_off > -5 && p->pad_off < 2)
            return "pad slot overlaps the entry jump";
        break;
    default:
        return "unexpected kind";
    }
    return NULL;
}

static void scan_module(hs_engine *e, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t flen;
    uint8_t *file = read_file(path, &flen);
    if (!file) {
        tap_diag("%s: not present, skipped", path);
        return;
    }
    hs_pe pe;
    if (hs_pe_load_file(&pe, file, flen) != HS_PE_OK) {
        tap_diag("%s: not a loadable PE, skipped", path);
        free(file);
        return;
    }
    hs_pe_func *fs;
    size_t nf;
    if (hs_pe_functions(&pe, &fs, &nf) < 0) {
        tap_diag("%s: cannot list functions", path);
        hs_pe_close(&pe);
        free(file);
        return;
    }
    img_ctx ic = { &pe, pe.image_base };
    uint64_t tramp_base = pe.image_base + pe.size_of_image + 0x10000;
    static uint8_t tbuf[HS_TRAMP_MAX];

    int counted = 0, hooked = 0, reasons[HS_SKIP__COUNT] = { 0 }, kinds[HS_PATCH__COUNT] = { 0 };
    int inconsistent = 0, tramp_fail = 0, full_diff = 0, with_padding = 0, with_call = 0;
    const char *first_bad = NULL;
    char first_bad_name[200] = "", first_full_diff[200] = "";
    double t_an = 0, t_all = 0;
    char name[256];

    for (size_t i = 0; i < nf; i++) {
        const hs_pe_func *f = &fs[i];
        if (!(f->src & HS_SRC_PDATA) || (f->src & HS_SRC_FRAGMENT) || f->size == 0)
            continue;
        counted++;
        hs_func_input fn = {
            .code = pe.image + f->rva, .addr = pe.image_base + f->rva, .size = f->size,
            .gap_before = f->gap_before, .gap_after = f->gap_after,
            .image_lo = pe.image_base, .image_hi = pe.image_base + pe.size_of_image,
            .read = img_read, .read_ctx = &ic,
        };
        hs_plan plan;
        uint16_t toff[HS_MAX_WINDOW_INSNS + 1];
        hs_skip_reason why;
        uint8_t patch[HS_MAX_PATCH];
        double t0 = now_us();
        hs_analyze(e, &fn, 0, &plan);
        double t1 = now_us();
        size_t tl = 0;
        if (plan.reason == HS_OK) {
            tl = hs_emit_trampoline(e, &fn, &plan, tramp_base, tbuf, sizeof tbuf, toff, &why);
            if (tl && hs_emit_patch(&fn, &plan, tramp_base, patch) < 0)
                tl = 0;
        }
        double t2 = now_us();
        t_an += t1 - t0;
        t_all += t2 - t0;
        reasons[plan.reason]++;
        if (plan.reason != HS_OK && getenv("HS_TEST_VERBOSE")) {
            char hex[100] = "";
            for (int b = 0; b < 24 && b < (int)f->size; b++)
                snprintf(hex + 3 * b, 4, "%02x ", fn.code[b]);
            tap_diag("%s rva %#x size %u gaps %u/%u: %s: %s", base, f->rva, f->size, f->gap_before,
                     f->gap_after, hs_skip_reason_name(plan.reason), hex);
        }
        /* the full analysis (--time) must hook exactly what the plain one
         * does, with the same patch */
        hs_plan pf;
        hs_analyze(e, &fn, HS_ANALYZE_FULL, &pf);
        if (pf.reason != plan.reason || pf.kind != plan.kind || pf.window_len != plan.window_len) {
            if (!full_diff)
                snprintf(first_full_diff, sizeof first_full_diff, "rva %#x: plain %s, full %s", f->rva,
                         hs_skip_reason_name(plan.reason), hs_skip_reason_name(pf.reason));
            full_diff++;
        }
        if (plan.reason != HS_OK)
            continue;
        if (!tl) {
            tramp_fail++;
            continue;
        }
        hooked++;
        kinds[plan.kind]++;
        with_padding += (plan.flags & HS_FN_USES_PADDING) != 0;
        with_call += (plan.flags & HS_FN_HAS_CALL_IN_WINDOW) != 0;
        const char *bad = plan_inconsistent(&plan, tl, toff);
        if (bad) {
            inconsistent++;
            if (!first_bad) {
                first_bad = bad;
                snprintf(first_bad_name, sizeof first_bad_name, "rva %#x", f->rva);
            }
        }
    }
    int total_ok = hooked;
    double pct = counted ? 100.0 * total_ok / counted : 0;
    snprintf(name, sizeof name, "dll/%s/hookable", base);
    tap_check(pct >= 97.0, name, "%.2f%% of %d functions hooked (goal 97%%)", pct, counted);
    tap_diag("%s: %d .pdata functions, %d hooked (%.2f%%): jmp32 %d, short-pad %d; uses padding %d, "
             "call in window %d; trampoline failures %d",
             base, counted, hooked, pct, kinds[HS_PATCH_JMP32], kinds[HS_PATCH_SHORT_PAD], with_padding,
             with_call, tramp_fail);
    for (int r = 1; r < HS_SKIP__COUNT; r++)
        if (reasons[r])
            tap_diag("%s:   skipped %-26s %d", base, hs_skip_reason_name(r), reasons[r]);
    tap_diag("%s: %.2f us/function analysis, %.2f us/function analysis+trampoline+patch", base,
             counted ? t_an / counted : 0, counted ? t_all / counted : 0);
    snprintf(name, sizeof name, "dll/%s/consistent", base);
    tap_check(inconsistent == 0, name, "%d inconsistent plans, first %s: %s", inconsistent, first_bad_name,
              first_bad ? first_bad : "");
    snprintf(name, sizeof name, "dll/%s/full", base);
    tap_check(full_diff == 0, name, "%d functions get another plan with HS_ANALYZE_FULL; first %s", full_diff,
              first_full_diff);

    /* differential execution of a sample, relocated as if at XR_A */
    int ran = 0, differ = 0, not_runnable = 0;
    char first_diff[400] = "";
    int step = hooked > 1500 ? hooked / 1500 : 1, k = 0;
    for (size_t i = 0; i < nf; i++) {
        const hs_pe_func *f = &fs[i];
        if (!(f->src & HS_SRC_PDATA) || (f->src & HS_SRC_FRAGMENT) || f->size == 0)
            continue;
        if (k++ % step)
            continue;
        uint32_t gb = f->gap_before > 16 ? 16 : f->gap_before, ga = f->gap_after > 16 ? 16 : f->gap_after;
        xc_func xf = { base, pe.image + f->rva - gb, gb, f->size, ga };
        xc_opts o = { XR_T_NEAR, 0, 3, NULL, NULL, 1 };
        xc_out out;
        char why[300];
        int r = xc_diff(e, &xf, &o, &out, why, sizeof why);
        if (r == XC_SAME)
            ran++;
        else if (r == XC_DIFFERENT) {
            if (!differ)
                snprintf(first_diff, sizeof first_diff, "rva %#x: %s", f->rva, why);
            differ++;
        } else {
            not_runnable++;
        }
    }
    snprintf(name, sizeof name, "dll/%s/exec-sample", base);
    tap_check(differ == 0 && ran > 0, name, "%d of %d differ; first: %s", differ, ran + differ, first_diff);
    tap_diag("%s: %d sampled functions ran alike, %d not hooked or not runnable", base, ran, not_runnable);

    free(fs);
    hs_pe_close(&pe);
    free(file);
}

int main(int argc, char **argv)
{
    if (xr_init() < 0) {
        tap_fail("dll/harness", "cannot set up the execution harness");
        return 1;
    }
    hs_engine *e = hs_engine_new();
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            scan_module(e, argv[i]);
    } else {
        for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++)
            scan_module(e, modules[i]);
        glob_t g;
        if (glob("build/fixtures/{lua,sqlite}*/**.{dll,exe}", GLOB_BRACE, NULL, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc; i++)
                scan_module(e, g.gl_pathv[i]);
            globfree(&g);
        }
    }
    hs_engine_free(e);
    return tap_status();
}
