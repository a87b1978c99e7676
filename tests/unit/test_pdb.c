/*
 * tests/unit/test_pdb.c - hookscope's symbol code on Linux: the line and
 * symbol tables' rules, the PDB locator over an in-memory file system
 * (every search place, the exact messages), undecoration of Itanium names,
 * and corrupt inputs (PDBs, DWARF line tables, debug directories) fuzzed
 * with a fixed seed: every case gives a result or a one-line error, never
 * a crash or a read outside the input (run under ASan by `make
 * unit-asan`).
 *
 * Needs the fixtures (make fixtures): build/fixtures/pdb/pdbc.exe, .pdb,
 * pdbcxx.pdb, pdbc32.pdb, pdbc-gcc.exe. That the reader gets every procedure, public
 * name and line right is checked against llvm-pdbutil by
 * tests/test_pdb_native.py.
 *
 *   table/...      line lookup: ranges, several entries at one address,
 *                  hidden lines, first line; symbol lookup by rva
 *   undname/...    Itanium names, full and name-only forms
 *   rsds/...       the fixture's CodeView record
 *   locate/...     each place, store layouts, URLs passed over, the order,
 *                  mismatch and not-found messages, a corrupt candidate
 *   synth/...      a PDB written here with what lld never writes: OMAP,
 *                  S_GPROC32_ID / S_LPROC32_DPC / S_THUNK32, line columns,
 *                  two files interleaved, a hidden line; FPO_DATA records
 *                  (moved by OMAP, removed, a trap frame) and FrameData
 *                  records with LLVM's and MSVC's programs
 *   debuginfo/...    the one-call source: a PDB image, a DWARF image, a
 *                  refused PDB
 *   fuzz/...       thousands of mutated inputs per reader
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/pe/pe.h"
#include "injector/symbols/debuginfo.h"
#include "injector/symbols/dwarf.h"
#include "injector/symbols/locate.h"
#include "injector/symbols/pdb.h"
#include "injector/symbols/rsds.h"
#include "injector/symbols/symfs.h"
#include "injector/symbols/symtab.h"
#include "injector/symbols/undecorate.h"
#include "tests/unit/fuzztime.h"
#include "tests/unit/tap.h"
#include "tests/unit/xorshift.h"

static uint8_t *slurp(const char *path, size_t *size)
{
    uint8_t *d = NULL;
    char err[256];
    if (hs_symfs_host()->read(NULL, path, &d, size, err, sizeof err) != 0)
        return NULL;
    return d;
}

/* ---- tables ------------------------------------------------------------- */

static void test_tables(void)
{
    hs_linetab t;
    memset(&t, 0, sizeof t);
    int a = hs_linetab_file(&t, "a.c"), b = hs_linetab_file(&t, "b.h");
    tap_check(a == 0 && b == 1 && hs_linetab_file(&t, "a.c") == 0, "table/files",
              "file indexes %d %d", a, b);
    /* one range [0x100, 0x140): a.c:10 (zero-length) and a.c:11 at 0x100,
     * b.h:5 at 0x110, a.c:12 at 0x120; a second range [0x200, 0x210) */
    hs_linetab_add(&t, 0x120, 0x140, 12, a);
    hs_linetab_add(&t, 0x100, 0x140, 10, a);
    hs_linetab_add(&t, 0x100, 0x140, 11, a);
    hs_linetab_add(&t, 0x110, 0x140, 5, b);
    hs_linetab_add(&t, 0x200, 0x210, 0xfeefee, a);
    hs_linetab_add(&t, 0x208, 0x210, 20, a);
    hs_linetab_finish(&t);
    static const struct {
        uint32_t rva;
        const char *file;
        uint32_t line;
    } want[] = {
        { 0xff, NULL, 0 },   { 0x100, "a.c", 11 }, { 0x10f, "a.c", 11 }, { 0x110, "b.h", 5 },
        { 0x11f, "b.h", 5 }, { 0x120, "a.c", 12 }, { 0x13f, "a.c", 12 }, { 0x140, NULL, 0 },
        { 0x1ff, NULL, 0 },  { 0x200, NULL, 0 },   { 0x207, NULL, 0 },   { 0x208, "a.c", 20 },
        { 0x20f, "a.c", 20 }, { 0x210, NULL, 0 },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *f = NULL;
        uint32_t l = 0;
        int got = hs_linetab_lookup(&t, want[i].rva, &f, &l);
        if (got != (want[i].file != NULL) ||
            (got && (strcmp(f, want[i].file) != 0 || l != want[i].line))) {
            tap_diag("rva %#x: got %d %s:%u", want[i].rva, got, got ? f : "-", l);
            bad++;
        }
    }
    tap_check(bad == 0, "table/lookup", "%d of %zu lookups wrong", bad, sizeof want / sizeof want[0]);
    const char *f = NULL;
    uint32_t l = 0;
    int first = hs_linetab_first_at(&t, 0x100, &f, &l);
    tap_check(first && l == 10 && !strcmp(f, "a.c"), "table/first-line",
              "first line at 0x100: %d %s:%u (want a.c:10)", first, first ? f : "-", l);
    tap_check(!hs_linetab_first_at(&t, 0x101, &f, &l) && !hs_linetab_first_at(&t, 0x200, &f, &l),
              "table/first-line-none", "a first line where no entry starts, or a hidden one");
    hs_linetab_free(&t);

    hs_symtab s;
    memset(&s, 0, sizeof s);
    hs_symtab_add(&s, 0x300, 0, "pub", "_Z3pubv", HS_SYMSRC_PDB, HS_SYMK_PUBLIC_CODE, 1, NULL, 0);
    hs_symtab_add(&s, 0x100, 0x20, "f", NULL, HS_SYMSRC_PDB, HS_SYMK_PROC, 1, NULL, 0);
    hs_symtab_add(&s, 0x200, 0x10, "g", NULL, HS_SYMSRC_PDB, HS_SYMK_PROC, 0, NULL, 0);
    hs_symtab_set_line(&s, 2, "x.c", 7);
    hs_symtab_add(&s, 0x100, 0, "f_alias", NULL, HS_SYMSRC_PDB, HS_SYMK_PUBLIC, 1, NULL, 0);
    hs_symtab_finish(&s);
    const hs_sym *at = hs_symtab_at(&s, 0x100), *in = hs_symtab_containing(&s, 0x11f);
    const hs_sym *g = hs_symtab_at(&s, 0x200);
    tap_check(s.count == 4 && at && !strcmp(at->name, "f") && in == at &&
                  !hs_symtab_containing(&s, 0x120) && !hs_symtab_containing(&s, 0x300) &&
                  g && g->line == 7 && !strcmp(g->file, "x.c") && !strcmp(s.syms[3].raw, "_Z3pubv") &&
                  s.syms[0].raw == s.syms[0].name,
              "table/symbols", "sorted lookups by rva, containing procedure, first line, raw names");
    hs_symtab_free(&s);
}

/* ---- undecoration ----------------------------------------------------------- */

