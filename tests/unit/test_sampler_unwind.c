/*
 * tests/unit/test_sampler_unwind.c - the sampler's unwinder on real code:
 * fixtures/unwind_src.c built by x86_64-w64-mingw32-gcc at -O0, -O1 and
 * -O2 (unwind_cases.h, from gen_unwind_cases.py), laid out at a fixed
 * base and run natively (xrun.h). Each function is stopped at every
 * instruction it reaches (an int3 put there, one run per instruction) and
 * unwound from that state, with its .pdata and .xdata read through the
 * code map as the sampler reads a target:
 *
 *   one frame   the caller's rip is the return address the function was
 *               entered with, rsp is the entry rsp + 8, and every
 *               callee-saved register has its value at entry (at every
 *               point of prologue, body and epilogue);
 *   the chain   chain3 calls the others (alloca, a page-sized frame with a
 *               stack probe, xmm saves, a tail call); stopped at every
 *               instruction of saves_regs, leaf_add and big_frame's
 *               stack probe (mingw's ___chkstk_ms: pushes without unwind
 *               data) reached through it, the walk passes every frame up
 *               to chain3's return address, ending with the entry state
 *               again.
 */
#include <capstone/capstone.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"
#include "hook/pe/pe.h"
#include "hook/unwind/unwinder.h"
#include "sampler/codemap.h"
#include "tests/unit/tap.h"
#include "tests/unit/unwind_cases.h"
#include "tests/unit/xrun.h"

#define BASE XR_CODE           /* the image's base: all of it in the code region */
#define ENTRY_RSP (XR_STACK + 0x7FF8)

static const char *const funcs[] = {
    "leaf_add", "saves_regs", "uses_alloca", "uses_xmm", "big_frame", "tail_caller", "chain3",
};
static const int nonvolatile[] = { HS_RBX, HS_RBP, HS_RSI, HS_RDI, HS_R12, HS_R13, HS_R14,
                                   HS_R15 };

typedef struct image {
    hs_pe pe;
} image;

static int read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const image *im = ctx;
    if (addr < BASE || addr - BASE > im->pe.image_size || im->pe.image_size - (addr - BASE) < len)
        return -1;
    memcpy(buf, im->pe.image + (addr - BASE), len);
    return 0;
}

static void input(xr_input *in)
{
    xr_default_input(in, 0);
    in->gpr[HS_RCX] = 7;
    in->gpr[HS_RDX] = 3;
    in->gpr[HS_R8] = 2;
    in->gpr[HS_R9] = 1;
}

/* The function's instructions: addresses of [rva, end) (or up to its
 * first ret when it has no .pdata entry: then *leaf is 1). */
static size_t instructions(csh cs, const image *im, uint32_t rva, uint64_t *out, size_t max, int *leaf_out)
{
    uint32_t end = 0;
    const uint32_t *t = (const uint32_t *)hs_pe_ptr(&im->pe, im->pe.dir_rva[HS_DIR_EXCEPTION],
                                                    im->pe.dir_size[HS_DIR_EXCEPTION]);
    for (uint32_t i = 0; t && i < im->pe.dir_size[HS_DIR_EXCEPTION] / 12; i++)
        if (t[i * 3] == rva)
            end = t[i * 3 + 1];
    int leaf = end == 0;
    if (leaf)
        end = rva + 256;
    cs_insn *insn;
    size_t n = cs_disasm(cs, im->pe.image + rva, end - rva, BASE + rva, 0, &insn);
    size_t k = 0;
    for (size_t i = 0; i < n && k < max; i++) {
        out[k++] = insn[i].address;
        if (leaf && insn[i].id == X86_INS_RET)
            break;
    }
    cs_free(insn, n);
    if (leaf_out)
        *leaf_out = leaf;
    return k;
}

/* Run from `entry` with an int3 at `stop`; 1 if it stopped there. */
static int run_to(uint64_t entry, uint64_t stop, const image *im, xr_result *r)
{
    uint8_t keep = im->pe.image[stop - BASE];
    uint8_t cc = 0xCC;
    xr_put(stop, &cc, 1);
    xr_input in;
    input(&in);
    int rc = xr_run(entry, &in, r);
    xr_put(stop, &keep, 1);
    return rc == 0 && r->end == XR_END_TRAP && r->at == stop;
}

static hs_uw_stack stack_of(const xr_result *r, uint64_t rsp)
{
    hs_uw_stack st = { rsp, r->stack + (rsp - XR_STACK), XR_STACK + XR_STACK_SZ - rsp, false };
    return st;
}

