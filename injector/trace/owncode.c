/*
 * injector/trace/owncode.c - hookscope's code in the target, from the
 * session (see owncode.h).
 */
#include "injector/trace/owncode.h"

#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "hookscope/session.h"
#include "injector/trace/session_host.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xFF51AFD7ED558CCDull;
}


int hs_owncode_read(void *ctx, hs_owncode *o)
{
    hs_owncode_src *src = ctx;
    hs_session_header *h = src->view;
    uint32_t nmods = h->n_modules < h->max_modules ? h->n_modules : h->max_modules;
    uint32_t nfuncs = h->n_functions < h->max_functions ? h->n_functions : h->max_functions;
    if (!hs_session_commit_ok(hs_session_module(src->view, 0), (uint64_t)nmods * h->module_rec_size) ||
        !hs_session_commit_ok(hs_session_func(src->view, 0), (uint64_t)nfuncs * h->func_rec_size))
        return 0;
    uint64_t sig = mix(mix(h->agent_base, nmods), nfuncs);
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = hs_session_module(src->view, i);
        sig = mix(mix(mix(sig, m->arena_base), m->unwind_count), (uint64_t)m->n_hooked << 32 | m->flags);
    }
    for (int i = 0; i < 16; i++)
        sig = mix(sig, h->injector_tids[i]);
    for (int i = 0; i < 8; i++)
        sig = mix(sig, h->agent_tids[i]);
    if (sig == src->signature)
        return 0;
    src->signature = sig;

    memset(o, 0, sizeof *o);
    o->agent_base = h->agent_base;
    o->wrap_begin = h->wrap_begin;
    o->wrap_rsi = h->wrap_rsi;
    o->wrap_gone = h->wrap_gone;
    o->wrap_end = h->wrap_end;
    o->wrap_ret = h->wrap_ret;
    size_t nslots = 0;
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = hs_session_module(src->view, i);
        if ((m->flags & HS_MOD_AGENT) && m->base == h->agent_base)
            o->agent_size = m->size;
        if (m->arena_base)
            o->narenas++;
    }
    o->arenas = hs_xcalloc(o->narenas ? o->narenas : 1, sizeof *o->arenas);
    o->narenas = 0;
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = hs_session_module(src->view, i);
        if (!m->arena_base)
            continue;
        hs_own_arena *a = &o->arenas[o->narenas++];
        a->base = m->arena_base;
        a->size = m->arena_size;
        a->table = m->unwind_table;
        a->ntable = m->unwind_count;
        for (uint32_t f = m->first_func; f < m->first_func + m->n_funcs && f < nfuncs; f++)
            nslots += hs_session_func(src->view, f)->slot_len != 0;
    }
    o->slots = hs_xcalloc(nslots ? nslots : 1, sizeof *o->slots);
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = hs_session_module(src->view, i);
        if (!m->arena_base)
            continue;
        for (uint32_t f = m->first_func; f < m->first_func + m->n_funcs && f < nfuncs && o->nslots < nslots; f++) {
            const hs_func_rec *r = hs_session_func(src->view, f);
            if (!r->slot_len)
                continue;
            hs_own_slot *s = &o->slots[o->nslots++];
            s->lo = m->arena_base + r->slot_off;
            s->hi = s->lo + r->slot_len;
            s->tramp = s->lo + r->tramp_off;
            s->entry = m->base + r->rva;
            s->desc = (r->flags & HS_FUNC_WRAPPED) ? s->lo : 0;
        }
    }
    o->modules = hs_xcalloc(nmods ? nmods : 1, sizeof *o->modules);
    for (uint32_t i = 0; i < nmods; i++) {
        const hs_module_rec *m = hs_session_module(src->view, i);
        if (!m->base || !m->size)
            continue;
        hs_own_module *d = &o->modules[o->nmodules++];
        d->base = m->base;
        d->size = m->size;
        d->unloaded = (m->flags & HS_MOD_UNLOADED) != 0;
        d->agent = (m->flags & HS_MOD_AGENT) != 0;
        d->path = hs_utf8_n(m->path, HS_PATH_LEN);
    }
    for (int i = 0; i < 16; i++)
        if (h->injector_tids[i])
            o->tids[o->ntids++] = h->injector_tids[i];
    for (int i = 0; i < 8; i++)
        if (h->agent_tids[i])
            o->tids[o->ntids++] = h->agent_tids[i];
    return 1;
}
