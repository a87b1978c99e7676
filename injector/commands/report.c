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
 */
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "commands/commands.h"
#include "output/outdir.h"
#include "output/writers.h"
#include "profile/load.h"

static int write_one(const hs_options *o, const hs_profile *p, const char *out)
{
    const hs_writer *w = hs_writer_find(o->format);
    if (w->wanted && !w->wanted(p)) {
        hs_err("this run has nothing for --format %s (%s)", w->format,
               !strcmp(w->format, "folded") ? "it has no entry stacks: run with --stacks"
               : !strcmp(w->format, "callgrind") ? "no CPU samples and no caller edges"
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
    hs_txt_view view = { sort, o->top, o->threads != 0 };
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
    if (hs_make_output_dir(out) < 0) {
        hs_err("cannot create output directory %s", out);
        return HS_EXIT_FAILED;
    }
    char *name = w->file ? hs_xstrdup(w->file) : hs_xasprintf("%s.txt", w->format);
    int rc;
    if (shaped) {
        char *path = hs_xasprintf("%s\\%s", out, name);
        FILE *f = hs_fopen(path, "wb");
        rc = f && hs_write_txt_view(p, &view, f) == 0 ? 0 : -1;
        if (f && fclose(f) != 0)
            rc = -1;
        if (rc)
            hs_err("cannot write %s", path);
        free(path);
    } else {
        rc = hs_write_file(w, p, out, name);
    }
    free(name);
    return rc < 0 ? HS_EXIT_FAILED : 0;
}

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
    int rc;
    if (o->format) {
        rc = write_one(o, p, o->outdir);
    } else {
        const char *out = o->outdir[0] ? o->outdir : dir;
        if (hs_make_output_dir(out) < 0) {
            hs_err("cannot create output directory %s", out);
            rc = HS_EXIT_FAILED;
        } else {
            rc = hs_write_all(p, out) < 0 ? HS_EXIT_FAILED : 0;
            if (!rc && !o->quiet)
                hs_err("%llu calls of %zu functions; reports in %s", (unsigned long long)p->total_calls,
                       p->nfuncs, out);
        }
    }
    hs_profile_free(p);
    free(path);
    free(dir);
    return rc;
}
