/*
 * injector/commands/progress.h - the progress line of run and attach: on
 * stderr, only when stderr is a console and -q was not given, rewritten
 * in place at most four times a second:
 *
 *   hookscope: 12.3 s, 1,234,567 calls, 0 samples
 *
 * (and, while hookscope's probes cost more than 10x the program's own
 * time, "; probes 14x the program"; the report says more),
 * and erased before anything else is printed at the end.
 */
#ifndef HOOKSCOPE_PROGRESS_H
#define HOOKSCOPE_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "injector/commands/options.h"

typedef struct hs_progress {
    int on;
    double last;                 /* when it was last drawn */
    size_t width;                /* the length of the line on screen */
} hs_progress;

void hs_progress_start(hs_progress *pr, const hs_options *o);
/* Redraw if 0.25 s passed since the last time (now: hs_now()). */
void hs_progress_update(hs_progress *pr, double now, double elapsed, uint64_t calls, uint64_t samples,
                        double rate_hz, double probe_ratio);
void hs_progress_end(hs_progress *pr);

/* The line's text (without "\r"), for tests: "hookscope: 1.5 s, 12,345 calls, 0 samples";
 * with probe_ratio above HS_PROBE_RATIO_WARN (trace.h) it ends
 * "; probes 14x the program" (short: the line must fit 80 columns). */
void hs_progress_text(char *buf, size_t len, double elapsed, uint64_t calls, uint64_t samples, double rate_hz,
                      double probe_ratio);

#endif
