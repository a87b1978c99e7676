/*
 * injector/trace/trace.h - what `run` and `attach` share: the session, the
 * clock, Ctrl+C, and the end of a trace (collect into a profile, name it,
 * write every output, check what was asked for).
 */
#ifndef HOOKSCOPE_TRACE_H
#define HOOKSCOPE_TRACE_H

#include <stdint.h>

#include "injector/profile/profile.h"
#include "injector/trace/config.h"
#include "injector/trace/fnservice.h"
#include "injector/trace/owncode.h"
#include "injector/trace/session_host.h"
#include "injector/trace/timeline_drain.h"
#include "sampler/sampler.h"

typedef struct hs_trace {
    hs_session_host session; /* no view with --no-hooks */
    hs_fnservice *fn;    /* answers the agent's requests for function lists */
    hs_profile *p;
    double t_start;      /* when the target started (run) or was hooked (attach) */
    double t0;           /* clock and tsc at begin, to measure the tsc rate */
    uint64_t tsc0;
    /* the CPU sampler */
    const char *sampler_name;            /* asked for: a backend or "auto"; NULL: no sampling */
    const hs_sampler_backend *backend;   /* the one that runs */
    hs_sampler *sampler;                 /* while it runs */
    hs_sampleset *samples;
    hs_owncode_src own;
    hs_sampler_stats stats;
    double rate_hz;                      /* --sample-rate, 0: the backend's default */
    const char *outdir;
    bool keep_etl;                       /* --keep-etl */
    char *etl_path;                      /* the etw backend's file: outdir\HS_ETL_FILE */
    void *process;                       /* the target, for its CPU time (NULL: not known) */
    hs_tl_drain *drain;                  /* --timeline: the rings into the timeline's file */
    bool timeline;                       /* --timeline: the samples keep their times too */
    hs_symconf symbols;                  /* where the sampler looks for 32-bit images' PDBs */
} hs_trace;

/* --timeline: the samples whose times are kept at most (32 MiB). */
#define HS_TL_MAX_SAMPLES (1u << 21)

/* The file the etw backend records into, in the output directory (removed
 * once decoded unless --keep-etl). */
#define HS_ETL_FILE "hookscope.etl"

/* Begin a trace; with sampling on, find the backend first. Returns 0, or
 * -1 after printing why the sampler cannot be used. */
int hs_trace_begin(hs_trace *t, const hs_trace_config *o);
/* Before the target is started: make the function service, and when
 * only the exe is to be hooked (no -m) start making its function list
 * (hs_fnservice_prefetch), which sizes a 32-bit target's session. Returns
 * 0, or -1 after printing why. */
int hs_trace_list_exe(hs_trace *t, const hs_trace_config *o, const wchar_t *exe);
/* Create the session for process pid and start the function service (the
 * agent asks it as soon as it is injected), and with --timeline the drain
 * of the timelines into the output directory (which is open). Returns 0, or -1 after
 * printing why. */
int hs_trace_session(hs_trace *t, uint32_t pid, const hs_trace_config *o, uint32_t options);
/* A trace that ends before it ran: stop the service, drop the session. */
void hs_trace_abandon(hs_trace *t);
/* Ctrl+C presses since hs_trace_begin. */
int hs_trace_interrupts(void);
/* Right after hooking: if every -m module is loaded already, a function
 * filter that matched nothing never will. Prints why and returns -1 then. */
int hs_trace_check_filters(hs_trace *t, const hs_trace_config *o);

/* Start sampling process `pid` (after the hooks are in, before the
 * target runs on). Returns 0, or -1 after printing why. */
int hs_trace_sample_start(hs_trace *t, uint32_t pid);
/* Stop sampling (again: nothing). */
void hs_trace_sample_stop(hs_trace *t);

/* The calls counted so far, read from the live session while the target
 * runs (for the progress line; from_session.h). 0 without hooks.
 * *probe_ratio (unless NULL): hs_trace_probe_ratio now. */
uint64_t hs_trace_live_calls(const hs_trace *t, double *probe_ratio);
/* What hookscope's probes cost against the program's own time: the ticks
 * the target's threads spent capturing entry stacks (stack_ticks at the
 * TSC's rate tsc_hz; the other slow paths, a new thread's region, a new
 * edge, can wait on a lock or a freeze and are not the probes' CPU),
 * against the target's time less them: its CPU time, or its wall time `elapsed` when
 * that is more (one thread; a CPU clock that cannot be read). 0 while the
 * probes have cost under 50 ms. The per-call fast path (a count, an edge,
 * two rdtsc with --time) is not in the probes' time: it is in the
 * program's. */
double hs_trace_probe_ratio(const hs_trace *t, uint64_t stack_ticks, double tsc_hz, double elapsed);
/* Above this ratio the progress line and the report say so. */
#define HS_PROBE_RATIO_WARN 10.0
/* The samples taken so far (for the progress line). */
uint64_t hs_trace_live_samples(const hs_trace *t);
/* The sampling rate in force now (0: not sampling). */
double hs_trace_live_rate(const hs_trace *t);

/* Stop sampling; collect, name and write the reports; check that every
 * -m module was seen. A session the target corrupted gives the report of
 * what could be trusted, and one line "session corrupted by the target:
 * ..." (on stderr and in the report). Returns 0, or HS_EXIT_FAILED after
 * printing why. */
int hs_trace_finish(hs_trace *t, const hs_trace_config *o);

#endif
