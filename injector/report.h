/*
 * injector/report.h - the report writers: report.txt for people,
 * report.json (schema version 1; fields are added, never renamed or
 * removed) for programs.
 */
#ifndef HOOKSCOPE_REPORT_H
#define HOOKSCOPE_REPORT_H

#include <stdio.h>

#include "results.h"

int hs_write_report_txt(const hs_results *r, FILE *out);
int hs_write_report_json(const hs_results *r, FILE *out);

/* Write both into directory `dir` (created if needed). Returns 0, or -1
 * after printing an error. */
int hs_write_reports(const hs_results *r, const char *dir);

/* Indices of r->funcs sorted by calls (descending), then name; only
 * functions with calls > 0. Caller frees. */
size_t *hs_sorted_by_calls(const hs_results *r, size_t *n);

/* One-line description of how the trace ended, e.g. "exited with code 0". */
void hs_describe_stop(const hs_results *r, char *buf, size_t len);

#endif
