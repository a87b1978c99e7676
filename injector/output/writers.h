/*
 * injector/output/writers.h - every output format is one writer of a
 * profile, listed in one table: its format name, the file a run writes
 * it to, whether a given profile has anything for it, and the function
 * that writes it. Writers only read the profile (profile/profile.h).
 */
#ifndef HOOKSCOPE_WRITERS_H
#define HOOKSCOPE_WRITERS_H

#include <stdbool.h>
#include <stdio.h>

#include "injector/profile/match.h"
#include "injector/profile/profile.h"
#include "injector/profile/views.h"

typedef struct hs_writer {
    const char *format;                      /* "txt", "json", "folded", "svg", ... */
    const char *file;                        /* its file in the output directory; NULL:
                                              * not written by a run, only on request */
    const char *what;                        /* one line, for help texts */
    bool (*wanted)(const hs_profile *p);     /* does p have anything for it? NULL: always */
    int (*write)(const hs_profile *p, FILE *out); /* 0, or -1 on an output error */
} hs_writer;

/* The writers, in the order a run writes them; NULL-terminated. */
extern const hs_writer *const hs_writers[];

/* The writer of a format name, or NULL. */
const hs_writer *hs_writer_find(const char *format);

/* Write one writer's output to the file dir/name (dir exists). Returns
 * 0, or -1 after printing an error. */
int hs_write_file(const hs_writer *w, const hs_profile *p, const char *dir, const char *name);

/* Write every wanted writer's file into dir (which exists), and remove
 * the files of the others (left by an earlier run). Returns 0, or -1
 * after printing an error. */
int hs_write_all(const hs_profile *p, const char *dir);

/* The writers' functions. */
int hs_write_txt(const hs_profile *p, FILE *out);
int hs_write_json(const hs_profile *p, FILE *out);
int hs_write_folded(const hs_profile *p, FILE *out);
int hs_write_folded_time(const hs_profile *p, FILE *out);
int hs_write_flamegraph(const hs_profile *p, FILE *out);   /* output/flamegraph.c */
int hs_write_speedscope(const hs_profile *p, FILE *out);   /* output/speedscope.c */
int hs_write_callgrind(const hs_profile *p, FILE *out);    /* output/callgrind.c */
int hs_write_dtrace(const hs_profile *p, FILE *out);       /* output/dtrace_agg.c */
int hs_write_pprof(const hs_profile *p, FILE *out);        /* output/pprof.c */
int hs_write_trace_json(const hs_profile *p, FILE *out);   /* output/trace_json.c */
int hs_write_firefox(const hs_profile *p, FILE *out);      /* output/firefox.c */
bool hs_flamegraph_wanted(const hs_profile *p);
bool hs_speedscope_wanted(const hs_profile *p);
bool hs_callgrind_wanted(const hs_profile *p);
bool hs_pprof_wanted(const hs_profile *p);
bool hs_firefox_wanted(const hs_profile *p);

/* How report.txt is shaped (`hookscope report --sort --top --threads`);
 * a run writes it with the defaults (all zero). */
typedef struct hs_txt_view {
    int sort;                    /* HS_SORT_* (profile/views.h): the function table's order
                                    (and the call graph's) */
    uint32_t top;                /* only the first N functions of those; 0: all */
    bool threads;                /* a table of the threads' calls and samples */
    bool sorted;                 /* --sort was given: the CPU and wait sections and the threads
                                    table follow `sort` too (else each keeps its own order) */
} hs_txt_view;

int hs_write_txt_view(const hs_profile *p, const hs_txt_view *v, FILE *out);   /* output/txt.c */

/* flamegraph.svg draws at most this many boxes (frames narrower than a
 * pixel are merged, and wider ones too if needed to stay below it). */
#define HS_SVG_MAX_FRAMES 20000

/* The differential flame graph of `hookscope diff`: b's stacks of `kind`,
 * coloured by the change of each frame's share from a to b (red grew,
 * blue shrank), frames matched by module and function name (functions of
 * one name in a module in rva order, hs_match_funcs). */
int hs_write_flamegraph_diff(const hs_profile *a, const hs_profile *b, int kind, FILE *out);

/* The table of `hookscope diff` (output/difftxt.c): name_a and name_b say
 * where each profile came from; top: only the first N rows (0: all). */
int hs_write_diff(const hs_profile *a, const char *name_a, const hs_profile *b, const char *name_b,
                  const hs_diff *d, uint32_t top, FILE *out);
int hs_write_folded_cpu(const hs_profile *p, FILE *out);
int hs_write_folded_wait(const hs_profile *p, FILE *out);
int hs_write_folded_ready(const hs_profile *p, FILE *out);
int hs_write_folded_hookscope(const hs_profile *p, FILE *out);

/* report.txt's sections on samples (txt_cpu.c); hooks: calls are known */
void hs_write_txt_samples(const hs_profile *p, const hs_txt_view *v, FILE *out, bool hooks);

/* report.txt's longest calls per thread (txt_longest.c; --timeline: none
 * without one), 5 a thread or top (--top) if fewer. 0, or -1 (the
 * timeline's file could not be read: said). */
int hs_write_txt_longest(const hs_profile *p, uint32_t top, FILE *out);

#endif
