/*
 * injector/trace/config.h - what a trace is asked to do: filled by the
 * commands from their command line (commands/options.c) and read by every
 * part of trace/, which knows nothing of the command line itself.
 */
#ifndef HOOKSCOPE_TRACE_CONFIG_H
#define HOOKSCOPE_TRACE_CONFIG_H

#include <stdint.h>
#include <wchar.h>

#include "injector/symbols/modsyms.h"

#define HS_MAX_FILTERS 32

typedef struct hs_trace_config {
    const char *command;        /* "run", "attach": what report.json says ran */
    wchar_t **modules;          /* -m patterns */
    int nmodules;
    const wchar_t *filters[HS_MAX_FILTERS];   /* -f include / -x exclude patterns */
    int filter_exclude[HS_MAX_FILTERS];
    int nfilters;
    const char *outdir;         /* UTF-8 */
    double duration;            /* seconds, 0: none */
    int quiet;
    uint32_t max_functions, max_threads;
    int target_bits;            /* 32: an i386 (WOW64) target, whose session must fit its address space */
    int edges;                  /* caller edges */
    uint32_t stacks;            /* entry stack depth, 0: off */
    uint32_t stack_every;       /* capture every Nth call per function */
    int time;                   /* return probes with durations */
    int timeline;               /* every timed call as an event, drained into a file */
    uint64_t timeline_max;      /* bytes the timeline's file may take */
    uint32_t timeline_buffer;   /* events per thread's ring (a power of two) */
    uint64_t timeline_min_ns;   /* shorter calls leave no event (0: every call) */
    uint32_t timeline_depth;    /* only the N outermost timed levels leave events (0: all) */
    uint64_t timeline_wait_ns;  /* how long a thread waits for room in its full ring (0: never) */
    int sample;                 /* CPU sampling on */
    const char *sampler;        /* backend name; NULL: auto */
    int keep_etl;               /* keep the etw backend's trace */
    uint32_t sample_rate_hz;    /* 0: the sampler's default (sampler.h, HS_RATE_*) */
    hs_symconf symbols;         /* where PDBs are looked for */
    int srcline;                /* source lines of functions and frames */
} hs_trace_config;

#endif
