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

#include "hookscope/skip.h"
#include "report.h"

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

int hs_write_report_json(const hs_results *r, FILE *out)
{
    fprintf(out, "{\"version\": 1,\n \"tool\": {\"name\": \"hookscope\", \"version\": ");
    jstr(out, HOOKSCOPE_VERSION);
    fprintf(out, ", \"command\": ");
    jstr(out, r->command);
    fprintf(out, "},\n \"target\": {\"path\": ");
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
    const char *crash = r->stop == HS_STOP_CRASH ? hs_crash_name(r->exit_code) : NULL;
    fprintf(out, ", \"crash\": ");
    if (crash)
        jstr(out, crash);
    else
        fprintf(out, "null");
    fprintf(out, ", \"stop\": ");
    jstr(out, stop_name(r->stop));
    fprintf(out, ", \"wall_time_s\": %.6f},\n", r->wall_s);
    fprintf(out, " \"threads\": %u, \"total_calls\": %llu, \"overflow_calls\": %lld,\n",
            r->threads, (unsigned long long)r->total_calls, (long long)r->overflow_calls);
    fprintf(out, " \"warnings\": [");
    for (size_t i = 0; i < r->nwarnings; i++) {
        fprintf(out, "%s", i ? ", " : "");
        jstr(out, r->warnings[i]);
    }
    fprintf(out, "],\n \"modules\": [");
    for (size_t m = 0; m < r->nmods; m++) {
        const hs_res_module *mod = &r->mods[m];
        fprintf(out, "%s\n  {\"name\": ", m ? "," : "");
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
        fprintf(out, ", \"calls\": %llu}", (unsigned long long)f->calls);
    }
    fprintf(out, "]}\n");
    return ferror(out) ? -1 : 0;
}
