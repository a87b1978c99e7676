/*
 * injector/addrsym.c - addresses to module!function+offset (see addrsym.h).
 */
#include "addrsym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pe.h"
#include "symbols.h"
#include "util.h"

/* A function extent with its name, for a module that was not traced. */
typedef struct range {
    uint32_t rva, size;
    const char *name;      /* NULL: unnamed */
} range;

typedef struct modinfo {
    int loaded;            /* tried to read the file */
    range *ranges;         /* sorted by rva */
    size_t nranges;
    hs_pe_symtab syms;     /* for names and for addresses outside any range */
    char **owned;          /* undecorated names */
    size_t nowned;
} modinfo;

struct hs_addrsym {
    const hs_results *r;
    modinfo *mods;
    size_t *by_base;       /* module indices sorted by base */
    size_t nmods;
    size_t *func_order;    /* traced functions sorted by (module, rva) */
    size_t nfunc_order;
};

static const hs_results *sort_r;

static int cmp_base(const void *a, const void *b)
{
    uint64_t x = sort_r->mods[*(const size_t *)a].base, y = sort_r->mods[*(const size_t *)b].base;
    return x < y ? -1 : x > y;
}

static int cmp_func(const void *a, const void *b)
{
    const hs_res_func *x = &sort_r->funcs[*(const size_t *)a], *y = &sort_r->funcs[*(const size_t *)b];
    if (x->module != y->module)
        return x->module < y->module ? -1 : 1;
    return x->rva < y->rva ? -1 : x->rva > y->rva;
}

hs_addrsym *hs_addrsym_new(const hs_results *r)
{
    hs_addrsym *s = hs_xcalloc(1, sizeof *s);
    s->r = r;
    s->nmods = r->nmods;
    s->mods = hs_xcalloc(r->nmods, sizeof *s->mods);
    s->by_base = hs_xcalloc(r->nmods, sizeof *s->by_base);
    for (size_t i = 0; i < r->nmods; i++)
        s->by_base[i] = i;
    sort_r = r;
    qsort(s->by_base, r->nmods, sizeof *s->by_base, cmp_base);
    s->func_order = hs_xcalloc(r->nfuncs, sizeof *s->func_order);
    for (size_t i = 0; i < r->nfuncs; i++)
        s->func_order[s->nfunc_order++] = i;
    qsort(s->func_order, s->nfunc_order, sizeof *s->func_order, cmp_func);
    return s;
}

void hs_addrsym_free(hs_addrsym *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmods; i++) {
        free(s->mods[i].ranges);
        hs_pe_symtab_free(&s->mods[i].syms);
        for (size_t k = 0; k < s->mods[i].nowned; k++)
            free(s->mods[i].owned[k]);
        free(s->mods[i].owned);
    }
    free(s->mods);
    free(s->by_base);
    free(s->func_order);
    free(s);
}

/* Read an untraced module's file: function extents and names. */
static void load_module(hs_addrsym *s, size_t m)
{
    modinfo *mi = &s->mods[m];
    const hs_res_module *mod = &s->r->mods[m];
    mi->loaded = 1;
    wchar_t *w = hs_wide(mod->path);
    size_t size = 0;
    uint8_t *file = hs_read_file(w, &size, NULL);
    free(w);
    if (!file)
        return;
    hs_pe pe;
    if (hs_pe_load_file(&pe, file, size) != HS_PE_OK) {
        free(file);
        return;
    }
    if (pe.timestamp == mod->timestamp && pe.size_of_image == mod->size) {
        hs_pe_func *funcs = NULL;
        size_t n = 0;
        hs_pe_symbols(&pe, &mi->syms);
        if (hs_pe_functions(&pe, &funcs, &n) == 0) {
            mi->ranges = hs_xcalloc(n, sizeof *mi->ranges);
            mi->owned = hs_xcalloc(n, sizeof *mi->owned);
            for (size_t i = 0; i < n; i++) {
                if (funcs[i].src & HS_SRC_FRAGMENT)
                    continue;
                range *rg = &mi->ranges[mi->nranges++];
                rg->rva = funcs[i].rva;
                rg->size = funcs[i].size;
                const char *nm = hs_pe_symtab_at(&mi->syms, funcs[i].rva);
                if (nm) {
                    mi->owned[mi->nowned] = hs_undecorate(nm);
                    rg->name = mi->owned[mi->nowned++];
                }
            }
            free(funcs);
        }
    }
    hs_pe_close(&pe);
    free(file);
}

void hs_addrsym_lookup(hs_addrsym *s, uint64_t addr, hs_addr_info *out)
{
    const hs_results *r = s->r;
    out->module = -1;
    out->func = -1;
    out->name = NULL;
    out->start = 0;
    /* the module: last base <= addr, and addr inside it */
    size_t lo = 0, hi = s->nmods;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->mods[s->by_base[mid]].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return;
    size_t m = s->by_base[lo - 1];
    const hs_res_module *mod = &r->mods[m];
    if (addr >= mod->base + mod->size)
        return;
    out->module = (int)m;
    uint32_t rva = (uint32_t)(addr - mod->base);

    if (mod->found) {
        /* a traced module: its function table */
        size_t l = 0, h = s->nfunc_order;
        while (l < h) {
            size_t mid = l + (h - l) / 2;
            const hs_res_func *f = &r->funcs[s->func_order[mid]];
            if (f->module < m || (f->module == m && f->rva <= rva))
                l = mid + 1;
            else
                h = mid;
        }
        if (l > 0) {
            const hs_res_func *f = &r->funcs[s->func_order[l - 1]];
            if (f->module == m && rva < f->rva + f->size) {
                out->func = (int64_t)s->func_order[l - 1];
                out->name = f->name;
                out->start = mod->base + f->rva;
                return;
            }
        }
    }
    modinfo *mi = &s->mods[m];
    if (!mi->loaded)
        load_module(s, m);
    size_t l = 0, h = mi->nranges;
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        if (mi->ranges[mid].rva <= rva)
            l = mid + 1;
        else
            h = mid;
    }
    if (l > 0 && rva < mi->ranges[l - 1].rva + mi->ranges[l - 1].size && mi->ranges[l - 1].name) {
        out->name = mi->ranges[l - 1].name;
        out->start = mod->base + mi->ranges[l - 1].rva;
        return;
    }
    /* no extent names it: the nearest symbol below (exports of a module
     * without .pdata for that code, e.g. hand-written assembly) */
    const hs_pe_symtab *st = &mi->syms;
    l = 0;
    h = st->count;
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        if (st->syms[mid].rva <= rva)
            l = mid + 1;
        else
            h = mid;
    }
    if (l > 0 && st->syms[l - 1].kind != HS_SYM_OTHER) {
        out->name = st->syms[l - 1].name;
        out->start = mod->base + st->syms[l - 1].rva;
    }
}

void hs_addrsym_format(hs_addrsym *s, uint64_t addr, int with_offset, char *buf, size_t len)
{
    hs_addr_info ai;
    hs_addrsym_lookup(s, addr, &ai);
    if (ai.module < 0) {
        snprintf(buf, len, "0x%llx", (unsigned long long)addr);
        return;
    }
    const hs_res_module *mod = &s->r->mods[ai.module];
    if (!ai.name)
        snprintf(buf, len, "%s+0x%llx", mod->name, (unsigned long long)(addr - mod->base));
    else if (with_offset)
        snprintf(buf, len, "%s!%s+0x%llx", mod->name, ai.name, (unsigned long long)(addr - ai.start));
    else
        snprintf(buf, len, "%s!%s", mod->name, ai.name);
}
