/*
 * sampler/etl/clr.c - the collector's part for the CLR's events: one
 * hs_etl_jit record per JIT-compiled method's code (a load, or the first
 * rundown record of a method not loaded during the trace, opens it; an
 * unload closes it), and the assemblies' files by (pid, ModuleID), which
 * give each record its module at the end of the trace (rundown module
 * records may come after the methods').
 */
#include <string.h>

#include "hook/base/util.h"
#include "hook/base/vec.h"
#include "sampler/etl/collector.h"

static int oom(hs_etl_collector *c)
{
    hs_etl_fail(c->err, 0, 0, "out of memory");
    return -1;
}

/* "Namespace.Method", or "Method" when the namespace is empty. */
static const char *method_name(hs_etl_collector *c, const hs_etl_clr_method_ev *v)
{
    hs_etl_arena *a = &c->priv->arena;
    const char *ns = hs_etl_arena_u16(a, v->ns, v->ns_len), *name = hs_etl_arena_u16(a, v->name, v->name_len);
    if (!ns || !name || !ns[0])
        return name;
    size_t n1 = strlen(ns), n2 = strlen(name);
    char *s = hs_etl_arena_alloc(a, n1 + n2 + 2);
    if (s) {
        memcpy(s, ns, n1);
        s[n1] = '.';
        memcpy(s + n1 + 1, name, n2 + 1);
    }
    return s;
}

int hs_etl_on_clr_method(void *ctx, const hs_etl_event *ev, int what, const hs_etl_clr_method_ev *v)
{
    hs_etl_collector *c = ctx;
    hs_etl_trace *t = c->t;
    uint32_t pid = ev->pid == HS_ETL_NONE ? 0 : ev->pid;
    uint32_t idx = hs_map_get(&c->jit_now, v->method_id, pid);
    /* a load of a method whose code is live elsewhere (re-JIT) is new code */
    if (idx != HS_ETL_NONE && what == HS_ETL_CLR_LOAD && t->jits[idx].start != v->start)
        idx = HS_ETL_NONE;
    if (idx == HS_ETL_NONE) {
        if (hs_grow(&t->jits, &c->cap_jits, t->njits, sizeof *t->jits) < 0)
            return oom(c);
        idx = t->njits++;
        hs_etl_jit *j = &t->jits[idx];
        *j = (hs_etl_jit){.pid = pid, .size = v->size, .start = v->start, .unload = HS_ETL_NEVER,
                          .method_id = v->method_id, .module_id = v->module_id, .token = v->token,
                          .load = what == HS_ETL_CLR_LOAD ? ev->ts : 0};
        if (!(j->name = method_name(c, v)) ||
            !(j->signature = hs_etl_arena_u16(&c->priv->arena, v->sig, v->sig_len)))
            return oom(c);
        if (hs_map_put(&c->jit_now, v->method_id, pid, idx) < 0)
            return oom(c);
    }
    if (what == HS_ETL_CLR_UNLOAD) {
        t->jits[idx].unload = ev->ts;
        hs_map_del(&c->jit_now, v->method_id, pid);
    }
    return 0;
}

int hs_etl_on_clr_module(void *ctx, const hs_etl_event *ev, int what, const hs_etl_clr_module_ev *v)
{
    hs_etl_collector *c = ctx;
    uint32_t pid = ev->pid == HS_ETL_NONE ? 0 : ev->pid;
    (void)what;
    if (!v->il_path_len || hs_map_get(&c->clr_modules, v->module_id, pid) != HS_ETL_NONE)
        return 0;
    if (hs_grow(&c->clr_paths, &c->cap_clr_paths, c->nclr_paths, sizeof *c->clr_paths) < 0)
        return oom(c);
    const char *path = hs_etl_arena_u16(&c->priv->arena, v->il_path, v->il_path_len);
    if (!path)
        return oom(c);
    c->clr_paths[c->nclr_paths] = path;
    return hs_map_put(&c->clr_modules, v->module_id, pid, c->nclr_paths++) < 0 ? oom(c) : 0;
}

void hs_etl_clr_finish(hs_etl_collector *c)
{
    hs_etl_trace *t = c->t;
    for (uint32_t i = 0; i < t->njits; i++) {
        hs_etl_jit *j = &t->jits[i];
        uint32_t k = j->module_id ? hs_map_get(&c->clr_modules, j->module_id, j->pid) : HS_ETL_NONE;
        j->module = k == HS_ETL_NONE ? NULL : c->clr_paths[k];
    }
}
