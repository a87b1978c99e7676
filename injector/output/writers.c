/*
 * injector/output/writers.c - the table of writers and writing them into
 * an output directory (see writers.h).
 */
#include "injector/output/writers.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"

static bool has_entry_stacks(const hs_profile *p) { return p->stack_depth > 0; }
static bool has_timed_stacks(const hs_profile *p) { return p->stack_depth > 0 && p->time_on; }

static const hs_writer txt = { "txt", "report.txt", "the report for people", NULL, hs_write_txt };
static const hs_writer json = { "json", "report.json", "everything, for programs (and `hookscope report`)",
                                NULL, hs_write_json };
static const hs_writer folded = { "folded", "entry-stacks.folded",
                                  "entry stacks in the folded format of flame graph tools",
                                  has_entry_stacks, hs_write_folded };

static const hs_writer folded_time = { "folded-time", "entry-time.folded",
                                       "entry stacks weighted by the time of the hooked functions (ns)",
                                       has_timed_stacks, hs_write_folded_time };

static bool has_samples(const hs_profile *p) { return p->sampling.on; }

static const hs_writer folded_cpu = { "folded-cpu", "cpu-stacks.folded",
                                      "CPU samples' stacks in the folded format, weighted by samples",
                                      has_samples, hs_write_folded_cpu };
static const hs_writer folded_wait = { "folded-wait", "wait-stacks.folded",
                                       "wait samples' stacks (where threads waited), weighted by samples",
                                       has_samples, hs_write_folded_wait };
static const hs_writer folded_ready = { "folded-ready", "ready-stacks.folded",
                                        "ready samples' stacks (runnable, not running), weighted by samples",
                                        has_samples, hs_write_folded_ready };
static const hs_writer folded_hookscope = { "folded-hookscope", "hookscope-stacks.folded",
                                            "samples in hookscope's own code, by the hooked function it served",
                                            has_samples, hs_write_folded_hookscope };

static const hs_writer svg = { "svg", "flamegraph.svg",
                               "an interactive flame graph (CPU samples, else entry stacks)",
                               hs_flamegraph_wanted, hs_write_flamegraph };
static const hs_writer speedscope = { "speedscope", "profile.speedscope.json",
                                      "the stacks for speedscope (per thread; entry stacks by calls)",
                                      hs_speedscope_wanted, hs_write_speedscope };
static const hs_writer callgrind = { "callgrind", "callgrind.out",
                                     "for KCachegrind: CPU samples as cost, the hooks' call counts",
                                     hs_callgrind_wanted, hs_write_callgrind };
static const hs_writer pprof = { "pprof", "profile.pb.gz",
                                 "for pprof and profile stores: CPU and wait samples, exact calls, --time's self time",
                                 hs_pprof_wanted, hs_write_pprof };
static bool has_timeline(const hs_profile *p) { return p->timeline != NULL; }

static const hs_writer trace_json = { "trace", "trace.json",
                                      "the timeline's calls (--timeline) for Perfetto, chrome://tracing, speedscope",
                                      has_timeline, hs_write_trace_json };
static const hs_writer firefox = { "firefox", "profile.firefox.json",
                                   "for the Firefox Profiler: samples in time with thread states, the timeline's calls",
                                   hs_firefox_wanted, hs_write_firefox };
static const hs_writer dtrace = { "dtrace", NULL,
                                  "@[ustack()] = count() as DTrace prints it (CPU samples, else entry stacks)",
                                  hs_flamegraph_wanted, hs_write_dtrace };

const hs_writer *const hs_writers[] = { &txt, &json, &folded, &folded_time, &folded_cpu, &folded_wait,
                                        &folded_ready, &folded_hookscope, &svg, &speedscope, &callgrind,
                                        &pprof, &trace_json, &firefox, &dtrace, NULL };

const hs_writer *hs_writer_find(const char *format)
{
    for (int i = 0; hs_writers[i]; i++)
        if (!strcmp(hs_writers[i]->format, format))
            return hs_writers[i];
    return NULL;
}

int hs_write_file(const hs_writer *w, const hs_profile *p, const char *dir, const char *name)
{
    char *path = hs_path_join(dir, name);
    const char *why = NULL;
    FILE *f = hs_fopen_out(path, &why);
    int rc = -1;
    if (!f) {
        hs_err("cannot write %s: %s", path, why);
    } else {
        /* writers put out many small pieces; a large buffer saves most of
         * the write calls (report.json of a big profile is tens of MB) */
        setvbuf(f, NULL, _IOFBF, 1 << 20);
        rc = w->write(p, f);
        if (fclose(f) != 0 || rc != 0) {
            hs_err("cannot write %s", path);
            rc = -1;
        }
    }
    free(path);
    return rc;
}

int hs_write_all(const hs_profile *p, const char *dir)
{
    for (int i = 0; hs_writers[i]; i++) {
        const hs_writer *w = hs_writers[i];
        if (!w->file)
            continue;   /* written only on request (report --format) */
        if (!w->wanted || w->wanted(p)) {
            if (hs_write_file(w, p, dir, w->file) < 0)
                return -1;
            continue;
        }
        /* a file of an earlier run into the same directory */
        char *path = hs_path_join(dir, w->file);
        const char *why = NULL;
        int rc = hs_remove_file(path, &why);
        if (rc < 0)
            hs_err("cannot remove %s of an earlier run: %s", path, why);
        free(path);
        if (rc < 0)
            return -1;
    }
    return 0;
}
