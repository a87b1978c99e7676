/*
 * tests/unit/test_pe32.c - the PE reader on i386 (PE32) images, and the
 * names of i386 code undecorated.
 *
 *   pe32/synthetic     a PE32 image made here: bitness, 32-bit ImageBase,
 *                      the data directories at their PE32 place, sections,
 *                      the import address table's 4-byte entries
 *   pe32/refused       a machine and an optional header of different
 *                      widths, another machine, a header cut short: each
 *                      refused with its status
 *   pe32/eh-frame      a synthetic .eh_frame (a long section name): FDEs
 *                      of a "zR" CIE (pc-relative) and of a CIE without
 *                      augmentation (absolute), past a terminator; an FDE
 *                      outside the code and one of an unreadable CIE left
 *                      out; the extents win over the symbols' next starts;
 *                      none of its CIEs names a personality routine
 *   pe32/eh-frame-personality/...  i686 libstdc++ names one (g++'s "zPLR"),
 *                      libgcc and a C program do not
 *   pe32/calls         the targets of _f's direct call and tail jump, in
 *                      32-bit mode, outside every extent; a jump inside
 *                      it and a call to a known start are not new
 *   pe32/hotpatch      `mov edi,edi; push ebp; mov ebp,esp` after 5 bytes of
 *                      int3 or of nop padding starts a function; after 4,
 *                      after mixed padding, or inside an FDE's extent not
 *   pe32/groundtruth   build/tests32/groundtruth.exe (i686 gcc): read as
 *                      PE32, its COFF symbols and functions found
 *   fuzz/pe32/...      mutated headers, symbol tables and .eh_frame, and every
 *                      truncation of the synthetic image: read or refused,
 *                      never a read outside the bytes (the sanitizer run)
 *   undname/i386       `_f`, `_f@12`, `@f@8`, `f@@8`, `__Z...` from COFF
 *                      symbols; exports keep a leading underscore
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hook/engine/calls.h"
#include "hook/pe/eh_frame.h"
#include "hook/pe/functions.h"
#include "hook/pe/pe.h"
#include "hook/pe/symbols.h"
#include "injector/symbols/undecorate.h"
#include "tests/unit/fuzztime.h"
#include "tests/unit/tap.h"
#include "tests/unit/xorshift.h"

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }

enum { SYN_SIZE = 0x800, SYN_LFANEW = 0x80 };

/* An i386 exe: .text at rva 0x1000 (file 0x400), .idata at 0x2000 (file
 * 0x600) holding an import descriptor whose FirstThunk array is at 0x2040
 * (two 4-byte entries), the import directory set, no IAT directory; two
 * COFF function symbols (`_f` at .text+0, `_g@8` at .text+0x10) and one
 * long name through the string table. */
