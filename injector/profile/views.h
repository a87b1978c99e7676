/*
 * injector/profile/views.h - what reports compute from a profile, beside
 * the model (as perf keeps its sort keys beside struct hists,
 * tools/perf/util/sort.c), so that writers only format:
 *
 *   sort keys    one table, a row per key: its name (as --sort takes it),
 *                what a profile needs for it, how to get a function's
 *                value, the unit of that value; the functions in a key's
 *                order (report.txt's tables; `hookscope diff` orders its
 *                rows by the same keys' values, profile/match.h)
 *   stacks       a frame as a function, the stacks a flame graph shows,
 *                how many stacks of a kind there are
 *   CPU time     what samples stand for, and per call
 *
 * Plain C over profile.h; no output here.
 */
#ifndef HOOKSCOPE_VIEWS_H
#define HOOKSCOPE_VIEWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "injector/profile/profile.h"

/* ---- sort keys ---------------------------------------------------------------- */

enum { HS_SORT_CALLS = 0, HS_SORT_SELF, HS_SORT_TOTAL, HS_SORT_CPU, HS_SORT_AVG, HS_SORT__COUNT };

typedef enum hs_key_needs {
    HS_NEEDS_NOTHING = 0,
    HS_NEEDS_SAMPLES,            /* CPU samples */
    HS_NEEDS_TIME_OR_SAMPLES,    /* durations (--time) or CPU samples */
} hs_key_needs;

typedef enum hs_key_unit {
    HS_UNIT_COUNT = 0,           /* calls or samples */
    HS_UNIT_NS,                  /* a duration */
} hs_key_unit;

typedef struct hs_sort_key {
    const char *name;                        /* "calls", "self", ... */
    hs_key_needs needs;
    hs_key_unit unit, unit_timed;            /* of its values: without durations, with them */
    double (*value)(const hs_profile *p, uint32_t func);   /* < 0: none (such functions come last) */
} hs_sort_key;

/* The keys, by HS_SORT_*: calls; self and total (time with --time, else
 * CPU samples); cpu (self CPU samples); avg (time per call with --time,
 * else CPU time per call). */
extern const hs_sort_key hs_sort_keys[HS_SORT__COUNT];

int hs_sort_key_from_name(const char *name);     /* -1 if unknown */
const char *hs_sort_key_name(int key);
/* NULL when p has what the key needs, else what it needs ("CPU samples, and ..."). */
const char *hs_sort_unavailable(const hs_profile *p, int key);
/* The key's values are durations (in ns) in p. */
bool hs_sort_key_is_time(const hs_profile *p, int key);
/* A function's value of the key; < 0: none. */
double hs_sort_key_value(const hs_profile *p, uint32_t func, int key);
/* The functions with calls > 0, by calls (descending), then name, module,
 * rva. malloc'd, *n of them. */
uint32_t *hs_funcs_by_calls(const hs_profile *p, size_t *n);
/* The functions with calls (and, for keys other than calls, with
 * samples), in the key's order (descending, then calls, name); malloc'd. */
uint32_t *hs_funcs_sorted(const hs_profile *p, int key, size_t *n);

/* Durations were recorded for the function (--time, and timed calls). */
bool hs_func_timed(const hs_profile *p, uint32_t func);

/* ---- stacks ------------------------------------------------------------------- */

/* A frame as a function: {func, -1, 0} when the function is known; frames
 * in no known function keep their module and offset (or address), so each
 * such place is a frame of its own. */
hs_loc hs_frame_key(hs_loc l);
bool hs_loc_same(hs_loc a, hs_loc b);

/* The sum of the counts of p's stacks of a kind (with frames). */
uint64_t hs_stacks_total(const hs_profile *p, int kind);

/* The stacks a flame graph of p shows: HS_STACK_CPU when p has CPU
 * samples, else HS_STACK_ENTRY when it has entry stacks; -1 if neither. */
int hs_flame_kind(const hs_profile *p);

/* ---- CPU time ----------------------------------------------------------------- */

/* The CPU time, in ns, that n CPU samples stand for: their share of the
 * run's samples times the process's CPU time, or n / rate when the CPU
 * time is unknown; -1 when p was not sampled. */
double hs_samples_cpu_ns(const hs_profile *p, uint64_t n);

/* The CPU time per call of a function (its inclusive samples' CPU time
 * divided by its calls), in ns; -1 when unknown (no samples, no calls). */
double hs_cpu_per_call_ns(const hs_profile *p, uint32_t func);

#endif
