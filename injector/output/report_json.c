/*
 * injector/output/report_json.c - report.json, schema version 1: everything in a
 * profile, so that `hookscope report` (profile/load.c) can read a run back
 * and write every output again.
 *
 *   {"version": 1,
 *    "tool": {...}, "target": {"path", "args", "pid", "exit_code", ...},
 *    "modules": [...traced modules...],
 *    "functions": [...the functions found in them...],
 *    "options": {...}, "edges": [...], "stacks": [...],
 *    "sampling": {...counts of each kind, the sampler's cost...},
 *    "sample_stacks" (CPU), "wait_stacks", "ready_stacks", "hookscope_stacks": [...],
 *    "thread_list": [...],
 *    "loaded_modules": [...the other modules...]}
 *
 * Fields are only ever added, never renamed or removed. Functions are
 * named by module and name, with the rva beside the name wherever another
 * function of the module has the same name (entry stacks' "rva", stacks'
 * "frame_rvas", "crash_at_rva"; functions and edges always say it).
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hookscope/skip.h"
#include "injector/output/format.h"
#include "injector/output/stackset.h"
#include "injector/output/writers.h"

/* A line put together before it is written (the functions' and stacks'
 * many small fields, without a format walk each). */
typedef hs_textbuf jline;

#define JL_LIT(l, lit) hs_textbuf_put((l), (lit), sizeof(lit) - 1)

static void jl_str(jline *l, const char *s)
{
    hs_textbuf_put(l, s, strlen(s));
}

static void jl_dec(jline *l, uint64_t v)
{
    char t[HS_DEC_TEXT];
    hs_textbuf_put(l, t, hs_dec_text(v, t));
}

/* "0x..." in quotes */
static void jl_hex(jline *l, uint64_t v)
{
    char t[HS_HEX_TEXT + 2];
    size_t n = hs_hex_text(v, t + 1);
    t[0] = t[n + 1] = '"';
    hs_textbuf_put(l, t, n + 2);
}

/* s as hs_json_quote writes it */
static void jl_quote(jline *l, const char *s)
{
    size_t need = 6 * strlen(s ? s : "") + 3;
    hs_textbuf_room(l, need);
    l->s[l->n++] = '"';
    l->n += hs_json_quoted(s, l->s + l->n, need - 1);
    l->s[l->n++] = '"';
}

static void jl_flush(jline *l, FILE *out)
{
    if (l->n)
        fwrite(l->s, 1, l->n, out);
    l->n = 0;
}

static void counts_obj(FILE *out, const uint32_t *counts, int n, const char *(*name)(int))
{
    int any = 0;
    fputc('{', out);
    for (int i = 1; i < n; i++) {
        if (!counts[i])
            continue;
        fprintf(out, "%s", any ? ", " : "");
        hs_json_quote(out, name(i));
        fprintf(out, ": %u", counts[i]);
        any = 1;
    }
    fputc('}', out);
}

static void time_obj(FILE *out, const hs_prof_time *t)
{
    fprintf(out, "{\"calls\": %llu, \"total_ns\": %llu, \"self_ns\": %llu, \"min_ns\": %llu, "
                 "\"max_ns\": %llu, \"avg_ns\": %.1f, \"sum_ns\": %llu, \"open\": %llu, \"hist\": [",
            (unsigned long long)t->calls, (unsigned long long)t->total_ns, (unsigned long long)t->self_ns,
            (unsigned long long)t->min_ns, (unsigned long long)t->max_ns,
            t->calls ? (double)t->sum_ns / (double)t->calls : 0.0, (unsigned long long)t->sum_ns,
            (unsigned long long)t->open);
    int any = 0;
    for (int b = 0; b < HS_PROF_HIST; b++) {
        if (!t->hist[b])
            continue;
        fprintf(out, "%s{\"ns\": %llu, \"count\": %llu}", any ? ", " : "", 1ull << b,
                (unsigned long long)t->hist[b]);
        any = 1;
    }
    fprintf(out, "]}");
}

/* ', "KEY": {"self": N, "total": N}' when either is nonzero */
static void kind_field(jline *l, const char *key, uint64_t self, uint64_t total, bool totals)
{
    if (!self && !total)
        return;
    JL_LIT(l, ", \"");
    jl_str(l, key);
    JL_LIT(l, "\": {\"self\": ");
    jl_dec(l, self);
    if (totals) {
        JL_LIT(l, ", \"total\": ");
        jl_dec(l, total);
    }
    JL_LIT(l, "}");
}

