/*
 * symdump.c - print what hookscope's symbol backends read from an image or a
 * PDB, in the format of tests/support/pdbref.py (llvm-pdbutil) so the two
 * can be compared line by line. Built twice: natively (build/native/tools/
 * symdump, PDB reader and locator on Linux) and for Windows
 * (build/tests/symdump.exe, the same plus DbgHelp and MSVC undecoration).
 *
 * usage: symdump [options] FILE
 *   FILE              an image (its PDB is located) or a .pdb
 *   --symbols P       the --symbols search path
 *   --nt-path P       an _NT_SYMBOL_PATH value (default: none; the
 *                     environment is not read, so tests are reproducible)
 *   --procs --publics --lines --first
 *                     what to print (default: all four)
 *   --at-procs        the line of every byte of every procedure
 *   --at RVA          the line of one address (hex); repeatable
 *   --dwarf           FILE is a gcc image: read its DWARF line table (its
 *                     functions, for --procs and --at-procs, come from
 *                     .pdata, exports and COFF symbols)
 *   --dbghelp         (Windows) read through DbgHelp instead of the PDB reader
 *   --undname NAME    print the undecoration of NAME (both forms); repeatable
 *   --frames          FILE is a .pdb: print its x86 frame data (hs_pdb_frames)
 *                     and nothing else
 *
 * Output, numbers in lowercase hex without 0x unless said:
 *   found <path> via <place> guid <GUID> age <dec>
 *   proc <rva> <size dec> <G|L|T> <name>      (sorted by rva, name)
 *   pub <rva> <raw name>                      (every decorated/public name)
 *   symtype <SymType dec>                     (--dbghelp: DbgHelp's module type)
 *   sym <rva> <size dec> <kind> <G|L> <source> <name>   (--dbghelp, every
 *                                             symbol; procedures also as proc)
 *   first <rva> <file>:<line dec>             (a procedure's first line)
 *   line <rva> <line dec> <file>              (every line entry, table order)
 *   at <rva> <file>:<line dec> | at <rva> none
 *   undname <name> -> <full> | <name only>
 *   frame <rva> <end> <locals> <params> <saved regs> <prolog> <E|-> <ebp saved at>
 *                                             (sizes decimal; E: uses ebp)
 * Errors: "symdump: <message>" on stderr, exit status 1 (no PDB, mismatch,
 * corrupt file), 2 for usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/pe/pe.h"
#include "hook/pe/functions.h"
#include "hook/pe/symbols.h"
#include "injector/symbols/dwarf.h"
#include "injector/symbols/locate.h"
#include "injector/symbols/pdb.h"
#include "injector/symbols/symfs.h"
#include "injector/symbols/symtab.h"
#include "injector/symbols/undecorate.h"
#ifdef _WIN32
#include "injector/symbols/dbghelp_win.h"
#endif

/* --frames: every record of a PDB's x86 frame data, by rva */
static int print_frames(const char *file, const uint8_t *data, size_t size)
{
    hs_pdb pdb;
    char err[512];
    hs_fpo32 *t = hs_fpo32_new();
    if (!t || hs_pdb_open(&pdb, data, size, err, sizeof err) || hs_pdb_frames(&pdb, t, err, sizeof err)) {
        fprintf(stderr, "symdump: %s: %s\n", file, t ? err : "out of memory");
        return 1;
    }
    uint32_t end;
    const hs_uw32_frame_data *fd;
    for (size_t i = 0; (fd = hs_fpo32_record(t, i, &end)) != NULL; i++)
        printf("frame %x %x %u %u %u %u %c %u\n", fd->begin, end, fd->locals, fd->params, fd->saved_regs, fd->prolog,
               fd->uses_ebp ? 'E' : '-', fd->ebp_saved_at);
    hs_fpo32_free(t);
    hs_pdb_close(&pdb);
    return 0;
}

static int usage(void)
{
    fputs("usage: symdump [--symbols P] [--nt-path P] [--procs] [--publics] [--lines] [--first]\n"
          "               [--at-procs] [--at RVA]... [--dwarf] [--dbghelp] [--frames] FILE\n"
          "       symdump --undname NAME...\n",
          stderr);
    return 2;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    if (n < m)
        return 0;
    for (size_t i = 0; i < m; i++)
        if ((s[n - m + i] | 0x20) != (suffix[i] | 0x20))
            return 0;
    return 1;
}

