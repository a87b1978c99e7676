/*
 * injector/report.c - write all reports into the output directory, and
 * the helpers the writers share (named edges, stack frames, units).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hookscope/session.h"
#include "report.h"
#include "util.h"

int hs_make_output_dir(const char *dir)
{
    wchar_t *w = hs_wide(dir);
    size_t n = wcslen(w);
    for (size_t i = 1; i <= n; i++) {
        if (i == n || w[i] == L'\\' || w[i] == L'/') {
            wchar_t c = w[i];
            w[i] = 0;
            if (!(i == 2 && w[1] == L':'))
                CreateDirectoryW(w, NULL);
            w[i] = c;
        }
    }
    DWORD attr = GetFileAttributesW(w);
    free(w);
    return (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY)) ? 0 : -1;
}

static int write_one(const hs_results *r, const char *dir, const char *name,
                     int (*writer)(const hs_results *, FILE *))
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = hs_xmalloc(len);
    snprintf(path, len, "%s\\%s", dir, name);
    wchar_t *wpath = hs_wide(path);
    FILE *f = _wfopen(wpath, L"wb");
    int rc = -1;
    if (!f) {
        hs_err("cannot write %s: %s", path, strerror(errno));
    } else {
        rc = writer(r, f);
        if (fclose(f) != 0 || rc != 0) {
            hs_err("cannot write %s", path);
            rc = -1;
        }
    }
    free(wpath);
    free(path);
    return rc;
}

double hs_ticks_ns(const hs_results *r, uint64_t ticks)
{
    return r->tsc_hz > 0 ? (double)ticks * 1e9 / r->tsc_hz : 0;
}

void hs_stack_policy(const hs_results *r, char *buf, size_t len)
{
    uint32_t n = r->stack_every;
    if (n <= 1) {
        snprintf(buf, len, "every call");
        return;
    }
    const char *suffix = "th";
    if (n % 100 < 11 || n % 100 > 13)
        suffix = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
    snprintf(buf, len, "every %u%s call of each function on each thread", n, suffix);
}

static int cmp_named_edge(const void *a, const void *b)
{
    const hs_named_edge *x = a, *y = b;
    if (x->callee != y->callee)
        return x->callee < y->callee ? -1 : 1;
    if (x->caller_module != y->caller_module)
        return x->caller_module < y->caller_module ? -1 : 1;
    return strcmp(x->caller, y->caller);
}

size_t hs_named_edges(const hs_results *r, hs_addrsym *as, hs_named_edge **out)
{
    hs_named_edge *e = hs_xcalloc(r->nedges ? r->nedges : 1, sizeof *e);
    for (size_t i = 0; i < r->nedges; i++) {
        hs_addr_info ai;
        /* the call instruction ends at the return address */
        hs_addrsym_lookup(as, r->edges[i].site - 1, &ai);
        e[i].caller_module = ai.module;
        e[i].caller_func = ai.func;
        e[i].callee = r->edges[i].callee;
        e[i].calls = r->edges[i].calls;
        if (ai.name)
            snprintf(e[i].caller, sizeof e[i].caller, "%s", ai.name);
        else if (ai.module >= 0)
            snprintf(e[i].caller, sizeof e[i].caller, "%s+0x%llx", r->mods[ai.module].name,
                     (unsigned long long)(r->edges[i].site - r->mods[ai.module].base));
        else
            snprintf(e[i].caller, sizeof e[i].caller, "0x%llx", (unsigned long long)r->edges[i].site);
    }
    qsort(e, r->nedges, sizeof *e, cmp_named_edge);
    size_t w = 0;
    for (size_t i = 0; i < r->nedges; i++) {
        if (w && cmp_named_edge(&e[w - 1], &e[i]) == 0)
            e[w - 1].calls += e[i].calls;
        else
            e[w++] = e[i];
    }
    *out = e;
    return w;
}

int hs_stack_frame_name(const hs_results *r, hs_addrsym *as, const hs_res_stack *st, uint32_t d,
                        int with_offset, char *buf, size_t len)
{
    uint64_t addr = st->frames[d];
    /* a return address points after the call: name the call instruction
     * (a call to a noreturn function can end its function) */
    uint64_t at = d ? addr - 1 : addr;
    hs_addr_info ai;
    hs_addrsym_lookup(as, at, &ai);
    if (ai.module >= 0 && (r->mods[ai.module].flags & HS_MOD_AGENT))
        return 0;
    if (ai.module < 0)
        snprintf(buf, len, "0x%llx", (unsigned long long)addr);
    else if (!ai.name)
        snprintf(buf, len, "%s+0x%llx", r->mods[ai.module].name,
                 (unsigned long long)(addr - r->mods[ai.module].base));
    else if (with_offset)
        snprintf(buf, len, "%s!%s+0x%llx", r->mods[ai.module].name, ai.name,
                 (unsigned long long)(addr - ai.start));
    else
        snprintf(buf, len, "%s!%s", r->mods[ai.module].name, ai.name);
    return 1;
}

int hs_write_reports(const hs_results *r, const char *dir)
{
    if (hs_make_output_dir(dir) < 0) {
        hs_err("cannot create output directory %s", dir);
        return -1;
    }
    if (write_one(r, dir, "report.txt", hs_write_report_txt) < 0)
        return -1;
    if (write_one(r, dir, "report.json", hs_write_report_json) < 0)
        return -1;
    if (r->stack_depth && write_one(r, dir, "entry-stacks.folded", hs_write_report_folded) < 0)
        return -1;
    return 0;
}