/* a function's "samples" (CPU), "wait_samples" and "ready_samples" */
static void func_samples(jline *l, const hs_prof_func *f)
{
    kind_field(l, "samples", f->cpu_self, f->cpu_total, true);
    kind_field(l, "wait_samples", f->wait_self, f->wait_total, true);
    kind_field(l, "ready_samples", f->ready_self, f->ready_total, true);
}

/* a module's: self samples only */
static void module_samples(FILE *out, const hs_prof_module *m)
{
    jline l = { 0 };
    kind_field(&l, "samples", m->cpu_self, 0, false);
    kind_field(&l, "wait_samples", m->wait_self, 0, false);
    kind_field(&l, "ready_samples", m->ready_self, 0, false);
    jl_flush(&l, out);
    free(l.s);
}

static void bool_field(FILE *out, const char *name, bool v)
{
    fprintf(out, ", \"%s\": %s", name, v ? "true" : "false");
}

static void write_target(const hs_profile *p, FILE *out)
{
    fprintf(out, " \"target\": {\"path\": ");
    hs_json_quote(out, p->target_path);
    fprintf(out, ", \"args\": [");
    for (int i = 0; i < p->nargs; i++) {
        fprintf(out, "%s", i ? ", " : "");
        hs_json_quote(out, p->args[i]);
    }
    fprintf(out, "], \"pid\": %u", p->pid);
    if (p->bits)
        fprintf(out, ", \"bits\": %d", p->bits);
    fprintf(out, ", \"exit_code\": ");
    if (p->exited)
        fprintf(out, "%u", p->exit_code);
    else
        fprintf(out, "null");
    const char *crash = p->stop != HS_STOP_CRASH ? NULL : p->crash_what ? p->crash_what : hs_crash_name(p->exit_code);
    fprintf(out, ", \"crash\": ");
    if (crash)
        hs_json_quote(out, crash);
    else
        fprintf(out, "null");
    if (crash) {
        fprintf(out, ", \"crash_code\": %u, \"crash_address\": ", p->crash_code ? p->crash_code : p->exit_code);
        if (p->crash_address) {
            char at[600];
            fprintf(out, "\"0x%llx\", \"crash_at\": ", (unsigned long long)p->crash_address);
            hs_json_quote(out, hs_loc_format_saved(p, p->crash_at, true, true, at, sizeof at));
            if (p->crash_at.func >= 0 && p->funcs[p->crash_at.func].label)
                fprintf(out, ", \"crash_at_rva\": \"0x%x\"", p->funcs[p->crash_at.func].rva);
        } else {
            fprintf(out, "null");
        }
    }
    if (p->target_rights) {
        fprintf(out, ", \"rights\": ");
        hs_json_quote(out, p->target_rights);
    }
    fprintf(out, ", \"stop\": ");
    hs_json_quote(out, hs_stop_name(p->stop) ? hs_stop_name(p->stop) : "unknown");
    fprintf(out, ", \"wall_time_s\": %.6f", p->wall_s);
    if (p->stop == HS_STOP_DURATION)
        fprintf(out, ", \"duration_s\": %.6g", p->duration_s);
    fprintf(out, "},\n");
}

static void write_modules(const hs_profile *p, FILE *out)
{
    fprintf(out, "],\n \"modules\": [");
    int nm = 0;
    for (size_t m = 0; m < p->nmodules; m++) {
        const hs_prof_module *mod = &p->modules[m];
        if (!mod->traced)
            continue;
        fprintf(out, "%s\n  {\"name\": ", nm++ ? "," : "");
        hs_json_quote(out, mod->name);
        fprintf(out, ", \"path\": ");
        hs_json_quote(out, mod->path);
        fprintf(out, ", \"id\": %u, \"base\": \"0x%llx\", \"size\": %u, \"timestamp\": %u, "
                     "\"functions_found\": %u, \"functions_hooked\": %u, \"install_s\": %.6f",
                mod->id, (unsigned long long)mod->base, mod->size, mod->timestamp, mod->funcs_found,
                mod->funcs_hooked, mod->install_s);
        bool_field(out, "main", mod->main);
        bool_field(out, "loaded_late", mod->late);
        bool_field(out, "unloaded", mod->unloaded);
        fprintf(out, ", \"skipped\": ");
        counts_obj(out, mod->skip_counts, HS_SKIP__COUNT, hs_skip_reason_name);
        fprintf(out, ", \"patch_kinds\": ");
        counts_obj(out, mod->patch_counts, HS_PATCH__COUNT, hs_patch_kind_name);
        fprintf(out, ", \"entry_only\": ");
        counts_obj(out, mod->entry_only_counts, HS_WRAP__COUNT, hs_entry_only_name);
        module_samples(out, mod);
        fputc('}', out);
    }
}

