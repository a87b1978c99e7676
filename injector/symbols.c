/*
 * injector/symbols.c - function names (see symbols.h).
 */
#include "symbols.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <dbghelp.h>

#include "pe.h"
#include "util.h"

/* from the C++ runtime (libstdc++), linked statically */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *hs_undecorate(const char *name)
{
    if (name[0] == '_' && name[1] == 'Z') {
        int status = 0;
        char *d = __cxa_demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
            char *r = hs_xstrdup(d);
            free(d);
            return r;
        }
        free(d);
        /* gcc clone suffixes: _Z3foov.constprop.0 -> foo() [clone .constprop.0] */
    } else if (name[0] == '?') {
        char buf[2048];
        if (UnDecorateSymbolName(name, buf, sizeof buf, UNDNAME_NAME_ONLY) && buf[0])
            return hs_xstrdup(buf);
    }
    return hs_xstrdup(name);
}

static int dbghelp_ready;
static HANDLE dbghelp_handle = (HANDLE)(uintptr_t)0x4853; /* any unique value */

static char *dbghelp_name(const wchar_t *path, uint64_t base, uint32_t size, uint32_t rva, int *loaded)
{
    if (!dbghelp_ready) {
        SymSetOptions(SYMOPT_UNDNAME | SYMOPT_DEFERRED_LOADS | SYMOPT_FAIL_CRITICAL_ERRORS |
                      SYMOPT_NO_PROMPTS);
        dbghelp_ready = SymInitializeW(dbghelp_handle, NULL, FALSE) ? 1 : -1;
    }
    if (dbghelp_ready < 0)
        return NULL;
    if (!*loaded) {
        *loaded = SymLoadModuleExW(dbghelp_handle, NULL, path, NULL, base, size, NULL, 0) ? 1 : -1;
    }
    if (*loaded < 0)
        return NULL;
    char buf[sizeof(SYMBOL_INFO) + 1024];
    SYMBOL_INFO *si = (SYMBOL_INFO *)buf;
    memset(si, 0, sizeof(SYMBOL_INFO));
    si->SizeOfStruct = sizeof(SYMBOL_INFO);
    si->MaxNameLen = 1024;
    DWORD64 disp = 0;
    if (SymFromAddr(dbghelp_handle, base + rva, &disp, si) && disp == 0 && si->Name[0])
        return hs_undecorate(si->Name);
    return NULL;
}

void hs_symbolize(hs_results *r)
{
    for (size_t m = 0; m < r->nmods; m++) {
        hs_res_module *mod = &r->mods[m];
        wchar_t *wpath = hs_wide(mod->path);
        size_t fsize = 0;
        unsigned long err = 0;
        uint8_t *file = hs_read_file(wpath, &fsize, &err);
        hs_pe pe;
        hs_pe_symtab st = { 0 };
        int have_pe = 0;
        if (!file) {
            hs_results_warn(r, "cannot read %s for symbols: %s", mod->path, hs_win_error(err));
        } else if (hs_pe_load_file(&pe, file, fsize) == HS_PE_OK) {
            have_pe = 1;
            if (pe.timestamp != mod->timestamp)
                hs_results_warn(r, "%s changed on disk since it was traced; names may be wrong",
                                mod->path);
            hs_pe_symbols(&pe, &st);
        }
        int dbg_loaded = 0;
        for (size_t i = 0; i < r->nfuncs; i++) {
            hs_res_func *f = &r->funcs[i];
            if (f->module != m || f->name)
                continue;
            const char *n = st.count ? hs_pe_symtab_at(&st, f->rva) : NULL;
            if (n) {
                f->name = hs_undecorate(n);
                continue;
            }
            if (file)
                f->name = dbghelp_name(wpath, mod->base, mod->size, f->rva, &dbg_loaded);
            if (!f->name) {
                char buf[32];
                snprintf(buf, sizeof buf, "sub_%x", f->rva);
                f->name = hs_xstrdup(buf);
            }
        }
        if (dbg_loaded > 0)
            SymUnloadModule64(dbghelp_handle, mod->base);
        hs_pe_symtab_free(&st);
        if (have_pe)
            hs_pe_close(&pe);
        free(file);
        free(wpath);
    }
}
