/*
 * injector/profile/resolve.c - the naming pass (see resolve.h).
 */
#include "injector/profile/resolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/search.h"
#include "hook/base/util.h"
#include "injector/symbols/modsyms.h"

typedef struct modsyms {
    int tried;
    hs_modsyms *t;            /* NULL: no usable file */
} modsyms;

typedef struct resolver {
    hs_profile *p;
    const hs_symconf *conf;
    modsyms *ms;
    size_t *by_base;         /* module indices sorted by base */
    uint32_t *plan;          /* plan functions sorted by (module, rva) */
    uint64_t *plan_key;      /* per plan function: module << 32 | rva (searched without
                                reading the functions) */
    uint32_t *plan_end;      /* per plan function: rva + size */
    size_t nplan;
} resolver;

static int cmp_base(const void *a, const void *b, void *ctx)
{
    const hs_profile *p = ctx;
    uint64_t x = p->modules[*(const size_t *)a].base, y = p->modules[*(const size_t *)b].base;
    return x < y ? -1 : x > y;
}

static int cmp_plan(const void *a, const void *b, void *ctx)
{
    const hs_profile *p = ctx;
    const hs_prof_func *x = &p->funcs[*(const uint32_t *)a], *y = &p->funcs[*(const uint32_t *)b];
    if (x->module != y->module)
        return x->module < y->module ? -1 : 1;
    return x->rva < y->rva ? -1 : x->rva > y->rva;
}

/* The symbols of module m. A traced module's file is used even when it
 * changed since it was loaded (with a warning); another module's only
 * when it matches what was loaded. */
static hs_modsyms *symbols_of(resolver *r, size_t m)
{
    modsyms *s = &r->ms[m];
    if (s->tried)
        return s->t;
    s->tried = 1;
    const hs_prof_module *mod = &r->p->modules[m];
    if (mod->jit)                  /* no file: its functions came with it */
        return NULL;
    hs_modsyms_status st;
    const char *why = NULL;
    s->t = hs_modsyms_open(mod->path, mod->base, mod->size, mod->timestamp, r->conf, &st, &why);
    if (s->t && !mod->traced && st == HS_MODSYMS_MISMATCH) {
        /* another version of the file than the one loaded */
        hs_modsyms_close(s->t);
        s->t = NULL;
    }
    if (!s->t && mod->pdb_known) {
        /* not here (a module of an ETW trace): its PDB, if it can be found */
        s->t = hs_modsyms_open_pdb(mod->name, mod->base, mod->pdb_guid, mod->pdb_age, mod->pdb_name, r->conf);
        return s->t;
    }
    if (!s->t && !mod->traced && st == HS_MODSYMS_UNREADABLE && mod->timestamp && mod->size) {
        /* not here, no PDB named: the image itself from a store */
        s->t = hs_modsyms_open_stored(mod->name, mod->base, mod->size, mod->timestamp, r->conf);
        if (s->t)
            return s->t;
    }
    if (mod->traced) {
        if (st == HS_MODSYMS_UNREADABLE)
            hs_profile_warn(r->p, "cannot read %s for symbols: %s", mod->path, why);
        else if (st == HS_MODSYMS_MISMATCH)
            hs_profile_warn(r->p, "%s changed on disk since it was traced; names may be wrong",
                            mod->path);
        if (s->t && hs_modsyms_message(s->t)[0])
            hs_profile_warn(r->p, "%s", hs_modsyms_message(s->t));
    }
    return s->t;
}

static void name_plan_functions(resolver *r)
{
    hs_profile *p = r->p;
    for (size_t i = 0; i < p->nfuncs; i++) {
        hs_prof_func *f = &p->funcs[i];
        if (!f->in_plan || f->name)
            continue;
        hs_modsyms *t = symbols_of(r, f->module);
        hs_sym_name n;
        char sub[16];
        snprintf(sub, sizeof sub, "sub_%x", f->rva);
        hs_profile_name_func(p, (uint32_t)i, t && hs_modsyms_name_at(t, f->rva, &n) ? n.name : sub);
    }
}

/* The module containing addr, or -1. */
/* What a search of the resolver's sorted tables looks for. */
typedef struct sought {
    const resolver *r;
    uint32_t module;
    uint64_t at;                   /* an address, or an rva */
} sought;

static bool module_not_after(const void *ctx, size_t i)
{
    const sought *q = ctx;
    return q->r->p->modules[q->r->by_base[i]].base <= q->at;
}

static bool func_not_after(const void *ctx, size_t i)
{
    const sought *q = ctx;
    return q->r->plan_key[i] <= ((uint64_t)q->module << 32 | q->at);
}