/* After unwinding back out of the function entered with the standard
 * input: the entry state? */
static int entry_state(const hs_uw_regs *g, char *why, size_t len)
{
    xr_input in;
    input(&in);
    if (g->rip != XR_RETPAD) {
        snprintf(why, len, "rip 0x%llx, want the return address 0x%llx", (unsigned long long)g->rip,
                 (unsigned long long)XR_RETPAD);
        return 0;
    }
    if (g->r[HS_RSP] != ENTRY_RSP + 8) {
        snprintf(why, len, "rsp 0x%llx, want 0x%llx", (unsigned long long)g->r[HS_RSP],
                 (unsigned long long)(ENTRY_RSP + 8));
        return 0;
    }
    for (size_t i = 0; i < sizeof nonvolatile / sizeof *nonvolatile; i++) {
        int reg = nonvolatile[i];
        if (g->r[reg] != in.gpr[reg]) {
            snprintf(why, len, "register %d is 0x%llx, want 0x%llx", reg, (unsigned long long)g->r[reg],
                     (unsigned long long)in.gpr[reg]);
            return 0;
        }
    }
    return 1;
}

static void regs_of(const xr_result *r, hs_uw_regs *g)
{
    memcpy(g->r, r->gpr, sizeof g->r);
    g->rip = r->at;
}

/* Every instruction of `name` reached when it is called directly; and
 * there, the step's plan (every step of a function with unwind data has
 * one) run again from the same state gives the step's registers. */
static void one_frame(csh cs, const image *im, hs_codemap *cm, const char *opt, const char *name)
{
    uint32_t rva = hs_pe_export_rva(&im->pe, name);
    char tname[128];
    snprintf(tname, sizeof tname, "unwind%s/%s: every instruction, one frame", opt, name);
    if (!rva) {
        tap_fail(tname, "not exported");
        return;
    }
    uint64_t at[1024];
    int leaf;
    size_t n = instructions(cs, im, rva, at, 1024, &leaf);
    hs_uw_env env = hs_codemap_env(cm);
    size_t reached = 0, planned = 0;
    for (size_t i = 0; i < n; i++) {
        xr_result r;
        int hit = run_to(BASE + rva, at[i], im, &r);
        if (hit) {
            reached++;
            hs_uw_regs g;
            regs_of(&r, &g);
            const hs_uw_regs start = g;
            hs_uw_stack st = stack_of(&r, g.r[HS_RSP]);
            int err = hs_unwind_step(&env, &st, &g);
            char why[200] = "";
            if (!err && entry_state(&g, why, sizeof why)) {
                hs_uw_regs p = start, q = start;
                hs_uw_plan plan;
                if (hs_unwind_step_plan(&env, &st, &p, &plan) != 0 || memcmp(&p, &g, sizeof p) != 0)
                    snprintf(why, sizeof why, "hs_unwind_step_plan: not the step's registers");
                else if (plan.whole && (hs_unwind_run(&plan, &st, &q) != 0 || memcmp(&q, &g, sizeof q) != 0))
                    snprintf(why, sizeof why, "the plan run again: not the step's registers");
                planned += plan.whole;
            } else if (err) {
                snprintf(why, sizeof why, "step failed (%d)", err);
            }
            if (why[0]) {
                tap_fail(tname, "at +0x%llx: %s", (unsigned long long)(at[i] - BASE - rva), why);
                xr_result_free(&r);
                return;
            }
        }
        xr_result_free(&r);
    }
    /* most of a function runs with these arguments: prologue, body, epilogue */
    tap_check(reached * 10 >= n * 6 && planned == (leaf ? 0 : reached), tname,
              "%zu of %zu instructions reached, %zu steps planned (a leaf: %d)", reached, n, planned, leaf);
}

/* The rva of the first function `name` calls (big_frame's: its stack
 * probe, mingw's ___chkstk_ms, a leaf that pushes two registers and has
 * no unwind data), 0 if none. */
static uint32_t first_callee(csh cs, const image *im, const char *name)
{
    uint32_t rva = hs_pe_export_rva(&im->pe, name), found = 0;
    cs_insn *insn;
    size_t n = rva ? cs_disasm(cs, im->pe.image + rva, 64, BASE + rva, 0, &insn) : 0;
    for (size_t i = 0; i < n && !found; i++)
        if (insn[i].id == X86_INS_CALL && insn[i].bytes[0] == 0xE8)
            found = (uint32_t)(insn[i].address + insn[i].size + (uint64_t)(int64_t)(int32_t)hs_le32(insn[i].bytes + 1) - BASE);
    if (n)
        cs_free(insn, n);
    return found;
}

