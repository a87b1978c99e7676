/*
 * injector/output/pprof.c - profile.pb.gz: the profile in pprof's format
 * (github.com/google/pprof, proto/profile.proto), a gzip'd protobuf
 * `Profile`, encoded here (output/protobuf.h) and compressed with zlib.
 * `go tool pprof` opens it; Grafana Pyroscope and Parca ingest it.
 *
 * Sample types, each present when the run has it (the columns of every
 * sample's values, in this order):
 *
 *   samples/count       CPU samples (HS_STACK_CPU), per stack (threads merged:
 *                       report.json, speedscope and the folded files keep them)
 *   cpu/nanoseconds     the same samples times the sampling interval
 *                       (1e9 / rate, rounded to the ns: `period`)
 *   wait/count          wait samples (HS_STACK_WAIT)
 *   calls/count         the hooks' exact calls (a run that hooked)
 *   wall/nanoseconds    --time: each timed function's *self* time
 *
 * Calls and wall time sit on the same stacks. A hooked function's calls
 * and self time are shared out over its entry stacks in proportion to
 * their captures (--stacks; the captures are the calls themselves when
 * every call is captured); a function with no entry stack gets them on
 * 2-frame stacks, caller -> callee, in proportion to its caller edges'
 * calls (the edges' calls exactly, when they add up to the function's),
 * and what no edge holds (--no-edges, lost edges) on a 1-frame stack of
 * the function alone. Each share is rounded so that a function's shares
 * add up to its calls and its self time exactly: pprof's flat value is
 * then report.json's `calls` and `self_ns`, and its cum value for wall
 * time is the self time of the function and of every hooked function
 * called under it on those stacks (inclusive time as far as the stacks
 * reach; a recursive function is counted once per stack, as pprof does).
 *
 * Functions are named "module!function" (hs_loc_format: pprof merges
 * functions by name, so the module keeps two modules' functions of one
 * name apart), with the undecorated name as system_name and, with
 * --srcline, the source file and line. A place in no known function is a
 * function of its own named "module+0xoff" or "0xaddr". A location is a
 * function and, with --srcline, a line of it (pprof's views are by
 * function and line; the frames' own return addresses are in report.json:
 * a location per return address made the file and its writing three
 * times larger for a million samples), at the function's start address
 * (module base + rva in the traced modules, see address()), with its
 * mapping (the module: its address range, path, and the PE timestamp and
 * size as a symbol server names the image; the exe's first, as pprof
 * takes the first for the program's). Stacks that differ only in their
 * return addresses within functions are one sample. Every mapping has
 * has_functions set: the names are here, pprof has nothing to look up.
 *
 * Deterministic: no time of day (time_nanos is left out: a saved run does
 * not keep when it started), duration_nanos from the run's wall time as
 * report.json keeps it, the gzip header without a time and with OS 255
 * (unknown), so a run and `report DIR` write the same bytes, here and
 * under Windows alike. default_sample_type is "cpu" when the run was
 * sampled, else "calls". A value above pprof's int64 (a count of 2^63
 * calls) is written as INT64_MAX.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hook/base/util.h"
#include "injector/output/protobuf.h"
#include "injector/output/stackset.h"
#include "injector/output/writers.h"

enum { V_SAMPLES, V_CPU, V_WAIT, V_CALLS, V_WALL, V__COUNT };

static const struct {
    const char *type, *unit;
} value_types[V__COUNT] = {
    { "samples", "count" }, { "cpu", "nanoseconds" }, { "wait", "count" },
    { "calls", "count" },   { "wall", "nanoseconds" },
};

/* profile.proto's field numbers */
enum {
    PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE, PROFILE_MAPPING, PROFILE_LOCATION, PROFILE_FUNCTION,
    PROFILE_STRING_TABLE, PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE, PROFILE_PERIOD, PROFILE_COMMENT,
    PROFILE_DEFAULT_SAMPLE_TYPE,
};

typedef struct pp {
    const hs_profile *p;
    bool has[V__COUNT];
    uint64_t period;             /* ns per CPU sample */
    hs_strtab strings;           /* the string table; "" first */
    hs_frametab locs;            /* location id = index + 1 */
    uint32_t *loc_line;          /* per location: its source line, 0 unknown */
    size_t loc_line_cap;
    hs_frametab funcs;           /* frame keys (hs_frame_key); function id = index + 1 */
    uint32_t *mapping;           /* per module: its mapping id, 0 not used yet */
    uint32_t nmappings;
    hs_pb *msg;                  /* the Profile message: samples are added to it as they come */
    hs_pb sub, sub2;
    uint64_t *ids;
    size_t ids_cap;
} pp;