static void test_undname(void)
{
    static const struct {
        const char *raw, *full, *name;
    } cases[] = {
        { "_Z5scalel", "scale(long)", "scale" },
        { "_ZNK6shapes4Rect4areaEv", "shapes::Rect::area() const", "shapes::Rect::area" },
        { "_ZN4RingIiLi4EE3putEi", "Ring<int, 4>::put(int)", "Ring<int, 4>::put" },
        { "_ZZ11run_lambdasvENK3$_0clEii", "run_lambdas()::$_0::operator()(int, int) const",
          "run_lambdas()::$_0::operator()" },
        { "_Z1fi.constprop.0", "f(int) [clone .constprop.0]", "f [clone .constprop.0]" },
        { "_Z3fo", NULL, NULL },                  /* truncated: stays as it is */
        { "main", NULL, NULL },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *full = hs_undecorate_sym(cases[i].raw, HS_UND_FULL);
        char *name = hs_undecorate_sym(cases[i].raw, HS_UND_NAME);
        int ok = (cases[i].full ? full && !strcmp(full, cases[i].full) : !full) &&
                 (cases[i].name ? name && !strcmp(name, cases[i].name) : !name);
        if (!ok) {
            tap_diag("%s -> %s | %s", cases[i].raw, full ? full : "NULL", name ? name : "NULL");
            bad++;
        }
        free(full);
        free(name);
    }
    tap_check(bad == 0, "undname/itanium", "%d of %zu names wrong", bad, sizeof cases / sizeof cases[0]);
    char *m = hs_undecorate_sym("?overload@@YAHH@Z", HS_UND_FULL);
    tap_check(m == NULL, "undname/msvc-native", "the native build has no MSVC undecorator: %s",
              m ? m : "NULL");
    free(m);
}

/* ---- an in-memory file system -------------------------------------------------- */

typedef struct memfile {
    const char *path;
    const uint8_t *data;
    size_t size;
    int unreadable;
} memfile;

typedef struct memfs {
    memfile files[16];
    int n;
    char log[4096];          /* every path read, ';'-separated */
} memfs;

static int mem_read(void *ctx, const char *path, uint8_t **data, size_t *size, char *err,
                    size_t errlen)
{
    memfs *m = ctx;
    size_t l = strlen(m->log);
    snprintf(m->log + l, sizeof m->log - l, "%s;", path);
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->files[i].path, path)) {
            if (m->files[i].unreadable) {
                snprintf(err, errlen, "cannot open %s (error 5)", path);
                return -1;
            }
            *data = malloc(m->files[i].size ? m->files[i].size : 1);
            memcpy(*data, m->files[i].data, m->files[i].size);
            *size = m->files[i].size;
            return 0;
        }
    return 1;
}

static void memfs_add(memfs *m, const char *path, const uint8_t *d, size_t n)
{
    m->files[m->n].path = path;
    m->files[m->n].data = d;
    m->files[m->n].size = n;
    m->files[m->n].unreadable = 0;
    m->n++;
}

typedef struct fixture {
    uint8_t *exe, *pdb, *other;
    size_t exe_size, pdb_size, other_size;
    hs_pe pe;
    hs_rsds rsds;
    char key[42], guid[39], other_guid[39];
} fixture;

static int load_fixture(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->exe = slurp("build/fixtures/pdb/next/pdbc.exe", &f->exe_size);
    f->pdb = slurp("build/fixtures/pdb/pdbc.pdb", &f->pdb_size);
    f->other = slurp("build/fixtures/pdb/rebuilt/pdbc.pdb", &f->other_size);
    char err[256];
    if (!f->exe || !f->pdb || !f->other || hs_pe_load_file(&f->pe, f->exe, f->exe_size) != HS_PE_OK ||
        hs_pe_rsds(&f->pe, &f->rsds, err, sizeof err) != 1)
        return -1;
    hs_pdb p;
    if (hs_pdb_open(&p, f->other, f->other_size, err, sizeof err))
        return -1;
    hs_guid_text(p.guid, f->other_guid);
    hs_pdb_close(&p);
    hs_guid_text(f->rsds.guid, f->guid);
    hs_guid_age_key(f->rsds.guid, f->rsds.age, f->key);
    return 0;
}

/* locate through m; returns the status, *via and *path (static copies) */
static int locate(fixture *f, memfs *m, const char *image, const char *symbols, const char *nt,
                  char *msg, size_t msglen, char *path, size_t pathlen, const char **via)
{
    hs_symfs fs = { .read = mem_read, .ctx = m };
    hs_pdb_search s = { .image_path = image, .symbols = symbols, .nt_symbol_path = nt, .fs = &fs };
    hs_pdb_found found;
    m->log[0] = 0;
    msg[0] = 0;
    path[0] = 0;
    int st = hs_pdb_locate(&f->pe, &s, &found, msg, msglen);
    if (st == HS_LOC_FOUND) {
        snprintf(path, pathlen, "%s", found.path);
        *via = found.via;
        hs_pdb_found_free(&found);
    }
    return st;
}