static uint8_t *synthetic_pe32(size_t *size)
{
    uint8_t *b = calloc(1, SYN_SIZE);
    b[0] = 'M';
    b[1] = 'Z';
    put32(b + 0x3C, SYN_LFANEW);
    uint8_t *pe = b + SYN_LFANEW;
    memcpy(pe, "PE\0\0", 4);
    uint8_t *fh = pe + 4;
    put16(fh, 0x14C);
    put16(fh + 2, 2);
    put32(fh + 4, 0x5EEDF00D);
    put32(fh + 8, 0x700);          /* symbol table */
    put32(fh + 12, 3);
    put16(fh + 16, 224);           /* PE32 optional header with 16 directories */
    put16(fh + 18, 0x0102);
    uint8_t *opt = fh + 20;
    put16(opt, 0x10B);
    put32(opt + 16, 0x1000);       /* entry */
    put32(opt + 28, 0x00400000);   /* ImageBase */
    put32(opt + 32, 0x1000);
    put32(opt + 36, 0x200);
    put32(opt + 56, 0x3000);       /* SizeOfImage */
    put32(opt + 60, 0x400);
    put32(opt + 92, 16);
    put32(opt + 96 + 1 * 8, 0x2000);   /* import directory */
    put32(opt + 96 + 1 * 8 + 4, 40);
    uint8_t *sh = opt + 224;
    memcpy(sh, ".text", 5);
    put32(sh + 8, 0x20);
    put32(sh + 12, 0x1000);
    put32(sh + 16, 0x200);
    put32(sh + 20, 0x400);
    put32(sh + 36, 0x60000020);
    memcpy(sh + 40, ".idata", 6);
    put32(sh + 48, 0x100);
    put32(sh + 52, 0x2000);
    put32(sh + 56, 0x100);
    put32(sh + 60, 0x600);
    put32(sh + 76, 0xC0000040);
    memset(b + 0x400, 0xC3, 0x20);     /* ret ... */
    uint8_t *desc = b + 0x600;
    put32(desc + 12, 0x2080);          /* Name */
    put32(desc + 16, 0x2040);          /* FirstThunk */
    put32(b + 0x640, 0x2090);
    put32(b + 0x644, 0x20A0);
    memcpy(b + 0x680, "k.dll", 5);
    uint8_t *st = b + 0x700;
    memcpy(st, "_f", 2);
    put16(st + 12, 1);
    put16(st + 14, 0x20);
    st[16] = 2;
    put32(st + 18 + 4, 4);             /* long name at string table offset 4 */
    put32(st + 18 + 8, 0x10);
    put16(st + 18 + 12, 1);
    put16(st + 18 + 14, 0x20);
    st[18 + 16] = 2;
    memcpy(st + 36, "_data", 5);
    put16(st + 36 + 12, 2);
    st[36 + 16] = 2;
    uint8_t *strtab = st + 54;
    put32(strtab, 4 + 10);
    memcpy(strtab + 4, "_gee@8", 7);
    *size = (size_t)(strtab + 14 - b);
    return b;
}

static void test_synthetic(void)
{
    size_t size;
    uint8_t *b = synthetic_pe32(&size);
    hs_pe pe;
    int st = hs_pe_load_file(&pe, b, size);
    if (st != HS_PE_OK) {
        tap_fail("pe32/synthetic", "refused: %s", hs_pe_status_text(st));
        free(b);
        return;
    }
    tap_check(pe.bits == 32 && pe.machine == 0x14C && pe.image_base == 0x400000 && pe.entry_rva == 0x1000 &&
              pe.size_of_image == 0x3000 && pe.dir_rva[HS_DIR_IMPORT] == 0x2000 && pe.dir_size[HS_DIR_IMPORT] == 40 &&
              pe.nsections == 2 && !strcmp(pe.sections[1].name, ".idata") && !hs_pe_is_dll(&pe),
              "pe32/synthetic", "bits %d machine %#x base %#llx entry %#x dir1 %#x+%u sections %d",
              pe.bits, pe.machine, (unsigned long long)pe.image_base, pe.entry_rva, pe.dir_rva[1], pe.dir_size[1],
              pe.nsections);
    tap_check(hs_pe_is_iat(&pe, 0x2040) && hs_pe_is_iat(&pe, 0x2044) && !hs_pe_is_iat(&pe, 0x2048) &&
              !hs_pe_is_iat(&pe, 0x2042), "pe32/iat-entries",
              "4-byte entries at 0x2040 and 0x2044: %d %d, none at 0x2048: %d, 0x2042: %d",
              hs_pe_is_iat(&pe, 0x2040), hs_pe_is_iat(&pe, 0x2044), hs_pe_is_iat(&pe, 0x2048),
              hs_pe_is_iat(&pe, 0x2042));
    hs_pe_symtab syms;
    hs_pe_func *f = NULL;
    size_t n = 0;
    int ok = hs_pe_symbols(&pe, &syms) == 0 && hs_pe_functions(&pe, &f, &n) == 0;
    tap_check(ok && syms.count == 3 && n == 2 && f[0].rva == 0x1000 && f[0].size == 0x10 && f[1].rva == 0x1010 &&
              f[1].size == 0x10 && f[0].src == HS_SRC_SYMBOL &&
              !strcmp(hs_pe_symtab_at(&syms, 0x1010), "_gee@8"), "pe32/synthetic-symbols",
              "%zu symbols, %zu functions", syms.count, n);
    free(f);
    hs_pe_symtab_free(&syms);
    hs_pe_close(&pe);
    free(b);
}

