/*
 * injector/report.h - the report writers: report.txt for people,
 * report.json (schema version 1; fields are added, never renamed or
 * removed) for programs.
 */
#ifndef HOOKSCOPE_REPORT_H
#define HOOKSCOPE_REPORT_H

#include <stdio.h>

#include "addrsym.h"
#include "results.h"

int hs_write_report_txt(const hs_results *r, FILE *out);
int hs_write_report_json(const hs_results *r, FILE *out);
/* entry-stacks.folded (only with --stacks): Brendan Gregg's folded format */
int hs_write_report_folded(const hs_results *r, FILE *out);

/* Create the output directory (and its parents); 0 or -1. */
int hs_make_output_dir(const char *dir);

/* Write both into directory `dir` (created if needed). Returns 0, or -1
 * after printing an error. */
int hs_write_reports(const hs_results *r, const char *dir);

/* Indices of r->funcs sorted by calls (descending), then name; only
 * functions with calls > 0. Caller frees. */
size_t *hs_sorted_by_calls(const hs_results *r, size_t *n);

/* Caller edges by caller *function*: the call sites of one caller merged.
 * Sorted by callee, then caller module, then caller name. */
typedef struct hs_named_edge {
    char caller[512];          /* function name, or module+0xrva, or 0xaddr */
    int caller_module;         /* index into r->mods, -1 if in no known module */
    int64_t caller_func;       /* index into r->funcs when the caller is a traced function, else -1 */
    uint32_t callee;           /* index into r->funcs */
    uint64_t calls;
} hs_named_edge;

size_t hs_named_edges(const hs_results *r, hs_addrsym *as, hs_named_edge **out);

/* Name frame d of an entry stack into buf: frame 0 as "module!func+0x0",
 * a caller frame by its call site with the return address's offset
 * ("module!func+0xoff"), or without offsets ("module!func") when
 * !with_offset. Returns 0 for a frame of hookscope's own agent (the timing
 * wrapper, which reports fold into the hooked function), else 1. */
int hs_stack_frame_name(const hs_results *r, hs_addrsym *as, const hs_res_stack *st, uint32_t d,
                        int with_offset, char *buf, size_t len);

/* The --stacks sampling policy in words ("every call", "every 10th call of
 * each function on each thread"). */
void hs_stack_policy(const hs_results *r, char *buf, size_t len);

/* ticks -> ns with the session's rdtsc rate (0 if unknown) */
double hs_ticks_ns(const hs_results *r, uint64_t ticks);

/* One-line description of how the trace ended, e.g. "exited with code 0". */
void hs_describe_stop(const hs_results *r, char *buf, size_t len);

#endif
