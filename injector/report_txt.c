/*
 * injector/report_txt.c - report.txt: a header saying what was traced and
 * how it ended, the modules with their hook statistics, and the functions
 * sorted by calls.
 */
#include <stdlib.h>
#include <string.h>

#include "hookscope/skip.h"
#include "report.h"

static const hs_results *sort_r;

static int cmp_calls(const void *a, const void *b)
{
    const hs_res_func *x = &sort_r->funcs[*(const size_t *)a];
    const hs_res_func *y = &sort_r->funcs[*(const size_t *)b];
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");
    if (c)
        return c;
    return x->module != y->module ? (x->module < y->module ? -1 : 1) : (x->rva < y->rva ? -1 : x->rva > y->rva);
}

size_t *hs_sorted_by_calls(const hs_results *r, size_t *n)
{
    size_t *idx = malloc((r->nfuncs ? r->nfuncs : 1) * sizeof *idx);
    size_t k = 0;
    if (!idx) {
        *n = 0;
        return NULL;
    }
    for (size_t i = 0; i < r->nfuncs; i++)
        if (r->funcs[i].calls > 0)
            idx[k++] = i;
    sort_r = r;
    qsort(idx, k, sizeof *idx, cmp_calls);
    *n = k;
    return idx;
}

void hs_describe_stop(const hs_results *r, char *buf, size_t len)
{
    const char *crash = r->exited ? hs_crash_name(r->exit_code) : NULL;
    switch (r->stop) {
    case HS_STOP_CRASH:
        snprintf(buf, len, "crashed: 0x%08X (%s)", r->exit_code, crash ? crash : "exception");
        break;
    case HS_STOP_DURATION:
        snprintf(buf, len, "stopped after --duration %.3g s", r->duration_s);
        break;
    case HS_STOP_INTERRUPT:
        snprintf(buf, len, "interrupted (Ctrl+C)");
        break;
    case HS_STOP_DETACH:
        snprintf(buf, len, "detached; the target keeps running");
        break;
    case HS_STOP_TARGET_GONE:
        snprintf(buf, len, "the target exited with code %u (0x%X)", r->exit_code, r->exit_code);
        break;
    default:
        snprintf(buf, len, "exited with code %u (0x%X)", r->exit_code, r->exit_code);
        break;
    }
}

static void skip_summary(FILE *out, const char *label, const uint32_t *counts, int n,
                         const char *(*name)(int))
{
    int any = 0;
    for (int i = 1; i < n; i++) {
        if (!counts[i])
            continue;
        fprintf(out, "%s%s %u", any ? ", " : label, name(i), counts[i]);
        any = 1;
    }
    if (any)
        fputc('\n', out);
}

int hs_write_report_txt(const hs_results *r, FILE *out)
{
    char stop[160];
    hs_describe_stop(r, stop, sizeof stop);
    fprintf(out, "hookscope %s report\n\n", HOOKSCOPE_VERSION);
    fprintf(out, "target     %s", r->target_path ? r->target_path : "?");
    for (int i = 0; i < r->nargs; i++)
        fprintf(out, " %s", r->args[i]);
    fprintf(out, "\npid        %u\n", r->pid);
    fprintf(out, "end        %s\n", stop);
    if (r->exited)
        fprintf(out, "exit code  %u (0x%X)\n", r->exit_code, r->exit_code);
    fprintf(out, "wall time  %.3f s\n", r->wall_s);
    fprintf(out, "threads    %u", r->threads);
    if (r->regions_reused)
        fprintf(out, " counter regions (reused %u times for threads that came after others ended)",
                r->regions_reused);
    fputc('\n', out);
    fprintf(out, "calls      %llu\n", (unsigned long long)r->total_calls);
    if (r->overflow_calls)
        fprintf(out, "           %lld calls counted in the shared overflow region (too many threads)\n",
                (long long)r->overflow_calls);
    for (size_t i = 0; i < r->nwarnings; i++)
        fprintf(out, "warning    %s\n", r->warnings[i]);

    fprintf(out, "\n%-28s %9s %7s %7s  %-18s %s\n", "module", "functions", "hooked", "skipped",
            "base", "install");
    for (size_t m = 0; m < r->nmods; m++) {
        const hs_res_module *mod = &r->mods[m];
        if (!mod->traced)
            continue;
        fprintf(out, "%-28s %9u %7u %7u  0x%-16llx %.3f s\n", mod->name, mod->found, mod->hooked,
                mod->found - mod->hooked, (unsigned long long)mod->base, mod->install_s);
        skip_summary(out, "  skipped: ", mod->skip_counts, HS_SKIP__COUNT, hs_skip_reason_name);
        uint32_t pk[HS_PATCH__COUNT];
        memcpy(pk, mod->patch_counts, sizeof pk);
        pk[HS_PATCH_JMP32] = 0;   /* the usual kind is not worth a line */
        skip_summary(out, "  patched with: ", pk, HS_PATCH__COUNT, hs_patch_kind_name);
        skip_summary(out, "  entry probe only: ", mod->entry_only_counts, HS_WRAP__COUNT,
                     hs_entry_only_name);
    }

    size_t n;
    size_t *idx = hs_sorted_by_calls(r, &n);
    fprintf(out, "\n%20s  %-40s %s\n", "calls", "function", "module");
    for (size_t k = 0; k < n; k++) {
        const hs_res_func *f = &r->funcs[idx[k]];
        fprintf(out, "%20llu  %-40s %s\n", (unsigned long long)f->calls, f->name,
                r->mods[f->module].name);
    }
    size_t hooked = 0;
    for (size_t i = 0; i < r->nfuncs; i++)
        hooked += (r->funcs[i].flags & 1) != 0;
    fprintf(out, "\n%zu of %zu hooked functions were called.\n", n, hooked);
    free(idx);
    return ferror(out) ? -1 : 0;
}