/* A timed function's "untimed_callees": the functions it called that are
 * not timed, whose time is in its self time (module!function when in
 * another module); left out when there are none. */
static void write_untimed_callees(FILE *out, const hs_profile *p, const hs_untimed_callees *u, uint32_t func)
{
    size_t first, n = hs_untimed_of(p, u, func, &first);
    if (!n)
        return;
    fprintf(out, ", \"untimed_callees\": [");
    for (size_t j = 0; j < n; j++) {
        uint32_t g = p->edges[u->edge[first + j]].callee;
        char buf[1024];
        if (p->funcs[g].module != p->funcs[func].module)
            snprintf(buf, sizeof buf, "%s!%s", p->modules[p->funcs[g].module].name, hs_func_label(p, g));
        else
            snprintf(buf, sizeof buf, "%s", hs_func_label(p, g));
        if (j)
            fputs(", ", out);
        hs_json_quote(out, buf);
    }
    fputc(']', out);
}

static void write_functions(const hs_profile *p, FILE *out)
{
    fprintf(out, "],\n \"functions\": [");
    hs_untimed_callees uc_store, *uc = &uc_store;
    hs_untimed_collect(p, uc);
    jline l = { 0 };
    int k = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        const hs_prof_func *f = &p->funcs[i];
        bool sampled = f->cpu_total || f->wait_total || f->ready_total;
        if (!f->in_plan && !sampled)
            continue;
        if (k++)
            JL_LIT(&l, ",\n  {\"module\": ");
        else
            JL_LIT(&l, "\n  {\"module\": ");
        jl_quote(&l, p->modules[f->module].name);
        JL_LIT(&l, ", \"name\": ");
        jl_quote(&l, f->name);
        if (f->rva == HS_RVA_NONE) {
            JL_LIT(&l, ", \"rva\": null");
        } else {
            JL_LIT(&l, ", \"rva\": ");
            jl_hex(&l, f->rva);
        }
        JL_LIT(&l, ", \"size\": ");
        jl_dec(&l, f->size);
        if (f->hooked)
            JL_LIT(&l, ", \"hooked\": true, \"skip_reason\": ");
        else
            JL_LIT(&l, ", \"hooked\": false, \"skip_reason\": ");
        if (f->hooked || !f->in_plan)
            JL_LIT(&l, "null");
        else
            jl_quote(&l, hs_skip_reason_name(f->skip));
        JL_LIT(&l, ", \"patch\": ");
        if (f->hooked)
            jl_quote(&l, hs_patch_kind_name(f->patch));
        else
            JL_LIT(&l, "null");
        JL_LIT(&l, ", \"calls\": ");
        jl_dec(&l, f->calls);
        JL_LIT(&l, ", \"module_id\": ");
        jl_dec(&l, p->modules[f->module].id);
        if (p->time_on && f->hooked) {
            jl_flush(&l, out);
            fprintf(out, ", \"entry_only\": ");
            if (f->wrapped)
                fprintf(out, "null");
            else
                hs_json_quote(out, hs_entry_only_name(f->entry_only));
            if (f->wrapped) {
                const hs_prof_time *t = hs_prof_time_get(p, (uint32_t)i);
                fprintf(out, ", \"time\": ");
                time_obj(out, t);
                fprintf(out, ", \"unwinds\": %llu", (unsigned long long)t->unwinds);
                write_untimed_callees(out, p, uc, (uint32_t)i);
            }
        }
        if (!f->in_plan)
            JL_LIT(&l, ", \"traced\": false");
        if (f->file) {
            JL_LIT(&l, ", \"file\": ");
            jl_quote(&l, f->file);
            JL_LIT(&l, ", \"line\": ");
            jl_dec(&l, f->line);
        }
        func_samples(&l, f);
        JL_LIT(&l, "}");
        if (l.n > 65536)
            jl_flush(&l, out);
    }
    jl_flush(&l, out);
    free(l.s);
    hs_untimed_free(uc);
    fprintf(out, "]");
}