static void test_rsds_and_locate(void)
{
    fixture f;
    if (load_fixture(&f)) {
        tap_fail("locate/fixture", "build/fixtures/pdb is not built (make fixtures)");
        return;
    }
    hs_pdb own;
    char err[512];
    int ok = hs_pdb_open(&own, f.pdb, f.pdb_size, err, sizeof err) == 0;
    tap_check(ok && !memcmp(own.guid, f.rsds.guid, 16) && own.age == f.rsds.age &&
                  !strcmp(f.rsds.path, "C:\\hookscope-absent\\pdbc.pdb") && !f.rsds.debug_stripped,
              "rsds/record", "image wants %s age %u at %s; the PDB is %s age %u", f.guid, f.rsds.age,
              f.rsds.path, ok ? "readable" : err, ok ? own.age : 0);
    if (ok)
        hs_pdb_close(&own);

    char msg[1024], path[1024], want[1024];
    const char *via = "";
    memfs m;
    int st;

    /* 1. the RSDS path comes first */
    memset(&m, 0, sizeof m);
    memfs_add(&m, "C:\\hookscope-absent\\pdbc.pdb", f.pdb, f.pdb_size);
    memfs_add(&m, "D:\\app\\pdbc.pdb", f.pdb, f.pdb_size);
    st = locate(&f, &m, "D:\\app\\pdbc.exe", NULL, NULL, msg, sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_FOUND && !strcmp(path, "C:\\hookscope-absent\\pdbc.pdb") &&
                  !strcmp(via, "rsds"),
              "locate/rsds-path", "status %d path %s via %s: %s", st, path, via, msg);

    /* 2. the image's folder (Windows and Unix paths) */
    memset(&m, 0, sizeof m);
    memfs_add(&m, "D:\\app\\pdbc.pdb", f.pdb, f.pdb_size);
    st = locate(&f, &m, "D:\\app\\pdbc.exe", NULL, NULL, msg, sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_FOUND && !strcmp(path, "D:\\app\\pdbc.pdb") && !strcmp(via, "image folder"),
              "locate/image-folder", "status %d path %s via %s: %s", st, path, via, msg);
    memset(&m, 0, sizeof m);
    memfs_add(&m, "/srv/app/pdbc.pdb", f.pdb, f.pdb_size);
    st = locate(&f, &m, "/srv/app/pdbc.exe", NULL, NULL, msg, sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_FOUND && !strcmp(path, "/srv/app/pdbc.pdb"), "locate/image-folder-unix",
              "status %d path %s: %s", st, path, msg);

    /* 3. --symbols entries in order, spaces trimmed */
    memset(&m, 0, sizeof m);
    memfs_add(&m, "E:\\two\\pdbc.pdb", f.pdb, f.pdb_size);
    st = locate(&f, &m, "D:\\app\\pdbc.exe", " E:\\one ; E:\\two\\;E:\\three", NULL, msg,
                sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_FOUND && !strcmp(path, "E:\\two\\pdbc.pdb") && !strcmp(via, "--symbols") &&
                  !strcmp(m.log, "C:\\hookscope-absent\\pdbc.pdb;D:\\app\\pdbc.pdb;E:\\one\\pdbc.pdb;"
                                 "E:\\two\\pdbc.pdb;"),
              "locate/symbols-list", "status %d path %s via %s, read %s", st, path, via, m.log);

    /* 4. _NT_SYMBOL_PATH with srv* (URL passed over), after --symbols */
    char store[256], tier2[256], nt[512];
    snprintf(store, sizeof store, "F:\\cache\\pdbc.pdb\\%s\\pdbc.pdb", f.key);
    memset(&m, 0, sizeof m);
    memfs_add(&m, store, f.pdb, f.pdb_size);
    snprintf(nt, sizeof nt, "G:\\plain;srv*F:\\cache*https://msdl.microsoft.com/download/symbols");
    st = locate(&f, &m, "D:\\app\\pdbc.exe", "E:\\one", nt, msg, sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_FOUND && !strcmp(path, store) && !strcmp(via, "_NT_SYMBOL_PATH") &&
                  !strstr(m.log, "http"),
              "locate/srv-store", "status %d path %s via %s, read %s", st, path, via, m.log);

    /* SRV*, symsrv*symsrv.dll*, cache* and the two-tier layout */
    snprintf(tier2, sizeof tier2, "F:\\cache\\pd\\pdbc.pdb\\%s\\pdbc.pdb", f.key);
    static const char *const forms[] = {
        "SRV*F:\\cache*http://localhost/", "symsrv*symsrv.dll*F:\\cache*https://x/",
        "cache*F:\\cache", "srv*F:\\none*F:\\cache",
    };
    int formbad = 0;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        for (int two = 0; two < 2; two++) {
            memset(&m, 0, sizeof m);
            memfs_add(&m, two ? tier2 : store, f.pdb, f.pdb_size);
            st = locate(&f, &m, "D:\\app\\pdbc.exe", forms[i], NULL, msg, sizeof msg, path,
                        sizeof path, &via);
            if (st != HS_LOC_FOUND || strcmp(path, two ? tier2 : store)) {
                tap_diag("%s (%s): status %d path %s: %s", forms[i], two ? "two-tier" : "flat", st,
                         path, msg);
                formbad++;
            }
        }
    }
    tap_check(formbad == 0, "locate/store-forms", "%d of %zu store forms failed", formbad,
              2 * sizeof forms / sizeof forms[0]);

    /* a plain folder is not a store: only DIR\name.pdb */
    memset(&m, 0, sizeof m);
    memfs_add(&m, store, f.pdb, f.pdb_size);
    st = locate(&f, &m, "D:\\app\\pdbc.exe", "F:\\cache", NULL, msg, sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_NOT_FOUND, "locate/plain-folder-is-not-a-store", "status %d path %s", st, path);

    /* 5. a PDB of another build: refused with both identities; a matching
     * one later wins */
    memset(&m, 0, sizeof m);
    memfs_add(&m, "D:\\app\\pdbc.pdb", f.other, f.other_size);
    st = locate(&f, &m, "D:\\app\\pdbc.exe", NULL, NULL, msg, sizeof msg, path, sizeof path, &via);
    snprintf(want, sizeof want,
             "D:\\app\\pdbc.pdb does not match pdbc.exe (PDB GUID %s age 1, image wants %s age 1)",
             f.other_guid, f.guid);
    tap_check(st == HS_LOC_MISMATCH && !strcmp(msg, want), "locate/mismatch-message",
              "status %d: \"%s\", want \"%s\"", st, msg, want);
    memfs_add(&m, "E:\\syms\\pdbc.pdb", f.pdb, f.pdb_size);
    st = locate(&f, &m, "D:\\app\\pdbc.exe", "E:\\syms", NULL, msg, sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_FOUND && !strcmp(path, "E:\\syms\\pdbc.pdb"), "locate/mismatch-then-match",
              "status %d path %s: %s", st, path, msg);

    /* the age alone */
    hs_rsds keep = f.rsds;
    uint8_t *exe2 = malloc(f.exe_size);
    memcpy(exe2, f.exe, f.exe_size);
    hs_pe pe2;
    /* the record's age field, found through the parsed record's path */
    uint8_t *rec = NULL;
    for (size_t i = 0; i + 24 < f.exe_size; i++)
        if (!memcmp(exe2 + i, "RSDS", 4) && !memcmp(exe2 + i + 4, keep.guid, 16)) {
            rec = exe2 + i;
            break;
        }
    if (rec) {
        rec[20] = 3;
        rec[21] = rec[22] = rec[23] = 0;
    }
    hs_pe saved = f.pe;
    if (rec && hs_pe_load_file(&pe2, exe2, f.exe_size) == HS_PE_OK) {
        f.pe = pe2;
        memset(&m, 0, sizeof m);
        memfs_add(&m, "D:\\app\\pdbc.pdb", f.pdb, f.pdb_size);
        st = locate(&f, &m, "D:\\app\\pdbc.exe", NULL, NULL, msg, sizeof msg, path, sizeof path, &via);
        snprintf(want, sizeof want,
                 "D:\\app\\pdbc.pdb does not match pdbc.exe (PDB GUID %s age 1, image wants %s age 3)",
                 f.guid, f.guid);
        tap_check(st == HS_LOC_MISMATCH && !strcmp(msg, want), "locate/age-mismatch",
                  "status %d: \"%s\"", st, msg);
        hs_pe_close(&pe2);
    } else {
        tap_fail("locate/age-mismatch", "cannot patch the fixture's RSDS age");
    }
    f.pe = saved;
    free(exe2);

    /* 6. nothing anywhere: one line naming the places */
    memset(&m, 0, sizeof m);
    st = locate(&f, &m, "D:\\app\\pdbc.exe", "E:\\a;E:\\b", "srv*F:\\c*http://x/", msg, sizeof msg,
                path, sizeof path, &via);
    snprintf(want, sizeof want,
             "no symbols for pdbc.exe: pdbc.pdb not found (looked at C:\\hookscope-absent\\pdbc.pdb, "
             "the image's folder, 2 --symbols places, 1 _NT_SYMBOL_PATH place)");
    tap_check(st == HS_LOC_NOT_FOUND && !strcmp(msg, want), "locate/not-found-message",
              "status %d: \"%s\"", st, msg);

    /* 7. a corrupt file and an unreadable one are reported when nothing
     * better is found, and passed over when something is */
    static const uint8_t junk[64] = "Microsoft C/C++ MSF 7.00\r\n\x1a" "DS\0\0\0";
    memset(&m, 0, sizeof m);
    memfs_add(&m, "D:\\app\\pdbc.pdb", junk, sizeof junk);
    st = locate(&f, &m, "D:\\app\\pdbc.exe", NULL, NULL, msg, sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_BAD && !strncmp(msg, "D:\\app\\pdbc.pdb: corrupt PDB: ", 30) &&
                  !strchr(msg, '\n'),
              "locate/corrupt-message", "status %d: \"%s\"", st, msg);
    memfs_add(&m, "E:\\s\\pdbc.pdb", f.pdb, f.pdb_size);
    st = locate(&f, &m, "D:\\app\\pdbc.exe", "E:\\s", NULL, msg, sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_FOUND && !strcmp(path, "E:\\s\\pdbc.pdb"), "locate/corrupt-then-match",
              "status %d path %s: %s", st, path, msg);
    memset(&m, 0, sizeof m);
    memfs_add(&m, "D:\\app\\pdbc.pdb", f.pdb, f.pdb_size);
    m.files[0].unreadable = 1;
    st = locate(&f, &m, "D:\\app\\pdbc.exe", NULL, NULL, msg, sizeof msg, path, sizeof path, &via);
    tap_check(st == HS_LOC_BAD && !strcmp(msg, "cannot open D:\\app\\pdbc.pdb (error 5)"),
              "locate/unreadable-message", "status %d: \"%s\"", st, msg);

    /* 8. an image without a CodeView record */
    hs_pe gcc;
    size_t gsize = 0;
    uint8_t *g = slurp("build/fixtures/pdb/pdbc-gcc.exe", &gsize);
    if (g && hs_pe_load_file(&gcc, g, gsize) == HS_PE_OK) {
        hs_pe keep_pe = f.pe;
        f.pe = gcc;
        memset(&m, 0, sizeof m);
        st = locate(&f, &m, "D:\\app\\pdbc-gcc.exe", NULL, NULL, msg, sizeof msg, path, sizeof path,
                    &via);
        tap_check(st == HS_LOC_NO_RSDS && !strcmp(msg, "pdbc-gcc.exe names no PDB (no CodeView record)") &&
                      !m.log[0],
                  "locate/no-rsds", "status %d: \"%s\", read %s", st, msg, m.log);
        f.pe = keep_pe;
        hs_pe_close(&gcc);
    } else {
        tap_fail("locate/no-rsds", "build/fixtures/pdb/pdbc-gcc.exe is not built");
    }
    free(g);
    hs_pe_close(&f.pe);
    free(f.exe);
    free(f.pdb);
    free(f.other);
}