/* The synthetic image with a third section, `.eh_frame` (named "/4" in
 * the header, through the string table), at rva 0x3000 (file 0x7c0): */
static uint8_t *with_eh_frame(size_t *size)
{
    size_t base_size;
    uint8_t *b = synthetic_pe32(&base_size);
    uint8_t *out = calloc(1, 0x900);
    memcpy(out, b, base_size);
    free(b);
    uint8_t *fh = out + SYN_LFANEW + 4;
    put16(fh + 2, 3);
    put32(fh + 20 + 56, 0x4000);               /* SizeOfImage */
    uint8_t *sh = fh + 20 + 224 + 80;
    memcpy(sh, "/4", 2);                       /* ".eh_frame", from the string table */
    put32(sh + 8, 0x100);
    put32(sh + 12, 0x3000);
    put32(sh + 16, 0x100);
    put32(sh + 20, 0x7c0);
    put32(sh + 36, 0x40000040);
    /* the string table: ".eh_frame" at 4, "_gee@8" after it */
    uint8_t *strtab = out + 0x700 + 54;
    put32(out + 0x700 + 18 + 4, 14);           /* _gee@8 moves to offset 14 */
    put32(strtab, 4 + 10 + 7);
    memcpy(strtab + 4, ".eh_frame", 10);
    memcpy(strtab + 14, "_gee@8", 7);
    uint8_t *e = out + 0x7c0;
    size_t at = 0;
    /* CIE 1: "zR", pointers pc-relative sdata4 (0x1b) */
    static const uint8_t cie_zr[] = { 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x7c, 8, 1, 0x1b, 0, 0, 0 };
    memcpy(e + at, cie_zr, sizeof cie_zr);
    at += sizeof cie_zr;                       /* 20 */
    /* FDE: _f at 0x1000, 0xd bytes (pc_begin relative to the field at 0x3000 + 28) */
    put32(e + at, 12);
    put32(e + at + 4, (uint32_t)at + 4);
    put32(e + at + 8, (uint32_t)(0x1000 - (0x3000 + at + 8)));
    put32(e + at + 12, 0xd);
    at += 16;
    /* FDE outside the code (.idata) */
    put32(e + at, 12);
    put32(e + at + 4, (uint32_t)at + 4);
    put32(e + at + 8, (uint32_t)(0x2000 - (0x3000 + at + 8)));
    put32(e + at + 12, 4);
    at += 16;
    put32(e + at, 0);                          /* a terminator, more after it */
    at += 4;
    size_t cie2 = at;                          /* CIE 2: no augmentation, absolute pointers */
    static const uint8_t cie_abs[] = { 0x0c, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0x7c, 8, 0, 0, 0 };
    memcpy(e + at, cie_abs, sizeof cie_abs);
    at += sizeof cie_abs;
    put32(e + at, 12);                         /* FDE: _gee@8 at 0x1010, 6 bytes */
    put32(e + at + 4, (uint32_t)(at + 4 - cie2));
    put32(e + at + 8, 0x00401010);
    put32(e + at + 12, 6);
    at += 16;
    size_t cie3 = at;                          /* CIE 3: an augmentation not read ("zX") */
    static const uint8_t cie_x[] = { 0x0c, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'X', 0, 1, 0x7c, 8, 0 };
    memcpy(e + at, cie_x, sizeof cie_x);
    at += sizeof cie_x;
    put32(e + at, 12);
    put32(e + at + 4, (uint32_t)(at + 4 - cie3));
    put32(e + at + 8, 0x00401018);
    put32(e + at + 12, 2);
    at += 16;
    *size = 0x7c0 + 0x100;
    return out;
}