static uint64_t str(pp *w, const char *s)
{
    return hs_strtab_add(&w->strings, s ? s : "");
}

static bool hooked(const hs_profile *p)
{
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].hooked)
            return true;
    return false;
}

bool hs_pprof_wanted(const hs_profile *p)
{
    return p->sampling.on || hooked(p);
}

/* A frame as a location: a function's frames by function and offset (the
 * module is the function's), so that a run's profile and the same run
 * loaded from report.json name their frames alike. */
static hs_loc canon(hs_loc l)
{
    if (l.func >= 0)
        l.module = -1;
    return l;
}

/* The location id of a frame (src: its source position, or NULL). */
static uint64_t location(pp *w, hs_loc l, const hs_srcpos *src)
{
    l = canon(l);
    if (l.func >= 0)
        l.off = src && src->file ? src->line : 0;   /* a function's location: one per line */
    size_t n = w->locs.n;
    uint32_t i = hs_frametab_add(&w->locs, l);
    if (i == n) {
        hs_xgrow(&w->loc_line, &w->loc_line_cap, w->locs.n, sizeof *w->loc_line);
        w->loc_line[i] = src && src->file ? src->line : 0;
        hs_frametab_add(&w->funcs, hs_frame_key(l));
        int32_t m = hs_loc_module(w->p, l);
        if (m >= 0 && !w->mapping[m])
            w->mapping[m] = ++w->nmappings;
    }
    return (uint64_t)i + 1;
}

/* One Sample: the locations (leaf first), the values of the present
 * types. Nothing when every value is 0. */
static void sample(pp *w, const uint64_t *ids, size_t n, const uint64_t v[V__COUNT])
{
    uint64_t vals[V__COUNT];
    size_t nv = 0;
    bool any = false;
    for (int k = 0; k < V__COUNT; k++)
        if (w->has[k]) {
            vals[nv++] = v[k] > INT64_MAX ? INT64_MAX : v[k];   /* pprof's values are int64 */
            any |= v[k] != 0;
        }
    if (!any)
        return;
    hs_pb_clear(&w->sub);
    hs_pb_packed(&w->sub, 1, ids, n);
    hs_pb_packed(&w->sub, 2, vals, nv);
    hs_pb_message(w->msg, PROFILE_SAMPLE, &w->sub);
}

static uint64_t *ids_of(pp *w, const hs_prof_stack *st)
{
    hs_xgrow(&w->ids, &w->ids_cap, st->nframes + 1, sizeof *w->ids);
    for (uint32_t d = 0; d < st->nframes; d++)
        w->ids[d] = location(w, st->frames[d], st->src ? &st->src[d] : NULL);
    return w->ids;
}

/* ---- the stacks in one order ------------------------------------------------
 * A run's stacks come in the order they were collected, the same run's
 * loaded from report.json by kind, and a stack the run kept twice (two
 * raw stacks that resolve alike) is one there. So the writer takes the
 * stacks it writes sorted (CPU, then wait, then entry stacks by hooked
 * function, whose order report.json keeps; then by frames,
 * cmp_frame) and merges the equal ones. */

typedef struct one_stack {
    const hs_prof_stack *st;
    uint64_t count;
} one_stack;