/* --dwarf: the image's functions (.pdata, exports, COFF symbols) as the
 * procedures whose bytes --at-procs looks up */
static int pe_functions(const hs_pe *pe, hs_symtab *st)
{
    hs_pe_func *f = NULL;
    size_t n = 0;
    hs_pe_symtab names;
    memset(&names, 0, sizeof names);
    if (hs_pe_functions(pe, &f, &n) || hs_pe_symbols(pe, &names))
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        char sub[32];
        const char *name = hs_pe_symtab_at(&names, f[i].rva);
        if ((f[i].src & HS_SRC_FRAGMENT) || !f[i].size)
            continue;
        if (!name) {
            snprintf(sub, sizeof sub, "sub_%x", f[i].rva);
            name = sub;
        }
        rc = hs_symtab_add(st, f[i].rva, f[i].size, name, NULL, HS_SYMSRC_COFF, HS_SYMK_PROC, 1,
                           NULL, 0);
    }
    free(f);
    hs_pe_symtab_free(&names);
    hs_symtab_finish(st);
    return rc;
}

#ifdef _WIN32
static hs_dbghelp *dbghelp_session;   /* set in --dbghelp mode */
#endif

static void print_at(const hs_linetab *lt, uint32_t rva)
{
    const char *file;
    uint32_t line;
#ifdef _WIN32
    if (dbghelp_session) {
        char buf[2048];
        if (hs_dbghelp_line(dbghelp_session, rva, buf, sizeof buf, &line))
            printf("at %x %s:%u\n", rva, buf, line);
        else
            printf("at %x none\n", rva);
        return;
    }
#endif
    if (hs_linetab_lookup(lt, rva, &file, &line))
        printf("at %x %s:%u\n", rva, file, line);
    else
        printf("at %x none\n", rva);
}

int main(int argc, char **argv)
{
    hs_pdb_search search = { 0 };
    int procs = 0, publics = 0, lines = 0, first = 0, at_procs = 0, dwarf = 0, dbghelp = 0, frames = 0;
    const char *file = NULL;
    uint32_t at[256];
    int nat = 0, undnames = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--symbols") && i + 1 < argc)
            search.symbols = argv[++i];
        else if (!strcmp(a, "--nt-path") && i + 1 < argc)
            search.nt_symbol_path = argv[++i];
        else if (!strcmp(a, "--procs"))
            procs = 1;
        else if (!strcmp(a, "--publics"))
            publics = 1;
        else if (!strcmp(a, "--lines"))
            lines = 1;
        else if (!strcmp(a, "--first"))
            first = 1;
        else if (!strcmp(a, "--at-procs"))
            at_procs = 1;
        else if (!strcmp(a, "--at") && i + 1 < argc && nat < 256)
            at[nat++] = (uint32_t)strtoul(argv[++i], NULL, 16);
        else if (!strcmp(a, "--dwarf"))
            dwarf = 1;
        else if (!strcmp(a, "--dbghelp"))
            dbghelp = 1;
        else if (!strcmp(a, "--frames"))
            frames = 1;
        else if (!strcmp(a, "--undname") && i + 1 < argc) {
            const char *n = argv[++i];
            char *full = hs_undecorate_sym(n, HS_UND_FULL), *only = hs_undecorate_sym(n, HS_UND_NAME);
            printf("undname %s -> %s | %s\n", n, full ? full : "<none>", only ? only : "<none>");
            free(full);
            free(only);
            undnames++;
        } else if (a[0] == '-' || file)
            return usage();
        else
            file = a;
    }
    if (undnames && !file)
        return 0;
    if (!file)
        return usage();
    if (!procs && !publics && !lines && !first && !at_procs && !nat)
        procs = publics = lines = first = 1;

    const hs_symfs *fs = hs_symfs_host();
    uint8_t *data = NULL;
    size_t size = 0;
    char err[1024] = "";
    int rc = fs->read(fs->ctx, file, &data, &size, err, sizeof err);
    if (rc) {
        fprintf(stderr, "symdump: %s\n", rc > 0 ? "no such file" : err);
        return 1;
    }
    if (frames)
        return print_frames(file, data, size);
    hs_symtab st = { 0 };
    hs_linetab lt = { 0 };
    hs_pdb_found found = { 0 };
    hs_pdb pdb;
    int status = 0;