static void test_eh_frame(void)
{
    size_t size;
    uint8_t *b = with_eh_frame(&size);
    hs_pe pe;
    int st = hs_pe_load_file(&pe, b, size);
    hs_pe_extent *x = NULL;
    size_t nx = 0;
    hs_pe_func *f = NULL;
    size_t n = 0;
    if (st != HS_PE_OK || hs_pe_eh_frame(&pe, &x, &nx) < 0 || hs_pe_functions(&pe, &f, &n) < 0) {
        tap_fail("pe32/eh-frame", "not read: %s", hs_pe_status_text(st));
        free(b);
        return;
    }
    tap_check(nx == 2 && x[0].rva == 0x1000 && x[0].size == 0xd && x[1].rva == 0x1010 && x[1].size == 6,
              "pe32/eh-frame", "%zu extents: %#x+%u, %#x+%u", nx, nx ? x[0].rva : 0, nx ? x[0].size : 0,
              nx > 1 ? x[1].rva : 0, nx > 1 ? x[1].size : 0);
    tap_check(n == 2 && f[0].size == 0xd && f[0].src == (HS_SRC_SYMBOL | HS_SRC_EHFRAME) && f[1].size == 6 &&
              f[1].src == (HS_SRC_SYMBOL | HS_SRC_EHFRAME), "pe32/eh-frame-functions",
              "%zu functions: %u bytes (src %#x), %u bytes (src %#x)", n, n ? f[0].size : 0, n ? f[0].src : 0,
              n > 1 ? f[1].size : 0, n > 1 ? f[1].src : 0);
    tap_check(!hs_pe_eh_frame_personality(&pe), "pe32/eh-frame-no-personality",
              "CIEs of \"zR\", \"\" and \"zX\" name no personality routine");
    free(x);
    free(f);
    hs_pe_close(&pe);
    free(b);
}

/* Images whose .eh_frame names a personality routine (g++'s "zPLR": C++
 * exceptions by DWARF-2 unwinding) and images whose does not (C: "zR"). */
static void test_eh_frame_personality(void)
{
    static const struct { const char *path; int personality; } images[] = {
        { "/usr/lib/gcc/i686-w64-mingw32/12-win32/libstdc++-6.dll", 1 },
        { "/usr/lib/gcc/i686-w64-mingw32/12-win32/libgcc_s_dw2-1.dll", 0 },
        { "build/tests32/groundtruth.exe", 0 },
        { "build/tests32/cxxexc32.exe", 1 },   /* (libstdc++ linked in) */
    };
    for (size_t i = 0; i < sizeof images / sizeof images[0]; i++) {
        char name[200];
        snprintf(name, sizeof name, "pe32/eh-frame-personality/%s", strrchr(images[i].path, '/') + 1);
        size_t size = 0;
        const char *why = NULL;
        uint8_t *b = hs_load_file(images[i].path, &size, &why);
        hs_pe pe;
        if (!b || hs_pe_load_file(&pe, b, size) != HS_PE_OK) {
            tap_fail(name, "%s is not there or not read", images[i].path);
            free(b);
            continue;
        }
        int got = hs_pe_eh_frame_personality(&pe);
        tap_check(got == images[i].personality, name, "%s a personality routine", got ? "names" : "does not name");
        hs_pe_close(&pe);
        free(b);
    }
}