static int kind_rank(int kind)
{
    return kind == HS_STACK_CPU ? 0 : kind == HS_STACK_WAIT ? 1 : 2;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* Frames in an order that a saved run keeps: by module (name, then base),
 * function (as writers name it), offset; not by the indices of functions
 * and modules, which a run and its report.json give in different orders.
 * The names are compared once, into ranks (equal keys, equal ranks):
 * mrank[module + 1] (index 0: no module), frank[function]. */
typedef struct frame_order {
    const hs_profile *p;
    uint32_t *mrank, *frank;
} frame_order;

static int cmp_module_key(const hs_profile *p, int32_t ma, int32_t mb)
{
    int c = cmp_str(ma >= 0 ? p->modules[ma].name : NULL, mb >= 0 ? p->modules[mb].name : NULL);
    return c ? c : cmp_u64(ma >= 0 ? p->modules[ma].base : 0, mb >= 0 ? p->modules[mb].base : 0);
}

static int cmp_module_idx(const void *a, const void *b, void *ctx)
{
    return cmp_module_key(ctx, *(const int32_t *)a, *(const int32_t *)b);
}

static int cmp_func_idx(const void *a, const void *b, void *ctx)
{
    const frame_order *o = ctx;
    const hs_prof_func *x = &o->p->funcs[*(const uint32_t *)a], *y = &o->p->funcs[*(const uint32_t *)b];
    uint32_t mx = o->mrank[x->module + 1], my = o->mrank[y->module + 1];
    if (mx != my)
        return mx < my ? -1 : 1;
    return cmp_str(hs_func_label(o->p, *(const uint32_t *)a), hs_func_label(o->p, *(const uint32_t *)b));
}

static void frame_order_make(const hs_profile *p, frame_order *o)
{
    o->p = p;
    int32_t *mi = hs_xcalloc(p->nmodules + 1, sizeof *mi);
    for (size_t i = 0; i <= p->nmodules; i++)
        mi[i] = (int32_t)i - 1;
    hs_sort(mi, p->nmodules + 1, sizeof *mi, cmp_module_idx, (void *)p);
    o->mrank = hs_xcalloc(p->nmodules + 1, sizeof *o->mrank);
    for (size_t i = 0, r = 0; i <= p->nmodules; i++) {
        if (i && cmp_module_key(p, mi[i - 1], mi[i]))
            r++;
        o->mrank[mi[i] + 1] = (uint32_t)r;
    }
    free(mi);
    uint32_t *fi = hs_xcalloc(p->nfuncs + 1, sizeof *fi);
    for (size_t i = 0; i < p->nfuncs; i++)
        fi[i] = (uint32_t)i;
    hs_sort(fi, p->nfuncs, sizeof *fi, cmp_func_idx, o);
    o->frank = hs_xcalloc(p->nfuncs + 1, sizeof *o->frank);
    for (size_t i = 0, r = 0; i < p->nfuncs; i++) {
        if (i && cmp_func_idx(&fi[i - 1], &fi[i], o))
            r++;
        o->frank[fi[i]] = (uint32_t)r;
    }
    free(fi);
}

/* What tells a frame's locations apart in a function: its line (0 without
 * one); outside a function, its offset. */
static uint64_t frame_off(const hs_prof_stack *st, uint32_t d)
{
    if (st->frames[d].func < 0)
        return st->frames[d].off;
    return st->src && st->src[d].file ? st->src[d].line : 0;
}

/* A frame's place in the order but for its offset: module rank, then a
 * function's frames after the module's unnamed places, by function rank. */
static inline uint64_t frame_key(const frame_order *o, hs_loc l)
{
    if (l.func >= 0)
        return (uint64_t)o->mrank[o->p->funcs[l.func].module + 1] << 33 | 1ull << 32 | o->frank[l.func];
    return (uint64_t)o->mrank[l.module + 1] << 33;
}

static int cmp_frame(const frame_order *o, hs_loc a, hs_loc b, uint64_t offa, uint64_t offb)
{
    int c = cmp_u64(frame_key(o, a), frame_key(o, b));
    return c ? c : cmp_u64(offa, offb);
}

static int cmp_stack(const void *a, const void *b, void *ctx)
{
    const frame_order *o = ctx;
    const hs_prof_stack *x = ((const one_stack *)a)->st, *y = ((const one_stack *)b)->st;
    int c = kind_rank(x->kind) - kind_rank(y->kind);
    if (!c && x->kind == HS_STACK_ENTRY)
        c = cmp_u64(x->func, y->func);
    for (uint32_t d = 0; !c && d < x->nframes && d < y->nframes; d++)
        c = cmp_frame(o, x->frames[d], y->frames[d], frame_off(x, d), frame_off(y, d));
    return c ? c : cmp_u64(x->nframes, y->nframes);
}

/* The CPU, wait and entry stacks with frames, sorted and merged; *n of them. */
static one_stack *stacks_in_order(const hs_profile *p, size_t *n)
{
    frame_order o;
    frame_order_make(p, &o);
    one_stack *v = hs_xcalloc(p->nstacks + 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->nframes && (st->kind == HS_STACK_CPU || st->kind == HS_STACK_WAIT || st->kind == HS_STACK_ENTRY))
            v[k++] = (one_stack){ st, st->count };
    }
    hs_sort(v, k, sizeof *v, cmp_stack, &o);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && !cmp_stack(&v[m - 1], &v[i], &o))
            v[m - 1].count += v[i].count;
        else
            v[m++] = v[i];
    }
    free(o.mrank);
    free(o.frank);
    *n = m;
    return v;
}

