/*
 * tests/unit/test_cfi32.c - the x86 walker's frame data from `.eh_frame`
 * (hook/unwind/cfi32.h), on build/tests32/cpusplit.exe (i686 gcc -O1, no
 * frame pointers; tests/targets/cpusplit.c), against what its tables
 * say (i686-w64-mingw32-objdump --dwarf=frames reads the same):
 *
 *   cfi32/read         its FDEs read
 *   cfi32/entries      at each FDE's first byte the return address is at
 *                      esp (CFA = esp + 4) and ebp is the caller's
 *   cfi32/leaf         burn_a, which pushes edi, esi, ebx and takes 8
 *                      bytes: 16 bytes above esp after its pushes, 24
 *                      once it allocated, back to 0 at its ret
 *   cfi32/saved-ebp    round_of_calls pushes ebp first: ebp is saved 4
 *                      bytes below its return address once pushed
 *   cfi32/realigned    main realigns its stack (a CFA expression): no
 *                      frame data (the walker uses the ebp chain there)
 *   cfi32/outside      no FDE covers an rva outside every function
 *   cfi32/rows         the table as rows (hs_cfi32_each_row), in order,
 *                      not overlapping: at every byte of every FDE the
 *                      row covering it is the frame data there, and no
 *                      row covers a byte without any
 *   cfi32/frame-pointer  build/tests32/leafcall.exe's framed(), which
 *                      keeps a frame pointer: after `mov ebp,esp` the CFA
 *                      is ebp's (uses_ebp: the chain holds), before it esp's
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hook/pe/eh_frame.h"
#include "hook/pe/pe.h"
#include "hook/pe/symbols.h"
#include "hook/unwind/cfi32.h"
#include "tests/unit/tap.h"

#define BASE 0x400000u

static uint32_t sym(const hs_pe_symtab *t, const char *name)
{
    for (size_t i = 0; i < t->count; i++)
        if (!strcmp(t->syms[i].name, name) && t->syms[i].kind == HS_SYM_FUNC)
            return t->syms[i].rva;
    return 0;
}

/* The frame data at rva as "rc locals ebp_saved_at uses_ebp". */
static const char *at(const hs_cfi32 *c, uint32_t rva, char *buf, size_t len)
{
    hs_uw32_frame_data fd;
    memset(&fd, 0, sizeof fd);
    int rc = hs_cfi32_frame_data(c, rva, BASE, &fd);
    snprintf(buf, len, "%d %u %u %d", rc, rc ? fd.locals : 0, rc ? fd.ebp_saved_at : 0, rc ? fd.uses_ebp : 0);
    return buf;
}

static int first_bytes(void *ctx, const hs_eh_fde *f)
{
    const hs_cfi32 *c = ctx;
    char b[64];
    if (strcmp(at(c, f->rva, b, sizeof b), "1 0 0 0"))
        tap_fail("cfi32/entries", "at the first byte of the FDE at rva %#x: %s", f->rva, b);
    return 0;
}

/* hs_cfi32_each_row's rows, kept. */
typedef struct rows {
    struct {
        uint32_t rva, end;
        hs_uw32_frame_data fd;
    } r[8192];
    size_t n;
    int disordered;            /* a row not after the one before it */
} rows;

static void keep_row(void *ctx, uint32_t rva, uint32_t end, const hs_uw32_frame_data *fd)
{
    rows *t = ctx;
    if (t->n == sizeof t->r / sizeof t->r[0] || end <= rva || (t->n && rva < t->r[t->n - 1].end)) {
        t->disordered = 1;
        return;
    }
    t->r[t->n].rva = rva;
    t->r[t->n].end = end;
    t->r[t->n++].fd = *fd;
}

typedef struct rows_check {
    const hs_cfi32 *c;
    const rows *t;
    size_t bytes, wrong;
    char first[160];
} rows_check;

/* Every byte of an FDE: the row covering it says what the frame data at
 * it says (no row where it has none). */
static int same_as_rows(void *ctx, const hs_eh_fde *f)
{
    rows_check *k = ctx;
    for (uint32_t rva = f->rva; rva - f->rva < f->size; rva++) {
        size_t lo = 0, hi = k->t->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (k->t->r[mid].end <= rva)
                lo = mid + 1;
            else
                hi = mid;
        }
        char want[64], got[64] = "0 0 0 0";
        at(k->c, rva, want, sizeof want);
        if (lo < k->t->n && k->t->r[lo].rva <= rva) {
            const hs_uw32_frame_data *fd = &k->t->r[lo].fd;
            snprintf(got, sizeof got, "1 %u %u %d", fd->locals, fd->ebp_saved_at, fd->uses_ebp);
        }
        k->bytes++;
        if (strcmp(want, got) && !k->wrong++)
            snprintf(k->first, sizeof k->first, "at rva %#x: frame data %s, its row %s", rva, want, got);
    }
    return 0;
}

