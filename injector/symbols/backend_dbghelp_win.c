/*
 * injector/symbols/backend_dbghelp_win.c - the DbgHelp backend (backend.h): names
 * from a module's PDB or DWARF through SymLoadModuleExW / SymFromAddr.
 * One DbgHelp session for the whole process, initialised on first use;
 * each opened module is loaded at its real base.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <dbghelp.h>

#include "base/util.h"
#include "symbols/backend.h"

static int ready;
static const HANDLE session = (HANDLE)(uintptr_t)0x4853; /* any unique value */

typedef struct dbg_module {
    uint64_t base;
} dbg_module;

static void *dbg_open(const char *path, uint64_t base, uint32_t size)
{
    if (!ready) {
        SymSetOptions(SYMOPT_UNDNAME | SYMOPT_DEFERRED_LOADS | SYMOPT_FAIL_CRITICAL_ERRORS |
                      SYMOPT_NO_PROMPTS);
        ready = SymInitializeW(session, NULL, FALSE) ? 1 : -1;
    }
    if (ready < 0)
        return NULL;
    wchar_t *w = hs_wide(path);
    DWORD64 got = SymLoadModuleExW(session, NULL, w, NULL, base, size, NULL, 0);
    free(w);
    if (!got)
        return NULL;
    dbg_module *m = hs_xcalloc(1, sizeof *m);
    m->base = got;   /* where DbgHelp put it (base 0: the image's preferred base) */
    return m;
}

static int dbg_name_at(void *h, uint32_t rva, char *buf, size_t len)
{
    dbg_module *m = h;
    char sbuf[sizeof(SYMBOL_INFO) + 1024];
    SYMBOL_INFO *si = (SYMBOL_INFO *)sbuf;
    memset(si, 0, sizeof(SYMBOL_INFO));
    si->SizeOfStruct = sizeof(SYMBOL_INFO);
    si->MaxNameLen = 1024;
    DWORD64 disp = 0;
    if (!SymFromAddr(session, m->base + rva, &disp, si) || disp != 0 || !si->Name[0])
        return 0;
    snprintf(buf, len, "%s", si->Name);
    return 1;
}

static void dbg_close(void *h)
{
    dbg_module *m = h;
    SymUnloadModule64(session, m->base);
    free(m);
}

const hs_sym_backend hs_sym_dbghelp = { "dbghelp", dbg_open, dbg_name_at, dbg_close };