static void sampled_stacks(pp *w, const one_stack *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const hs_prof_stack *st = v[i].st;
        uint64_t c = v[i].count, val[V__COUNT] = { 0 };
        if (st->kind == HS_STACK_CPU) {
            val[V_SAMPLES] = c;
            val[V_CPU] = w->period && c > UINT64_MAX / w->period ? UINT64_MAX : c * w->period;
        } else if (st->kind == HS_STACK_WAIT) {
            val[V_WAIT] = c;
        } else {
            continue;
        }
        sample(w, ids_of(w, st), st->nframes, val);
    }
}

/* a + b, at most UINT64_MAX (running sums of 64-bit counts) */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* Share `total` out over items of weights adding up to `sum`: the share
 * of the items from `before` (exclusive) to `upto` (inclusive) in the
 * running sum of weights, each end rounded down, so that the shares add
 * up to total exactly (running sums saturate: a profile's counts above
 * 2^64 in all share out unevenly, never beyond total). */
static uint64_t share(uint64_t total, uint64_t before, uint64_t upto, uint64_t sum)
{
    if (!sum)
        return 0;
    unsigned __int128 a = (unsigned __int128)total * before / sum, b = (unsigned __int128)total * upto / sum;
    return (uint64_t)(b - a);
}

/* The calls and self time of the hooked functions, on their entry stacks
 * (v: sorted, a function's together), else on their caller edges, else
 * on themselves. */
static void called(pp *w, const one_stack *v, size_t n)
{
    const hs_profile *p = w->p;
    /* the edges by callee (report.json's order within each) */
    size_t *efirst = hs_xcalloc(p->nfuncs + 2, sizeof *efirst);
    uint32_t *eorder = hs_xcalloc(p->nedges + 1, sizeof *eorder);
    for (size_t i = 0; i < p->nedges; i++)
        if (p->edges[i].calls && p->edges[i].callee < p->nfuncs)
            efirst[p->edges[i].callee + 2]++;
    for (size_t f = 0; f < p->nfuncs; f++)
        efirst[f + 2] += efirst[f + 1];
    for (size_t i = 0; i < p->nedges; i++)
        if (p->edges[i].calls && p->edges[i].callee < p->nfuncs)
            eorder[efirst[p->edges[i].callee + 1]++] = (uint32_t)i;

    size_t s = 0;   /* the next entry stack in v */
    while (s < n && v[s].st->kind != HS_STACK_ENTRY)
        s++;
    for (size_t f = 0; f < p->nfuncs; f++) {
        size_t s_end = s;
        while (s_end < n && v[s_end].st->func == f)
            s_end++;
        uint64_t calls = w->has[V_CALLS] ? p->funcs[f].calls : 0;
        uint64_t self = w->has[V_WALL] ? hs_prof_time_get(p, (uint32_t)f)->self_ns : 0;
        uint64_t sum = 0, done = 0, val[V__COUNT] = { 0 };
        for (size_t k = s; k < s_end; k++)
            sum = add_sat(sum, v[k].count);
        if (!calls && !self) {
            s = s_end;
            continue;
        }
        if (sum) {
            for (; s < s_end; s++) {
                uint64_t upto = add_sat(done, v[s].count);
                val[V_CALLS] = share(calls, done, upto, sum);
                val[V_WALL] = share(self, done, upto, sum);
                done = upto;
                sample(w, ids_of(w, v[s].st), v[s].st->nframes, val);
            }
            continue;
        }
        s = s_end;
        hs_loc fn = { (int32_t)f, -1, 0 };
        for (size_t k = efirst[f]; k < efirst[f + 1]; k++)
            sum = add_sat(sum, p->edges[eorder[k]].calls);
        uint64_t rest = calls > sum ? calls - sum : 0;
        if (!sum)
            rest = 1;   /* no edges: everything on the function alone */
        for (size_t k = efirst[f]; k < efirst[f + 1]; k++) {
            const hs_prof_edge *e = &p->edges[eorder[k]];
            uint64_t upto = add_sat(done, e->calls);
            val[V_CALLS] = share(calls, done, upto, add_sat(sum, rest));
            val[V_WALL] = share(self, done, upto, add_sat(sum, rest));
            done = upto;
            uint64_t ids[2] = { location(w, fn, NULL), location(w, e->caller, NULL) };
            sample(w, ids, 2, val);
        }
        if (rest) {
            val[V_CALLS] = share(calls, done, add_sat(done, rest), add_sat(sum, rest));
            val[V_WALL] = share(self, done, add_sat(done, rest), add_sat(sum, rest));
            uint64_t id = location(w, fn, NULL);
            sample(w, &id, 1, val);
        }
    }
    free(efirst);
    free(eorder);
}

