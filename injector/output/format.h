/*
 * injector/output/format.h - what the writers share: JSON strings,
 * durations with units, DTrace's quantize() histogram, how a run ended
 * in words, the --stacks policy in words, a sort key's value, a CPU
 * estimate with what it rests on.
 */
#ifndef HOOKSCOPE_FORMAT_H
#define HOOKSCOPE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "injector/profile/profile.h"
#include "injector/profile/views.h"

/* A JSON string literal of s (NULL as ""). */
void hs_json_quote(FILE *out, const char *s);
/* The inside of that literal (without its quotes) into buf (cap bytes,
 * terminated; an escape that does not fit whole is left out, and what
 * follows it); returns its length. */
size_t hs_json_quoted(const char *s, char *buf, size_t cap);

/* Which calls a cut of the timeline to its longest keeps, as text: "the
 * calls of 917.31 ns or more[, and of the calls from 916.92 ns, those
 * that began before 12.345 ms]". */
const char *hs_fmt_longest_kept(const hs_prof_timeline *t, const hs_tl_longest *l, char *buf, size_t len);

/* A duration with a unit that keeps 3-4 significant digits ("12.56 us"). */
const char *hs_fmt_duration(double ns, char *buf, size_t len);

/* A duration estimated from samples, to 3 significant digits ("1.23 ms",
 * "45.6 us", "789 ns", "0.379 ns"): samples do not know more. */
const char *hs_fmt_duration3(double ns, char *buf, size_t len);

/* One of a CPU estimate's times (e->ns or e->per_call_ns, profile/views.h)
 * as report.txt and the flame graph show it: "<=" before a time capped at
 * the measured wall time, else "~" before one from fewer than
 * HS_FEW_SAMPLES samples; "-" when unknown. */
const char *hs_fmt_estimate(const hs_cpu_estimate *e, double ns, char *buf, size_t len);

/* DTrace's quantize() layout of a power-of-two histogram of ns: one row per
 * bucket from the one below the first non-empty to the one above the
 * last, a 40-column bar of '@' in proportion to the count. */
void hs_fmt_quantize(FILE *out, const uint64_t *hist, int nbuckets);

/* How the trace ended, one line ("exited with code 0 (0x0)"). */
void hs_fmt_stop(const hs_profile *p, char *buf, size_t len);
/* What report.txt says of the target's rights (profile.h, target_rights). */
const char *hs_fmt_rights(const char *rights);

/* The --stacks capture policy ("every call", "every 10th call of each
 * function on each thread"). */
void hs_fmt_stack_policy(const hs_profile *p, char *buf, size_t len);

/* A function's value of a sort key (profile/views.h) as report.txt shows
 * it: a duration, a count, or "-" if none. */
void hs_fmt_sort_key(const hs_profile *p, uint32_t func, int key, char *buf, size_t len);

#endif
