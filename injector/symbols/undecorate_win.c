/*
 * injector/symbols/undecorate_win.c - MSVC names (`?name@@...`) through
 * DbgHelp's UnDecorateSymbolName (under Wine: msvcrt's __unDName, checked
 * against llvm-undname by tests/test_pdb_wine.py).
 */
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <dbghelp.h>

#include "injector/symbols/undecorate.h"

char *hs_undecorate_msvc(const char *name, int form)
{
    /* HS_UND_FULL: no access specifier, calling convention, return type,
     * member kind (virtual/static), throw signature or __ptr64
     * (UNDNAME_NO_MS_THISTYPE is not used: Wine's undecorator then drops
     * the method's const too) */
    DWORD flags = form == HS_UND_NAME
                      ? UNDNAME_NAME_ONLY
                      : UNDNAME_NO_MS_KEYWORDS | UNDNAME_NO_FUNCTION_RETURNS |
                            UNDNAME_NO_ALLOCATION_MODEL | UNDNAME_NO_ALLOCATION_LANGUAGE |
                            UNDNAME_NO_ACCESS_SPECIFIERS |
                            UNDNAME_NO_THROW_SIGNATURES | UNDNAME_NO_MEMBER_TYPE;
    char buf[4096];
    DWORD n = UnDecorateSymbolName(name, buf, sizeof buf, flags);
    if (n == 0 || !buf[0] || strcmp(buf, name) == 0)
        return NULL;
    /* MSVC's style "f(void)const " (the space was __ptr64's) becomes
     * "f(void) const", as the Itanium demangler and llvm-undname write it */
    char *r = malloc(2 * strlen(buf) + 1), *o = r;
    if (!r)
        return NULL;
    for (const char *p = buf; *p; p++) {
        *o++ = *p;
        if (*p == ')' && (!strncmp(p + 1, "const", 5) || !strncmp(p + 1, "volatile", 8)))
            *o++ = ' ';
    }
    while (o > r && o[-1] == ' ')
        o--;
    *o = 0;
    return r;
}