static void value_type(pp *w, hs_pb *m, uint32_t field, int k)
{
    hs_pb_clear(&w->sub);
    hs_pb_uint_opt(&w->sub, 1, str(w, value_types[k].type));
    hs_pb_uint_opt(&w->sub, 2, str(w, value_types[k].unit));
    hs_pb_message(m, field, &w->sub);
}

static void mappings(pp *w, hs_pb *m)
{
    const hs_profile *p = w->p;
    for (uint32_t id = 1; id <= w->nmappings; id++) {
        size_t i = 0;
        while (w->mapping[i] != id)
            i++;
        const hs_prof_module *mod = &p->modules[i];
        char build_id[32] = "";
        if (mod->timestamp)
            snprintf(build_id, sizeof build_id, "%08X%x", mod->timestamp, mod->size);
        hs_pb_clear(&w->sub);
        hs_pb_uint(&w->sub, 1, id);
        hs_pb_uint_opt(&w->sub, 2, mod->base);
        hs_pb_uint_opt(&w->sub, 3, mod->base + mod->size);
        hs_pb_uint_opt(&w->sub, 5, str(w, mod->path && *mod->path ? mod->path : mod->name));
        hs_pb_uint_opt(&w->sub, 6, str(w, build_id));
        hs_pb_uint(&w->sub, 7, 1);                        /* has_functions */
        hs_pb_uint_opt(&w->sub, 8, p->srcline_on);        /* has_filenames */
        hs_pb_uint_opt(&w->sub, 9, p->srcline_on);        /* has_line_numbers */
        hs_pb_message(m, PROFILE_MAPPING, &w->sub);
    }
}

/* A location's address: its function's start, for a function of a
 * traced module (report.json keeps their rvas); 0 in functions of other
 * modules, whose rvas a saved run does not keep. */
static uint64_t address(const hs_profile *p, hs_loc l)
{
    if (l.func >= 0) {
        const hs_prof_func *f = &p->funcs[l.func];
        if (!f->in_plan || f->rva == HS_RVA_NONE)
            return 0;
        return p->modules[f->module].base + f->rva;
    }
    return l.module >= 0 ? p->modules[l.module].base + l.off : l.off;
}

static void locations(pp *w, hs_pb *m)
{
    const hs_profile *p = w->p;
    for (size_t i = 0; i < w->locs.n; i++) {
        hs_loc l = w->locs.v[i];
        int32_t mod = hs_loc_module(p, l);
        hs_pb_clear(&w->sub);
        hs_pb_uint(&w->sub, 1, i + 1);
        hs_pb_uint_opt(&w->sub, 2, mod >= 0 ? w->mapping[mod] : 0);
        hs_pb_uint_opt(&w->sub, 3, address(p, l));
        hs_pb_clear(&w->sub2);
        hs_pb_uint(&w->sub2, 1, (uint64_t)hs_frametab_find(&w->funcs, hs_frame_key(l)) + 1);
        hs_pb_uint_opt(&w->sub2, 2, w->loc_line[i]);
        hs_pb_message(&w->sub, 4, &w->sub2);
        hs_pb_message(m, PROFILE_LOCATION, &w->sub);
    }
}

static void functions(pp *w, hs_pb *m)
{
    const hs_profile *p = w->p;
    char buf[600];
    for (size_t i = 0; i < w->funcs.n; i++) {
        hs_loc l = w->funcs.v[i];
        const hs_prof_func *f = l.func >= 0 ? &p->funcs[l.func] : NULL;
        hs_pb_clear(&w->sub);
        hs_pb_uint(&w->sub, 1, i + 1);
        hs_pb_uint_opt(&w->sub, 2, str(w, hs_loc_format(p, l, true, false, buf, sizeof buf)));
        hs_pb_uint_opt(&w->sub, 3, str(w, f && f->name ? f->name : buf));
        hs_pb_uint_opt(&w->sub, 4, str(w, f ? f->file : NULL));
        hs_pb_uint_opt(&w->sub, 5, f && f->file ? f->line : 0);
        hs_pb_message(m, PROFILE_FUNCTION, &w->sub);
    }
}

