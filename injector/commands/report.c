/*
 * injector/commands/report.c - `hookscope report DIR`: read a saved run's
 * report.json into a profile (profile/load.h) and write every output of
 * that run again, into DIR or the -o directory.
 */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "commands/commands.h"
#include "output/outdir.h"
#include "output/writers.h"
#include "profile/load.h"

int hs_cmd_report(const hs_options *o)
{
    char *dir = hs_utf8(o->file);
    char *path = hs_xasprintf("%s\\report.json", dir);
    char err[600];
    hs_profile *p = hs_profile_load(path, err, sizeof err);
    if (!p) {
        hs_err("%s", err);
        return HS_EXIT_FAILED;
    }
    const char *out = o->outdir[0] ? o->outdir : dir;
    if (hs_outdir_open(out) < 0)
        return HS_EXIT_FAILED;
    int rc = hs_write_all(p, out) < 0 ? HS_EXIT_FAILED : 0;
    if (!rc && !o->quiet)
        hs_err("%llu calls of %zu functions; reports in %s", (unsigned long long)p->total_calls, p->nfuncs, out);
    hs_profile_free(p);
    free(path);
    free(dir);
    return rc;
}
