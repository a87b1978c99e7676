/*
 * sampler/backends.c - the table of sampling backends (see sampler.h).
 */
#include <string.h>

#include "base/util.h"
#include "sampler.h"

#ifdef _WIN32
extern const hs_sampler_backend hs_sampler_suspend;
#endif

const hs_sampler_backend *hs_sampler_backend_find(const char *name)
{
#ifdef _WIN32
    if (!strcmp(name, "suspend"))
        return &hs_sampler_suspend;
#endif
    if (!strcmp(name, "etw") || !strcmp(name, "auto")) {
        hs_err("--sampler %s: the ETW backend is not built yet; use --sampler suspend", name);
        return NULL;
    }
    hs_err("no sampler '%s' (there are: suspend, etw, auto)", name);
    return NULL;
}
