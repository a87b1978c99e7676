/*
 * injector/output/stackset.h - what the stack-based writers (flame graph,
 * speedscope, callgrind, DTrace) share: a stack frame as a function (the
 * offset dropped), a table of unique frames, which stacks a flame graph
 * shows, and the CPU time a function's samples stand for.
 */
#ifndef HOOKSCOPE_STACKSET_H
#define HOOKSCOPE_STACKSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/base/map.h"
#include "injector/profile/profile.h"

/* A frame as a function: {func, -1, 0} when the function is known; frames
 * in no known function keep their module and offset (or address), so each
 * such place is a frame of its own. */
hs_loc hs_frame_key(hs_loc l);
bool hs_loc_same(hs_loc a, hs_loc b);

/* A table of unique frame keys, in the order they were first added. */
typedef struct hs_frametab {
    hs_loc *v;
    size_t n, cap;
    hs_map map;
} hs_frametab;

/* The index of the key (added if new). */
uint32_t hs_frametab_add(hs_frametab *t, hs_loc key);
/* The index of the key, or -1. */
int64_t hs_frametab_find(const hs_frametab *t, hs_loc key);
void hs_frametab_free(hs_frametab *t);

/* A table of unique strings, in the order they were first added. */
typedef struct hs_strtab {
    char **v;
    size_t n, cap;
    hs_map map;
} hs_strtab;

uint32_t hs_strtab_add(hs_strtab *t, const char *s);
int64_t hs_strtab_find(const hs_strtab *t, const char *s);
void hs_strtab_free(hs_strtab *t);

/* The stacks a flame graph of p shows: HS_STACK_CPU when p has CPU
 * samples, else HS_STACK_ENTRY when it has entry stacks; -1 if neither. */
int hs_flame_kind(const hs_profile *p);

/* The sum of the counts of p's stacks of a kind. */
uint64_t hs_stacks_total(const hs_profile *p, int kind);

/* "samples" for sampled stacks, "captures" for entry stacks. */
const char *hs_stack_unit(int kind);

/* The CPU time, in ns, that n CPU samples stand for: their share of the
 * run's samples times the process's CPU time, or n / rate when the CPU
 * time is unknown; -1 when p was not sampled. */
double hs_samples_cpu_ns(const hs_profile *p, uint64_t n);

/* The CPU time per call of a function (its inclusive samples' CPU time
 * divided by its calls), in ns; -1 when unknown (no samples, no calls). */
double hs_cpu_per_call_ns(const hs_profile *p, uint32_t func);

#endif