static void test_calls(void)
{
    size_t size;
    uint8_t *b = with_eh_frame(&size);
    /* _f (rva 0x1000, 0xd bytes): call 0x1018; jmp short +0 (inside);
     * call 0x1010 (_gee@8, known); jmp 0x101c (out of it: a tail call) */
    static const uint8_t code[] = { 0xE8, 0x13, 0, 0, 0, 0xEB, 0x00, 0xE8, 0x04, 0, 0, 0, 0xE9 };
    memcpy(b + 0x400, code, sizeof code);
    hs_pe pe;
    hs_pe_func *f = NULL;
    size_t n = 0;
    uint32_t *t = NULL;
    size_t nt = 0;
    if (hs_pe_load_file(&pe, b, size) != HS_PE_OK || hs_pe_functions(&pe, &f, &n) < 0) {
        tap_fail("pe32/calls", "not read");
        free(b);
        return;
    }
    /* the jmp rel32's displacement lies past _f's 0xd bytes: make the
     * extent cover it, as an FDE would */
    memcpy(pe.owned + 0x100d, "\x0b\0\0\0", 4);
    f[0].size = 0x11;
    int rc = hs_call_targets(&pe, f, n, &t, &nt);
    tap_check(rc == 0 && nt == 2 && t[0] == 0x1018 && t[1] == 0x101c, "pe32/calls", "rc %d, %zu targets: %#x %#x", rc,
              nt, nt ? t[0] : 0, nt > 1 ? t[1] : 0);
    free(t);
    free(f);
    hs_pe_close(&pe);
    free(b);
}

static void test_hotpatch(void)
{
    size_t size;
    uint8_t *b = with_eh_frame(&size);
    uint8_t *text = b + 0x400;
    put32(b + SYN_LFANEW + 4 + 20 + 224 + 8, 0x80);   /* .text: 0x80 bytes */
    static const uint8_t entry[5] = { 0x8B, 0xFF, 0x55, 0x8B, 0xEC };
    memset(text + 0x20, 0xCC, 0x60);
    memcpy(text + 0x25, entry, 5);   /* 0x1025: after 5 int3 (0x20-0x24): found */
    memset(text + 0x2b, 0x90, 5);
    memcpy(text + 0x30, entry, 5);   /* 0x1030: after 5 nop (0x2b-0x2f): found */
    memcpy(text + 0x3c, entry, 5);   /* 0x103c: after int3, nop, int3 x3 (0x37-0x3b): mixed */
    text[0x38] = 0x90;
    memcpy(text + 0x46, entry, 5);   /* 0x1046: after ret, int3 x4 (0x41-0x45): 4 only */
    text[0x41] = 0xC3;
    memset(text + 0x01, 0xCC, 5);
    memcpy(text + 0x06, entry, 5);   /* 0x1006: inside _f's FDE extent (0x1000, 0xd bytes) */
    hs_pe pe;
    hs_pe_func *f = NULL;
    size_t n = 0;
    if (hs_pe_load_file(&pe, b, size) != HS_PE_OK || hs_pe_functions(&pe, &f, &n) < 0) {
        tap_fail("pe32/hotpatch", "not read");
        free(b);
        return;
    }
    char got[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < n && len < sizeof got - 32; i++)
        if (f[i].src & HS_SRC_HOTPATCH)
            len += (size_t)snprintf(got + len, sizeof got - len, " %#x", f[i].rva);
    tap_check(!strcmp(got, " 0x1025 0x1030"), "pe32/hotpatch", "hot-patchable entries at%s, expected 0x1025 0x1030",
              got);
    free(f);
    hs_pe_close(&pe);
    free(b);
}

static void test_refused(void)
{
    size_t size;
    uint8_t *b = synthetic_pe32(&size);
    uint8_t *fh = b + SYN_LFANEW + 4;
    hs_pe pe;
    static const struct {
        uint16_t machine, magic, opt_size;
        int want;
    } cases[] = {
        { 0x8664, 0x10B, 224, HS_PE_CORRUPT },       /* x86-64 with a PE32 header */
        { 0x14C, 0x20B, 224, HS_PE_CORRUPT },        /* i386 with a PE32+ header */
        { 0x1C4, 0x10B, 224, HS_PE_OTHER_MACHINE },  /* ARM */
        { 0x14C, 0x10B, 92, HS_PE_CORRUPT },         /* shorter than PE32's directories' start */
        { 0x14C, 0x10B, 0xF000, HS_PE_CORRUPT },     /* past the file */
        { 0x14C, 0x10B, 96, HS_PE_OK },              /* no directories */
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *c = malloc(size);
        memcpy(c, b, size);
        uint8_t *cfh = c + (fh - b);
        put16(cfh, cases[i].machine);
        put16(cfh + 20, cases[i].magic);
        put16(cfh + 16, cases[i].opt_size);
        int st = hs_pe_load_file(&pe, c, size);
        if (st != cases[i].want) {
            tap_diag("case %zu: %s, expected %s", i, hs_pe_status_text(st), hs_pe_status_text(cases[i].want));
            bad++;
        }
        if (st == HS_PE_OK)
            hs_pe_close(&pe);
        free(c);
    }
    tap_check(bad == 0, "pe32/refused", "%d of %zu cases wrong", bad, sizeof cases / sizeof cases[0]);
    free(b);
}