/* ---- a synthetic PDB: what lld never writes ---------------------------------------
 *
 * A tiny MSF writer and the streams of a PDB whose image was rearranged after
 * linking (OMAP), with S_GPROC32_ID, S_LPROC32_DPC and S_THUNK32 records, a
 * line subsection with columns whose two files interleave, a hidden line
 * (0xfeefee) and MSVC-decorated publics. Layout (rvas of the image as linked,
 * section 1 at 0x1000, then moved by OMAP):
 *   0x1000..0x1040 -> 0x5000   f_id (S_GPROC32_ID, 0x10 at 0x1010, 0x20 bytes)
 *   0x1040..0x1080 -> removed   dead (S_LPROC32, at 0x1050: dropped)
 *   0x1080..       -> 0x6000   g_dpc (S_LPROC32_DPC, at 0x1080, 8 bytes),
 *                              thunk (S_THUNK32 at 0x1090, 6 bytes)
 * Lines of f_id (subsection at 1:0x10, 0x20 bytes, with columns):
 *   a.c: 0x0 line 10, 0x0 line 11, 0x18 line 0xfeefee; b.h: 0x8 line 5
 * Publics: ?f_id@@YAXXZ at 1:0x10 (f_id's raw name), ?pub_only@@YAXXZ
 * at 1:0x88 (code, no procedure).
 */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put32(buf *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    put(b, x, 4);
}

static void put16(buf *b, uint16_t v)
{
    uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    put(b, x, 2);
}

static void pad4(buf *b)
{
    while (b->n % 4)
        put(b, "", 1);
}

static void set16(buf *b, size_t at, uint16_t v)
{
    b->p[at] = (uint8_t)v;
    b->p[at + 1] = (uint8_t)(v >> 8);
}

/* MSF with block size 512 from streams[0..n) */
static uint8_t *msf_write(buf *streams, int n, size_t *size)
{
    enum { BS = 512 };
    buf dir = { 0 }, file = { 0 };
    uint32_t next = 3;                       /* 0 superblock, 1-2 free block maps */
    uint32_t first[16];
    for (int i = 0; i < n; i++) {
        first[i] = next;
        next += (uint32_t)((streams[i].n + BS - 1) / BS);
    }
    put32(&dir, (uint32_t)n);
    for (int i = 0; i < n; i++)
        put32(&dir, (uint32_t)streams[i].n);
    for (int i = 0; i < n; i++)
        for (uint32_t b = 0; b < (streams[i].n + BS - 1) / BS; b++)
            put32(&dir, first[i] + b);
    uint32_t dir_block = next, map_block = next + (uint32_t)((dir.n + BS - 1) / BS);
    uint32_t nblocks = map_block + 1;
    file.cap = (size_t)nblocks * BS;
    file.p = calloc(1, file.cap);
    file.n = file.cap;
    static const char magic[32] = "Microsoft C/C++ MSF 7.00\r\n\x1a" "DS\0\0\0";
    memcpy(file.p, magic, 32);
    uint32_t hdr[6] = { BS, 1, nblocks, (uint32_t)dir.n, 0, map_block };
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 4; k++)
            file.p[32 + 4 * i + k] = (uint8_t)(hdr[i] >> (8 * k));
    for (int i = 0; i < n; i++)
        if (streams[i].n)
            memcpy(file.p + (size_t)first[i] * BS, streams[i].p, streams[i].n);
    memcpy(file.p + (size_t)dir_block * BS, dir.p, dir.n);
    for (uint32_t b = 0; b < (dir.n + BS - 1) / BS; b++)
        for (int k = 0; k < 4; k++)
            file.p[(size_t)map_block * BS + 4 * b + k] = (uint8_t)((dir_block + b) >> (8 * k));
    free(dir.p);
    *size = file.n;
    return file.p;
}

static void sym_proc(buf *b, uint16_t kind, uint32_t off, uint16_t seg, uint32_t len, const char *name)
{
    size_t at = b->n;
    put16(b, 0);
    put16(b, kind);
    put32(b, 0);
    put32(b, 0);
    put32(b, 0);
    put32(b, len);
    put32(b, 0);
    put32(b, len);
    put32(b, 0x1001);
    put32(b, off);
    put16(b, seg);
    put(b, "", 1);
    put(b, name, strlen(name) + 1);
    pad4(b);
    set16(b, at, (uint16_t)(b->n - at - 2));
    put16(b, 2);                             /* S_END */
    put16(b, 0x0006);
}

static void sym_pub(buf *b, uint32_t flags, uint32_t off, uint16_t seg, const char *name)
{
    size_t at = b->n;
    put16(b, 0);
    put16(b, 0x110e);
    put32(b, flags);
    put32(b, off);
    put16(b, seg);
    put(b, name, strlen(name) + 1);
    pad4(b);
    set16(b, at, (uint16_t)(b->n - at - 2));
}

static void section_header(buf *b, const char *name, uint32_t va, uint32_t size)
{
    char n[8] = { 0 };
    memcpy(n, name, strlen(name) < 8 ? strlen(name) : 8);
    put(b, n, 8);
    put32(b, size);
    put32(b, va);
    for (int i = 0; i < 6; i++)
        put32(b, 0);
}

#define SYNTH_STREAMS 13
#define SYNTH_PROGRAM_LLVM "$T0 .raSearch = $eip $T0 ^ = $esp $T0 4 + = $ebp $T0 8 - ^ ="
#define SYNTH_PROGRAM_MSVC "$T0 $ebp = $eip $T0 4 + ^ = $ebp $T0 ^ = $esp $T0 8 + ="

/* an FPO_DATA record: start, size, locals and parameters in dwords, then
 * prolog bytes, saved registers, fUseBP, cbFrame */
static void fpo_data(buf *b, uint32_t start, uint32_t size, uint32_t locals, uint16_t params, uint8_t prolog,
                     int regs, int use_bp, int frame)
{
    put32(b, start);
    put32(b, size);
    put32(b, locals);
    put16(b, params);
    put16(b, (uint16_t)(prolog | regs << 8 | use_bp << 12 | frame << 14));
}

