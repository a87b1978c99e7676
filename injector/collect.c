/*
 * injector/collect.c - sum the session's per-thread counters (see collect.h).
 */
#include "collect.h"

#include <string.h>
#include <windows.h>

#include "hookscope/session.h"
#include "util.h"

/* Make sure our view of [p, p+len) is accessible before reading it.
 * Pages the agent committed are shared; committing in our view too is
 * harmless and covers systems where commit state is per view. */
static void view_commit(void *p, uint64_t len)
{
    if (!len)
        return;
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(HS_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + len + HS_PAGE - 1) & ~(uintptr_t)(HS_PAGE - 1);
    VirtualAlloc((void *)lo, hi - lo, MEM_COMMIT, PAGE_READWRITE);
}

int hs_collect(void *view, hs_results *r)
{
    hs_session_header *h = view;
    uint32_t nmods = h->n_modules, nfuncs = h->n_functions;
    if (nmods > h->max_modules)
        nmods = h->max_modules;
    if (nfuncs > h->max_functions)
        nfuncs = h->max_functions;

    view_commit(hs_session_module(view, 0), (uint64_t)nmods * h->module_rec_size);
    view_commit(hs_session_func(view, 0), (uint64_t)nfuncs * h->func_rec_size);

    r->mods = hs_xcalloc(nmods, sizeof *r->mods);
    r->nmods = nmods;
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = hs_session_module(view, i);
        hs_res_module *d = &r->mods[i];
        d->path = hs_utf8_n(m->path, HS_PATH_LEN);
        d->name = hs_basename(d->path);
        d->base = m->base;
        d->size = m->size;
        d->timestamp = m->timestamp;
        d->flags = m->flags;
        d->found = m->n_funcs;
        d->hooked = m->n_hooked;
        d->pattern = m->pattern;
        d->status = m->status;
        memcpy(d->skip_counts, m->skip_counts, sizeof d->skip_counts);
        memcpy(d->patch_counts, m->patch_counts, sizeof d->patch_counts);
        memcpy(d->entry_only_counts, m->entry_only_counts, sizeof d->entry_only_counts);
        d->install_s = r->tsc_hz > 0 ? (double)m->install_ticks / r->tsc_hz : 0;
    }

    r->funcs = hs_xcalloc(nfuncs, sizeof *r->funcs);
    r->nfuncs = nfuncs;
    for (uint32_t i = 0; i < nfuncs; i++) {
        const hs_func_rec *f = hs_session_func(view, i);
        hs_res_func *d = &r->funcs[i];
        d->module = f->module < nmods ? f->module : 0;
        d->rva = f->rva;
        d->size = f->size;
        d->skip = f->skip_reason;
        d->kind = f->patch_kind;
        d->entry_only = f->entry_only;
        d->flags = f->flags;
    }

    /* every thread region, then the overflow region */
    int32_t used = h->threads_used;
    uint32_t nregions = used < 0 ? 0 : (uint32_t)used < h->max_threads ? (uint32_t)used : h->max_threads;
    r->threads = nregions;
    r->overflow_calls = h->overflow_calls;
    for (uint32_t k = 0; k <= nregions; k++) {
        uint32_t region = k < nregions ? k : h->max_threads;
        char *base = hs_session_region(view, region);
        view_commit(base, h->region_counters_off);
        const hs_region_hdr *rh = (const hs_region_hdr *)base;
        uint32_t n = rh->committed_funcs;
        if (n > nfuncs)
            n = nfuncs;
        const uint64_t *c = hs_region_counters(view, region);
        view_commit((void *)c, (uint64_t)n * 8);
        for (uint32_t i = 0; i < n; i++)
            r->funcs[i].calls += c[i];
    }
    for (uint32_t i = 0; i < nfuncs; i++)
        r->total_calls += r->funcs[i].calls;
    return 0;
}