static uint8_t *slurp(const char *path, size_t *size)
{
    const char *why = NULL;
    return hs_load_file(path, size, &why);
}

static void test_groundtruth(void)
{
    const char *path = "build/tests32/groundtruth.exe";
    size_t size = 0;
    uint8_t *b = slurp(path, &size);
    hs_pe pe;
    if (!b || hs_pe_load_file(&pe, b, size) != HS_PE_OK) {
        tap_fail("pe32/groundtruth", "%s is not built or not read (make test-build)", path);
        free(b);
        return;
    }
    hs_pe_symtab syms;
    hs_pe_func *f = NULL;
    size_t n = 0;
    int ok = hs_pe_symbols(&pe, &syms) == 0 && hs_pe_functions(&pe, &f, &n) == 0;
    /* main's COFF symbol starts a function */
    int main_found = 0;
    for (size_t i = 0; ok && i < syms.count; i++)
        if (!strcmp(syms.syms[i].name, "_main") && syms.syms[i].kind == HS_SYM_FUNC)
            for (size_t k = 0; k < n; k++)
                main_found |= f[k].rva == syms.syms[i].rva && f[k].size > 0;
    tap_check(ok && pe.bits == 32 && pe.image_base == 0x400000 && pe.dir_size[HS_DIR_EXCEPTION] == 0 && main_found,
              "pe32/groundtruth", "bits %d, base %#llx, .pdata %u bytes, %zu functions, main %s", pe.bits,
              (unsigned long long)pe.image_base, pe.dir_size[HS_DIR_EXCEPTION], n, main_found ? "found" : "missing");
    free(f);
    if (ok)
        hs_pe_symtab_free(&syms);
    hs_pe_close(&pe);
    free(b);
}

static uint64_t rnd_state = XORSHIFT_SEED;
static uint64_t rnd(void)
{
    return xorshift64(&rnd_state);
}

/* Read or refuse; when read, walk what the readers give. */
static int read_all(const uint8_t *b, size_t size)
{
    hs_pe pe;
    if (hs_pe_load_file(&pe, b, size) != HS_PE_OK)
        return 0;
    hs_pe_symtab syms;
    hs_pe_func *f = NULL;
    size_t n = 0;
    if (hs_pe_symbols(&pe, &syms) == 0) {
        for (size_t i = 0; i < syms.count; i++)
            (void)strlen(syms.syms[i].name);
        hs_pe_symtab_free(&syms);
    }
    if (hs_pe_functions(&pe, &f, &n) == 0)
        free(f);
    (void)hs_pe_is_iat(&pe, 0x2040);
    (void)hs_pe_eh_frame_personality(&pe);
    hs_pe_close(&pe);
    return 1;
}

/* Mutations in [lo, hi) of a copy of orig, `cases` of them (more under
 * HS_FUZZ_SECONDS); headers mutated are sometimes refused, a symbol table
 * never makes the image unreadable. */
static void fuzz_bytes(const char *name, const uint8_t *orig, size_t size, size_t lo, size_t hi, int cases,
                       int headers)
{
    uint8_t *buf = malloc(size);
    int read = 0, c;
    double deadline = fuzz_time_slice();
    for (c = 0; fuzz_time_more(c, cases, deadline); c++) {
        memcpy(buf, orig, size);
        int k = 1 + (int)(rnd() % 4);
        for (int j = 0; j < k; j++) {
            size_t at = lo + (size_t)(rnd() % (hi - lo));
            uint64_t how = rnd() % 3;
            buf[at] = how == 0 ? (uint8_t)rnd() : how == 1 ? 0xFF : 0;
        }
        read += read_all(buf, size);
    }
    tap_diag("%s: %d cases, %d read", name, c, read);
    tap_check(headers ? read > 0 && read < c : read == c, name, "%d of %d mutated images read: expected %s", read, c,
              headers ? "some read, some refused" : "all read");
    free(buf);
}

