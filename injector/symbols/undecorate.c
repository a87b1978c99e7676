/*
 * injector/symbols/undecorate.c - Itanium names through the C++ runtime's
 * demangler, the choice between Itanium and MSVC, and the C decoration of
 * i386 names (see undecorate.h).
 */
#include "injector/symbols/undecorate.h"

#include <stdbool.h>
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

/* Length of name without a trailing `@N` (N decimal digits), or 0 when it
 * has none; `@@N` (vectorcall) goes as a whole. */
static size_t without_arg_bytes(const char *name, size_t n)
{
    size_t i = n;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    if (i == n || i < 2 || name[i - 1] != '@')
        return 0;
    i--;
    if (i >= 2 && name[i - 1] == '@')
        i--;
    return i;
}

char *hs_undecorate_sym32(const char *name, int form, int is_coff)
{
    if (name[0] == '?')
        return hs_undecorate_msvc(name, form);
    size_t n = strlen(name), start = 0;
    bool fastcall = name[0] == '@';
    if (fastcall || (is_coff && name[0] == '_'))
        start = 1;
    /* gcc's clone suffix (`.part.0`, `.isra.0`, `.constprop.0`, `.cold`)
     * follows the decoration: `_WaitForMultipleObjectsEx@20.part.0` */
    size_t sfx = n;
    for (size_t i = start + 1; i + 1 < n; i++)
        if (name[i] == '.' && ((name[i + 1] >= 'a' && name[i + 1] <= 'z') || name[i + 1] == '_')) {
            sfx = i;
            break;
        }
    size_t end = without_arg_bytes(name, sfx);
    if (fastcall && !end)
        return NULL;          /* `@x` without its argument bytes is no fastcall name */
    if (!end)
        end = sfx = n;        /* no `@N`: a suffix stays where it is */
    bool stripped = end < sfx;
    if (!stripped && start == 0)
        return hs_undecorate_sym(name, form);
    if (end <= start)
        return NULL;
    /* the name less its decoration, its suffix kept */
    char *u = malloc(end - start + (n - sfx) + 1);
    if (!u)
        return NULL;
    memcpy(u, name + start, end - start);
    memcpy(u + (end - start), name + sfx, n - sfx);
    u[end - start + (n - sfx)] = 0;
    /* an Itanium name under the C decoration (g++'s `static DWORD WINAPI
     * f(void *)` is `__ZL1fPv@4`): the runtime's demangler takes no `@N` */
    if (u[0] == '_' && u[1] == 'Z') {
        char *d = hs_undecorate_itanium(u, form);
        if (d || !stripped) {
            free(u);
            return d;
        }
    }
    return u;
}