/* a FrameData record (sizes in bytes; program: an offset in "/names") */
static void frame_data(buf *b, uint32_t rva, uint32_t size, uint32_t locals, uint32_t params, uint16_t prolog,
                       uint16_t saved, uint32_t flags, uint32_t program)
{
    put32(b, rva);
    put32(b, size);
    put32(b, locals);
    put32(b, params);
    put32(b, 0);                     /* max stack */
    put32(b, program);
    put16(b, prolog);
    put16(b, saved);
    put32(b, flags);
}

static uint8_t *synthetic_pdb(size_t *size)
{
    buf s[SYNTH_STREAMS];
    memset(s, 0, sizeof s);
    /* 5: "/names": signature, version, buffer, an (empty) hash table */
    static const char names[] = "\0a.c\0b.h\0" SYNTH_PROGRAM_LLVM "\0" SYNTH_PROGRAM_MSVC;
                                                           /* a.c at 1, b.h at 5, the programs at 9... */
    put32(&s[5], 0xeffeeffe);
    put32(&s[5], 1);
    put32(&s[5], sizeof names);
    put(&s[5], names, sizeof names);
    put32(&s[5], 1);
    put32(&s[5], 0);
    put32(&s[5], 2);
    /* 1: info: version, signature, age, GUID, named streams {"/names": 5} */
    static const uint8_t guid[16] = { 0x78, 0x56, 0x34, 0x12, 0xbc, 0x9a, 0xf0, 0xde,
                                      1, 2, 3, 4, 5, 6, 7, 8 };
    put32(&s[1], 20000404);
    put32(&s[1], 0x5eed);
    put32(&s[1], 7);
    put(&s[1], guid, 16);
    put32(&s[1], 7);
    put(&s[1], "/names", 7);
    put32(&s[1], 1);                 /* size */
    put32(&s[1], 2);                 /* capacity */
    put32(&s[1], 1);                 /* present: one word, bucket 1 */
    put32(&s[1], 2);
    put32(&s[1], 0);                 /* deleted: no words */
    put32(&s[1], 0);                 /* (offset 0 in the buffer, stream 5) */
    put32(&s[1], 5);
    put32(&s[1], 0);                 /* no features */
    /* 6: the module: signature, symbols, no C11, C13 lines */
    buf syms = { 0 }, c13 = { 0 };
    put32(&syms, 4);
    sym_proc(&syms, 0x1147, 0x10, 1, 0x20, "f_id");
    sym_proc(&syms, 0x110f, 0x50, 1, 0x10, "dead");
    sym_proc(&syms, 0x1155, 0x80, 1, 8, "g_dpc");
    size_t at = syms.n;                                    /* S_THUNK32 */
    put16(&syms, 0);
    put16(&syms, 0x1102);
    put32(&syms, 0);
    put32(&syms, 0);
    put32(&syms, 0);
    put32(&syms, 0x90);
    put16(&syms, 1);
    put16(&syms, 6);
    put(&syms, "", 1);
    put(&syms, "thunk", 6);
    pad4(&syms);
    set16(&syms, at, (uint16_t)(syms.n - at - 2));
    /* C13: FILECHKSMS (a.c at 0, b.h at 8), LINES for f_id */
    put32(&c13, 0xf4);
    put32(&c13, 16);
    put32(&c13, 1);                  /* a.c */
    put32(&c13, 0);                  /* no checksum, padded */
    put32(&c13, 5);                  /* b.h */
    put32(&c13, 0);
    buf lines = { 0 };
    put32(&lines, 0x10);
    put16(&lines, 1);
    put16(&lines, 1);                /* CV_LINES_HAVE_COLUMNS */
    put32(&lines, 0x20);
    put32(&lines, 0);                /* a.c block: 3 entries */
    put32(&lines, 3);
    put32(&lines, 12 + 3 * 12);
    put32(&lines, 0x0);
    put32(&lines, 10u | 0x80000000u);
    put32(&lines, 0x0);
    put32(&lines, 11u | 0x80000000u);
    put32(&lines, 0x18);
    put32(&lines, 0xfeefeeu);
    for (int i = 0; i < 3; i++)
        put32(&lines, 0x00050001);   /* columns */
    put32(&lines, 8);                /* b.h block: 1 entry */
    put32(&lines, 1);
    put32(&lines, 12 + 12);
    put32(&lines, 0x8);
    put32(&lines, 5u | 0x80000000u);
    put32(&lines, 0x00020001);
    put32(&c13, 0xf2);
    put32(&c13, (uint32_t)lines.n);
    put(&c13, lines.p, lines.n);
    free(lines.p);
    put(&s[6], syms.p, syms.n);
    put(&s[6], c13.p, c13.n);
    put32(&s[6], 0);                 /* global refs */
    /* 7: the symbol records: publics */
    sym_pub(&s[7], 2, 0x10, 1, "?f_id@@YAXXZ");
    sym_pub(&s[7], 2, 0x88, 1, "?pub_only@@YAXXZ");
    /* 8: the section headers of the image as it is; 10: as it was linked */
    section_header(&s[8], ".text", 0x5000, 0x2000);
    section_header(&s[10], ".text", 0x1000, 0x200);
    /* 9: OMAP from the linked image to the final one */
    put32(&s[9], 0x1000);
    put32(&s[9], 0x5000);
    put32(&s[9], 0x1040);
    put32(&s[9], 0);
    put32(&s[9], 0x1080);
    put32(&s[9], 0x6000);
    /* 3: DBI: header, one module, the debug header */
    buf mod = { 0 };
    put32(&mod, 0);
    for (int i = 0; i < 7; i++)
        put32(&mod, 0);              /* section contribution */
    put16(&mod, 0);
    put16(&mod, 6);                  /* its stream */
    put32(&mod, (uint32_t)syms.n);
    put32(&mod, 0);
    put32(&mod, (uint32_t)c13.n);
    put16(&mod, 2);
    put16(&mod, 0);
    put32(&mod, 0);
    put32(&mod, 0);
    put32(&mod, 0);
    put(&mod, "synth.obj", 10);
    put(&mod, "synth.obj", 10);
    pad4(&mod);
    free(syms.p);
    free(c13.p);
    put32(&s[3], 0xffffffffu);
    put32(&s[3], 19990903);
    put32(&s[3], 7);
    put16(&s[3], 0xffff);            /* globals */
    put16(&s[3], 0);
    put16(&s[3], 0xffff);            /* publics hash */
    put16(&s[3], 0);
    put16(&s[3], 7);                 /* symbol records */
    put16(&s[3], 0);
    put32(&s[3], (uint32_t)mod.n);
    put32(&s[3], 0);
    put32(&s[3], 0);
    put32(&s[3], 0);
    put32(&s[3], 0);
    put32(&s[3], 0);
    put32(&s[3], 22);                /* optional debug header: 11 streams */
    put32(&s[3], 0);
    put16(&s[3], 0);
    put16(&s[3], 0x8664);
    put32(&s[3], 0);
    put(&s[3], mod.p, mod.n);
    free(mod.p);
    uint16_t dbg[11] = { 11, 0xffff, 0xffff, 0xffff, 9, 8, 0xffff, 0xffff, 0xffff, 12, 10 };
    for (int i = 0; i < 11; i++)
        put16(&s[3], dbg[i]);
    /* 11: FPO_DATA (addresses as linked: OMAP moves them): a frame
     * without a frame pointer, one in code OMAP removed, a trap frame */
    fpo_data(&s[11], 0x1010, 0x20, 2, 1, 3, 2, 0, 0);
    fpo_data(&s[11], 0x1050, 0x10, 0, 0, 0, 0, 0, 0);
    fpo_data(&s[11], 0x1080, 0x10, 0, 0, 0, 0, 0, 1);
    /* 12: FrameData: a function start (LLVM's program: ebp saved 8 below
     * the return address), and the record of its next prologue step
     * (MSVC's program of a frame on ebp) */
    uint32_t llvm = 9, msvc = llvm + (uint32_t)strlen(SYNTH_PROGRAM_LLVM) + 1;
    frame_data(&s[12], 0x1088, 0x10, 12, 8, 2, 8, 4, llvm);
    frame_data(&s[12], 0x1089, 0x0f, 12, 8, 1, 8, 0, msvc);
    uint8_t *pdb = msf_write(s, SYNTH_STREAMS, size);
    for (int i = 0; i < SYNTH_STREAMS; i++)
        free(s[i].p);
    return pdb;
}

