/*
 * injector/profile/load.c - report.json back into a profile (see load.h).
 *
 * Functions are found by module and rva where report.json gives the rva
 * ("functions", edges' "callee_rva" and "caller_rva", entry stacks' "rva",
 * stacks' "frame_rvas", "crash_at_rva": given wherever a name is shared
 * by two functions of a module); callers and stack frames named only by
 * "module!function" are the first function of that module with that name,
 * or become one known by name (reports written before rvas were saved
 * beside names, and names no other function has).
 */
#include "injector/profile/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/search.h"
#include "hook/base/util.h"
#include "hookscope/skip.h"
#include "injector/profile/json_read.h"

typedef struct loader {
    hs_profile *p;
    uint64_t *ids;               /* module i of the profile has "id" ids[i] (increasing) */
    char *err;
    size_t errlen;
    int failed;
} loader;

static void failf(loader *l, const char *fmt, const char *what)
{
    if (!l->failed)
        snprintf(l->err, l->errlen, fmt, what);
    l->failed = 1;
}

static uint64_t hex(const char *s)
{
    return s ? strtoull(s, NULL, 16) : 0;
}

/* The function of module m named `name` (the first added of that name),
 * or one added, known by name only. */
static uint32_t func_by_name(loader *l, uint32_t m, const char *name)
{
    int64_t f = hs_profile_find_func(l->p, m, name, HS_RVA_NONE);
    return f >= 0 ? (uint32_t)f : hs_profile_add_func(l->p, m, HS_RVA_NONE, 0, name);
}

/* The function of module m at rva (a hex string) when given, else by name;
 * one is added (with that name) if there is none. */
static uint32_t func_at(loader *l, uint32_t m, const char *rva, const char *name)
{
    if (!rva)
        return func_by_name(l, m, name);
    int64_t f = hs_profile_func_at(l->p, m, (uint32_t)hex(rva));
    return f >= 0 ? (uint32_t)f : hs_profile_add_func(l->p, m, (uint32_t)hex(rva), 0, name);
}

static int code_of(const char *name, int n, const char *(*names)(int))
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names(i), name))
            return i;
    return 0;
}

static void counts(const hs_json *obj, uint32_t *out, int n, const char *(*names)(int))
{
    if (!hs_json_is(obj, HS_JOBJ))
        return;
    for (size_t i = 0; i < obj->n; i++) {
        int c = code_of(obj->k[i], n, names);
        if (c > 0)
            out[c] = (uint32_t)hs_json_u64(&obj->v[i], 0);
    }
}

/* The module named `name` (the first of that name). */
static int64_t module_named(loader *l, const char *name, const char *context)
{
    int64_t m = name ? hs_profile_find_module(l->p, name) : -1;
    if (m < 0)
        failf(l, "%s names a module that is not in the report", context);
    return m;
}

/* The module whose "id" is want. */
typedef struct id_key {
    const uint64_t *ids;
    uint64_t want;
} id_key;

static bool id_below(const void *ctx, size_t i)
{
    const id_key *k = ctx;
    return k->ids[i] < k->want;
}

static int64_t module_by_id(loader *l, uint64_t want, const char *context)
{
    id_key k = { l->ids, want };
    size_t lo = hs_partition_point(l->p->nmodules, &k, id_below);
    if (lo < l->p->nmodules && l->ids[lo] == want)
        return (int64_t)lo;
    failf(l, "%s names a module that is not in the report", context);
    return -1;
}

/* The module of o's `id_key` when given (two modules can share a name),
 * else the one named by o's `name_key`. */
static int64_t module_of(loader *l, const hs_json *o, const char *id_key, const char *name_key,
                         const char *context)
{
    const hs_json *id = hs_json_get(o, id_key);
    if (hs_json_is(id, HS_JNUM))
        return module_by_id(l, hs_json_u64(id, UINT64_MAX), context);
    return module_named(l, hs_json_str(hs_json_get(o, name_key), NULL), context);
}


