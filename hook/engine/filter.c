/*
 * hook/engine/filter.c - function filters (see filter.h).
 */
#include "hook/engine/filter.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int hs_glob(const char *p, const char *t)
{
    const char *star_p = NULL, *star_t = NULL;
    while (*t) {
        if (*p == '*') {
            star_p = ++p;
            star_t = t;
        } else if (*p == '?' || *p == *t) {
            p++;
            t++;
        } else if (star_p) {
            p = star_p;
            t = ++star_t;
        } else {
            return 0;
        }
    }
    while (*p == '*')
        p++;
    return *p == 0;
}

static int ieq(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return 0;
    return 1;
}

int hs_module_matches(const char *module, const char *pattern)
{
    size_t ml = strlen(module), pl = strlen(pattern);
    if (ml == pl && ieq(module, pattern, ml))
        return 1;
    const char *dot = strrchr(module, '.');
    return dot && (size_t)(dot - module) == pl && ieq(module, pattern, pl);
}

/* Does pattern i match this function? */
static int matches(const char *pat, const char *module, const char *raw, const char *und,
                   const char *sub)
{
    const char *bang = strchr(pat, '!');
    if (bang) {
        char mod[256];
        size_t n = (size_t)(bang - pat);
        if (n >= sizeof mod)
            return 0;
        memcpy(mod, pat, n);
        mod[n] = 0;
        if (!hs_module_matches(module, mod))
            return 0;
        pat = bang + 1;
    }
    /* an Itanium name in an i386 image carries the C decoration's '_'
     * (`__ZN2ns1fEv`): it also answers to its name elsewhere (`_ZN2ns1fEv`),
     * so one pattern selects the same functions in both builds */
    if (raw && raw[0] == '_' && raw[1] == '_' && raw[2] == 'Z' && hs_glob(pat, raw + 1))
        return 1;
    return (raw && hs_glob(pat, raw)) || (und && hs_glob(pat, und)) || hs_glob(pat, sub);
}

int hs_filter_admits(hs_filter *f, const char *module, const char *raw, const char *undecorated,
                     uint32_t rva)
{
    char sub[32];
    snprintf(sub, sizeof sub, "sub_%x", rva);
    int any_include = 0, included = 0, excluded = 0;
    for (int i = 0; i < f->n; i++) {
        int m = matches(f->pattern[i], module, raw, undecorated, sub);
        if (m)
            f->matched |= 1u << i;
        if (f->exclude[i])
            excluded |= m;
        else {
            any_include = 1;
            included |= m;
        }
    }
    return !excluded && (!any_include || included);
}