/* the x86 frame data of the synthetic PDB: every record exactly, and the
 * lookups the walker makes */
static void test_synthetic_frames(const hs_pdb *p)
{
    char err[256] = "";
    hs_fpo32 *t = hs_fpo32_new();
    int rc = hs_pdb_frames(p, t, err, sizeof err);
    static const struct {
        uint32_t begin, end, locals, params, saved, prolog, ebp_at;
        bool ebp;
    } want[] = {
        { 0x5010, 0x5030, 8, 4, 8, 3, 0, false },       /* FPO_DATA, moved by OMAP */
        { 0x6008, 0x6018, 12, 8, 8, 2, 8, false },      /* a start: its prolog */
        { 0x6009, 0x6018, 12, 8, 8, 0, 0, true },       /* a later step: prolog 0 */
    };
    size_t n = sizeof want / sizeof want[0];
    int bad = rc != 0 || hs_fpo32_count(t) != n;
    uint32_t end;
    const hs_uw32_frame_data *fd;
    for (size_t i = 0; (fd = hs_fpo32_record(t, i, &end)) != NULL; i++) {
        tap_diag("frame %#x-%#x locals %u params %u saved %u prolog %u ebp %d at %u", fd->begin, end, fd->locals,
                 fd->params, fd->saved_regs, fd->prolog, fd->uses_ebp, fd->ebp_saved_at);
        if (i >= n || fd->begin != want[i].begin || end != want[i].end || fd->locals != want[i].locals ||
            fd->params != want[i].params || fd->saved_regs != want[i].saved || fd->prolog != want[i].prolog ||
            fd->uses_ebp != want[i].ebp || fd->ebp_saved_at != want[i].ebp_at)
            bad = 1;
    }
    tap_check(!bad, "synth/frames", "rc %d (%s), %zu records (want %zu)", rc, err, hs_fpo32_count(t), n);
    /* lookups: the record that starts last and covers the address */
    hs_uw32_frame_data got;
    uint32_t base = 0x400000;
    int ok = hs_fpo32_frame_data(t, 0x5010, base, &got) == 1 && got.begin == base + 0x5010 &&
             hs_fpo32_frame_data(t, 0x502f, base, &got) == 1 && got.begin == base + 0x5010 &&
             hs_fpo32_frame_data(t, 0x5030, base, &got) == 0 &&
             hs_fpo32_frame_data(t, 0x6008, base, &got) == 1 && got.begin == base + 0x6008 &&
             hs_fpo32_frame_data(t, 0x6017, base, &got) == 1 && got.begin == base + 0x6009 && got.uses_ebp &&
             hs_fpo32_frame_data(t, 0x6018, base, &got) == 0 && hs_fpo32_frame_data(t, 0x500f, base, &got) == 0;
    tap_check(ok, "synth/frames lookup", "a lookup gave the wrong record");
    hs_fpo32_free(t);
}

static void test_synthetic(void)
{
    size_t size = 0;
    uint8_t *data = synthetic_pdb(&size);
    hs_pdb p;
    hs_symtab st;
    hs_linetab lt;
    char err[256] = "", g[39] = "";
    memset(&st, 0, sizeof st);
    memset(&lt, 0, sizeof lt);
    int rc = hs_pdb_open(&p, data, size, err, sizeof err);
    if (rc == 0) {
        hs_guid_text(p.guid, g);
        rc = hs_pdb_read(&p, &st, &lt, err, sizeof err);
    }
    tap_check(rc == 0 && p.age == 7 && !strcmp(g, "{12345678-9ABC-DEF0-0102-030405060708}"),
              "synth/identity", "rc %d (%s), age %u, GUID %s", rc, err, p.age, g);
    if (rc) {
        free(data);
        return;
    }
    static const struct {
        uint32_t rva, size;
        int kind, global;
        const char *name, *raw;
    } want[] = {
        { 0x5010, 0x20, HS_SYMK_PROC, 1, "f_id", "?f_id@@YAXXZ" },
        { 0x6000, 8, HS_SYMK_PROC, 0, "g_dpc", "g_dpc" },
        { 0x6008, 0, HS_SYMK_PUBLIC_CODE, 1, "?pub_only@@YAXXZ", "?pub_only@@YAXXZ" },
        { 0x6010, 6, HS_SYMK_THUNK, 0, "thunk", "thunk" },
    };
    int bad = st.count != sizeof want / sizeof want[0];
    for (size_t i = 0; !bad && i < st.count; i++) {
        const hs_sym *s = &st.syms[i];
        if (s->rva != want[i].rva || s->size != want[i].size || s->kind != want[i].kind ||
            s->is_global != want[i].global || strcmp(s->name, want[i].name) ||
            strcmp(s->raw, want[i].raw)) {
            tap_diag("symbol %zu: %#x %u kind %d global %d %s / %s", i, s->rva, s->size, s->kind,
                     s->is_global, s->name, s->raw);
            bad = 1;
        }
    }
    if (st.count != sizeof want / sizeof want[0])
        for (size_t i = 0; i < st.count; i++)
            tap_diag("symbol %#x %u %s", st.syms[i].rva, st.syms[i].size, st.syms[i].name);
    tap_check(!bad, "synth/symbols",
              "OMAP, _ID/_DPC procedures, a thunk, a procedure in removed code, publics "
              "(%zu symbols)", st.count);
    /* lines: a.c:11 covers 0x5010..0x5018 (a.c:10 is zero-length), b.h:5
     * 0x5018..0x5028, the hidden entry at 0x5028 has no line */
    static const struct {
        uint32_t rva;
        const char *at;
    } lines[] = { { 0x500f, NULL }, { 0x5010, "a.c:11" }, { 0x5017, "a.c:11" }, { 0x5018, "b.h:5" },
                  { 0x5027, "b.h:5" }, { 0x5028, NULL }, { 0x502f, NULL }, { 0x5030, NULL } };
    bad = 0;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const char *f;
        uint32_t l;
        char got[64] = "";
        if (hs_linetab_lookup(&lt, lines[i].rva, &f, &l))
            snprintf(got, sizeof got, "%s:%u", f, l);
        if (lines[i].at ? strcmp(got, lines[i].at) != 0 : got[0] != 0) {
            tap_diag("line at %#x: \"%s\", want \"%s\"", lines[i].rva, got,
                     lines[i].at ? lines[i].at : "");
            bad++;
        }
    }
    const hs_sym *f = hs_symtab_at(&st, 0x5010);
    tap_check(!bad && f && f->line == 10 && f->file && !strcmp(f->file, "a.c"), "synth/lines",
              "%d lookups wrong; f_id's first line %s:%u (want a.c:10)", bad,
              f && f->file ? f->file : "-", f ? f->line : 0);
    hs_symtab_free(&st);
    hs_linetab_free(&lt);
    test_synthetic_frames(&p);
    hs_pdb_close(&p);
    free(data);
}