static void load_run(loader *l, const hs_json *root)
{
    hs_profile *p = l->p;
    const hs_json *tool = hs_json_get(root, "tool"), *target = hs_json_get(root, "target");
    p->command = hs_xstrdup(hs_json_str(hs_json_get(tool, "command"), "run"));
    p->agent_tls_index = (uint32_t)hs_json_u64(hs_json_get(tool, "agent_tls_index"), 0);
    if (!hs_json_is(target, HS_JOBJ)) {
        failf(l, "%s", "no \"target\" object");
        return;
    }
    p->target_path = hs_xstrdup(hs_json_str(hs_json_get(target, "path"), "?"));
    const hs_json *rights = hs_json_get(target, "rights");
    if (hs_json_is(rights, HS_JSTR))
        p->target_rights = hs_xstrdup(hs_json_str(rights, ""));
    const hs_json *args = hs_json_get(target, "args");
    if (hs_json_is(args, HS_JARR) && args->n) {
        p->args = hs_xcalloc(args->n, sizeof *p->args);
        for (size_t i = 0; i < args->n; i++)
            p->args[p->nargs++] = hs_xstrdup(hs_json_str(&args->v[i], ""));
    }
    p->pid = (uint32_t)hs_json_u64(hs_json_get(target, "pid"), 0);
    uint64_t bits = hs_json_u64(hs_json_get(target, "bits"), 0);
    p->bits = bits == 32 || bits == 64 ? (int)bits : 0;   /* (untrusted: another value is not known) */
    const hs_json *code = hs_json_get(target, "exit_code");
    p->exited = hs_json_is(code, HS_JNUM);
    p->exit_code = (uint32_t)hs_json_u64(code, 0);
    int stop = hs_stop_from_name(hs_json_str(hs_json_get(target, "stop"), ""));
    p->stop = stop >= 0 ? stop : HS_STOP_EXIT;
    if (p->stop == HS_STOP_CRASH) {
        const hs_json *what = hs_json_get(target, "crash");
        if (hs_json_is(what, HS_JSTR))
            p->crash_what = hs_xstrdup(hs_json_str(what, ""));
        p->crash_code = (uint32_t)hs_json_u64(hs_json_get(target, "crash_code"), 0);
        p->crash_address = hex(hs_json_str(hs_json_get(target, "crash_address"), "0"));
    }
    p->wall_s = hs_json_num(hs_json_get(target, "wall_time_s"), 0);
    p->duration_s = hs_json_num(hs_json_get(target, "duration_s"), 0);
    p->threads = (uint32_t)hs_json_u64(hs_json_get(root, "threads"), 0);
    p->regions_reused = (uint32_t)hs_json_u64(hs_json_get(root, "regions_reused"), 0);
    p->total_calls = hs_json_u64(hs_json_get(root, "total_calls"), 0);
    p->overflow_calls = hs_json_i64(hs_json_get(root, "overflow_calls"), 0);
    const hs_json *tr = hs_json_get(root, "trace");
    if (hs_json_is(tr, HS_JOBJ)) {
        p->trace.file = hs_xstrdup(hs_json_str(hs_json_get(tr, "file"), "?"));
        snprintf(p->trace.machine, sizeof p->trace.machine, "%s", hs_json_str(hs_json_get(tr, "machine"), ""));
        snprintf(p->trace.start, sizeof p->trace.start, "%s", hs_json_str(hs_json_get(tr, "start"), ""));
        p->trace.span_s = hs_json_num(hs_json_get(tr, "span_s"), 0);
        p->trace.named = (uint32_t)hs_json_u64(hs_json_get(tr, "processes_named"), 0);
    }
    const hs_json *w = hs_json_get(root, "warnings");
    for (size_t i = 0; hs_json_is(w, HS_JARR) && i < w->n; i++)
        hs_profile_warn(p, "%s", hs_json_str(&w->v[i], ""));
    const hs_json *opt = hs_json_get(root, "options");
    p->edges_on = hs_json_bool(hs_json_get(opt, "edges"), false);
    p->time_on = hs_json_bool(hs_json_get(opt, "time"), false);
    p->srcline_on = hs_json_bool(hs_json_get(opt, "srcline"), false);
    const hs_json *st = hs_json_get(opt, "stacks");
    p->stack_depth = (uint32_t)hs_json_u64(hs_json_get(st, "depth"), 0);
    p->stack_every = (uint32_t)hs_json_u64(hs_json_get(st, "every"), 1);
    p->edges_lost = hs_json_u64(hs_json_get(root, "edges_lost"), 0);
    p->stacks_dropped = hs_json_u64(hs_json_get(root, "stacks_dropped"), 0);
    p->time_dropped = hs_json_u64(hs_json_get(root, "time_dropped"), 0);
    p->tsc_hz = hs_json_num(hs_json_get(root, "tsc_hz"), 0);
}

typedef struct module_row {
    const hs_json *o;
    bool traced;
    uint64_t id;                 /* the profile's order, from "id" */
} module_row;

