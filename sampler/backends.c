/*
 * sampler/backends.c - the table of sampling backends, and "auto": the
 * one place where a sampler is chosen (see sampler.h).
 */
#include <stdio.h>
#include <string.h>

#include "hook/base/util.h"
#include "sampler/sampler.h"

#ifdef _WIN32
extern const hs_sampler_backend hs_sampler_etw, hs_sampler_suspend;

/* in the order auto tries them: ETW costs the target nothing */
const hs_sampler_backend *const hs_sampler_backends[] = { &hs_sampler_etw, &hs_sampler_suspend, NULL };
#else
const hs_sampler_backend *const hs_sampler_backends[] = { NULL };
#endif

const hs_sampler_backend *hs_sampler_backend_named(const char *name)
{
    for (size_t i = 0; hs_sampler_backends[i]; i++)
        if (!strcmp(name, hs_sampler_backends[i]->name))
            return hs_sampler_backends[i];
    return NULL;
}

bool hs_sampler_name_ok(const char *name)
{
    return !strcmp(name, "auto") || hs_sampler_backend_named(name) != NULL;
}

const char *hs_sampler_names(void)
{
    static char names[128];
    if (!names[0]) {
        size_t n = 0;
        for (size_t i = 0; hs_sampler_backends[i]; i++)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s, ", hs_sampler_backends[i]->name);
        if (n >= 2)
            n -= 2;
        snprintf(names + n, sizeof names - n, "%sauto", n ? " or " : "");
    }
    return names;
}

const hs_sampler_backend *hs_sampler_start(const char *name, const hs_sampler_config *c, hs_sampleset *out,
                                           hs_sampler **s)
{
    bool any = !strcmp(name, "auto");
    for (size_t i = 0; hs_sampler_backends[i]; i++) {
        const hs_sampler_backend *b = hs_sampler_backends[i];
        if (!any && strcmp(name, b->name))
            continue;
        if (any && c->returns_moved && !b->true_returns && hs_sampler_backends[i + 1]) {
            hs_log("the %s sampler would find hookscope's return thunk where the callers of timed calls are (a "
                   "timed 32-bit program); sampling with the %s sampler instead", b->name,
                   hs_sampler_backends[i + 1]->name);
            continue;
        }
        hs_sampler_refusal why;
        memset(&why, 0, sizeof why);
        if (c->rate_hz > 0)
            hs_log("sampling process %u with the %s sampler at %g Hz", c->pid, b->name, c->rate_hz);
        else
            hs_log("sampling process %u with the %s sampler at its default rate", c->pid, b->name);
        *s = b->start(c, out, &why);
        if (*s)
            return b;
        if (any && why.not_available && hs_sampler_backends[i + 1]) {
            hs_log("%s; sampling with the %s sampler instead", why.text, hs_sampler_backends[i + 1]->name);
            continue;
        }
        hs_err("%s", why.text);
        return NULL;
    }
    hs_err("no sampler '%s' (there are: %s)", name, hs_sampler_names());
    return NULL;
}
