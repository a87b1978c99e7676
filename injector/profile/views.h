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
 *   CPU time     what samples stand for, per call, and how far to trust
 *                it (few samples; bounded by the measured wall time)
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
static inline hs_loc hs_frame_key(hs_loc l)
{
    if (l.func >= 0) {
        l.module = -1;
        l.off = 0;
    }
    return l;
}

static inline bool hs_loc_same(hs_loc a, hs_loc b)
{
    return a.func == b.func && a.module == b.module && a.off == b.off;
}

/* The sum of the counts of p's stacks of a kind (with frames). */
uint64_t hs_stacks_total(const hs_profile *p, int kind);

/* Per function, the samples of a kind whose leaf frame is in it (the
 * hooked function hookscope's own samples served, for HS_STACK_HOOKSCOPE);
 * malloc'd, p->nfuncs of them. */
uint64_t *hs_leaf_counts(const hs_profile *p, int kind);

/* Per module, the samples of a kind with a frame in it, each stack
 * counted once however many of its frames are there; malloc'd,
 * p->nmodules of them. */
uint64_t *hs_module_totals(const hs_profile *p, int kind);

/* The leaf places in no named function of the samples of a kind, merged
 * by place (module and offset, or address), most samples first (then by
 * module and offset): a foreign trace's code without symbols. */
typedef struct hs_place_count {
    hs_loc loc;
    uint64_t count;
} hs_place_count;
hs_place_count *hs_unnamed_leaves(const hs_profile *p, int kind, size_t *n);

/* The stacks a flame graph of p shows: HS_STACK_CPU when p has CPU
 * samples, else HS_STACK_ENTRY when it has entry stacks; -1 if neither. */
int hs_flame_kind(const hs_profile *p);

/* ---- CPU time ----------------------------------------------------------------- */

/* What a CPU estimate rests on. Only running samples stand for CPU time:
 * the program's own (HS_STACK_CPU) and hookscope's in the target
 * (HS_STACK_HOOKSCOPE); ready and wait samples are not CPU and never
 * enter an estimate. The process's CPU time is shared out over the
 * running samples, so hookscope's own work is not charged to the
 * program's functions. */
uint64_t hs_running_samples(const hs_profile *p);

/* The CPU time, in ns, that n running samples stand for: their share of
 * the running samples times the process's CPU time, or n / rate when the
 * CPU time is unknown; -1 when p was not sampled. */
double hs_samples_cpu_ns(const hs_profile *p, uint64_t n);

/* An estimate from fewer samples than this says so: its relative error
 * (about 1/sqrt(n) for n samples) is then above 22%. */
#define HS_FEW_SAMPLES 20

/* A CPU time estimated from samples, and per call. */
typedef struct hs_cpu_estimate {
    double ns;                   /* -1: unknown */
    double per_call_ns;          /* ns / calls; -1: unknown or no calls */
    uint64_t samples;            /* the samples it rests on */
    bool few;                    /* samples < HS_FEW_SAMPLES */
    bool capped;                 /* it exceeded the measured wall time of the same calls and is
                                    that time instead: CPU time never exceeds wall time, so the
                                    measurement bounds the estimate */
} hs_cpu_estimate;

/* The estimate for n CPU samples of code entered `calls` times, whose
 * calls took wall_ns in all (measured with --time; -1: not measured). */
hs_cpu_estimate hs_cpu_estimate_of(const hs_profile *p, uint64_t n, uint64_t calls, double wall_ns);

/* The measured wall time of all of a function's calls (its inclusive
 * time, --time), comparable to its CPU estimate, or -1: not timed, or
 * some of its calls were not timed to their end (still running, not seen
 * to end). */
double hs_func_wall_ns(const hs_profile *p, uint32_t func);

/* A function's CPU estimate: its inclusive (total) CPU samples, its
 * calls, bounded by hs_func_wall_ns. */
hs_cpu_estimate hs_func_cpu_estimate(const hs_profile *p, uint32_t func);

/* Its CPU time per call, in ns; -1 when unknown (no samples, no calls). */
double hs_cpu_per_call_ns(const hs_profile *p, uint32_t func);

/* ---- untimed callees ------------------------------------------------------------ */

/* With --time, the calls a function made to hooked functions that are not
 * timed (an entry probe only) are part of its self time. The caller edges
 * of such callees, by caller: */
typedef struct hs_untimed_callees {
    uint32_t *edge;              /* indices into p->edges, by caller function, then by edge */
    size_t n;
} hs_untimed_callees;

/* Collect them (none without --time or edges); free with hs_untimed_free. */
void hs_untimed_collect(const hs_profile *p, hs_untimed_callees *u);
/* The callees of `caller` that are not timed: *first is the first of their
 * edges in u->edge; returns how many follow. */
size_t hs_untimed_of(const hs_profile *p, const hs_untimed_callees *u, uint32_t caller, size_t *first);
void hs_untimed_free(hs_untimed_callees *u);

#endif