static void fuzz(void)
{
    fuzz_time_begin(5);
    size_t size;
    uint8_t *b = synthetic_pe32(&size);
    int read = 0;
    for (size_t n = 0; n < size; n++) {   /* every truncation, each a buffer of its own length */
        uint8_t *t = malloc(n ? n : 1);
        memcpy(t, b, n);
        read += read_all(t, n);
        free(t);
    }
    /* read from the length that holds the section table on (0x1C8) */
    tap_check(read == (int)(size - 0x1C8), "fuzz/pe32/truncated", "%d of %zu truncations read, expected %zu", read,
              size, size - 0x1C8);
    fuzz_bytes("fuzz/pe32/synthetic", b, size, 0, size, 20000, 1);
    free(b);
    b = with_eh_frame(&size);
    fuzz_bytes("fuzz/pe32/eh-frame", b, size, 0x7c0, size, 5000, 0);
    free(b);
    size_t gsize = 0;
    uint8_t *g = slurp("build/tests32/groundtruth.exe", &gsize);
    if (!g) {
        tap_fail("fuzz/pe32/groundtruth-headers", "build/tests32/groundtruth.exe is not built");
        tap_fail("fuzz/pe32/groundtruth-symbols", "build/tests32/groundtruth.exe is not built");
        tap_fail("fuzz/pe32/groundtruth-eh-frame", "build/tests32/groundtruth.exe is not built");
        return;
    }
    fuzz_bytes("fuzz/pe32/groundtruth-headers", g, gsize, 0, 0x400, 2000, 1);
    hs_pe pe;
    size_t slo = 0, elo = 0, ehi = 0;
    if (hs_pe_load_file(&pe, g, gsize) == HS_PE_OK) {
        slo = pe.symtab_off;
        const hs_pe_section *e = hs_pe_section_named(&pe, ".eh_frame");
        if (e) {
            elo = e->raw_off;
            ehi = e->raw_off + e->raw_size;
        }
        hs_pe_close(&pe);
    }
    if (elo && ehi <= gsize && elo < ehi)
        fuzz_bytes("fuzz/pe32/groundtruth-eh-frame", g, gsize, elo, ehi, 1000, 0);
    else
        tap_fail("fuzz/pe32/groundtruth-eh-frame", "no .eh_frame");
    if (slo && slo < gsize)
        fuzz_bytes("fuzz/pe32/groundtruth-symbols", g, gsize, slo, gsize, 1000, 0);
    else
        tap_fail("fuzz/pe32/groundtruth-symbols", "no COFF symbol table");
    free(g);
}

/* gcc's ms_hook_prologue with unwind tables (Wine's i386 DLLs): the symbol
 * at the hot-patchable entry, the FDE from 5 bytes in (`.cfi_startproc`
 * after the entry's bytes). The synthetic image's _gee@8 moves to 0x100b,
 * its FDE (0x1010, 6 bytes) stays: one function 0x100b-0x1016, hookable,
 * not a 5-byte one and a nameless one. */