static int cmp_row(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const module_row *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Both module lists, in the profile's order ("id"; list order without it;
 * ids may leave gaps: hookscope's own module is not listed). */
static void load_modules(loader *l, const hs_json *traced, const hs_json *loaded)
{
    size_t n = (hs_json_is(traced, HS_JARR) ? traced->n : 0) + (hs_json_is(loaded, HS_JARR) ? loaded->n : 0);
    module_row *rows = hs_xcalloc(n ? n : 1, sizeof *rows);
    size_t k = 0;
    for (int list = 0; list < 2; list++) {
        const hs_json *arr = list ? loaded : traced;
        for (size_t i = 0; hs_json_is(arr, HS_JARR) && i < arr->n; i++, k++) {
            rows[k].o = &arr->v[i];
            rows[k].traced = list == 0;
            rows[k].id = hs_json_u64(hs_json_get(&arr->v[i], "id"), k);
        }
    }
    hs_sort(rows, n, sizeof *rows, cmp_row, NULL);
    l->ids = hs_xcalloc(n ? n : 1, sizeof *l->ids);
    for (k = 0; k < n; k++) {
        const hs_json *o = rows[k].o;
        const char *path = hs_json_str(hs_json_get(o, "path"), NULL);
        const char *name = hs_json_str(hs_json_get(o, "name"), NULL);
        if (!path || !name || (k && rows[k].id == rows[k - 1].id)) {
            failf(l, "%s", !path || !name ? "a module without a name or path" : "two modules with the same id");
            break;
        }
        l->ids[k] = rows[k].id;
        uint32_t mi = hs_profile_add_module(l->p, path, hex(hs_json_str(hs_json_get(o, "base"), "0")),
                                            (uint32_t)hs_json_u64(hs_json_get(o, "size"), 0));
        hs_prof_module *m = &l->p->modules[mi];
        free(m->name);
        m->name = hs_xstrdup(name);
        m->id = (uint32_t)rows[k].id;
        m->timestamp = (uint32_t)hs_json_u64(hs_json_get(o, "timestamp"), 0);
        m->traced = rows[k].traced;
        m->kernel = hs_json_bool(hs_json_get(o, "kernel"), false);
        m->jit = hs_json_bool(hs_json_get(o, "jit"), false);
        if (!m->traced)
            continue;
        m->funcs_found = (uint32_t)hs_json_u64(hs_json_get(o, "functions_found"), 0);
        m->funcs_hooked = (uint32_t)hs_json_u64(hs_json_get(o, "functions_hooked"), 0);
        m->install_s = hs_json_num(hs_json_get(o, "install_s"), 0);
        m->main = hs_json_bool(hs_json_get(o, "main"), false);
        m->late = hs_json_bool(hs_json_get(o, "loaded_late"), false);
        m->unloaded = hs_json_bool(hs_json_get(o, "unloaded"), false);
        counts(hs_json_get(o, "skipped"), m->skip_counts, HS_SKIP__COUNT, hs_skip_reason_name);
        counts(hs_json_get(o, "patch_kinds"), m->patch_counts, HS_PATCH__COUNT, hs_patch_kind_name);
        counts(hs_json_get(o, "entry_only"), m->entry_only_counts, HS_WRAP__COUNT, hs_entry_only_name);
    }
    free(rows);
}

static void load_time(hs_profile *p, uint32_t f, const hs_json *t)
{
    hs_prof_time *d = hs_prof_time_of(p, f);
    d->calls = hs_json_u64(hs_json_get(t, "calls"), 0);
    d->total_ns = hs_json_u64(hs_json_get(t, "total_ns"), 0);
    d->sum_ns = hs_json_u64(hs_json_get(t, "sum_ns"), d->total_ns);
    d->self_ns = hs_json_u64(hs_json_get(t, "self_ns"), 0);
    d->min_ns = hs_json_u64(hs_json_get(t, "min_ns"), 0);
    d->max_ns = hs_json_u64(hs_json_get(t, "max_ns"), 0);
    d->open = hs_json_u64(hs_json_get(t, "open"), 0);
    const hs_json *h = hs_json_get(t, "hist");
    for (size_t i = 0; hs_json_is(h, HS_JARR) && i < h->n; i++) {
        uint64_t ns = hs_json_u64(hs_json_get(&h->v[i], "ns"), 0);
        int b = ns ? 63 - __builtin_clzll(ns) : 0;
        if (b < HS_PROF_HIST)
            d->hist[b] = hs_json_u64(hs_json_get(&h->v[i], "count"), 0);
    }
}

static void load_functions(loader *l, const hs_json *arr)
{
    hs_profile *p = l->p;
    for (size_t i = 0; hs_json_is(arr, HS_JARR) && i < arr->n && !l->failed; i++) {
        const hs_json *o = &arr->v[i];
        const char *name = hs_json_str(hs_json_get(o, "name"), NULL);
        int64_t m = module_of(l, o, "module_id", "module", "a function");
        if (m < 0 || !name) {
            failf(l, "%s", "a function without a module or name");
            return;
        }
        const char *rva = hs_json_str(hs_json_get(o, "rva"), NULL);
        uint32_t fi = hs_profile_add_func(p, (uint32_t)m, rva ? (uint32_t)hex(rva) : HS_RVA_NONE,
                                          (uint32_t)hs_json_u64(hs_json_get(o, "size"), 0), name);
        hs_prof_func *f = &p->funcs[fi];
        f->in_plan = hs_json_bool(hs_json_get(o, "traced"), true);
        f->hooked = hs_json_bool(hs_json_get(o, "hooked"), false);
        f->calls = hs_json_u64(hs_json_get(o, "calls"), 0);
        const char *skip = hs_json_str(hs_json_get(o, "skip_reason"), NULL);
        f->skip = (uint8_t)(skip ? code_of(skip, HS_SKIP__COUNT, hs_skip_reason_name) : 0);
        const char *patch = hs_json_str(hs_json_get(o, "patch"), NULL);
        f->patch = (uint8_t)(patch ? code_of(patch, HS_PATCH__COUNT, hs_patch_kind_name) : 0);
        const char *eo = hs_json_str(hs_json_get(o, "entry_only"), NULL);
        f->entry_only = (uint8_t)(eo ? code_of(eo, HS_WRAP__COUNT, hs_entry_only_name) : 0);
        const char *file = hs_json_str(hs_json_get(o, "file"), NULL);
        if (file) {
            f->file = hs_profile_intern(p, file);
            f->line = (uint32_t)hs_json_u64(hs_json_get(o, "line"), 0);
        }
        const hs_json *t = hs_json_get(o, "time");
        f->wrapped = f->hooked && p->time_on && hs_json_is(t, HS_JOBJ);
        if (f->wrapped) {
            load_time(p, fi, t);
            p->funcs[fi].time->unwinds = hs_json_u64(hs_json_get(o, "unwinds"), 0);
        }
    }
}

/* A location as hs_loc_format_saved wrote it: "module!function[+0xoff]",
 * "module+0xoff" or "0xaddr"; or, with `module` >= 0, a function of that
 * module: "function". rva (a hex string, or NULL): the function's. */
static hs_loc parse_loc(loader *l, const char *text, int64_t module, bool with_offset, const char *rva)
{
    hs_loc loc = { -1, -1, 0 };
    const char *bang = module >= 0 ? NULL : strchr(text, '!');
    const char *plus = strstr(text, "+0x");
    for (const char *q = plus; q; q = strstr(q + 1, "+0x"))
        plus = q;
    if (module < 0 && !bang) {
        if (!plus) {
            loc.off = hex(text);
            return loc;
        }
        char *mod = hs_xstrndup(text, (size_t)(plus - text));
        loc.module = (int32_t)module_named(l, mod, "a frame");
        free(mod);
        loc.off = hex(plus + 3);
        return loc;
    }
    const char *fname = text;
    if (bang) {
        char *mod = hs_xstrndup(text, (size_t)(bang - text));
        module = module_named(l, mod, "a frame");
        free(mod);
        fname = bang + 1;
    }
    if (module < 0)
        return loc;
    bool off = with_offset && plus && plus > fname;
    char *fn = hs_xstrndup(fname, off ? (size_t)(plus - fname) : strlen(fname));
    loc.func = (int32_t)func_at(l, (uint32_t)module, rva, fn);
    free(fn);
    loc.off = off ? hex(plus + 3) : 0;
    return loc;
}

static void load_edges(loader *l, const hs_json *arr)
{
    hs_profile *p = l->p;
    for (size_t i = 0; hs_json_is(arr, HS_JARR) && i < arr->n && !l->failed; i++) {
        const hs_json *o = &arr->v[i];
        const char *callee = hs_json_str(hs_json_get(o, "callee"), NULL);
        const char *caller = hs_json_str(hs_json_get(o, "caller"), NULL);
        int64_t cm = module_of(l, o, "callee_module_id", "callee_module", "an edge");
        if (cm < 0 || !callee || !caller) {
            failf(l, "%s", "an edge without a caller or callee");
            return;
        }
        uint32_t ce = func_at(l, (uint32_t)cm, hs_json_str(hs_json_get(o, "callee_rva"), NULL), callee);
        const char *crm = hs_json_str(hs_json_get(o, "caller_module"), NULL);
        const char *crva = hs_json_str(hs_json_get(o, "caller_rva"), NULL);
        hs_loc loc = { -1, -1, 0 };
        if (!crm) {
            loc = parse_loc(l, caller, -1, false, NULL);    /* "0xaddr" */
        } else {
            int64_t m = module_of(l, o, "caller_module_id", "caller_module", "an edge");
            size_t n = strlen(crm);
            if (m < 0)
                return;
            if (crva) {
                loc.func = (int32_t)func_at(l, (uint32_t)m, crva, caller);
            } else if (!strncmp(caller, crm, n) && !strncmp(caller + n, "+0x", 3)) {
                loc.module = (int32_t)m;                     /* "module+0xoff" */
                loc.off = hex(caller + n + 3);
            } else {
                loc = parse_loc(l, caller, m, false, NULL);
            }
        }
        hs_profile_add_edge(p, loc, ce, hs_json_u64(hs_json_get(o, "calls"), 0), 0);
    }
}

/* A stack's frames, with "frame_modules" (ids) where module names repeat
 * and "frame_rvas" where function names do. */
static void load_frames(loader *l, hs_prof_stack *st, const hs_json *o)
{
    const hs_json *frames = hs_json_get(o, "frames");
    const hs_json *fm = hs_json_get(o, "frame_modules");
    const hs_json *fr = hs_json_get(o, "frame_rvas");
    for (size_t k = 0; k < st->nframes; k++) {
        const char *text = hs_json_str(&frames->v[k], "0x0");
        const hs_json *id = hs_json_is(fm, HS_JARR) && k < fm->n ? &fm->v[k] : NULL;
        const char *rva = hs_json_is(fr, HS_JARR) && k < fr->n ? hs_json_str(&fr->v[k], NULL) : NULL;
        if (hs_json_is(id, HS_JNUM)) {
            /* the module by id, the rest of the text as usual */
            int64_t m = module_by_id(l, hs_json_u64(id, UINT64_MAX), "a frame");
            const char *bang = strchr(text, '!');
            if (m >= 0 && bang) {
                st->frames[k] = parse_loc(l, bang + 1, m, true, rva);
                continue;
            }
            if (m >= 0) {
                const char *plus = strstr(text, "+0x");
                st->frames[k].func = -1;
                st->frames[k].module = (int32_t)m;
                st->frames[k].off = plus ? hex(plus + 3) : 0;
                continue;
            }
        }
        st->frames[k] = parse_loc(l, text, -1, true, rva);
    }
}

/* --srcline: a stack's "frame_lines" ("file:line" or null per frame) */
static void load_frame_lines(loader *l, hs_prof_stack *st, const hs_json *o)
{
    const hs_json *fl = hs_json_get(o, "frame_lines");
    if (!hs_json_is(fl, HS_JARR))
        return;
    st->src = hs_xcalloc(st->nframes ? st->nframes : 1, sizeof *st->src);
    for (size_t k = 0; k < fl->n && k < st->nframes; k++) {
        const char *text = hs_json_str(&fl->v[k], NULL);
        const char *colon = text ? strrchr(text, ':') : NULL;
        if (!colon)
            continue;
        char *file = hs_xstrndup(text, (size_t)(colon - text));
        st->src[k].file = hs_profile_intern(l->p, file);
        st->src[k].line = (uint32_t)strtoul(colon + 1, NULL, 10);
        free(file);
    }
}

/* The sampled stacks of a kind (hs_stack_kind_key; a report written
 * before ready and hookscope samples were told apart has only CPU and
 * wait stacks). */
static void load_sample_stacks(loader *l, const hs_json *arr, uint8_t kind)
{
    for (size_t i = 0; hs_json_is(arr, HS_JARR) && i < arr->n && !l->failed; i++) {
        const hs_json *o = &arr->v[i];
        const hs_json *frames = hs_json_get(o, "frames");
        if (!hs_json_is(frames, HS_JARR)) {
            failf(l, "%s", "a sample stack without frames");
            return;
        }
        hs_prof_stack *st = hs_profile_add_stack(l->p, kind, 0, hs_json_u64(hs_json_get(o, "count"), 0),
                                                 (uint32_t)frames->n);
        st->tid = (uint32_t)hs_json_u64(hs_json_get(o, "thread"), 0);
        st->truncated = hs_json_bool(hs_json_get(o, "truncated"), false);
        load_frames(l, st, o);
        load_frame_lines(l, st, o);
    }
}

static void load_sampling(loader *l, const hs_json *root)
{
    hs_profile *p = l->p;
    const hs_json *s = hs_json_get(root, "sampling");
    if (hs_json_is(s, HS_JOBJ)) {
        hs_prof_sampling *d = &p->sampling;
        d->on = true;
        snprintf(d->backend, sizeof d->backend, "%s", hs_json_str(hs_json_get(s, "backend"), ""));
        d->rate_hz = hs_json_num(hs_json_get(s, "rate_hz"), 0);
        d->samples = hs_json_u64(hs_json_get(s, "samples"), 0);
        d->wait_samples = hs_json_u64(hs_json_get(s, "wait_samples"), 0);
        d->ready_samples = hs_json_u64(hs_json_get(s, "ready_samples"), 0);
        d->hookscope_samples = hs_json_u64(hs_json_get(s, "hookscope_samples"), 0);
        d->off_cpu_unknown = !hs_json_bool(hs_json_get(s, "off_cpu_known"), true);
        d->wait_no_stack = hs_json_u64(hs_json_get(s, "wait_no_stack"), 0);
        d->ready_no_stack = hs_json_u64(hs_json_get(s, "ready_no_stack"), 0);
        d->lost = hs_json_u64(hs_json_get(s, "lost"), 0);
        d->threads = (uint32_t)hs_json_u64(hs_json_get(s, "threads"), 0);
        d->cpu_s = hs_json_num(hs_json_get(s, "cpu_time_s"), -1);
        d->held_s = hs_json_num(hs_json_get(s, "held_s"), -1);
        d->threads_s = hs_json_num(hs_json_get(s, "threads_s"), -1);
        d->etl_kept = hs_json_get(s, "etl_file") != NULL;
        snprintf(d->rate_reason, sizeof d->rate_reason, "%s", hs_json_str(hs_json_get(s, "rate_reason"), ""));
        snprintf(d->lost_why, sizeof d->lost_why, "%s", hs_json_str(hs_json_get(s, "lost_why"), ""));
        const hs_json *su = hs_json_get(s, "suspensions"), *re = hs_json_get(s, "reused_samples");
        d->suspensions = su ? (int64_t)hs_json_u64(su, 0) : -1;
        d->reused = re ? (int64_t)hs_json_u64(re, 0) : -1;
        for (uint8_t kind = HS_STACK_CPU; kind <= HS_STACK_HOOKSCOPE && !l->failed; kind++)
            load_sample_stacks(l, hs_json_get(root, hs_stack_kind_key(kind)), kind);
    }
    const hs_json *t = hs_json_get(root, "thread_list");
    for (size_t i = 0; hs_json_is(t, HS_JARR) && i < t->n; i++) {
        const hs_json *o = &t->v[i];
        hs_prof_thread *d = hs_profile_thread(p, (uint32_t)hs_json_u64(hs_json_get(o, "tid"), 0));
        d->calls = hs_json_u64(hs_json_get(o, "calls"), 0);
        d->cpu_samples = hs_json_u64(hs_json_get(o, "cpu_samples"), 0);
        d->wait_samples = hs_json_u64(hs_json_get(o, "wait_samples"), 0);
        d->ready_samples = hs_json_u64(hs_json_get(o, "ready_samples"), 0);
        d->hookscope_samples = hs_json_u64(hs_json_get(o, "hookscope_samples"), 0);
        d->cpu_s = hs_json_num(hs_json_get(o, "cpu_time_s"), -1);
        d->running_s = hs_json_num(hs_json_get(o, "running_s"), -1);
        d->wait_s = hs_json_num(hs_json_get(o, "wait_s"), -1);
        d->ready_s = hs_json_num(hs_json_get(o, "ready_s"), -1);
    }
}

/* --timeline: the description of the run's timeline (its file named,
 * found beside report.json by hs_profile_load). */
static void load_timeline(loader *l, const hs_json *o)
{
    if (!hs_json_is(o, HS_JOBJ))
        return;
    hs_prof_timeline *t = hs_xcalloc(1, sizeof *t);
    l->p->timeline = t;
    const char *name = hs_json_str(hs_json_get(o, "file"), "");
    if (!*name || strpbrk(name, "\\/:")) {
        failf(l, "the timeline's file is not a file name: '%s'", name);
        return;
    }
    t->file = hs_xstrdup(name);
    t->bytes = hs_json_u64(hs_json_get(o, "bytes"), 0);
    t->max_bytes = hs_json_u64(hs_json_get(o, "max_bytes"), 0);
    t->min_ns = hs_json_u64(hs_json_get(o, "min_duration_ns"), 0);
    t->depths = (uint32_t)hs_json_u64(hs_json_get(o, "depth"), 0);
    t->wait_ms = (uint32_t)hs_json_u64(hs_json_get(o, "wait_ms"), 0);
    t->tsc_start = hs_json_u64(hs_json_get(o, "tsc_start"), 0);
    t->tsc_hz = hs_json_num(hs_json_get(o, "tsc_hz"), 0);
    t->qpc_start = hs_json_i64(hs_json_get(o, "qpc_start"), 0);
    t->qpc_hz = hs_json_i64(hs_json_get(o, "qpc_hz"), 0);
    const hs_json *fs = hs_json_get(o, "functions");
    size_t n = hs_json_is(fs, HS_JARR) ? fs->n : 0;
    t->nfunc_map = (uint32_t)n;
    t->func_map = hs_xcalloc(n ? n : 1, sizeof *t->func_map);
    for (size_t i = 0; i < n; i++) {
        const hs_json *f = &fs->v[i];
        t->func_map[i] = UINT32_MAX;
        if (!hs_json_is(f, HS_JARR) || f->n != 2)
            continue;
        int64_t m = module_by_id(l, hs_json_u64(&f->v[0], UINT64_MAX), "a timeline function");
        if (m < 0)
            return;
        int64_t fi = hs_profile_func_at(l->p, (uint32_t)m, (uint32_t)hs_json_u64(&f->v[1], 0));
        if (fi >= 0)
            t->func_map[i] = (uint32_t)fi;
    }
    t->samples_dropped = hs_json_u64(hs_json_get(o, "samples_dropped"), 0);
    const hs_json *sms = hs_json_get(o, "samples");
    size_t ns = hs_json_is(sms, HS_JARR) ? sms->n : 0;
    if (ns) {
        /* [kind, place among the stacks of the kind, counter] */
        size_t *count = hs_xcalloc(HS_STACK_HOOKSCOPE + 1, sizeof *count);
        uint32_t **of = hs_xcalloc(HS_STACK_HOOKSCOPE + 1, sizeof *of);
        for (size_t i = 0; i < l->p->nstacks; i++) {
            uint8_t k = l->p->stacks[i].kind;
            if (k > HS_STACK_HOOKSCOPE)
                continue;
            of[k] = hs_xrealloc(of[k], (count[k] + 1) * sizeof **of);
            of[k][count[k]++] = (uint32_t)i;
        }
        t->samples = hs_xcalloc(ns, sizeof *t->samples);
        for (size_t i = 0; i < ns && !l->failed; i++) {
            const hs_json *x = &sms->v[i];
            uint64_t k = hs_json_is(x, HS_JARR) && x->n == 3 ? hs_json_u64(&x->v[0], 0) : 0;
            uint64_t at = k ? hs_json_u64(&x->v[1], UINT64_MAX) : UINT64_MAX;
            if (k < HS_STACK_CPU || k > HS_STACK_HOOKSCOPE || at >= count[k]) {
                failf(l, "%s", "a timeline sample names a stack that is not in the report");
                break;
            }
            t->samples[t->nsamples].stack = of[k][at];
            t->samples[t->nsamples].qpc = hs_json_i64(&x->v[2], 0);
            t->nsamples++;
        }
        for (int k = 0; k <= HS_STACK_HOOKSCOPE; k++)
            free(of[k]);
        free(of);
        free(count);
    }
    const hs_json *ths = hs_json_get(o, "threads");
    for (size_t i = 0; hs_json_is(ths, HS_JARR) && i < ths->n; i++) {
        const hs_json *j = &ths->v[i];
        hs_prof_tl_thread *th = hs_timeline_thread(t, (uint32_t)hs_json_u64(hs_json_get(j, "tid"), 0));
        th->events = hs_json_u64(hs_json_get(j, "events"), 0);
        th->filtered = hs_json_u64(hs_json_get(j, "filtered"), 0);
        th->open = hs_json_u64(hs_json_get(j, "open"), 0);
        th->dropped_buffer = hs_json_u64(hs_json_get(j, "dropped_buffer"), 0);
        th->dropped_file = hs_json_u64(hs_json_get(j, "dropped_file"), 0);
        th->drop_first = hs_json_u64(hs_json_get(j, "drop_first"), UINT64_MAX);
        th->drop_last = hs_json_u64(hs_json_get(j, "drop_last"), 0);
        th->waits = hs_json_u64(hs_json_get(j, "waits"), 0);
        th->wait_ticks = hs_json_u64(hs_json_get(j, "wait_ticks"), 0);
    }
}

static void load_stacks(loader *l, const hs_json *arr)
{
    hs_profile *p = l->p;
    for (size_t i = 0; hs_json_is(arr, HS_JARR) && i < arr->n && !l->failed; i++) {
        const hs_json *o = &arr->v[i];
        const char *fn = hs_json_str(hs_json_get(o, "function"), NULL);
        int64_t m = module_of(l, o, "module_id", "module", "a stack");
        const hs_json *frames = hs_json_get(o, "frames");
        if (m < 0 || !fn || !hs_json_is(frames, HS_JARR)) {
            failf(l, "%s", "a stack without a function or frames");
            return;
        }
        uint32_t f = func_at(l, (uint32_t)m, hs_json_str(hs_json_get(o, "rva"), NULL), fn);
        hs_prof_stack *s = hs_profile_add_stack(p, HS_STACK_ENTRY, f, hs_json_u64(hs_json_get(o, "count"), 0),
                                                (uint32_t)frames->n);
        s->truncated = hs_json_bool(hs_json_get(o, "truncated"), false);
        load_frames(l, s, o);
        load_frame_lines(l, s, o);
    }
}

hs_profile *hs_profile_from_json(const char *text, size_t len, char *err, size_t errlen)
{
    char jerr[256];
    hs_json *root = hs_json_parse(text, len, jerr, sizeof jerr);
    if (!root) {
        snprintf(err, errlen, "not valid JSON: %s", jerr);
        return NULL;
    }
    loader l;
    memset(&l, 0, sizeof l);
    l.err = err;
    l.errlen = errlen;
    if (hs_json_u64(hs_json_get(root, "version"), 0) != 1 ||
        strcmp(hs_json_str(hs_json_get(hs_json_get(root, "tool"), "name"), ""), "hookscope") != 0) {
        snprintf(err, errlen, "not a hookscope report (no \"version\": 1 from tool \"hookscope\")");
        hs_json_free(root);
        return NULL;
    }
    l.p = hs_profile_new();
    load_run(&l, root);
    if (!l.failed)
        load_modules(&l, hs_json_get(root, "modules"), hs_json_get(root, "loaded_modules"));
    if (!l.failed)
        load_functions(&l, hs_json_get(root, "functions"));
    if (!l.failed && l.p->edges_on)
        load_edges(&l, hs_json_get(root, "edges"));
    if (!l.failed && l.p->stack_depth)
        load_stacks(&l, hs_json_get(root, "stacks"));
    if (!l.failed)
        load_sampling(&l, root);
    if (!l.failed)
        load_timeline(&l, hs_json_get(root, "timeline"));
    const hs_json *target = hs_json_get(root, "target"), *crash_at = hs_json_get(target, "crash_at");
    if (!l.failed && hs_json_is(crash_at, HS_JSTR))
        l.p->crash_at = parse_loc(&l, hs_json_str(crash_at, ""), -1, true,
                                  hs_json_str(hs_json_get(target, "crash_at_rva"), NULL));
    if (!l.failed)
        hs_profile_count_samples(l.p);
    hs_json_free(root);
    free(l.ids);
    if (l.failed) {
        hs_profile_free(l.p);
        return NULL;
    }
    return l.p;
}

hs_profile *hs_profile_load(const char *path, char *err, size_t errlen)
{
    size_t size = 0;
    const char *why = NULL;
    uint8_t *text = hs_load_file(path, &size, &why);
    if (!text) {
        snprintf(err, errlen, "cannot read %s: %s", path, why ? why : "error");
        return NULL;
    }
    char inner[400];
    hs_profile *p = hs_profile_from_json((const char *)text, size, inner, sizeof inner);
    free(text);
    if (!p)
        snprintf(err, errlen, "%s: %s", path, inner);
    if (p && p->timeline) {
        /* the timeline's file is beside report.json */
        const char *a = strrchr(path, '\\'), *b = strrchr(path, '/');
        const char *sep = a > b ? a : b;
        char *file = sep ? hs_xasprintf("%.*s%s", (int)(sep - path + 1), path, p->timeline->file)
                         : hs_xstrdup(p->timeline->file);
        free(p->timeline->file);
        p->timeline->file = file;
    }
    return p;
}
