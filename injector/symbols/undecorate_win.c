/*
 * injector/symbols/undecorate_win.c - MSVC names (`?name@@...`) through
 * DbgHelp's UnDecorateSymbolName (under Wine: msvcrt's __unDName, checked
 * against llvm-undname by tests/test_pdb_wine.py).
 */
#include "undecorate.h"

#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <dbghelp.h>

char *hs_undecorate_msvc(const char *name, int form)
{
    /* HS_UND_FULL: no access specifier, calling convention, return type,
     * member kind (virtual/static), throw signature or __ptr64 */
    DWORD flags = form == HS_UND_NAME
                      ? UNDNAME_NAME_ONLY
                      : UNDNAME_NO_MS_KEYWORDS | UNDNAME_NO_FUNCTION_RETURNS |
                            UNDNAME_NO_ALLOCATION_MODEL | UNDNAME_NO_ALLOCATION_LANGUAGE |
                            UNDNAME_NO_MS_THISTYPE | UNDNAME_NO_ACCESS_SPECIFIERS |
                            UNDNAME_NO_THROW_SIGNATURES | UNDNAME_NO_MEMBER_TYPE;
    char buf[4096];
    DWORD n = UnDecorateSymbolName(name, buf, sizeof buf, flags);
    if (n == 0 || !buf[0] || strcmp(buf, name) == 0)
        return NULL;
    char *r = malloc(strlen(buf) + 1);
    if (r)
        strcpy(r, buf);
    return r;
}
