/*
 * sampler/backends.c - the table of sampling backends (see sampler.h).
 */
#include <string.h>

#include "hook/base/util.h"
#include "sampler/sampler.h"

#ifdef _WIN32
extern const hs_sampler_backend hs_sampler_suspend, hs_sampler_etw, hs_sampler_auto;

static const hs_sampler_backend *const backends[] = { &hs_sampler_suspend, &hs_sampler_etw, &hs_sampler_auto };
#endif

const hs_sampler_backend *hs_sampler_backend_find(const char *name)
{
#ifdef _WIN32
    for (size_t i = 0; i < sizeof backends / sizeof *backends; i++)
        if (!strcmp(name, backends[i]->name))
            return backends[i];
#endif
    hs_err("no sampler '%s' (there are: suspend, etw, auto)", name);
    return NULL;
}
