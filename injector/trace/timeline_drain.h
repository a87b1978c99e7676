/*
 * injector/trace/timeline_drain.h - --timeline while the target runs: a
 * thread of hookscope's beside the session takes every thread's events
 * out of its ring in the session (profile/from_session.h, as untrusted
 * input) every few milliseconds and appends them to the timeline's file
 * in the output directory (profile/timeline.h), so that memory stays
 * bounded however long the run is; the file is bounded by --timeline-max.
 * What does not fit (a ring the thread filled before it was taken, the
 * file full) is counted per thread with its range of times.
 */
#ifndef HOOKSCOPE_TIMELINE_DRAIN_H
#define HOOKSCOPE_TIMELINE_DRAIN_H

#include <stdint.h>

#include "injector/profile/from_session.h"
#include "injector/profile/timeline.h"
#include "injector/trace/session_host.h"

typedef struct hs_tl_drain hs_tl_drain;

/* Create dir\HS_TIMELINE_FILE (an earlier run's is replaced) and start
 * draining the session s into it. The clock's time 0 is now (rdtsc and
 * QueryPerformanceCounter read together). NULL after printing why. */
hs_tl_drain *hs_tl_drain_start(hs_session_host *s, const char *dir, uint64_t max_bytes);

/* Stop the thread, take what the rings still hold (the target ended or
 * the hooks are out: nothing is added any more), close the file. Returns
 * the timeline's description (func_map left empty: the caller knows the
 * functions), problems of the session into *trust. */
hs_prof_timeline *hs_tl_drain_stop(hs_tl_drain *d, hs_session_trust *trust);

#endif
