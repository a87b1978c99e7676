/*
 * injector/commands/options.h - the command line: one table of options,
 * each row saying which commands take it (so help and validation come
 * from the same row), and the parsed options every command reads.
 */
#ifndef HOOKSCOPE_OPTIONS_H
#define HOOKSCOPE_OPTIONS_H

#include <stdint.h>
#include <wchar.h>

#include "injector/trace/config.h"

struct hs_command;

typedef struct hs_options {
    const struct hs_command *cmd;
    wchar_t **modules;          /* -m */
    int nmodules;
    char *outdir;               /* -o, UTF-8 */
    double duration;            /* --duration seconds, 0 = none */
    int quiet;
    uint32_t max_functions, max_threads;
    int edges;                  /* caller edges (default on; --no-edges) */
    uint32_t stacks;            /* --stacks[=DEPTH]: entry stack depth, 0 = off */
    uint32_t stack_every;       /* --stack-every N: capture every Nth call per function */
    int time;                   /* --time: return probes with durations */
    int timeline;               /* --timeline: every timed call as an event (implies time) */
    uint64_t timeline_max;      /* --timeline-max SIZE: bytes of the timeline's file */
    uint32_t timeline_buffer;   /* --timeline-buffer N: events per thread's ring */
    uint64_t timeline_min_ns;   /* --timeline-min-duration T, 0: every call */
    uint32_t timeline_depth;    /* --timeline-depth N, 0: every depth */
    uint64_t timeline_wait_ns;  /* --timeline-wait T: a full buffer is waited for (0: never) */
    int no_hooks;               /* --no-hooks: hook and inject nothing, samples only */
    const char *sampler;        /* --sampler NAME: "suspend", "etw", "auto"; NULL: auto */
    int keep_etl;               /* --keep-etl: keep the etw backend's trace */
    int elevated_target;        /* run --elevated-target: an elevated hookscope's target stays elevated */
    const wchar_t *filters[HS_MAX_FILTERS]; /* -f include / -x exclude patterns */
    int filter_exclude[HS_MAX_FILTERS];
    int nfilters;
    uint32_t pid;               /* attach */
    wchar_t **target_argv;      /* run: TARGET ARGS... */
    int target_argc;
    const wchar_t *file;        /* functions: FILE; report: DIR; diff: the first run's DIR */
    const wchar_t *file2;       /* diff: the second run's DIR */
    char *format;               /* report --format NAME (a writer's format), NULL: every file */
    int sort;                   /* report --sort: HS_SORT_* (profile/views.h), -1: not given */
    uint32_t top;               /* report/diff --top N, 0: all */
    int threads;                /* report --threads */
    int sample;                 /* CPU sampling on (run, attach) */
    uint32_t sample_rate_hz;    /* samples per second per thread, 0: the sampler's default
                                   (sampler.h, HS_RATE_*) */
    char *symbols;              /* --symbols PATH[;PATH...], UTF-8, or NULL */
    char *etl;                  /* report --etl FILE, UTF-8, or NULL */
    uint32_t etl_pid;           /* report --pid N (0: the Idle process), */
    bool etl_pid_set;           /*   when given */
    char *etl_process;          /* report --process NAME */
    int srcline;                /* --srcline: source lines of functions and frames */
} hs_options;

/* Where to look for PDBs: --symbols and _NT_SYMBOL_PATH. */
hs_symconf hs_options_symconf(const hs_options *o);

/* What run and attach ask of a trace (trace/config.h). */
hs_trace_config hs_options_trace(const hs_options *o);

/* Parse argv. Returns -1 to go on with o->cmd, else the exit code (help or
 * version printed: 0; usage error printed: HS_EXIT_USAGE). */
int hs_parse_cli(int argc, wchar_t **argv, hs_options *o);

#endif