static void write_edges(const hs_profile *p, FILE *out)
{
    fprintf(out, ",\n \"edges_lost\": %llu,\n \"edges\": [", (unsigned long long)p->edges_lost);
    for (size_t i = 0; i < p->nedges; i++) {
        const hs_prof_edge *e = &p->edges[i];
        const hs_prof_func *callee = &p->funcs[e->callee];
        int32_t cm = hs_loc_module(p, e->caller);
        char label[600];
        fprintf(out, "%s\n  {\"caller\": ", i ? "," : "");
        hs_json_quote(out, hs_loc_format_saved(p, e->caller, false, false, label, sizeof label));
        fprintf(out, ", \"caller_module\": ");
        if (cm >= 0)
            hs_json_quote(out, p->modules[cm].name);
        else
            fprintf(out, "null");
        fprintf(out, ", \"callee\": ");
        hs_json_quote(out, callee->name);
        fprintf(out, ", \"callee_module\": ");
        hs_json_quote(out, p->modules[callee->module].name);
        fprintf(out, ", \"calls\": %llu", (unsigned long long)e->calls);
        if (cm >= 0)
            fprintf(out, ", \"caller_module_id\": %u", p->modules[cm].id);
        if (e->caller.func >= 0 && p->funcs[e->caller.func].rva != HS_RVA_NONE)
            fprintf(out, ", \"caller_rva\": \"0x%x\"", p->funcs[e->caller.func].rva);
        fprintf(out, ", \"callee_module_id\": %u, \"callee_rva\": \"0x%x\"}", p->modules[callee->module].id,
                callee->rva);
    }
    fprintf(out, "]");
}

/* --srcline: ', "frame_lines": ["file:line" or null, ...]' of a stack */
static void frame_lines(FILE *out, const hs_prof_stack *st)
{
    if (!st->src)
        return;
    fprintf(out, ", \"frame_lines\": [");
    for (uint32_t d = 0; d < st->nframes; d++) {
        fprintf(out, "%s", d ? ", " : "");
        if (!st->src[d].file) {
            fprintf(out, "null");
            continue;
        }
        char buf[1200];
        snprintf(buf, sizeof buf, "%s:%u", st->src[d].file, st->src[d].line);
        hs_json_quote(out, buf);
    }
    fputc(']', out);
}

/* Two modules of one name (a WOW64 process's two ntdll.dll, a DLL loaded
 * again elsewhere): frames named "module!..." are then ambiguous, and
 * stacks say which module each frame is in ("frame_modules": ids). */
static bool module_names_repeat(const hs_profile *p)
{
    for (size_t i = 0; i < p->nmodules; i++)
        for (size_t k = i + 1; k < p->nmodules; k++)
            if (!strcmp(p->modules[i].name, p->modules[k].name))
                return true;
    return false;
}

static void frame_modules(const hs_profile *p, FILE *out, const hs_prof_stack *st)
{
    fprintf(out, ", \"frame_modules\": [");
    for (uint32_t d = 0; d < st->nframes; d++) {
        int32_t m = hs_loc_module(p, st->frames[d]);
        if (m >= 0)
            fprintf(out, "%s%u", d ? ", " : "", p->modules[m].id);
        else
            fprintf(out, "%snull", d ? ", " : "");
    }
    fputc(']', out);
}

/* Two functions of a module with one name: frames named "module!function"
 * are then ambiguous, and a stack with such a frame says the rva of each
 * frame's function ("frame_rvas": "0x..." where the name is shared, else
 * null). */
