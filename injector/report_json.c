/*
 * injector/report_json.c - report.json, schema version 1.
 *
 *   {"version": 1,
 *    "target": {"path", "args", "pid", "exit_code", ...},
 *    "modules": [{"name", "path", "base", "size", "functions_found", "functions_hooked", ...}],
 *    "functions": [{"module", "name", "rva", "size", "hooked", "skip_reason", "calls", ...}]}
 *
 * Fields are only ever added.
 */
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "addrsym.h"
#include "hookscope/skip.h"
#include "report.h"
#include "util.h"

static void jstr(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

static const char *stop_name(int stop)
{
    static const char *const names[] = { "exit", "crash", "duration", "interrupt", "detach",
                                         "target-exited" };
    return stop >= 0 && stop < (int)(sizeof names / sizeof *names) ? names[stop] : "unknown";
}

static void counts_obj(FILE *out, const uint32_t *counts, int n, const char *(*name)(int))
{
    int any = 0;
    fputc('{', out);
    for (int i = 1; i < n; i++) {
        if (!counts[i])
            continue;
        fprintf(out, "%s", any ? ", " : "");
        jstr(out, name(i));
        fprintf(out, ": %u", counts[i]);
        any = 1;
    }
    fputc('}', out);
}

static double ns(const hs_results *r, uint64_t ticks) { return hs_ticks_ns(r, ticks); }

static void time_obj(const hs_results *r, FILE *out, const hs_res_time *t)
{
    fprintf(out, "{\"calls\": %llu, \"total_ns\": %.0f, \"self_ns\": %.0f, \"min_ns\": %.0f, "
                 "\"max_ns\": %.0f, \"avg_ns\": %.1f, \"open\": %llu, \"hist\": [",
            (unsigned long long)t->exits, ns(r, t->total), ns(r, t->self), ns(r, t->min),
            ns(r, t->max), t->exits ? ns(r, t->total) / (double)t->exits : 0.0,
            (unsigned long long)t->open);
    int any = 0;
    for (int b = 0; b < 40; b++) {
        if (!t->hist[b])
            continue;
        fprintf(out, "%s{\"ns\": %llu, \"count\": %llu}", any ? ", " : "", 1ull << b,
                (unsigned long long)t->hist[b]);
        any = 1;
    }
    fprintf(out, "]}");
}

int hs_write_report_json(const hs_results *r, FILE *out)
{
    fprintf(out, "{\"version\": 1,\n \"tool\": {\"name\": \"hookscope\", \"version\": ");
    jstr(out, HOOKSCOPE_VERSION);
    fprintf(out, ", \"command\": ");
    jstr(out, r->command);
    fprintf(out, ", \"agent_tls_index\": %u},\n \"target\": {\"path\": ", r->tls_index);
    jstr(out, r->target_path);
    fprintf(out, ", \"args\": [");
    for (int i = 0; i < r->nargs; i++) {
        fprintf(out, "%s", i ? ", " : "");
        jstr(out, r->args[i]);
    }
    fprintf(out, "], \"pid\": %u, \"exit_code\": ", r->pid);
    if (r->exited)
        fprintf(out, "%u", r->exit_code);
    else
        fprintf(out, "null");
    const char *crash = r->stop == HS_STOP_CRASH ? r->crash_what : NULL;
    fprintf(out, ", \"crash\": ");
    if (crash)
        jstr(out, crash);
    else
        fprintf(out, "null");
    if (crash) {
        fprintf(out, ", \"crash_code\": %u, \"crash_address\": ", r->crash_code);
        if (r->crash_address)
            fprintf(out, "\"0x%llx\"", (unsigned long long)r->crash_address);
        else
            fprintf(out, "null");
    }
    fprintf(out, ", \"stop\": ");
    jstr(out, stop_name(r->stop));
    fprintf(out, ", \"wall_time_s\": %.6f},\n", r->wall_s);
    fprintf(out, " \"threads\": %u, \"regions_reused\": %u, \"total_calls\": %llu, \"overflow_calls\": %lld,\n",
            r->threads, r->regions_reused, (unsigned long long)r->total_calls, (long long)r->overflow_calls);
    fprintf(out, " \"warnings\": [");
    for (size_t i = 0; i < r->nwarnings; i++) {
        fprintf(out, "%s", i ? ", " : "");
        jstr(out, r->warnings[i]);
    }
    fprintf(out, "],\n \"modules\": [");
    int nm = 0;
    for (size_t m = 0; m < r->nmods; m++) {
        const hs_res_module *mod = &r->mods[m];
        if (!mod->traced)
            continue;
        fprintf(out, "%s\n  {\"name\": ", nm++ ? "," : "");
        jstr(out, mod->name);
        fprintf(out, ", \"path\": ");
        jstr(out, mod->path);
        fprintf(out, ", \"base\": \"0x%llx\", \"size\": %u, \"timestamp\": %u, "
                     "\"functions_found\": %u, \"functions_hooked\": %u, \"install_s\": %.6f, "
                     "\"main\": %s, \"loaded_late\": %s, \"unloaded\": %s, \"skipped\": ",
                (unsigned long long)mod->base, mod->size, mod->timestamp, mod->found, mod->hooked,
                mod->install_s, (mod->flags & 1) ? "true" : "false",
                (mod->flags & 8) ? "true" : "false", (mod->flags & 4) ? "true" : "false");
        counts_obj(out, mod->skip_counts, HS_SKIP__COUNT, hs_skip_reason_name);
        fprintf(out, ", \"patch_kinds\": ");
        counts_obj(out, mod->patch_counts, HS_PATCH__COUNT, hs_patch_kind_name);
        fprintf(out, ", \"entry_only\": ");
        counts_obj(out, mod->entry_only_counts, HS_WRAP__COUNT, hs_entry_only_name);
        fputc('}', out);
    }
    fprintf(out, "],\n \"functions\": [");
    for (size_t i = 0; i < r->nfuncs; i++) {
        const hs_res_func *f = &r->funcs[i];
        int hooked = (f->flags & 1) != 0;
        fprintf(out, "%s\n  {\"module\": ", i ? "," : "");
        jstr(out, r->mods[f->module].name);
        fprintf(out, ", \"name\": ");
        jstr(out, f->name);
        fprintf(out, ", \"rva\": \"0x%x\", \"size\": %u, \"hooked\": %s, \"skip_reason\": ", f->rva,
                f->size, hooked ? "true" : "false");
        if (hooked)
            fprintf(out, "null");
        else
            jstr(out, hs_skip_reason_name(f->skip));
        fprintf(out, ", \"patch\": ");
        if (hooked)
            jstr(out, hs_patch_kind_name(f->kind));
        else
            fprintf(out, "null");
        fprintf(out, ", \"calls\": %llu", (unsigned long long)f->calls);
        if (r->time_on && hooked) {
            fprintf(out, ", \"entry_only\": ");
            if (f->flags & 4)   /* HS_FUNC_WRAPPED */
                fprintf(out, "null");
            else
                jstr(out, hs_entry_only_name(f->entry_only));
            if ((f->flags & 4) && r->time) {
                fprintf(out, ", \"time\": ");
                time_obj(r, out, &r->time[i]);
                fprintf(out, ", \"unwinds\": %llu", (unsigned long long)r->time[i].unwinds);
            }
        }
        fputc('}', out);
    }
    fprintf(out, "]");

    hs_addrsym *as = hs_addrsym_new(r);
    fprintf(out, ",\n \"options\": {\"edges\": %s, \"stacks\": ", r->edges_on ? "true" : "false");
    if (r->stack_depth) {
        char policy[128];
        hs_stack_policy(r, policy, sizeof policy);
        fprintf(out, "{\"depth\": %u, \"every\": %u, \"policy\": ", r->stack_depth, r->stack_every);
        jstr(out, policy);
        fputc('}', out);
    } else {
        fprintf(out, "null");
    }
    fprintf(out, ", \"time\": %s}", r->time_on ? "true" : "false");
    if (r->edges_on) {
        hs_named_edge *e;
        size_t n = hs_named_edges(r, as, &e);
        fprintf(out, ",\n \"edges_lost\": %llu,\n \"edges\": [", (unsigned long long)r->edges_lost);
        for (size_t i = 0; i < n; i++) {
            const hs_res_func *callee = &r->funcs[e[i].callee];
            fprintf(out, "%s\n  {\"caller\": ", i ? "," : "");
            jstr(out, e[i].caller);
            fprintf(out, ", \"caller_module\": ");
            if (e[i].caller_module >= 0)
                jstr(out, r->mods[e[i].caller_module].name);
            else
                fprintf(out, "null");
            fprintf(out, ", \"callee\": ");
            jstr(out, callee->name);
            fprintf(out, ", \"callee_module\": ");
            jstr(out, r->mods[callee->module].name);
            fprintf(out, ", \"calls\": %llu}", (unsigned long long)e[i].calls);
        }
        fprintf(out, "]");
        free(e);
    }
    if (r->stack_depth) {
        fprintf(out, ",\n \"stacks_dropped\": %llu,\n \"stacks\": [", (unsigned long long)r->stacks_dropped);
        for (size_t i = 0; i < r->nstacks; i++) {
            const hs_res_stack *st = &r->stacks[i];
            fprintf(out, "%s\n  {\"function\": ", i ? "," : "");
            jstr(out, r->funcs[st->func].name);
            fprintf(out, ", \"module\": ");
            jstr(out, r->mods[r->funcs[st->func].module].name);
            fprintf(out, ", \"count\": %llu, \"truncated\": %s, \"frames\": [",
                    (unsigned long long)st->count, st->truncated ? "true" : "false");
            int k = 0;
            for (uint32_t d = 0; d < st->depth; d++) {
                char buf[600];
                if (!hs_stack_frame_name(r, as, st, d, 1, buf, sizeof buf))
                    continue;   /* the timing wrapper: folded into the hooked function */
                fprintf(out, "%s", k++ ? ", " : "");
                jstr(out, buf);
            }
            fprintf(out, "]}");
        }
        fprintf(out, "]");
    }
    if (r->time_on)
        fprintf(out, ",\n \"time_dropped\": %llu, \"tsc_hz\": %.0f", (unsigned long long)r->time_dropped,
                r->tsc_hz);
    fprintf(out, ",\n \"loaded_modules\": [");
    int k = 0;
    for (size_t m = 0; m < r->nmods; m++) {
        const hs_res_module *mod = &r->mods[m];
        if (mod->traced)
            continue;
        fprintf(out, "%s\n  {\"name\": ", k++ ? "," : "");
        jstr(out, mod->name);
        fprintf(out, ", \"path\": ");
        jstr(out, mod->path);
        fprintf(out, ", \"base\": \"0x%llx\", \"size\": %u}", (unsigned long long)mod->base, mod->size);
    }
    fprintf(out, "]}\n");
    hs_addrsym_free(as);
    return ferror(out) ? -1 : 0;
}
