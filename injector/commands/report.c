/*
 * injector/commands/report.c - `hookscope report DIR`: read a saved run's
 * report.json into a profile (profile/load.h) and write every output of
 * that run again, into DIR or the -o directory. `hookscope report --etl
 * FILE`: the same outputs for one process of a recorded ETW trace
 * (profile/from_etl.h), or a table of the trace's processes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "commands/commands.h"
#include "etl.h"
#include "output/outdir.h"
#include "output/writers.h"
#include "profile/from_etl.h"
#include "profile/load.h"
#include "profile/resolve.h"

static int write_profile(const hs_options *o, hs_profile *p, const char *out)
{
    if (hs_outdir_open(out) < 0)
        return HS_EXIT_FAILED;
    int rc = hs_write_all(p, out) < 0 ? HS_EXIT_FAILED : 0;
    if (!rc && !o->quiet)
        hs_err("%llu calls, %llu samples of %zu functions; reports in %s", (unsigned long long)p->total_calls,
               (unsigned long long)(p->sampling.samples + p->sampling.wait_samples), p->nfuncs, out);
    return rc;
}

static int report_etl(const hs_options *o)
{
    hs_etl_trace t;
    hs_etl_error err;
    FILE *f = hs_fopen(o->etl, "rb");
    if (!f) {
        hs_err("cannot read %s: %s", o->etl, "cannot open the file");
        return HS_EXIT_FAILED;
    }
    int rc = hs_etl_read_fp(f, &t, &err);
    fclose(f);
    if (rc < 0) {
        hs_err("%s: %s", o->etl, err.msg);
        hs_etl_trace_free(&t);
        return HS_EXIT_FAILED;
    }
    if (!o->etl_pid && !o->etl_process) {
        hs_etl_proc_row *rows;
        size_t n = hs_etl_process_table(&t, &rows);
        printf("%10s %12s %12s  %s\n", "pid", "samples", "with stack", "process");
        for (size_t i = 0; i < n; i++)
            printf("%10u %12llu %12llu  %s\n", rows[i].pid, (unsigned long long)rows[i].samples,
                   (unsigned long long)rows[i].with_stack, rows[i].name);
        printf("\n%zu processes with samples; report one with --pid N or --process NAME\n", n);
        free(rows);
        hs_etl_trace_free(&t);
        return 0;
    }
    uint32_t index;
    char msg[300];
    if (hs_etl_pick_process(&t, o->etl_pid, o->etl_process, &index, msg, sizeof msg) < 0) {
        hs_err("%s", msg);
        hs_etl_trace_free(&t);
        return HS_EXIT_FAILED;
    }
    hs_profile *p = hs_profile_new();
    hs_profile_from_etl(&t, index, o->etl, NULL, NULL, p);
    hs_etl_trace_free(&t);
    hs_symconf conf = hs_options_symconf(o);
    p->srcline_on = o->srcline != 0;
    hs_profile_resolve(p, &conf);
    hs_profile_count_samples(p);
    rc = write_profile(o, p, o->outdir[0] ? o->outdir : "hookscope-out");
    hs_profile_free(p);
    return rc;
}

int hs_cmd_report(const hs_options *o)
{
    if (o->etl)
        return report_etl(o);
    char *dir = hs_utf8(o->file);
    char *path = hs_xasprintf("%s\\report.json", dir);
    char err[600];
    hs_profile *p = hs_profile_load(path, err, sizeof err);
    if (!p) {
        hs_err("%s", err);
        return HS_EXIT_FAILED;
    }
    int rc = write_profile(o, p, o->outdir[0] ? o->outdir : dir);
    hs_profile_free(p);
    free(path);
    free(dir);
    return rc;
}