int main(void)
{
    const char *path = "build/tests32/cpusplit.exe";
    const char *why = NULL;
    size_t size = 0;
    uint8_t *bytes = hs_load_file(path, &size, &why);
    hs_pe pe;
    hs_pe_symtab syms;
    if (!bytes || hs_pe_load_file(&pe, bytes, size) != HS_PE_OK || hs_pe_symbols(&pe, &syms) < 0) {
        tap_fail("cfi32/entries", "%s is not built or not read (make test-build)", path);
        return tap_status();
    }
    hs_cfi32 *c = hs_cfi32_from_pe(&pe);
    tap_check(c && hs_cfi32_count(c) > 20, "cfi32/read", "%zu FDEs", hs_cfi32_count(c));
    int failed = tap_failures();
    hs_pe_eh_frame_fdes(&pe, first_bytes, c);
    if (tap_failures() == failed)
        tap_ok("cfi32/entries");
    char b[5][64];
    uint32_t a = sym(&syms, "_burn_a"), r = sym(&syms, "_round_of_calls"), m = sym(&syms, "_main");
    /* burn_a: push edi; push esi; push ebx; sub esp,8; ... add esp,8; pop ebx; pop esi; pop edi; ret */
    at(c, a + 3, b[0], 64);
    at(c, a + 6, b[1], 64);
    at(c, a + 0x75, b[2], 64);
    tap_check(a && !strcmp(b[0], "1 12 0 0") && !strcmp(b[1], "1 20 0 0") && !strcmp(b[2], "1 0 0 0"), "cfi32/leaf",
              "burn_a at %#x: after its pushes %s, in its body %s, at its ret %s", a, b[0], b[1], b[2]);
    /* round_of_calls: push ebp; push edi; push esi; push ebx; sub esp,0x5c */
    at(c, r + 1, b[0], 64);
    at(c, r + 7, b[1], 64);
    tap_check(r && !strcmp(b[0], "1 4 4 0") && !strcmp(b[1], "1 108 4 0"), "cfi32/saved-ebp",
              "round_of_calls at %#x: after push ebp %s, in its body %s", r, b[0], b[1]);
    at(c, m + 0x20, b[0], 64);
    tap_check(m && !strcmp(b[0], "0 0 0 0"), "cfi32/realigned", "main's body: %s", b[0]);
    at(c, 0x10, b[0], 64);
    tap_check(!strcmp(b[0], "0 0 0 0"), "cfi32/outside", "rva 0x10: %s", b[0]);
    static rows t;
    hs_cfi32_each_row(c, keep_row, &t);
    rows_check k = { c, &t, 0, 0, "" };
    hs_pe_eh_frame_fdes(&pe, same_as_rows, &k);
    tap_check(!t.disordered && t.n > 20 && k.bytes > 1000 && !k.wrong, "cfi32/rows",
              "%zu rows%s over %zu bytes, %zu unlike the frame data there%s%s", t.n,
              t.disordered ? " (some out of order)" : "", k.bytes, k.wrong, k.wrong ? ", first " : "", k.first);
    hs_cfi32_free(c);
    hs_pe_symtab_free(&syms);
    hs_pe_close(&pe);
    free(bytes);

    path = "build/tests32/leafcall.exe";
    bytes = hs_load_file(path, &size, &why);
    if (!bytes || hs_pe_load_file(&pe, bytes, size) != HS_PE_OK || hs_pe_symbols(&pe, &syms) < 0) {
        tap_fail("cfi32/frame-pointer", "%s is not built or not read (make test-build)", path);
        return tap_status();
    }
    c = hs_cfi32_from_pe(&pe);
    uint32_t f = sym(&syms, "_framed");   /* push ebp; mov ebp,esp; push edi; ... */
    at(c, f + 1, b[0], 64);
    at(c, f + 8, b[1], 64);
    tap_check(f && !strcmp(b[0], "1 4 4 0") && !strcmp(b[1], "1 0 0 1"), "cfi32/frame-pointer",
              "framed at %#x: after push ebp %s, in its body %s", f, b[0], b[1]);
    hs_cfi32_free(c);
    hs_pe_symtab_free(&syms);
    hs_pe_close(&pe);
    free(bytes);
    return tap_status();
}
