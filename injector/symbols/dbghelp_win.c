/*
 * injector/symbols/dbghelp_win.c - DbgHelp as a symbol source (see
 * dbghelp_win.h for what it does and the Wine facts it relies on).
 */
#include "injector/symbols/dbghelp_win.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <dbghelp.h>

#include "injector/symbols/undecorate.h"

enum { TAG_FUNCTION = 5, TAG_PUBLIC = 10 };

struct hs_dbghelp {
    HANDLE h;            /* the pseudo process handle of this session */
    DWORD64 base;
    int symtype;
};

static unsigned long next_handle = 0x48530000ul;  /* unique per session, never a real handle */

static wchar_t *wide(const char *s)
{
    int n = MultiByteToWideChar(CP_UTF8, 0, s, -1, NULL, 0);
    wchar_t *w = n > 0 ? malloc((size_t)n * sizeof *w) : NULL;
    if (w)
        MultiByteToWideChar(CP_UTF8, 0, s, -1, w, n);
    return w;
}

static int utf8(const wchar_t *w, char *out, size_t outlen)
{
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)outlen, NULL, NULL);
    return n > 0;
}

hs_dbghelp *hs_dbghelp_open(const char *image_path, uint64_t base, const char *search_path,
                            char *err, size_t errlen)
{
    hs_dbghelp *d = calloc(1, sizeof *d);
    wchar_t *wimage = wide(image_path), *wpath = search_path ? wide(search_path) : NULL;
    if (!d || !wimage || (search_path && !wpath)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    d->h = (HANDLE)(uintptr_t)next_handle++;
    SymSetOptions(SYMOPT_UNDNAME | SYMOPT_LOAD_LINES | SYMOPT_FAIL_CRITICAL_ERRORS |
                  SYMOPT_NO_PROMPTS);
    if (!SymInitializeW(d->h, wpath, FALSE)) {
        snprintf(err, errlen, "SymInitialize failed (error %lu)", (unsigned long)GetLastError());
        goto fail;
    }
    d->base = SymLoadModuleExW(d->h, NULL, wimage, NULL, base, 0, NULL, 0);
    if (!d->base) {
        snprintf(err, errlen, "DbgHelp cannot load %s (error %lu)", image_path,
                 (unsigned long)GetLastError());
        SymCleanup(d->h);
        goto fail;
    }
    IMAGEHLP_MODULEW64 mi;
    memset(&mi, 0, sizeof mi);
    mi.SizeOfStruct = sizeof mi;
    d->symtype = SymGetModuleInfoW64(d->h, d->base, &mi) ? (int)mi.SymType : 0;
    free(wimage);
    free(wpath);
    return d;
fail:
    free(wimage);
    free(wpath);
    free(d);
    return NULL;
}

int hs_dbghelp_symtype(const hs_dbghelp *d)
{
    return d->symtype;
}

struct enum_ctx {
    hs_symtab *out;
    DWORD64 base;
    int failed;
};

static BOOL CALLBACK on_symbol(PSYMBOL_INFOW si, ULONG size, PVOID user)
{
    struct enum_ctx *x = user;
    char name[4096];
    (void)size;
    if ((si->Tag != TAG_FUNCTION && si->Tag != TAG_PUBLIC) || si->Address < x->base ||
        si->Address - x->base > UINT32_MAX || !utf8(si->Name, name, sizeof name))
        return TRUE;
    uint32_t rva = (uint32_t)(si->Address - x->base);
    int rc;
    if (si->Tag == TAG_FUNCTION) {
        rc = hs_symtab_add(x->out, rva, si->Size, name, NULL, HS_SYMSRC_DBGHELP, HS_SYMK_PROC,
                           1, NULL, 0);
    } else {
        /* SYMFLAG_PUBLIC_CODE (0x400000): the PDB flagged it as code */
        char *und = hs_undecorate_sym(name, HS_UND_FULL);
        rc = hs_symtab_add(x->out, rva, 0, und ? und : name, name, HS_SYMSRC_DBGHELP,
                           (si->Flags & 0x400000) ? HS_SYMK_PUBLIC_CODE : HS_SYMK_PUBLIC, 1,
                           NULL, 0);
        free(und);
    }
    if (rc) {
        x->failed = 1;
        return FALSE;
    }
    return TRUE;
}

int hs_dbghelp_symbols(hs_dbghelp *d, hs_symtab *out, char *err, size_t errlen)
{
    struct enum_ctx x = { out, d->base, 0 };
    if (!SymEnumSymbolsW(d->h, d->base, L"*", on_symbol, &x) && !x.failed) {
        snprintf(err, errlen, "SymEnumSymbols failed (error %lu)", (unsigned long)GetLastError());
        return -1;
    }
    if (x.failed) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    hs_symtab_finish(out);
    return 0;
}

int hs_dbghelp_line(hs_dbghelp *d, uint32_t rva, char *file, size_t filelen, uint32_t *line)
{
    IMAGEHLP_LINEW64 ln;
    DWORD disp = 0;
    memset(&ln, 0, sizeof ln);
    ln.SizeOfStruct = sizeof ln;
    if (!SymGetLineFromAddrW64(d->h, d->base + rva, &disp, &ln) || !ln.FileName)
        return 0;
    if (!utf8(ln.FileName, file, filelen))
        return 0;
    *line = ln.LineNumber;
    return 1;
}

void hs_dbghelp_close(hs_dbghelp *d)
{
    if (!d)
        return;
    SymCleanup(d->h);
    free(d);
}