#ifdef _WIN32
    hs_dbghelp *dh = NULL;
#endif

    if (ends_with(file, ".pdb")) {
        if (hs_pdb_open(&pdb, data, size, err, sizeof err) ||
            hs_pdb_read(&pdb, &st, &lt, err, sizeof err)) {
            fprintf(stderr, "symdump: %s: %s\n", file, err);
            return 1;
        }
        hs_pdb_close(&pdb);
    } else {
        hs_pe pe;
        int pst = hs_pe_load_file(&pe, data, size);
        if (pst != HS_PE_OK) {
            fprintf(stderr, "symdump: %s: %s\n", file, hs_pe_status_text(pst));
            return 1;
        }
        if (dwarf) {
            if (hs_dwarf_lines(&pe, &lt, err, sizeof err) || pe_functions(&pe, &st)) {
                fprintf(stderr, "symdump: %s: %s\n", file, err[0] ? err : "out of memory");
                return 1;
            }
#ifdef _WIN32
        } else if (dbghelp) {
            dh = hs_dbghelp_open(file, 0, search.symbols, err, sizeof err);
            if (!dh || hs_dbghelp_symbols(dh, &st, err, sizeof err)) {
                fprintf(stderr, "symdump: %s\n", err);
                return 1;
            }
            printf("symtype %d\n", hs_dbghelp_symtype(dh));
#endif
        } else {
            search.image_path = file;
            int ls = hs_pdb_locate(&pe, &search, &found, err, sizeof err);
            if (ls != HS_LOC_FOUND) {
                fprintf(stderr, "symdump: %s\n", err);
                return 1;
            }
            char g[39];
            hs_guid_text(found.pdb.guid, g);
            printf("found %s via %s guid %s age %u\n", found.path, found.via, g, found.pdb.age);
            if (hs_pdb_read(&found.pdb, &st, &lt, err, sizeof err)) {
                fprintf(stderr, "symdump: %s: %s\n", found.path, err);
                return 1;
            }
        }
        hs_pe_close(&pe);
    }
#ifdef _WIN32
    dbghelp_session = dh;
#endif

    for (size_t i = 0; i < st.count; i++) {
        const hs_sym *s = &st.syms[i];
        if (dbghelp) {
            printf("sym %x %u %d %c %s %s\n", s->rva, s->size, s->kind, s->is_global ? 'G' : 'L',
                   hs_symsrc_name(s->source), s->name);
            if (s->kind != HS_SYMK_PROC)
                continue;
        }
        if (procs && (s->kind == HS_SYMK_PROC || s->kind == HS_SYMK_THUNK))
            printf("proc %x %u %c %s\n", s->rva, s->size,
                   s->kind == HS_SYMK_THUNK ? 'T' : s->is_global ? 'G' : 'L', s->name);
        if (publics && (s->kind == HS_SYMK_PUBLIC || s->kind == HS_SYMK_PUBLIC_CODE ||
                        s->raw != s->name))
            printf("pub %x %s\n", s->rva, s->raw);
        if (first && s->file)
            printf("first %x %s:%u\n", s->rva, s->file, s->line);
    }
    if (lines) {
        /* table order is rva order; print in the order the PDB lists them
         * within one address (seq) - the table keeps it */
        for (size_t i = 0; i < lt.count; i++)
            printf("line %x %u %s\n", lt.lines[i].rva, lt.lines[i].line, lt.files[lt.lines[i].file]);
    }
    if (at_procs)
        for (size_t i = 0; i < st.count; i++) {
            const hs_sym *s = &st.syms[i];
            if (s->kind == HS_SYMK_PROC)
                for (uint32_t k = 0; k < s->size; k++)
                    print_at(&lt, s->rva + k);
        }
    for (int i = 0; i < nat; i++)
        print_at(&lt, at[i]);
    hs_symtab_free(&st);
    hs_linetab_free(&lt);
    hs_pdb_found_free(&found);
#ifdef _WIN32
    hs_dbghelp_close(dh);
#endif
    free(data);
    return status;
}