static int32_t module_of(const resolver *r, uint64_t addr)
{
    const hs_profile *p = r->p;
    sought q = { r, 0, addr };
    size_t lo = hs_partition_point(p->nmodules, &q, module_not_after);
    if (lo == 0)
        return -1;
    size_t m = r->by_base[lo - 1];
    /* JIT code is a module only where the trace said so at the sample's
     * time (the frame's hint): its range may have held nothing then */
    return addr < p->modules[m].base + p->modules[m].size && !p->modules[m].jit ? (int32_t)m : -1;
}

/* Where `at` is (the function and its start), as a location whose offset
 * is counted to `addr` (a return address is named by its call
 * instruction, at = addr - 1, but shown with its own offset). */
static hs_loc locate(resolver *r, uint64_t at, uint64_t addr, int32_t hint)
{
    hs_profile *p = r->p;
    hs_loc l = { -1, -1, addr };
    int32_t m = hint >= 0 ? hint : module_of(r, at);
    if (m < 0)
        return l;
    const hs_prof_module *mod = &p->modules[m];
    uint32_t rva = (uint32_t)(at - mod->base);
    l.module = m;
    l.off = addr - mod->base;
    if (mod->funcs_found || mod->jit) {
        sought q = { r, (uint32_t)m, rva };
        size_t lo = hs_partition_point(r->nplan, &q, func_not_after);
        if (lo > 0 && r->plan_key[lo - 1] >> 32 == (uint32_t)m && rva < r->plan_end[lo - 1]) {
            l.func = (int32_t)r->plan[lo - 1];
            l.off = addr - (mod->base + (uint32_t)r->plan_key[lo - 1]);
            return l;
        }
    }
    hs_modsyms *t = symbols_of(r, (size_t)m);
    hs_sym_hit hit;
    if (!t || !hs_modsyms_lookup(t, rva, &hit))
        return l;
    /* a symbol found for an address the plan's ranges leave out (a return
     * address just past a function's last call, in its padding) can be a
     * planned function: it is that one, never a second function */
    int64_t fi = hs_profile_func_at(p, (uint32_t)m, hit.start);
    if (fi < 0)
        fi = hs_profile_add_func(p, (uint32_t)m, hit.start, hit.size, hit.n.name);
    l.func = (int32_t)fi;
    l.off = addr - (p->modules[m].base + hit.start);
    return l;
}

static void resolve_edges(resolver *r)
{
    hs_profile *p = r->p;
    for (size_t i = 0; i < p->nedges; i++) {
        hs_prof_edge *e = &p->edges[i];
        if (!e->site)
            continue;
        /* the call instruction ends at the return address; a site inside
         * the callee's own module is that load's (a DLL loaded again at
         * the same base has two modules at these addresses) */
        const hs_prof_module *cm = &p->modules[p->funcs[e->callee].module];
        int32_t hint = e->site - 1 >= cm->base && e->site - 1 < cm->base + cm->size
                           ? (int32_t)p->funcs[e->callee].module : -1;
        hs_loc l = locate(r, e->site - 1, e->site, hint);
        if (l.func >= 0)
            l.off = 0;
        e->caller = l;
    }
    hs_profile_merge_edges(p);
}

/* The source line of the code at address `at` (or of the function
 * starting there), for --srcline. */
static hs_srcpos position(resolver *r, uint64_t at, int32_t hint, bool function)
{
    hs_srcpos pos = { NULL, 0 };
    int32_t m = hint >= 0 ? hint : module_of(r, at);
    hs_modsyms *t = m >= 0 ? symbols_of(r, (size_t)m) : NULL;
    const char *file;
    uint32_t line;
    if (t && hs_modsyms_line(t, (uint32_t)(at - r->p->modules[m].base), function, &file, &line)) {
        pos.file = hs_profile_intern(r->p, file);
        pos.line = line;
    }
    return pos;
}

static void function_lines(resolver *r)
{
    hs_profile *p = r->p;
    for (size_t i = 0; i < p->nfuncs; i++) {
        hs_prof_func *f = &p->funcs[i];
        if (f->rva == HS_RVA_NONE)
            continue;
        hs_srcpos pos = position(r, p->modules[f->module].base + f->rva, (int32_t)f->module, true);
        f->file = pos.file;
        f->line = pos.line;
    }
}

/* What the last frame at a depth was found to be: a frame at the same
 * depth with the same address (and module hint) is the same place, and
 * stacks come sorted by their frames, so that the next one shares most. */
typedef struct prev_frame {
    uint64_t addr;
    int32_t hint;
    bool own;                    /* in hookscope's agent: left out */
    hs_loc l;
} prev_frame;

