/*
 * injector/symbols/symstore.c - symbol store names and paths, and the
 * file.ptr line (see symstore.h).
 */
#include "injector/symbols/symstore.h"

#include <ctype.h>
#include <string.h>

#include "hook/base/util.h"

#ifndef _WIN32
const hs_symfetch *hs_symfetch_host(void)
{
    return NULL;
}
#endif

static bool word_ci(const char *s, size_t n, const char *word)
{
    if (strlen(word) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != word[i])
            return false;
    return true;
}

bool hs_symstore_has_server(const char *list)
{
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ";");
        size_t first = strcspn(p, "*");
        if (first < n && (word_ci(p, first, "srv") || word_ci(p, first, "symsrv")))
            for (const char *q = p + first; q < p + n; q++)
                if (*q == '*' && (!strncmp(q + 1, "http://", 7) || !strncmp(q + 1, "https://", 8)))
                    return true;
        p += n + (p[n] == ';');
    }
    return false;
}

char *hs_symstore_compressed_name(const char *name)
{
    char *c = hs_xstrdup(name);
    size_t n = strlen(c);
    if (n)
        c[n - 1] = '_';
    return c;
}

char *hs_symstore_url_path(const char *base, const char *name, const char *key, const char *file)
{
    size_t n = strlen(base);
    while (n && base[n - 1] == '/')
        n--;
    return hs_xasprintf("%.*s/%s/%s/%s", (int)n, base, name, key, file);
}

int hs_symstore_parse_ptr(const char *text, size_t n, char *out, size_t outlen)
{
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    int kind = 0;
    size_t skip = 0;
    if (n > 5 && !strncmp(text, "PATH:", 5)) {
        kind = 1;
        skip = 5;
    } else if (n > 4 && !strncmp(text, "MSG:", 4)) {
        kind = 2;
        skip = 4;
    }
    if (!kind || memchr(text + skip, '\n', n - skip) || memchr(text + skip, 0, n - skip) || n - skip >= outlen)
        return 0;
    memcpy(out, text + skip, n - skip);
    out[n - skip] = 0;
    return kind;
}
