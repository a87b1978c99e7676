/*
 * injector/symbols/undecorate.c - Itanium names through the C++ runtime's
 * demangler, and the choice between Itanium and MSVC (see undecorate.h).
 */
#include "injector/symbols/undecorate.h"

#include <stdlib.h>
#include <string.h>

/* from the C++ runtime (libstdc++; linked statically into hookscope.exe) */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* `a::f(int) const [clone .constprop.0]` -> `a::f [clone .constprop.0]`:
 * the parameter list is the last balanced (...) before the qualifiers. */
static void strip_params(char *s)
{
    size_t n = strlen(s);
    char *clone = strstr(s, " [clone ");
    size_t end = clone ? (size_t)(clone - s) : n;
    size_t i = end;
    while (i > 0 && s[i - 1] != ')')
        i--;                                  /* skip " const", "&&", ... */
    if (i == 0)
        return;
    int depth = 0;
    size_t j = i;
    while (j-- > 0) {
        if (s[j] == ')')
            depth++;
        else if (s[j] == '(' && --depth == 0)
            break;
    }
    if (depth != 0 || j == 0 || j == (size_t)-1)
        return;
    memmove(s + j, s + end, n - end + 1);
}

char *hs_undecorate_itanium(const char *name, int form)
{
    int status = 0;
    /* the runtime demangles what it can of a name with a suffix */
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (!d || status != 0) {
        free(d);
        return NULL;
    }
    if (form == HS_UND_NAME)
        strip_params(d);
    return d;
}

char *hs_undecorate_sym(const char *name, int form)
{
    if (name[0] == '_' && name[1] == 'Z')
        return hs_undecorate_itanium(name, form);
    /* mingw's import thunks and i386-style leading underscores stay as they are */
    if (name[0] == '?')
        return hs_undecorate_msvc(name, form);
    return NULL;
}
