/*
 * injector/trace/checks.c - see checks.h.
 */
#include "injector/trace/checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hook/engine/filter.h"
#include "injector/symbols/suggest.h"

static int traced_module_named(const hs_profile *p, const char *name)
{
    for (size_t m = 0; m < p->nmodules; m++)
        if (p->modules[m].traced && hs_module_matches(p->modules[m].name, name))
            return 1;
    return 0;
}

/* One line for a filter that matched nothing. */
static void unmatched_filter(const hs_profile *p, const char *pattern)
{
    const char *bang = strchr(pattern, '!');
    if (bang) {
        char *mod = hs_xstrndup(pattern, (size_t)(bang - pattern));
        int traced = traced_module_named(p, mod);
        if (!traced) {
            hs_err("function filter '%s' is for module '%s', which is not traced: add -m %s", pattern, mod, mod);
            free(mod);
            return;
        }
        free(mod);
    }
    const char **names = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *names);
    size_t n = 0;
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].in_plan && p->funcs[i].name)
            names[n++] = p->funcs[i].name;
    const char *best[3];
    size_t k = hs_suggest(pattern, names, n, best, 3);
    char hint[1024] = "";
    if (k) {
        size_t len = (size_t)snprintf(hint, sizeof hint, "; did you mean ");
        for (size_t i = 0; i < k && len < sizeof hint; i++)
            len += (size_t)snprintf(hint + len, sizeof hint - len, "%s'%s'", i == 0 ? "" : i + 1 == k ? " or " : ", ",
                                    best[i]);
        if (len < sizeof hint)
            snprintf(hint + len, sizeof hint - len, "?");
    }
    hs_err("function filter '%s' matched no function%s", pattern, hint);
    free(names);
}

static int report_unmatched(const hs_trace_config *o, const hs_profile *p, uint32_t filters_matched)
{
    int bad = 0;
    for (int i = 0; i < o->nfilters; i++) {
        if (filters_matched & (1u << i))
            continue;
        char *f = hs_utf8(o->filters[i]);
        unmatched_filter(p, f);
        free(f);
        bad = 1;
    }
    return bad;
}

int hs_check_at_start(const hs_trace_config *o, const hs_profile *p, uint32_t modules_matched,
                      uint32_t filters_matched, int attach)
{
    int all_loaded = 1;
    for (int i = 0; i < o->nmodules; i++) {
        if (modules_matched & (1u << i))
            continue;
        all_loaded = 0;
        if (o->quiet)
            continue;
        char *m = hs_utf8(o->modules[i]);
        if (attach)
            hs_err("module '%s' is not loaded in process %u; it is traced if the process loads it", m, p->pid);
        else
            hs_err("module '%s' is neither the program nor a DLL it loads at start; it is traced if it "
                   "is loaded later", m);
        free(m);
    }
    if (!all_loaded)
        return 0;   /* a module may still load and match */
    if (report_unmatched(o, p, filters_matched))
        return -1;
    uint64_t found = 0, hooked = 0, filtered = 0;
    for (size_t m = 0; m < p->nmodules; m++) {
        if (!p->modules[m].traced)
            continue;
        found += p->modules[m].funcs_found;
        hooked += p->modules[m].funcs_hooked;
        filtered += p->modules[m].skip_counts[HS_SKIP_FILTERED];
    }
    if (o->nfilters && !hooked && filtered) {
        hs_err("the function filters leave no function to hook (all %llu found are filtered out)",
               (unsigned long long)found);
        return -1;
    }
    return 0;
}

int hs_check_at_end(const hs_trace_config *o, const hs_profile *p, uint32_t modules_matched,
                    uint32_t filters_matched)
{
    for (int i = 0; i < o->nmodules; i++) {
        if (!(modules_matched & (1u << i))) {
            char *m = hs_utf8(o->modules[i]);
            hs_err("module '%s' was never loaded by the target", m);
            free(m);
        }
    }
    return report_unmatched(o, p, filters_matched) ? -1 : 0;
}