/* ---- the one-call module source ------------------------------------------------ */

static void test_debuginfo(void)
{
    fixture f;
    if (load_fixture(&f)) {
        tap_fail("debuginfo/fixture", "build/fixtures/pdb is not built (make fixtures)");
        return;
    }
    memfs m;
    memset(&m, 0, sizeof m);
    memfs_add(&m, "D:\\app\\pdbc.pdb", f.pdb, f.pdb_size);
    hs_symfs fs = { .read = mem_read, .ctx = &m };
    hs_pdb_search s = { .image_path = "D:\\app\\pdbc.exe", .fs = &fs };
    hs_debuginfo ms;
    int rc = hs_debuginfo_load(&ms, &f.pe, &s);
    /* the same as reading the PDB directly */
    hs_pdb p;
    hs_symtab st;
    hs_linetab lt;
    char err[256];
    memset(&st, 0, sizeof st);
    memset(&lt, 0, sizeof lt);
    int direct = hs_pdb_open(&p, f.pdb, f.pdb_size, err, sizeof err) == 0 &&
                 hs_pdb_read(&p, &st, &lt, err, sizeof err) == 0;
    size_t procs = 0, same = direct && st.count == ms.syms.count && lt.count == ms.lines.count;
    for (size_t i = 0; same && i < st.count; i++) {
        same = st.syms[i].rva == ms.syms.syms[i].rva && st.syms[i].size == ms.syms.syms[i].size &&
               !strcmp(st.syms[i].name, ms.syms.syms[i].name);
        procs += st.syms[i].kind == HS_SYMK_PROC;
    }
    const hs_sym *main_sym = NULL;
    for (size_t i = 0; i < ms.syms.count; i++)
        if (ms.syms.syms[i].kind == HS_SYMK_PROC && !strcmp(ms.syms.syms[i].name, "main"))
            main_sym = &ms.syms.syms[i];
    const char *file = NULL;
    uint32_t line = 0;
    int has_line = main_sym && hs_linetab_lookup(&ms.lines, main_sym->rva + 1, &file, &line);
    tap_check(rc == 0 && ms.source == HS_SYMSRC_PDB && ms.status == HS_LOC_FOUND &&
                  !strcmp(ms.pdb_path, "D:\\app\\pdbc.pdb") && !ms.message[0] && same && procs == 24 &&
                  has_line && strstr(file, "pdbc.c") && main_sym->line && main_sym->line <= line,
              "debuginfo/pdb", "rc %d source %d status %d, %zu procedures, same as a direct read %d, "
              "main's line %s:%u: %s", rc, ms.source, ms.status, procs, (int)same,
              has_line ? file : "-", line, ms.message);
    hs_debuginfo_free(&ms);
    hs_symtab_free(&st);
    hs_linetab_free(&lt);
    if (direct)
        hs_pdb_close(&p);

    memset(&m, 0, sizeof m);
    memfs_add(&m, "D:\\app\\pdbc.pdb", f.other, f.other_size);
    rc = hs_debuginfo_load(&ms, &f.pe, &s);
    tap_check(rc == -1 && ms.status == HS_LOC_MISMATCH && ms.source == 0 && ms.syms.count == 0 &&
                  !strncmp(ms.message, "D:\\app\\pdbc.pdb does not match pdbc.exe (PDB GUID ",
                           strlen("D:\\app\\pdbc.pdb does not match pdbc.exe (PDB GUID ")),
              "debuginfo/refused", "rc %d status %d: %s", rc, ms.status, ms.message);
    hs_debuginfo_free(&ms);

    size_t gsize = 0;
    uint8_t *g = slurp("build/fixtures/pdb/pdbc-gcc.exe", &gsize);
    hs_pe gpe;
    if (g && hs_pe_load_file(&gpe, g, gsize) == HS_PE_OK) {
        hs_pdb_search gs = { .image_path = "D:\\app\\pdbc-gcc.exe", .fs = &fs };
        rc = hs_debuginfo_load(&ms, &gpe, &gs);
        tap_check(rc == 0 && ms.source == HS_SYMSRC_DWARF && ms.status == HS_LOC_NO_RSDS &&
                      ms.syms.count == 0 && ms.lines.count > 1000 && !ms.message[0],
                  "debuginfo/dwarf", "rc %d source %d status %d, %zu lines: %s", rc, ms.source,
                  ms.status, ms.lines.count, ms.message);
        hs_debuginfo_free(&ms);
        hs_pe_close(&gpe);
    } else {
        tap_fail("debuginfo/dwarf", "build/fixtures/pdb/pdbc-gcc.exe is not built");
    }
    free(g);
    hs_pe_close(&f.pe);
    free(f.exe);
    free(f.pdb);
    free(f.other);
}

/* ---- fuzzing ------------------------------------------------------------------------- */

static uint64_t rng_state = XORSHIFT_SEED;

static uint64_t rnd(void)
{
    return xorshift64(&rng_state);
}

static const uint32_t interesting[] = { 0, 1, 2, 4, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff,
                                        0x80000000u, 0xfffffffe, 0xffffffffu, 512, 4096, 0x10000 };

/* one mutation at offset off of buf */
static void mutate_at(uint8_t *buf, size_t size, size_t off)
{
    switch (rnd() % 4) {
    case 0:
        buf[off] ^= (uint8_t)(1u << (rnd() % 8));
        break;
    case 1:
        buf[off] = (uint8_t)rnd();
        break;
    default:
        if (off + 4 <= size) {
            uint32_t v = rnd() % 2 ? interesting[rnd() % (sizeof interesting / sizeof interesting[0])]
                                   : (uint32_t)rnd() % 0x20000;
            memcpy(buf + off, &v, 4);
        }
    }
}

/* file offsets of the blocks of stream i (a map for targeted mutations) */
static size_t stream_offsets(const hs_msf *m, uint32_t i, size_t *out, size_t max)
{
    size_t n = 0;
    uint32_t s = hs_msf_stream_size(m, i);
    uint32_t nb = (s + m->block_size - 1) / m->block_size;
    for (uint32_t b = 0; b < nb && n < max; b++)
        out[n++] = (size_t)m->blocks[m->first_block[i] + b] * m->block_size;
    return n;
}

static void fuzz_pdb_bytes(const char *name, uint8_t *orig, size_t size, int cases);

static void fuzz_pdb(const char *path, int cases)
{
    size_t size = 0;
    uint8_t *orig = slurp(path, &size);
    char name[128];
    snprintf(name, sizeof name, "fuzz/pdb/%s", strrchr(path, '/') + 1);
    if (!orig) {
        tap_fail(name, "%s is not built (make fixtures)", path);
        return;
    }
    fuzz_pdb_bytes(name, orig, size, cases);
}

