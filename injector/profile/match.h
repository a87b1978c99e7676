/*
 * injector/profile/match.h - two profiles side by side, function by
 * function ("match, then link", as perf diff does): functions are matched
 * by module name (case-insensitive; the two programs' exes match each
 * other whatever their names) and function name, and functions of one
 * name in a module (told apart by rva) in rva order: the first with the
 * first, the second with the second; each pair, or function found in
 * only one of them, is a row with its calls, self CPU samples and self
 * time in both. Rows are ordered by the largest change of one measure,
 * by default the best both profiles have: self time when both ran with
 * --time (measured, exact), else self CPU samples when both were sampled
 * (an estimate), else calls.
 */
#ifndef HOOKSCOPE_DIFF_H
#define HOOKSCOPE_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "injector/profile/profile.h"

/* The measures (hs_diff.by); BEST and TOTAL are requests: the best measure
 * both have, and inclusive time when both ran with --time, else inclusive
 * CPU samples. */
enum {
    HS_DIFF_BY_SAMPLES = 0, HS_DIFF_BY_TIME, HS_DIFF_BY_CALLS, HS_DIFF_BY_TOTAL_TIME, HS_DIFF_BY_TOTAL_SAMPLES,
    HS_DIFF_BY_BEST = -1, HS_DIFF_BY_TOTAL = -2
};

typedef struct hs_diff_side {
    int32_t func;                /* index in that profile, -1: not there */
    uint64_t calls, cpu_self;    /* calls (hooks), self CPU samples */
    uint64_t cpu_total;          /* CPU samples with it on the stack */
    uint64_t self_ns, total_ns;  /* self and inclusive time (--time) */
    bool timed;                  /* self_ns and total_ns are known */
} hs_diff_side;

typedef struct hs_diff_row {
    hs_diff_side a, b;
    const char *module, *name;   /* from whichever profile has it (b first); name: its label
                                    (hs_func_label) */
} hs_diff_row;

typedef struct hs_diff {
    const hs_profile *a, *b;
    hs_diff_row *rows;
    size_t n;
    int by;                      /* HS_DIFF_BY_*: the measure, a sort key of profile/views.h
                                    (cpu, self with --time, calls) */
    bool samples, time;          /* both profiles have samples / durations */
    bool other_program;          /* the targets' file names differ and fewer than half of
                                    the rows are functions of both: two programs, not two
                                    runs of one */
    size_t both;                 /* rows with a function in both profiles */
} hs_diff;

/* Match a's and b's functions (those with calls, samples or durations)
 * and order the rows by the change of `by` (HS_DIFF_BY_*; BEST: the best
 * measure both have; TOTAL: inclusive time, else inclusive samples; one
 * they do not both have falls back to BEST).
 * The rows point into a and b: keep them alive. */
void hs_diff_build(const hs_profile *a, const hs_profile *b, int by, hs_diff *d);
void hs_diff_free(hs_diff *d);

/* The change of the ordering measure of a row (b - a), by the sort key's
 * values in both profiles (profile/views.h). */
double hs_diff_change(const hs_diff *d, const hs_diff_row *r);

/* b's function that is each of a's (or -1), as the differential flame
 * graph pairs frames: the same module name and function name, and of
 * several functions of one name in a module, the same place in rva
 * order. malloc'd, one per function of a. */
int32_t *hs_match_funcs(const hs_profile *a, const hs_profile *b);

#endif