/* The Profile message. */
static void encode(pp *w, hs_pb *m)
{
    const hs_profile *p = w->p;
    w->msg = m;
    str(w, "");
    for (int k = 0; k < V__COUNT; k++)
        if (w->has[k])
            value_type(w, m, PROFILE_SAMPLE_TYPE, k);
    size_t n;
    one_stack *v = stacks_in_order(p, &n);
    sampled_stacks(w, v, n);
    called(w, v, n);
    free(v);
    mappings(w, m);
    locations(w, m);
    functions(w, m);
    /* the strings the remaining fields name (period_type's are the cpu
     * sample type's), then the table */
    uint64_t comment[2];
    comment[0] = str(w, "hookscope " HOOKSCOPE_VERSION);
    char *cmd = hs_xstrdup(p->target_path ? p->target_path : "");
    for (int i = 0; i < p->nargs; i++) {
        char *c = hs_xasprintf("%s %s", cmd, p->args[i]);
        free(cmd);
        cmd = c;
    }
    comment[1] = str(w, cmd);
    free(cmd);
    uint64_t deftype = str(w, value_types[w->has[V_CPU] ? V_CPU : V_CALLS].type);
    for (size_t i = 0; i < w->strings.n; i++)
        hs_pb_bytes(m, PROFILE_STRING_TABLE, w->strings.v[i], strlen(w->strings.v[i]));
    double ns = p->wall_s * 1e9;
    hs_pb_uint_opt(m, PROFILE_DURATION_NANOS, ns > 0 ? (uint64_t)(ns + 0.5) : 0);
    if (w->has[V_CPU]) {
        value_type(w, m, PROFILE_PERIOD_TYPE, V_CPU);
        hs_pb_uint_opt(m, PROFILE_PERIOD, w->period);
    }
    hs_pb_uint(m, PROFILE_COMMENT, comment[0]);
    hs_pb_uint(m, PROFILE_COMMENT, comment[1]);
    hs_pb_uint(m, PROFILE_DEFAULT_SAMPLE_TYPE, deftype);
}

/* The bytes gzip'd into out: a gzip header with no time and no name, OS
 * unknown (255). Returns 0, or -1 on an error. */
static int gzip_to(FILE *out, const uint8_t *data, size_t n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    gz_header h;
    memset(&h, 0, sizeof h);
    h.os = 255;
    int rc = deflateSetHeader(&z, &h) == Z_OK ? 0 : -1;
    uint8_t buf[1 << 16];
    z.next_in = (Bytef *)data;
    int zrc = Z_OK;
    while (!rc && zrc != Z_STREAM_END) {
        /* avail_in is 32 bits: feed at most 1 GiB at a time */
        if (!z.avail_in && (size_t)((const uint8_t *)z.next_in - data) < n) {
            size_t left = n - (size_t)((const uint8_t *)z.next_in - data);
            z.avail_in = (uInt)(left < (1u << 30) ? left : (1u << 30));
        }
        bool last = (size_t)((const uint8_t *)z.next_in - data) + z.avail_in == n;
        z.next_out = buf;
        z.avail_out = sizeof buf;
        zrc = deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
        if (zrc == Z_STREAM_ERROR)
            rc = -1;
        else if (fwrite(buf, 1, sizeof buf - z.avail_out, out) != sizeof buf - z.avail_out)
            rc = -1;
    }
    deflateEnd(&z);
    return rc;
}

int hs_write_pprof(const hs_profile *p, FILE *out)
{
    pp w;
    memset(&w, 0, sizeof w);
    w.p = p;
    w.has[V_SAMPLES] = w.has[V_CPU] = w.has[V_WAIT] = p->sampling.on;
    w.has[V_CALLS] = hooked(p);
    w.has[V_WALL] = p->time_on;
    w.period = p->sampling.rate_hz > 0 ? (uint64_t)(1e9 / p->sampling.rate_hz + 0.5) : 0;
    w.mapping = hs_xcalloc(p->nmodules + 1, sizeof *w.mapping);
    for (size_t i = 0; i < p->nmodules && !w.nmappings; i++)
        if (p->modules[i].main)
            w.mapping[i] = ++w.nmappings;   /* pprof takes the first mapping for the program */
    hs_pb m = { 0 };
    encode(&w, &m);
    int rc = gzip_to(out, m.b, m.n);
    hs_pb_free(&m);
    hs_pb_free(&w.sub);
    hs_pb_free(&w.sub2);
    hs_strtab_free(&w.strings);
    hs_frametab_free(&w.locs);
    hs_frametab_free(&w.funcs);
    free(w.loc_line);
    free(w.mapping);
    free(w.ids);
    return rc || ferror(out) ? -1 : 0;
}