static void frame_rvas(const hs_profile *p, FILE *out, const hs_prof_stack *st, const uint8_t *labelled)
{
    uint32_t d = 0;
    while (d < st->nframes && (st->frames[d].func < 0 || !labelled[st->frames[d].func]))
        d++;
    if (d == st->nframes)
        return;
    fprintf(out, ", \"frame_rvas\": [");
    for (d = 0; d < st->nframes; d++) {
        int32_t f = st->frames[d].func;
        if (f >= 0 && p->funcs[f].label)
            fprintf(out, "%s\"0x%x\"", d ? ", " : "", p->funcs[f].rva);
        else
            fprintf(out, "%snull", d ? ", " : "");
    }
    fputc(']', out);
}

/* A function's frame as "frames" name it, up to its offset: the JSON
 * string's inside of "module!function" (the saved name), made once per
 * function; 0 (the frame is then written whole, hs_loc_format_saved)
 * for a place in no function, or a name so long that the offset would be
 * cut. */
static size_t func_frame_text(const hs_profile *p, hs_loc key, char *buf, size_t cap, void *ctx)
{
    (void)ctx;
    char raw[600];
    if (key.func < 0 || strlen(hs_loc_format_saved(p, key, true, false, raw, sizeof raw)) + 20 >= sizeof raw)
        return 0;
    size_t n = hs_json_quoted(raw, buf, cap);
    return n + 6 < cap ? n : 0;   /* else an escape may have been left out */
}

/* What the frames of a list of stacks are written with: the functions'
 * texts, and a buffer for one stack's list. */
typedef struct frames_out {
    hs_frametexts texts;
    char *line;
    size_t cap;
    uint8_t *labelled;           /* per function: it has a label (its name is shared) */
} frames_out;

/* For the stacks of `kind`. */
static void frames_out_init(frames_out *o, const hs_profile *p, int kind)
{
    memset(o, 0, sizeof *o);
    o->texts.make = func_frame_text;
    hs_frametexts_premake(&o->texts, p, kind, 0);
    o->labelled = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, 1);
    for (size_t f = 0; f < p->nfuncs; f++)
        o->labelled[f] = p->funcs[f].label != NULL;
}

static void frames_out_free(frames_out *o)
{
    hs_frametexts_free(&o->texts);
    free(o->line);
    free(o->labelled);
}

/* a stack's "frames" (leaf first) and what tells them apart; the list is
 * put together in a buffer and written at once */
static void frames(const hs_profile *p, FILE *out, const hs_prof_stack *st, bool modules_repeat, frames_out *o)
{
    hs_frametexts *texts = &o->texts;
    char *line = o->line;
    size_t cap = o->cap, n = 0;
    for (uint32_t d = 0; d < st->nframes; d++) {
        size_t len = 0;
        hs_loc l = st->frames[d];
        const char *text = l.func >= 0 ? hs_frametext(texts, p, hs_frame_key(l), &len) : "";
        if (!len) {
            if (n)
                fwrite(line, 1, n, out);
            n = 0;
            char buf[600];
            fputs(d ? ", " : "\"frames\": [", out);
            hs_json_quote(out, hs_loc_format_saved(p, l, true, true, buf, sizeof buf));
            continue;
        }
        hs_xgrow(&line, &cap, n + len + 40, 1);
        o->line = line;
        o->cap = cap;
        if (d) {
            memcpy(line + n, ", \"", 3);
            n += 3;
        } else {
            memcpy(line + n, "\"frames\": [\"", 12);
            n += 12;
        }
        memcpy(line + n, text, len);
        n += len;
        /* +0xoff" */
        line[n++] = '+';
        n += hs_hex_text(l.off, line + n);
        line[n++] = '"';
    }
    if (n)
        fwrite(line, 1, n, out);
    if (!st->nframes)
        fputs("\"frames\": [", out);
    fputc(']', out);
    frame_lines(out, st);
    if (modules_repeat)
        frame_modules(p, out, st);
    frame_rvas(p, out, st, o->labelled);
}

static void write_stacks(const hs_profile *p, FILE *out)
{
    fprintf(out, ",\n \"stacks_dropped\": %llu,\n \"stacks\": [", (unsigned long long)p->stacks_dropped);
    bool repeat = module_names_repeat(p);
    frames_out fo;
    frames_out_init(&fo, p, HS_STACK_ENTRY);
    int k = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind != HS_STACK_ENTRY)
            continue;
        const hs_prof_func *f = &p->funcs[st->func];
        fprintf(out, "%s\n  {\"function\": ", k++ ? "," : "");
        hs_json_quote(out, f->name);
        fprintf(out, ", \"module\": ");
        hs_json_quote(out, p->modules[f->module].name);
        fprintf(out, ", \"module_id\": %u", p->modules[f->module].id);
        if (f->label)
            fprintf(out, ", \"rva\": \"0x%x\"", f->rva);
        fprintf(out, ", \"count\": %llu, \"truncated\": %s, ", (unsigned long long)st->count,
                st->truncated ? "true" : "false");
        frames(p, out, st, repeat, &fo);
        fputc('}', out);
    }
    frames_out_free(&fo);
    fprintf(out, "]");
}

