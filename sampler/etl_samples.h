/*
 * sampler/etl_samples.h - one process of a recorded ETW trace
 * (sampler/etl/etl.h) as a sample set: its CPU samples, and its threads'
 * time off the CPU as ready and wait samples. The one loop that both `run
 * --sampler etw` (sampler/etw/) and `report --etl`
 * (injector/profile/from_etl.c) go through, so that a trace is named the
 * same way by both.
 *
 * Running, ready, waiting (ARCHITECTURE.md, decision 12) from the
 * context switches (CSwitch) and ReadyThread events of the process's
 * threads, in the trace's order:
 *   - a thread switched out in state Waiting (or Transition: its kernel
 *     stack paged out) waits from then until it is made ready: a
 *     ReadyThread naming it, or, where the trace has none, its next
 *     switch-in; from the ReadyThread to its switch-in it is ready;
 *   - a thread switched out in any other state (Ready, Standby, Running,
 *     DeferredReady: preempted) is ready until its next switch-in; one
 *     switched out Terminated has ended;
 *   - a ReadyThread for a thread not seen yet starts a ready stretch; one
 *     for a thread that is running or already ready changes nothing;
 *   - a stretch still open when the trace ends lasts to its last event;
 *   - a thread runs from its switch-in to its switch-out (before its first
 *     switch-in in the trace, it is not known to run: not counted).
 * Each thread's time running, waiting and ready is the sum of its
 * stretches, in seconds rounded to 100 ns (hs_sampleset_thread_states);
 * a thread with samples and no scheduling event has 0 of each.
 * A stretch gives as many samples as the sampling grid has ticks in it:
 * the trace's timer interval (its PerfInfo CollectionStart or SetInterval
 * events; 1 ms, Windows' default, without them) from the trace's first
 * event, in 100 ns units, each stretch [a, b) counting the ticks k *
 * interval with a <= k * interval < b; so a thread's samples of every
 * kind are comparable, about one per interval of its time in that state.
 * The stack of a stretch is the one walked at the context switch that
 * ends it (the kernel walks the stack of the thread switched in, which
 * stands where it stood while it was off the CPU); a stretch without one
 * (none was walked, or the trace ended first) gives samples without a
 * stack, counted but not invented.
 */
#ifndef HOOKSCOPE_SAMPLER_ETL_SAMPLES_H
#define HOOKSCOPE_SAMPLER_ETL_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/codemap.h"
#include "sampler/etl/etl.h"
#include "sampler/sampler.h"

/* A process of the trace with samples, for the table `report --etl` shows
 * without a filter. */
typedef struct hs_etl_proc_row {
    uint32_t index;              /* into t->procs */
    uint32_t pid;
    const char *name;
    uint64_t samples, with_stack;
} hs_etl_proc_row;

/* The processes with samples, by samples (most first), then pid; malloc'd. */
size_t hs_etl_process_table(const hs_etl_trace *t, hs_etl_proc_row **rows);

/* The process instance to profile: by image name (case ignored), or
 * with name NULL by pid (0: the Idle process, whose samples are the
 * processors' idle time); when several instances match, the one with the most
 * samples (*matched, if not NULL: how many matched). Returns 0, or -1
 * with one line in err naming what exists. */
int hs_etl_pick_process(const hs_etl_trace *t, uint32_t pid, const char *name, uint32_t *index, uint32_t *matched,
                        char *err, size_t errlen);

/* What hs_etl_samples made of a process. */
typedef struct hs_etl_sample_stats {
    bool off_cpu_known;          /* the trace has context switches (and a clock): ready and wait
                                    samples were made; else they are unknown */
    bool ready_events;           /* it has ReadyThread events */
    uint32_t interval;           /* the sampling grid's interval (100 ns units) */
    uint64_t by_kind[HS_SAMPLE__KINDS];       /* samples added, by hs_sample_kind */
    uint64_t wait_no_stack, ready_no_stack;   /* of the wait and ready samples, those of stretches
                                                 without a stack */
} hs_etl_sample_stats;

/* Every sample of process `index` of t: its frames leaf first, kernel
 * frames kept, the sampled instruction alone when it has no stack; each
 * frame with its module, the image mapped there at the sample's time
 * (a return address is looked up one byte back, in its call); the images
 * used as the set's modules, with their names, kernel flag and PDB
 * identity (DbgID_RSDS). A frame no image holds, in a JIT-compiled
 * method's code at that time (hs_etl_jit_at), is in a module of the set
 * per assembly ("mscorlib.dll[jit]", no file) whose functions are the
 * methods frames fell in (hs_sampleset_module_func), named
 * "Namespace.Type.Method"; a range reused after an unload puts the later
 * method in another module ("...[jit]#2"). Then the ready and wait samples of its threads
 * (above), and each thread's time waiting and ready
 * (hs_sampleset_thread_states); a trace without context switches makes
 * the set's ready and wait unknown (hs_sampleset_off_cpu_unknown).
 * `own` (NULL: no hooks): hookscope's code and threads in the process,
 * whose samples are left out and whose frames are attributed as the
 * suspend sampler's are (codemap.h: a sample of any kind in hookscope's
 * code is hookscope's). map_path (NULL: none) turns a trace's NT path
 * into a path of this machine (malloc'd, or NULL). stats (NULL: not
 * wanted) gets what was made. Returns the samples added. */
uint64_t hs_etl_samples(const hs_etl_trace *t, uint32_t index, const hs_codemap *own,
                        char *(*map_path)(void *ctx, const char *nt_path), void *map_ctx, hs_sampleset *out,
                        hs_etl_sample_stats *stats);

#endif