/* Stopped inside `callee` (every instruction of it reached) while chain3
 * runs: the whole walk up to chain3's caller. */
static void chain(csh cs, const image *im, hs_codemap *cm, const char *opt, const char *callee, uint32_t rva)
{
    uint32_t top = hs_pe_export_rva(&im->pe, "chain3");
    char tname[128];
    snprintf(tname, sizeof tname, "unwind%s/chain3 -> ... -> %s: the whole walk", opt, callee);
    uint64_t at[1024];
    size_t n = instructions(cs, im, rva, at, 1024, NULL);
    hs_uw_env env = hs_codemap_env(cm);
    size_t reached = 0, deepest = 0;
    for (size_t i = 0; i < n; i++) {
        xr_result r;
        if (run_to(BASE + top, at[i], im, &r)) {
            reached++;
            hs_uw_regs g;
            regs_of(&r, &g);
            hs_uw_stack st = stack_of(&r, g.r[HS_RSP]);
            uint64_t frames[64];
            hs_uw_result res = hs_unwind_walk(&env, &st, &g, frames, 64);
            /* every frame but the return pad is in the image; the walk
             * ends at the return pad, which no image covers */
            int ok = res.stop == HS_UW_UNKNOWN_PC && res.unknown_pc == XR_RETPAD && res.n >= 2;
            for (uint32_t k = 0; ok && k < res.n; k++)
                ok = frames[k] >= BASE + 0x1000 && frames[k] < BASE + im->pe.image_size;
            /* and step by step, the registers end as they were at chain3's entry */
            hs_uw_regs s;
            regs_of(&r, &s);
            for (uint32_t k = 0; ok && k < res.n; k++)
                ok = hs_unwind_step(&env, &st, &s) == 0;
            char why[200] = "";
            if (!ok || !entry_state(&s, why, sizeof why)) {
                tap_fail(tname, "at %s+0x%llx: %u frames, stop %d (0x%llx) %s", callee,
                         (unsigned long long)(at[i] - BASE - rva), res.n, res.stop,
                         (unsigned long long)res.unknown_pc, why);
                xr_result_free(&r);
                return;
            }
            if (res.n > deepest)
                deepest = res.n;
        }
        xr_result_free(&r);
    }
    tap_check(reached * 10 >= n * 6 && deepest >= 3, tname, "%zu of %zu instructions reached, deepest walk %zu",
              reached, n, deepest);
}

int main(void)
{
    if (xr_init() < 0) {
        tap_fail("xrun", "cannot map the test regions");
        return tap_status();
    }
    csh cs;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
        tap_fail("capstone", "cs_open");
        return tap_status();
    }
    for (size_t d = 0; d < sizeof uw_dlls / sizeof *uw_dlls; d++) {
        image im;
        memset(&im, 0, sizeof im);
        char name[64];
        snprintf(name, sizeof name, "unwind%s/layout", uw_dlls[d].opt);
        if (hs_pe_load_file(&im.pe, uw_dlls[d].dll, uw_dlls[d].size) != HS_PE_OK ||
            im.pe.image_size > XR_CODE_SZ / 2) {
            tap_fail(name, "cannot lay out the DLL");
            continue;
        }
        xr_reset_code();
        xr_put(BASE, im.pe.image, im.pe.image_size);
        hs_codemap *cm = hs_codemap_new(read_image, &im);
        tap_check(hs_codemap_add_image(cm, BASE, (uint32_t)im.pe.image_size, "uw.dll", false) != NULL, name,
                  "the code map cannot read its headers");
        for (size_t f = 0; f < sizeof funcs / sizeof *funcs; f++)
            one_frame(cs, &im, cm, uw_dlls[d].opt, funcs[f]);
        chain(cs, &im, cm, uw_dlls[d].opt, "saves_regs", hs_pe_export_rva(&im.pe, "saves_regs"));
        chain(cs, &im, cm, uw_dlls[d].opt, "leaf_add", hs_pe_export_rva(&im.pe, "leaf_add"));
        chain(cs, &im, cm, uw_dlls[d].opt, "___chkstk_ms", first_callee(cs, &im, "big_frame"));
        hs_codemap_free(cm);
        hs_pe_close(&im.pe);
    }
    cs_close(&cs);
    return tap_status();
}