static void test_hotpatch_fde(void)
{
    size_t size;
    uint8_t *b = with_eh_frame(&size);
    uint8_t *text = b + 0x400;
    static const uint8_t entry[5] = { 0x8B, 0xFF, 0x55, 0x8B, 0xEC };
    put32(b + 0x7c0 + 20 + 12, 6);             /* _f's FDE: 0x1000, 6 bytes */
    memset(text + 0x06, 0xCC, 5);
    memcpy(text + 0x0b, entry, 5);             /* 0x100b: the hot-patchable entry */
    text[0x10] = 0x5D;                         /* 0x1010: pop ebp, where the FDE starts */
    put32(b + 0x700 + 18 + 8, 0x0b);           /* _gee@8 at 0x100b */
    hs_pe pe;
    hs_pe_func *f = NULL;
    size_t n = 0;
    if (hs_pe_load_file(&pe, b, size) != HS_PE_OK || hs_pe_functions(&pe, &f, &n) < 0) {
        tap_fail("pe32/hotpatch-fde", "not read");
        free(b);
        return;
    }
    char got[256] = "";
    size_t len = 0;
    const hs_pe_func *g = NULL;
    for (size_t i = 0; i < n && len < sizeof got - 40; i++) {
        len += (size_t)snprintf(got + len, sizeof got - len, " %#x+%u/%#x", f[i].rva, f[i].size, f[i].src);
        if (f[i].rva == 0x100b)
            g = &f[i];
    }
    int bad_split = 0;
    for (size_t i = 0; i < n; i++)
        bad_split |= f[i].rva == 0x1010;
    tap_check(g && g->size == 11 && (g->src & HS_SRC_EHFRAME) && (g->src & HS_SRC_HOTPATCH) && !bad_split &&
              hs_pe_func_bounded(&pe, g), "pe32/hotpatch-fde", "functions (rva+size/src):%s; expected 0x100b+11 "
              "from the entry and the FDE, nothing at 0x1010", got);
    free(f);
    hs_pe_close(&pe);
    free(b);
}

static void test_undname(void)
{
    static const struct {
        const char *raw;
        int coff;
        const char *want;
    } cases[] = {
        { "_cdecl_add", 1, "cdecl_add" },
        { "_stdcall_mix@12", 1, "stdcall_mix" },
        { "@fastcall_mul@12", 1, "fastcall_mul" },
        { "_vec@@16", 1, "vec" },
        { "___main", 1, "__main" },
        { "__Z5scalel", 1, "scale(long)" },
        { "__ZL6workerPv@4", 1, "worker(void*)" },       /* g++'s static WINAPI function */
        { "@_Z3mulii@8", 1, "mul(int, int)" },          /* g++'s fastcall C++ function */
        { "_ZN2ns1fEi@4", 0, "ns::f(int)" },
        { "_WaitForMultipleObjectsEx@20.part.0", 1, "WaitForMultipleObjectsEx.part.0" },  /* Wine's kernelbase */
        { "@f@8.constprop.0", 1, "f.constprop.0" },
        { "__ZL1fPv@4.part.0", 1, "f(void*) [clone .part.0]" },
        { "__pformat_int.isra.0", 1, "_pformat_int.isra.0" },
        { "_f@", 1, "f@" },                /* no argument bytes: only the underscore comes off */
        { "@f", 1, NULL },                 /* not a fastcall name */
        { "_", 1, NULL },
        { ".text", 1, NULL },
        { "main", 1, NULL },
        { "_open", 0, NULL },              /* msvcrt's export: the underscore is the name's */
        { "GetTickCount@0", 0, "GetTickCount" },
        { "@f@4", 0, "f" },
        { "x@1a", 0, NULL },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *u = hs_undecorate_sym32(cases[i].raw, HS_UND_FULL, cases[i].coff);
        int ok = cases[i].want ? u && !strcmp(u, cases[i].want) : !u;
        if (!ok) {
            tap_diag("%s (%s) -> %s, expected %s", cases[i].raw, cases[i].coff ? "coff" : "export", u ? u : "NULL",
                     cases[i].want ? cases[i].want : "NULL");
            bad++;
        }
        free(u);
    }
    tap_check(bad == 0, "undname/i386", "%d of %zu names wrong", bad, sizeof cases / sizeof cases[0]);
}

int main(void)
{
    test_synthetic();
    test_refused();
    test_eh_frame();
    test_eh_frame_personality();
    test_calls();
    test_hotpatch();
    test_hotpatch_fde();
    test_groundtruth();
    test_undname();
    fuzz();
    return tap_status();
}