/* "sample_stacks" (CPU), "wait_stacks", "ready_stacks" or
 * "hookscope_stacks": count, thread, "truncated": true when the stack
 * went deeper than the sampler walked, and frames, leaf first */
static void write_sample_stacks(const hs_profile *p, FILE *out, uint8_t kind)
{
    fprintf(out, ",\n \"%s\": [", hs_stack_kind_key(kind));
    bool repeat = module_names_repeat(p);
    frames_out fo;
    frames_out_init(&fo, p, kind);
    jline head = { 0 };
    int k = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind != kind)
            continue;
        if (k++)
            JL_LIT(&head, ",\n  {\"count\": ");
        else
            JL_LIT(&head, "\n  {\"count\": ");
        jl_dec(&head, st->count);
        JL_LIT(&head, ", \"thread\": ");
        jl_dec(&head, st->tid);
        JL_LIT(&head, ", ");
        if (st->truncated)
            JL_LIT(&head, "\"truncated\": true, ");
        jl_flush(&head, out);
        frames(p, out, st, repeat, &fo);
        fputc('}', out);
    }
    free(head.s);
    frames_out_free(&fo);
    fprintf(out, "]");
}

/* ', "KEY": seconds' or null when unknown (< 0) */
static void seconds_field(FILE *out, const char *key, double s)
{
    if (s >= 0)
        fprintf(out, ", \"%s\": %.6f", key, s);
    else
        fprintf(out, ", \"%s\": null", key);
}

static void write_sampling(const hs_profile *p, FILE *out)
{
    const hs_prof_sampling *s = &p->sampling;
    fprintf(out, ",\n \"sampling\": {\"backend\": ");
    hs_json_quote(out, s->backend);
    fprintf(out, ", \"rate_hz\": %.6g, \"samples\": %llu, \"wait_samples\": %llu, \"ready_samples\": %llu, "
                 "\"hookscope_samples\": %llu, \"lost\": %llu, \"threads\": %u",
            s->rate_hz, (unsigned long long)s->samples, (unsigned long long)s->wait_samples,
            (unsigned long long)s->ready_samples, (unsigned long long)s->hookscope_samples,
            (unsigned long long)s->lost, s->threads);
    if (s->off_cpu_unknown)
        fprintf(out, ", \"off_cpu_known\": false");
    if (s->wait_no_stack || s->ready_no_stack)
        fprintf(out, ", \"wait_no_stack\": %llu, \"ready_no_stack\": %llu", (unsigned long long)s->wait_no_stack,
                (unsigned long long)s->ready_no_stack);
    seconds_field(out, "cpu_time_s", s->cpu_s);
    seconds_field(out, "held_s", s->held_s);
    seconds_field(out, "threads_s", s->threads_s);
    if (s->rate_reason[0]) {
        fprintf(out, ", \"rate_reason\": ");
        hs_json_quote(out, s->rate_reason);
    }
    if (s->lost_why[0]) {
        fprintf(out, ", \"lost_why\": ");
        hs_json_quote(out, s->lost_why);
    }
    if (s->suspensions >= 0 && s->reused >= 0)
        fprintf(out, ", \"suspensions\": %lld, \"reused_samples\": %lld", (long long)s->suspensions,
                (long long)s->reused);
    if (s->etl_kept)
        fprintf(out, ", \"etl_file\": \"hookscope.etl\"");
    fprintf(out, "}");
    for (uint8_t kind = HS_STACK_CPU; kind <= HS_STACK_HOOKSCOPE; kind++)
        write_sample_stacks(p, out, kind);
}