/* mutates copies of orig (which it frees) */
static void fuzz_pdb_bytes(const char *name, uint8_t *orig, size_t size, int cases)
{
    char err[512];
    hs_msf msf;
    if (hs_msf_open(&msf, orig, size, err, sizeof err)) {
        tap_fail(name, "the unmutated PDB does not open: %s", err);
        free(orig);
        return;
    }
    /* where the interesting bytes are: the superblock, the directory and
     * its block map, and every stream */
    static size_t blocks[8192];
    uint32_t bs = msf.block_size;
    size_t nblk = 0;
    blocks[nblk++] = 0;
    for (uint32_t i = 1; i < msf.nstreams && nblk < 8192; i++)
        nblk += stream_offsets(&msf, i, blocks + nblk, 8192 - nblk);
    hs_msf_close(&msf);

    uint8_t *buf = malloc(size);
    int opened = 0, read_ok = 0, errors = 0, bad_err = 0, c;
    double deadline = fuzz_time_slice();
    for (c = 0; fuzz_time_more(c, cases, deadline); c++) {
        memcpy(buf, orig, size);
        size_t len = size;
        int kind = (int)(rnd() % 10);
        if (kind == 0) {
            len = (size_t)(rnd() % size);                 /* truncated */
        } else {
            int n = 1 + (int)(rnd() % 8);
            for (int k = 0; k < n; k++) {
                size_t off;
                if (kind <= 2)
                    off = (size_t)(rnd() % 64);            /* the superblock */
                else {
                    off = blocks[rnd() % nblk];     /* two statements: a fixed order of draws */
                    off += (size_t)(rnd() % bs);
                }
                if (off < size)
                    mutate_at(buf, size, off);
            }
        }
        hs_pdb p;
        err[0] = 0;
        if (hs_pdb_open(&p, buf, len, err, sizeof err) == 0) {
            opened++;
            hs_symtab st;
            hs_linetab lt;
            memset(&st, 0, sizeof st);
            memset(&lt, 0, sizeof lt);
            if (hs_pdb_read(&p, &st, &lt, err, sizeof err) == 0) {
                read_ok++;
                /* use what was read: every lookup stays inside the tables */
                for (size_t i = 0; i < st.count; i += 7) {
                    const char *f;
                    uint32_t l;
                    hs_linetab_lookup(&lt, st.syms[i].rva, &f, &l);
                    (void)strlen(st.syms[i].name);
                }
            } else {
                errors++;
                bad_err += !err[0] || strchr(err, '\n') != NULL;
            }
            hs_symtab_free(&st);
            hs_linetab_free(&lt);
            /* the frame data: a table, or a one-line error */
            hs_fpo32 *t = hs_fpo32_new();
            err[0] = 0;
            if (hs_pdb_frames(&p, t, err, sizeof err) == 0) {
                hs_uw32_frame_data fd;
                for (size_t i = 0; i < hs_fpo32_count(t); i += 5)
                    hs_fpo32_frame_data(t, hs_fpo32_record(t, i, &(uint32_t){ 0 })->begin + 1, 0, &fd);
            } else {
                bad_err += !err[0] || strchr(err, '\n') != NULL;
            }
            hs_fpo32_free(t);
            hs_pdb_close(&p);
        } else {
            errors++;
            bad_err += !err[0] || strchr(err, '\n') != NULL;
        }
    }
    cases = c;
    tap_diag("%s: %d cases: %d opened, %d read whole, %d refused with an error", name, cases, opened,
             read_ok, errors);
    tap_check(bad_err == 0 && errors > cases / 10 && read_ok > 0, name,
              "%d errors without a one-line message; %d errors, %d read (mutations must reach both)",
              bad_err, errors, read_ok);
    free(buf);
    free(orig);
}

static void fuzz_image(const char *path, int cases, int dwarf)
{
    size_t size = 0;
    uint8_t *orig = slurp(path, &size);
    char name[128], err[512];
    snprintf(name, sizeof name, "fuzz/%s/%s", dwarf ? "dwarf" : "rsds", strrchr(path, '/') + 1);
    hs_pe pe;
    if (!orig || hs_pe_load_file(&pe, orig, size) != HS_PE_OK) {
        tap_fail(name, "%s is not built (make fixtures)", path);
        free(orig);
        return;
    }
    /* mutate inside the debug directory and RSDS record, or (dwarf) the line
     * table and what it depends on: units, abbreviations, strings */
    size_t lo[5] = { 0 }, hi[5] = { 0 };
    int nreg = 0;
    if (!dwarf) {
        for (int i = 0; i < pe.nsections; i++) {
            const hs_pe_section *s = &pe.sections[i];
            uint32_t want = pe.dir_rva[HS_DIR_DEBUG];
            if (want >= s->rva && want < s->rva + s->vsize) {
                lo[0] = s->raw_off + (want - s->rva);
                hi[0] = lo[0] + 28 + 64;
                nreg = 1;
            }
        }
    } else {
        static const char *const secs[] = { ".debug_line", ".debug_line", ".debug_info",
                                            ".debug_abbrev", ".debug_line_str" };
        for (int i = 0; i < 5; i++) {
            const hs_pe_section *s = hs_pe_section_named(&pe, secs[i]);
            if (s && s->raw_size) {
                lo[nreg] = s->raw_off;
                hi[nreg] = lo[nreg] + s->raw_size;
                nreg++;
            }
        }
    }
    hs_pe_close(&pe);
    if (!nreg || hi[0] > size) {
        tap_fail(name, "no region to mutate");
        free(orig);
        return;
    }
    uint8_t *buf = malloc(size);
    int ok = 0, errors = 0, bad_err = 0, c;
    double deadline = fuzz_time_slice();
    for (c = 0; fuzz_time_more(c, cases, deadline); c++) {
        memcpy(buf, orig, size);
        int n = 1 + (int)(rnd() % 6), r = (int)(rnd() % (uint64_t)nreg);
        for (int k = 0; k < n; k++)
            mutate_at(buf, size, lo[r] + (size_t)(rnd() % (hi[r] - lo[r])));
        if (hs_pe_load_file(&pe, buf, size) != HS_PE_OK) {
            errors++;
            continue;
        }
        err[0] = 0;
        int rc;
        if (dwarf) {
            hs_linetab lt;
            memset(&lt, 0, sizeof lt);
            rc = hs_dwarf_lines(&pe, &lt, err, sizeof err);
            if (rc == 0)
                for (size_t i = 0; i < lt.count; i += 13) {
                    const char *f;
                    uint32_t l;
                    if (hs_linetab_lookup(&lt, lt.lines[i].rva, &f, &l))
                        (void)strlen(f);
                }
            hs_linetab_free(&lt);
        } else {
            hs_rsds r;
            rc = hs_pe_rsds(&pe, &r, err, sizeof err) < 0 ? -1 : 0;
            if (rc == 0)
                (void)strlen(r.path);
        }
        if (rc == 0) {
            ok++;
        } else {
            errors++;
            bad_err += !err[0] || strchr(err, '\n') != NULL;
        }
        hs_pe_close(&pe);
    }
    cases = c;
    tap_diag("%s: %d cases: %d read, %d refused", name, cases, ok, errors);
    tap_check(bad_err == 0 && ok > 0 && (!dwarf || errors > cases / 20), name,
              "%d errors without a one-line message, %d read, %d refused", bad_err, ok, errors);
    free(buf);
    free(orig);
}

int main(void)
{
    test_tables();
    test_undname();
    test_rsds_and_locate();
    test_synthetic();
    test_debuginfo();
    fuzz_time_begin(7);
    fuzz_pdb("build/fixtures/pdb/pdbc.pdb", 3000);
    fuzz_pdb("build/fixtures/pdb/pdbcxx.pdb", 2000);
    fuzz_pdb("build/fixtures/pdb/pdbmsvc.pdb", 1000);
    fuzz_pdb("build/fixtures/pdb/pdbc32.pdb", 1000);
    size_t ssize = 0;
    uint8_t *synth = synthetic_pdb(&ssize);
    fuzz_pdb_bytes("fuzz/pdb/synthetic", synth, ssize, 2000);
    fuzz_image("build/fixtures/pdb/pdbc-gcc.exe", 2000, 1);
    fuzz_image("build/fixtures/pdb/pdbc-gcc5.exe", 2000, 1);
    fuzz_image("build/fixtures/pdb/pdbc.exe", 1000, 0);
    return tap_status();
}
