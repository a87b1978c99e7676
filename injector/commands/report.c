/*
 * injector/commands/report.c - `hookscope report DIR`: read a saved run's
 * report.json into a profile (profile/load.h) and write its outputs again:
 *
 *   report DIR                 every file of the run, byte for byte as the
 *                              run wrote it, into DIR (or the -o directory);
 *   report DIR --format NAME   that one output, to stdout (or, with -o, into
 *                              that directory under its file name; dtrace,
 *                              which runs do not write, as dtrace.txt);
 *   --sort KEY, --top N, --threads
 *                              report.txt shaped so (they imply --format txt).
 *
 * `hookscope report --etl FILE`: the same outputs for one process of a
 * recorded ETW trace (profile/from_etl.h), or a table of its processes.
 */
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "injector/commands/commands.h"
#include "injector/output/outdir.h"
#include "injector/output/writers.h"
#include "injector/profile/from_etl.h"
#include "injector/profile/load.h"
#include "injector/profile/resolve.h"
#include "sampler/etl/etl.h"

static int count_events(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n)
{
    (void)tid;
    (void)ev;
    ((uint64_t *)ctx)[open] += n;
    return 0;
}

/* The saved run's timeline file can be read whole, and holds what
 * report.json says; else one line says why. */
static int check_timeline(const hs_profile *p)
{
    if (!p->timeline)
        return 0;
    hs_prof_tl_thread sum = hs_timeline_totals(p->timeline);
    uint64_t n[2] = { 0, 0 }, unknown = 0;
    char err[600];
    if (hs_timeline_read(p->timeline, p->nfuncs, count_events, n, &unknown, err, sizeof err) < 0) {
        hs_err("%s", err);
        return -1;
    }
    if (n[0] + n[1] + unknown != sum.events + sum.open) {
        hs_err("%s holds %llu calls, report.json says %llu", p->timeline->file,
               (unsigned long long)(n[0] + n[1] + unknown), (unsigned long long)(sum.events + sum.open));
        return -1;
    }
    return 0;
}

/* Do the paths a and b name one directory? */
static bool same_dir(const char *a, const char *b)
{
    wchar_t *wa = hs_wide(a), *wb = hs_wide(b), fa[MAX_PATH * 2], fb[MAX_PATH * 2];
    DWORD na = GetFullPathNameW(wa, MAX_PATH * 2, fa, NULL), nb = GetFullPathNameW(wb, MAX_PATH * 2, fb, NULL);
    free(wa);
    free(wb);
    if (!na || !nb || na >= MAX_PATH * 2 || nb >= MAX_PATH * 2)
        return !strcmp(a, b);
    while (na > 3 && (fa[na - 1] == L'\\' || fa[na - 1] == L'/'))
        fa[--na] = 0;
    while (nb > 3 && (fb[nb - 1] == L'\\' || fb[nb - 1] == L'/'))
        fb[--nb] = 0;
    return _wcsicmp(fa, fb) == 0;
}

/* The timeline's file into the directory `out` (a run's other files are
 * written there again: the file is copied). 0, or -1 after printing why. */
static int copy_timeline(const hs_profile *p, const char *out)
{
    char *path = hs_xasprintf("%s\\%s", out, HS_TIMELINE_FILE);
    const char *why = NULL;
    FILE *in = hs_fopen(p->timeline->file, "rb"), *to = in ? hs_fopen_out(path, &why) : NULL;
    int rc = in && to ? 0 : -1;
    static char buf[1 << 16];
    for (size_t n; !rc && (n = fread(buf, 1, sizeof buf, in)) > 0;)
        if (fwrite(buf, 1, n, to) != n)
            rc = -1;
    if (in && ferror(in))
        rc = -1;
    if (to && fclose(to) != 0)
        rc = -1;
    if (in)
        fclose(in);
    if (rc)
        hs_err("cannot copy %s to %s%s%s", p->timeline->file, path, why ? ": " : "", why ? why : "");
    free(path);
    return rc;
}

static int write_profile(const hs_options *o, hs_profile *p, const char *out, bool elsewhere)
{
    if (hs_outdir_open(out) < 0)
        return HS_EXIT_FAILED;
    if (elsewhere && p->timeline && copy_timeline(p, out) < 0)
        return HS_EXIT_FAILED;
    hs_profile_round_seconds(p);
    int rc = hs_write_all(p, out) < 0 ? HS_EXIT_FAILED : 0;
    if (!rc && !o->quiet)
        hs_err("%llu calls, %llu samples of %zu functions; reports in %s", (unsigned long long)p->total_calls,
               (unsigned long long)(p->sampling.samples + p->sampling.wait_samples + p->sampling.ready_samples +
                                   p->sampling.hookscope_samples),
               p->nfuncs, out);
    return rc;
}