static void write_threads(const hs_profile *p, FILE *out)
{
    fprintf(out, ",\n \"thread_list\": [");
    for (size_t i = 0; i < p->nthreads_list; i++) {
        const hs_prof_thread *t = &p->threads_list[i];
        fprintf(out, "%s\n  {\"tid\": %u, \"calls\": %llu, \"cpu_samples\": %llu, \"wait_samples\": %llu, "
                     "\"ready_samples\": %llu, \"hookscope_samples\": %llu",
                i ? "," : "", t->tid, (unsigned long long)t->calls, (unsigned long long)t->cpu_samples,
                (unsigned long long)t->wait_samples, (unsigned long long)t->ready_samples,
                (unsigned long long)t->hookscope_samples);
        seconds_field(out, "cpu_time_s", t->cpu_s);
        if (t->running_s >= 0 || t->wait_s >= 0 || t->ready_s >= 0)
            fprintf(out, ", \"running_s\": %.7f, \"wait_s\": %.7f, \"ready_s\": %.7f", t->running_s, t->wait_s,
                    t->ready_s);
        fputc('}', out);
    }
    fprintf(out, "]");
}

/* --timeline: its file (by name, in the run's directory), clock, the
 * functions its events name (module id and rva, in the events' numbers),
 * and what each thread kept and dropped. */
static void write_timeline(const hs_profile *p, FILE *out)
{
    const hs_prof_timeline *t = p->timeline;
    fprintf(out, ",\n \"timeline\": {\"file\": ");
    hs_json_quote(out, hs_basename(t->file));
    fprintf(out, ", \"min_duration_ns\": %llu, \"depth\": %u, \"wait_ms\": %u", (unsigned long long)t->min_ns, t->depths,
            t->wait_ms);
    fprintf(out, ", \"bytes\": %llu, \"max_bytes\": %llu, \"tsc_start\": %llu, \"tsc_hz\": %.0f, \"qpc_start\": %lld, "
                 "\"qpc_hz\": %lld,\n  \"functions\": [",
            (unsigned long long)t->bytes, (unsigned long long)t->max_bytes, (unsigned long long)t->tsc_start,
            t->tsc_hz, (long long)t->qpc_start, (long long)t->qpc_hz);
    for (uint32_t i = 0; i < t->nfunc_map; i++) {
        const hs_prof_func *f = t->func_map[i] < p->nfuncs ? &p->funcs[t->func_map[i]] : NULL;
        if (f && f->rva != HS_RVA_NONE)
            fprintf(out, "%s[%u, %u]", i ? ", " : "", p->modules[f->module].id, f->rva);
        else
            fprintf(out, "%snull", i ? ", " : "");
    }
    fprintf(out, "],\n  \"threads\": [");
    for (size_t i = 0; i < t->nthreads; i++) {
        const hs_prof_tl_thread *th = &t->threads[i];
        fprintf(out, "%s\n   {\"tid\": %u, \"events\": %llu, \"open\": %llu, \"filtered\": %llu, "
                     "\"dropped_buffer\": %llu, \"dropped_file\": %llu",
                i ? "," : "", th->tid, (unsigned long long)th->events, (unsigned long long)th->open,
                (unsigned long long)th->filtered, (unsigned long long)th->dropped_buffer,
                (unsigned long long)th->dropped_file);
        if (th->dropped_buffer + th->dropped_file)
            fprintf(out, ", \"dropped_from_us\": %.3f, \"dropped_to_us\": %.3f, \"drop_first\": %llu, "
                         "\"drop_last\": %llu",
                    hs_timeline_us(t, th->drop_first), hs_timeline_us(t, th->drop_last),
                    (unsigned long long)th->drop_first, (unsigned long long)th->drop_last);
        if (th->waits)
            fprintf(out, ", \"waits\": %llu, \"waited_us\": %.3f, \"wait_ticks\": %llu", (unsigned long long)th->waits,
                    t->tsc_hz > 0 ? (double)th->wait_ticks * 1e6 / t->tsc_hz : 0.0, (unsigned long long)th->wait_ticks);
        fputc('}', out);
    }
    /* samples: [kind, the stack's place among the report's stacks of its
     * kind, the performance counter] */
    fprintf(out, "],\n  \"samples_dropped\": %llu, \"samples\": [", (unsigned long long)t->samples_dropped);
    uint32_t *pos = hs_xcalloc(p->nstacks ? p->nstacks : 1, sizeof *pos), seen[HS_STACK_HOOKSCOPE + 1] = { 0 };
    for (size_t i = 0; i < p->nstacks; i++)
        pos[i] = p->stacks[i].kind <= HS_STACK_HOOKSCOPE ? seen[p->stacks[i].kind]++ : 0;
    for (size_t i = 0; i < t->nsamples; i++) {
        const hs_prof_tl_sample *sm = &t->samples[i];
        fprintf(out, "%s[%u, %u, %lld]", i ? (i % 8 ? ", " : ",\n   ") : "", p->stacks[sm->stack].kind,
                pos[sm->stack], (long long)sm->qpc);
    }
    free(pos);
    fprintf(out, "]}");
}

