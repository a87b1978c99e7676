/*
 * injector/output/dtrace_agg.h - a profile printed as DTrace prints an
 * aggregation at exit (libdtrace's dt_consume.c): what `hookscope dtrace`
 * writes for the programs it understands, for tools that read DTrace's
 * output (inferno's and FlameGraph's collapse-dtrace, cargo-flamegraph).
 */
#ifndef HOOKSCOPE_DTRACE_OUT_H
#define HOOKSCOPE_DTRACE_OUT_H

#include <stdint.h>
#include <stdio.h>

#include "injector/profile/profile.h"

typedef enum hs_dtrace_key {
    HS_DKEY_STACK = 0,           /* @[ustack()] = count() */
    HS_DKEY_FUNC,                /* @[probefunc] = count() */
    HS_DKEY_FUNC_STACK,          /* @[probefunc, ustack()] = count() */
} hs_dtrace_key;

typedef struct hs_dtrace_agg {
    int key;                     /* hs_dtrace_key */
    int kind;                    /* HS_STACK_CPU (profile-N) or HS_STACK_ENTRY (entry probes) */
    uint32_t frames;             /* ustack(N), ustackframes: at most N frames, leaf first; 0: all */
} hs_dtrace_agg;

/* Print the aggregation: a blank line, then one entry per key, ascending
 * by count (ties by the key's text):
 *
 *   stacks    "\n", one line per frame: 14 spaces and module`function+0xoff
 *             (module`function at offset 0, module`0xaddr in no known
 *             function, 0xaddr in no module; a function whose name another
 *             of its module has as function@0xrva), then " %16llu\n";
 *   probefunc "  %-50s", then " %16llu\n" (or, with a stack, "\n" and the
 *             stack as above).
 *
 * Entry probes count the hooked calls (HS_DKEY_FUNC: every hooked
 * function with calls, summed by name as probefunc names them) or the
 * entry stacks' captures. Returns 0, or -1 on an output error. */
int hs_write_dtrace_agg(const hs_profile *p, const hs_dtrace_agg *a, FILE *out);

/* The same over several profiles (dtrace -p A -p B): one aggregation, the
 * records of equal keys added up. */
int hs_write_dtrace_aggs(const hs_profile *const *ps, size_t n, const hs_dtrace_agg *a, FILE *out);

#endif