static int write_one(const hs_options *o, const hs_profile *p, const char *out)
{
    const hs_writer *w = hs_writer_find(o->format);
    if (w->wanted && !w->wanted(p) && p->trace.file &&
        (!strcmp(w->format, "trace") || !strcmp(w->format, "folded"))) {
        hs_err("this trace has nothing for --format %s (an ETW trace has samples, no hooked calls: %s)", w->format,
               !strcmp(w->format, "trace") ? "trace.json is the timeline of a run with --timeline"
                                           : "--format folded-cpu writes its CPU samples' stacks");
        return HS_EXIT_FAILED;
    }
    if (w->wanted && !w->wanted(p)) {
        hs_err("this run has nothing for --format %s (%s)", w->format,
               !strcmp(w->format, "folded") ? "it has no entry stacks: run with --stacks"
               : !strcmp(w->format, "callgrind") ? "no CPU samples and no caller edges"
               : !strcmp(w->format, "trace")     ? "it has no timeline: run with --timeline"
               : !strcmp(w->format, "firefox")   ? "no samples and no timeline: run with --timeline"
                                                 : "no CPU samples and no entry stacks: run with --stacks");
        return HS_EXIT_FAILED;
    }
    int sort = o->sort < 0 ? HS_SORT_CALLS : o->sort;
    if (sort != HS_SORT_CALLS) {
        const char *why = hs_sort_unavailable(p, sort);
        if (why) {
            hs_err("--sort %s needs %s", hs_sort_key_name(sort), why);
            return HS_EXIT_USAGE;
        }
    }
    hs_txt_view view = { sort, o->top, o->threads != 0, o->sort >= 0 };
    bool shaped = !strcmp(w->format, "txt");
    if (!*out) {
        _setmode(_fileno(stdout), _O_BINARY);   /* the bytes as written, no CR added */
        int rc = shaped ? hs_write_txt_view(p, &view, stdout) : w->write(p, stdout);
        if (fflush(stdout) != 0 || rc != 0) {
            hs_err("cannot write the %s output to stdout", w->format);
            return HS_EXIT_FAILED;
        }
        return 0;
    }
    if (hs_outdir_open(out) < 0)
        return HS_EXIT_FAILED;
    char *name = w->file ? hs_xstrdup(w->file) : hs_xasprintf("%s.txt", w->format);
    int rc;
    if (shaped) {
        char *path = hs_path_join(out, name);
        const char *why = NULL;
        FILE *f = hs_fopen_out(path, &why);
        rc = f && hs_write_txt_view(p, &view, f) == 0 ? 0 : -1;
        if (f && fclose(f) != 0)
            rc = -1;
        if (rc)
            hs_err("cannot write %s%s%s", path, why ? ": " : "", why ? why : "");
        free(path);
    } else {
        rc = hs_write_file(w, p, out, name);
    }
    free(name);
    return rc < 0 ? HS_EXIT_FAILED : 0;
}

/* A trace's file name as a file of this machine, when there is one (a
 * trace recorded here: the kept trace of a run); a different version of
 * it is told apart by its timestamp when it is read for names. */
static char *local_file(void *ctx, const char *nt_path)
{
    (void)ctx;
    char *local = hs_nt_path_local(nt_path);
    if (!local)
        return NULL;
    wchar_t *w = hs_wide(local);
    DWORD attr = GetFileAttributesW(w);
    free(w);
    if (attr == INVALID_FILE_ATTRIBUTES || (attr & FILE_ATTRIBUTE_DIRECTORY)) {
        free(local);
        return NULL;
    }
    return local;
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
    if (!o->etl_pid_set && !o->etl_process) {
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
    uint32_t index, named = 0;
    char msg[300];
    if (hs_etl_pick_process(&t, o->etl_pid, o->etl_process, &index, &named, msg, sizeof msg) < 0) {
        hs_err("%s", msg);
        hs_etl_trace_free(&t);
        return HS_EXIT_FAILED;
    }
    hs_profile *p = hs_profile_new();
    hs_profile_from_etl(&t, index, o->etl, local_file, NULL, p);
    p->trace.named = o->etl_process ? named : 1;
    hs_etl_trace_free(&t);
    hs_symconf conf = hs_options_symconf(o);
    p->srcline_on = o->srcline != 0;
    hs_profile_resolve(p, &conf);
    hs_profile_count_samples(p);
    rc = o->format ? write_one(o, p, o->outdir) : write_profile(o, p, o->outdir[0] ? o->outdir : "hookscope-out", true);
    hs_profile_free(p);
    return rc;
}

int hs_cmd_report(const hs_options *o)
{
    if (o->etl)
        return report_etl(o);
    char *dir = hs_utf8(o->file);
    char *path = hs_path_join(dir, "report.json");
    char err[600];
    hs_profile *p = hs_profile_load(path, err, sizeof err);
    if (!p) {
        hs_err("%s", err);
        return HS_EXIT_FAILED;
    }
    int rc = check_timeline(p) < 0                 ? HS_EXIT_FAILED
             : o->format ? write_one(o, p, o->outdir)
                         : write_profile(o, p, o->outdir[0] ? o->outdir : dir,
                                         o->outdir[0] && !same_dir(o->outdir, dir));
    hs_profile_free(p);
    free(path);
    free(dir);
    return rc;
}