static void resolve_stacks(resolver *r)
{
    hs_profile *p = r->p;
    prev_frame *prev = NULL;
    size_t prev_cap = 0;
    uint32_t filled = 0;         /* prev[0, filled) hold a frame */
    for (size_t i = 0; i < p->nstacks; i++) {
        hs_prof_stack *s = &p->stacks[i];
        if (!s->addrs)
            continue;
        uint32_t w = 0;
        if (p->srcline_on)
            s->src = hs_xcalloc(s->nframes ? s->nframes : 1, sizeof *s->src);
        hs_xgrow(&prev, &prev_cap, s->nframes, sizeof *prev);
        for (uint32_t d = 0; d < s->nframes; d++) {
            uint64_t addr = s->addrs[d];
            /* a return address points after the call: name the call
             * instruction (a call to a noreturn function can end its function) */
            uint64_t at = d ? addr - 1 : addr;
            int32_t hint = s->addr_modules ? s->addr_modules[d] : -1;
            prev_frame *pf = &prev[d];
            if (d >= filled || pf->addr != addr || pf->hint != hint) {
                hs_loc l = locate(r, at, addr, hint);
                pf->addr = addr;
                pf->hint = hint;
                pf->l = l;
                pf->own = (l.module >= 0 && p->modules[l.module].agent) ||
                          (l.func >= 0 && p->modules[p->funcs[l.func].module].agent);
            }
            if (pf->own)
                continue;
            if (s->src)
                s->src[w] = position(r, at, hint, false);
            s->frames[w++] = pf->l;
        }
        if (s->nframes > filled)
            filled = s->nframes;
        s->nframes = w;
        free(s->addrs);
        s->addrs = NULL;
        free(s->addr_modules);
        s->addr_modules = NULL;
    }
    free(prev);
}

/* The PDBs of the modules names will be asked of, their downloads from
 * symbol servers started together before the first is waited for. */
static void prefetch_symbols(resolver *r)
{
    const hs_profile *p = r->p;
    if (!r->conf || !r->conf->fetch ||
        !(hs_symstore_has_server(r->conf->symbols) || hs_symstore_has_server(r->conf->nt_symbol_path)))
        return;
    bool *want = hs_xcalloc(p->nmodules ? p->nmodules : 1, sizeof *want);
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].in_plan && !p->funcs[i].name)
            want[p->funcs[i].module] = true;
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *s = &p->stacks[i];
        for (uint32_t d = 0; s->addrs && d < s->nframes; d++) {
            int32_t m = s->addr_modules && s->addr_modules[d] >= 0
                            ? s->addr_modules[d] : module_of(r, d ? s->addrs[d] - 1 : s->addrs[d]);
            if (m >= 0)
                want[m] = true;
        }
    }
    for (size_t i = 0; i < p->nedges; i++) {
        int32_t m = p->edges[i].site ? module_of(r, p->edges[i].site - 1) : -1;
        if (m >= 0)
            want[m] = true;
    }
    for (size_t m = 0; m < p->nmodules; m++) {
        const hs_prof_module *mod = &p->modules[m];
        if (want[m] && !mod->jit)
            hs_modsyms_prefetch(mod->path, mod->size, mod->timestamp, mod->traced, mod->name,
                                mod->pdb_known ? mod->pdb_guid : NULL, mod->pdb_age, mod->pdb_name, r->conf);
    }
    free(want);
}

void hs_profile_resolve(hs_profile *p, const hs_symconf *conf)
{
    resolver r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.conf = conf;
    r.ms = hs_xcalloc(p->nmodules, sizeof *r.ms);
    r.by_base = hs_xcalloc(p->nmodules, sizeof *r.by_base);
    for (size_t i = 0; i < p->nmodules; i++)
        r.by_base[i] = i;
    hs_sort(r.by_base, p->nmodules, sizeof *r.by_base, cmp_base, p);
    prefetch_symbols(&r);
    name_plan_functions(&r);

    r.plan = hs_xcalloc(p->nfuncs, sizeof *r.plan);
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].in_plan || p->modules[p->funcs[i].module].jit)
            r.plan[r.nplan++] = (uint32_t)i;
    hs_sort(r.plan, r.nplan, sizeof *r.plan, cmp_plan, p);
    r.plan_key = hs_xcalloc(r.nplan + 1, sizeof *r.plan_key);
    r.plan_end = hs_xcalloc(r.nplan + 1, sizeof *r.plan_end);
    for (size_t i = 0; i < r.nplan; i++) {
        const hs_prof_func *f = &p->funcs[r.plan[i]];
        r.plan_key[i] = (uint64_t)f->module << 32 | f->rva;
        r.plan_end[i] = f->rva + f->size;
    }

    resolve_edges(&r);
    resolve_stacks(&r);
    if (p->crash_address)
        p->crash_at = locate(&r, p->crash_address, p->crash_address, -1);
    if (p->srcline_on)
        function_lines(&r);

    for (size_t i = 0; i < p->nmodules; i++)
        hs_modsyms_close(r.ms[i].t);
    /* what the symbol servers did not give, in the report too */
    char *m;
    for (size_t i = 0; conf && conf->fetch && (m = conf->fetch->message(conf->fetch->ctx, i)); i++, free(m))
        hs_profile_warn(p, "%s", m);
    free(r.ms);
    free(r.by_base);
    free(r.plan);
    free(r.plan_key);
    free(r.plan_end);
}