int hs_write_json(const hs_profile *p, FILE *out)
{
    fprintf(out, "{\"version\": 1,\n \"tool\": {\"name\": \"hookscope\", \"version\": ");
    hs_json_quote(out, HOOKSCOPE_VERSION);
    fprintf(out, ", \"command\": ");
    hs_json_quote(out, p->command);
    fprintf(out, ", \"agent_tls_index\": %u},\n", p->agent_tls_index);
    write_target(p, out);
    if (p->trace.file) {
        fprintf(out, " \"trace\": {\"file\": ");
        hs_json_quote(out, p->trace.file);
        fprintf(out, ", \"machine\": ");
        hs_json_quote(out, p->trace.machine);
        fprintf(out, ", \"start\": ");
        hs_json_quote(out, p->trace.start);
        fprintf(out, ", \"span_s\": %.6f, \"processes_named\": %u},\n", p->trace.span_s, p->trace.named);
    }
    fprintf(out, " \"threads\": %u, \"regions_reused\": %u, \"total_calls\": %llu, \"overflow_calls\": %lld,\n",
            p->threads, p->regions_reused, (unsigned long long)p->total_calls, (long long)p->overflow_calls);
    fprintf(out, " \"warnings\": [");
    for (size_t i = 0; i < p->nwarnings; i++) {
        fprintf(out, "%s", i ? ", " : "");
        hs_json_quote(out, p->warnings[i]);
    }
    write_modules(p, out);
    write_functions(p, out);

    fprintf(out, ",\n \"options\": {\"edges\": %s, \"stacks\": ", p->edges_on ? "true" : "false");
    if (p->stack_depth) {
        char policy[128];
        hs_fmt_stack_policy(p, policy, sizeof policy);
        fprintf(out, "{\"depth\": %u, \"every\": %u, \"policy\": ", p->stack_depth, p->stack_every);
        hs_json_quote(out, policy);
        fputc('}', out);
    } else {
        fprintf(out, "null");
    }
    fprintf(out, ", \"time\": %s%s}", p->time_on ? "true" : "false", p->srcline_on ? ", \"srcline\": true" : "");
    if (p->edges_on)
        write_edges(p, out);
    if (p->stack_depth)
        write_stacks(p, out);
    if (p->time_on)
        fprintf(out, ",\n \"time_dropped\": %llu, \"tsc_hz\": %.0f", (unsigned long long)p->time_dropped,
                p->tsc_hz);
    if (p->sampling.on)
        write_sampling(p, out);
    if (p->nthreads_list)
        write_threads(p, out);
    if (p->timeline)
        write_timeline(p, out);
    fprintf(out, ",\n \"loaded_modules\": [");
    int k = 0;
    for (size_t m = 0; m < p->nmodules; m++) {
        const hs_prof_module *mod = &p->modules[m];
        if (mod->traced || mod->agent)
            continue;
        fprintf(out, "%s\n  {\"name\": ", k++ ? "," : "");
        hs_json_quote(out, mod->name);
        fprintf(out, ", \"path\": ");
        hs_json_quote(out, mod->path);
        fprintf(out, ", \"id\": %u, \"base\": \"0x%llx\", \"size\": %u, \"timestamp\": %u", mod->id,
                (unsigned long long)mod->base, mod->size, mod->timestamp);
        if (mod->kernel)
            fprintf(out, ", \"kernel\": true");
        if (mod->jit)
            fprintf(out, ", \"jit\": true");
        module_samples(out, mod);
        fputc('}', out);
    }
    fprintf(out, "]}\n");
    return ferror(out) ? -1 : 0;
}
