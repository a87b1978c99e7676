/*
 * injector/commands/diff.c - `hookscope diff A B`: two saved runs (their
 * report.json) side by side, function by function (profile/match.h),
 * ordered as --sort says (calls, cpu, total, or self: the best measure): the
 * table on stdout; with -o DIR also DIR/diff.txt and, when both runs have
 * CPU samples (else entry stacks), DIR/diff-flamegraph.svg: B's stacks,
 * each frame red as its share grew from A, blue as it shrank.
 */
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/commands/commands.h"
#include "injector/output/outdir.h"
#include "injector/output/writers.h"
#include "injector/profile/load.h"
#include "injector/profile/match.h"
#include "injector/profile/views.h"

static hs_profile *load_dir(const wchar_t *d, char **name)
{
    *name = hs_utf8(d);
    char *path = hs_path_join(*name, "report.json");
    char err[600];
    hs_profile *p = hs_profile_load(path, err, sizeof err);
    if (!p)
        hs_err("%s", err);
    free(path);
    return p;
}

static int write_to(const char *dir, const char *file, FILE **f, char **path)
{
    *path = hs_path_join(dir, file);
    const char *why = NULL;
    *f = hs_fopen_out(*path, &why);
    if (!*f) {
        hs_err("cannot write %s: %s", *path, why);
        return -1;
    }
    return 0;
}

static int finish(FILE *f, int rc, const char *path)
{
    if (fclose(f) != 0 || rc != 0) {
        hs_err("cannot write %s", path);
        return -1;
    }
    return 0;
}

int hs_cmd_diff(const hs_options *o)
{
    char *na, *nb;
    hs_profile *a = load_dir(o->file, &na), *b = a ? load_dir(o->file2, &nb) : NULL;
    if (!a || !b) {
        hs_profile_free(a);
        return HS_EXIT_FAILED;
    }
    hs_diff d;
    int by = o->sort == HS_SORT_CALLS ? HS_DIFF_BY_CALLS
             : o->sort == HS_SORT_CPU   ? HS_DIFF_BY_SAMPLES
             : o->sort == HS_SORT_TOTAL ? HS_DIFF_BY_TOTAL
                                        : HS_DIFF_BY_BEST;
    hs_diff_build(a, b, by, &d);
    if (d.other_program)
        hs_err("warning: %s and %s are runs of two programs (%zu of %zu functions in both): functions are "
               "matched by name alone", na, nb, d.both, d.n);
    int rc = 0;
    _setmode(_fileno(stdout), _O_BINARY);
    if (hs_write_diff(a, na, b, nb, &d, o->top, stdout) < 0 || fflush(stdout) != 0)
        rc = HS_EXIT_FAILED;
    if (!rc && o->outdir[0]) {
        FILE *f;
        char *path = NULL;
        if (hs_outdir_open(o->outdir) < 0) {
            rc = HS_EXIT_FAILED;
        } else if (write_to(o->outdir, "diff.txt", &f, &path) < 0 ||
                   finish(f, hs_write_diff(a, na, b, nb, &d, o->top, f), path) < 0) {
            rc = HS_EXIT_FAILED;
        }
        free(path);
        path = NULL;
        int ka = hs_flame_kind(a), kb = hs_flame_kind(b);
        int kind = ka == HS_STACK_CPU && kb == HS_STACK_CPU ? HS_STACK_CPU
                   : hs_stacks_total(a, HS_STACK_ENTRY) && hs_stacks_total(b, HS_STACK_ENTRY) ? HS_STACK_ENTRY
                                                                                            : -1;
        if (!rc && kind < 0) {
            if (!o->quiet)
                hs_err("no differential flame graph: the runs do not both have CPU samples or entry stacks");
        } else if (!rc && (write_to(o->outdir, "diff-flamegraph.svg", &f, &path) < 0 ||
                           finish(f, hs_write_flamegraph_diff(a, b, kind, f), path) < 0)) {
            rc = HS_EXIT_FAILED;
        }
        free(path);
    }
    hs_diff_free(&d);
    hs_profile_free(a);
    hs_profile_free(b);
    free(na);
    free(nb);
    return rc;
}
