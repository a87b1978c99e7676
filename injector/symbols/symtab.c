/*
 * injector/symbols/symtab.c - the symbol and line tables every symbol source
 * fills (see symtab.h): growing arrays, one string pool, sorting and lookup.
 */
#include "injector/symbols/symtab.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/search.h"

const char *hs_symsrc_name(int source)
{
    switch (source) {
    case HS_SYMSRC_PDB: return "pdb";
    case HS_SYMSRC_DWARF: return "dwarf";
    case HS_SYMSRC_COFF: return "coff";
    case HS_SYMSRC_EXPORT: return "export";
    case HS_SYMSRC_DBGHELP: return "dbghelp";
    }
    return "?";
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > (SIZE_MAX / 2) / elem)
            return -1;
        n *= 2;
    }
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Strings are stored as offsets until the pool stops moving. */
static int pool_put(hs_symtab *t, const char *s, uintptr_t *off)
{
    size_t len = strlen(s) + 1;
    if (grow((void **)&t->pool, &t->pool_cap, t->pool_len + len, 1))
        return -1;
    memcpy(t->pool + t->pool_len, s, len);
    *off = t->pool_len + 1;           /* 0 = no string */
    t->pool_len += len;
    return 0;
}

int hs_symtab_add(hs_symtab *t, uint32_t rva, uint32_t size, const char *name, const char *raw,
                  int source, int kind, int is_global, const char *file, uint32_t line)
{
    uintptr_t n = 0, r = 0, f = 0;
    if (t->finished || !name)
        return -1;
    if (grow((void **)&t->syms, &t->cap, t->count + 1, sizeof *t->syms))
        return -1;
    if (pool_put(t, name, &n))
        return -1;
    r = n;
    if (raw && strcmp(raw, name) != 0 && pool_put(t, raw, &r))
        return -1;
    if (file && pool_put(t, file, &f))
        return -1;
    hs_sym *s = &t->syms[t->count++];
    s->rva = rva;
    s->size = size;
    s->name = (const char *)n;
    s->raw = (const char *)r;
    s->file = (const char *)f;
    s->line = line;
    s->source = (uint8_t)source;
    s->kind = (uint8_t)kind;
    s->is_global = is_global ? 1 : 0;
    return 0;
}

int hs_symtab_set_line(hs_symtab *t, size_t i, const char *file, uint32_t line)
{
    uintptr_t f = 0;
    if (t->finished || i >= t->count)
        return -1;
    /* consecutive procedures usually share a file: reuse its copy */
    if (t->last_file && strcmp(t->pool + t->last_file - 1, file) == 0)
        f = t->last_file;
    else if (pool_put(t, file, &f))
        return -1;
    t->last_file = f;
    t->syms[i].file = (const char *)f;
    t->syms[i].line = line;
    return 0;
}

static int cmp_sym(const void *a, const void *b)
{
    const hs_sym *x = a, *y = b;
    if (x->rva != y->rva)
        return x->rva < y->rva ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return strcmp(x->raw, y->raw);
}

int hs_symtab_finish(hs_symtab *t)
{
    if (t->finished)
        return 0;
    for (size_t i = 0; i < t->count; i++) {
        hs_sym *s = &t->syms[i];
        s->name = t->pool + ((uintptr_t)s->name - 1);
        s->raw = t->pool + ((uintptr_t)s->raw - 1);
        s->file = s->file ? t->pool + ((uintptr_t)s->file - 1) : NULL;
    }
    if (t->count > 1)
        qsort(t->syms, t->count, sizeof *t->syms, cmp_sym);
    t->finished = 1;
    return 0;
}

void hs_symtab_free(hs_symtab *t)
{
    free(t->syms);
    free(t->pool);
    memset(t, 0, sizeof *t);
}

/* index of the first symbol with rva >= key */
static size_t lower_bound(const hs_symtab *t, uint32_t key)
{
    return HS_LOWER_BOUND_U32(t->syms, t->count, rva, key);
}

