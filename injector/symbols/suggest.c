/*
 * injector/symbols/suggest.c - see suggest.h.
 */
#include "injector/symbols/suggest.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"

/* lowercase, without glob characters */
static char *literal(const char *pattern)
{
    char *s = hs_xstrdup(pattern);
    size_t w = 0;
    for (size_t i = 0; s[i]; i++)
        if (s[i] != '*' && s[i] != '?')
            s[w++] = (char)tolower((unsigned char)s[i]);
    s[w] = 0;
    return s;
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == needle[i])
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

/* Edit distance (insert, delete, substitute, swap of neighbours), case
 * ignored; stops counting above `limit` (returns limit + 1). */
static size_t distance(const char *a, const char *b, size_t limit)
{
    size_t la = strlen(a), lb = strlen(b);
    if ((la > lb ? la - lb : lb - la) > limit)
        return limit + 1;
    size_t *prev2 = hs_xcalloc(lb + 1, sizeof *prev2), *prev = hs_xcalloc(lb + 1, sizeof *prev),
           *cur = hs_xcalloc(lb + 1, sizeof *cur);
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    size_t best = 0;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        best = cur[0];
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            size_t v = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < v)
                v = prev[j] + 1;
            if (cur[j - 1] + 1 < v)
                v = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < v)
                v = prev2[j - 2] + 1;
            cur[j] = v;
            if (v < best)
                best = v;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
        if (best > limit)
            break;
    }
    size_t d = best > limit ? limit + 1 : prev[lb];
    free(prev2);
    free(prev);
    free(cur);
    return d > limit ? limit + 1 : d;
}

typedef struct cand {
    const char *name;
    size_t rank;             /* contains: its length; else 1e6 + distance */
} cand;

static int cmp_cand(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const cand *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->name, y->name);
}

size_t hs_suggest(const char *pattern, const char *const *names, size_t n, const char **out, size_t max)
{
    const char *bang = strchr(pattern, '!');
    char *lit = literal(bang ? bang + 1 : pattern);
    size_t limit = strlen(lit) / 3 > 2 ? strlen(lit) / 3 : 2;
    cand *c = hs_xcalloc(n ? n : 1, sizeof *c);
    size_t k = 0;
    for (size_t i = 0; i < n && lit[0]; i++) {
        if (contains_nocase(names[i], lit)) {
            c[k].name = names[i];
            c[k++].rank = strlen(names[i]);
            continue;
        }
        size_t d = distance(lit, names[i], limit);
        if (d <= limit) {
            c[k].name = names[i];
            c[k++].rank = 1000000 + d;
        }
    }
    hs_sort(c, k, sizeof *c, cmp_cand, NULL);
    size_t w = 0;
    for (size_t i = 0; i < k && w < max; i++)
        if (!w || strcmp(out[w - 1], c[i].name) != 0)
            out[w++] = c[i].name;
    free(c);
    free(lit);
    return w;
}