const hs_sym *hs_symtab_at(const hs_symtab *t, uint32_t rva)
{
    size_t i = lower_bound(t, rva);
    return i < t->count && t->syms[i].rva == rva ? &t->syms[i] : NULL;
}

const hs_sym *hs_symtab_containing(const hs_symtab *t, uint32_t rva)
{
    /* procedures do not overlap; look back from the last start <= rva */
    size_t i = lower_bound(t, rva + 1);
    while (i-- > 0) {
        const hs_sym *s = &t->syms[i];
        if ((s->kind == HS_SYMK_PROC || s->kind == HS_SYMK_THUNK) && s->size) {
            if (rva - s->rva < s->size)
                return s;
            if (s->rva < rva)
                return NULL;
        }
    }
    return NULL;
}

/* ---- lines ------------------------------------------------------------ */

int hs_linetab_file(hs_linetab *t, const char *name)
{
    /* the files of one module are few; a linear search from the end finds
     * the usual case (the same file again) first */
    for (size_t i = t->nfiles; i-- > 0;)
        if (strcmp(t->files[i], name) == 0)
            return (int)i;
    if (t->nfiles >= INT32_MAX)
        return -1;
    if (grow((void **)&t->files, &t->files_cap, t->nfiles + 1, sizeof *t->files))
        return -1;
    size_t len = strlen(name) + 1;
    char *copy = malloc(len);
    if (!copy)
        return -1;
    memcpy(copy, name, len);
    t->files[t->nfiles] = copy;
    return (int)t->nfiles++;
}

int hs_linetab_add(hs_linetab *t, uint32_t rva, uint32_t end, uint32_t line, int file)
{
    if (t->finished || file < 0 || (size_t)file >= t->nfiles)
        return -1;
    if (grow((void **)&t->lines, &t->cap, t->count + 1, sizeof *t->lines))
        return -1;
    hs_line *l = &t->lines[t->count];
    l->rva = rva;
    l->end = end;
    l->line = line;
    l->file = (uint32_t)file;
    l->seq = (uint32_t)t->count;
    t->count++;
    return 0;
}

static int cmp_line(const void *a, const void *b)
{
    const hs_line *x = a, *y = b;
    if (x->rva != y->rva)
        return x->rva < y->rva ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int hs_linetab_finish(hs_linetab *t)
{
    if (!t->finished && t->count > 1)
        qsort(t->lines, t->count, sizeof *t->lines, cmp_line);
    t->finished = 1;
    return 0;
}

void hs_linetab_free(hs_linetab *t)
{
    for (size_t i = 0; i < t->nfiles; i++)
        free(t->files[i]);
    free(t->files);
    free(t->lines);
    memset(t, 0, sizeof *t);
}

static int is_hidden(uint32_t line)
{
    return line == 0xfeefee || line == 0xf00f00;
}

int hs_linetab_lookup(const hs_linetab *t, uint32_t rva, const char **file, uint32_t *line)
{
    /* the last entry with entry.rva <= rva */
    size_t lo = HS_UPPER_BOUND_U32(t->lines, t->count, rva, rva);
    if (lo == 0)
        return 0;
    const hs_line *l = &t->lines[lo - 1];
    if (rva >= l->end || l->line == 0 || is_hidden(l->line))
        return 0;
    *file = t->files[l->file];
    *line = l->line;
    return 1;
}

int hs_linetab_first_at(const hs_linetab *t, uint32_t rva, const char **file, uint32_t *line)
{
    size_t lo = HS_LOWER_BOUND_U32(t->lines, t->count, rva, rva);
    if (lo == t->count || t->lines[lo].rva != rva || t->lines[lo].line == 0 ||
        is_hidden(t->lines[lo].line))
        return 0;
    *file = t->files[t->lines[lo].file];
    *line = t->lines[lo].line;
    return 1;
}
