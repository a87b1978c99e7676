/*
 * injector/results.h - what a trace produced, in the injector's own terms:
 * read from the session (collect.c), named (symbols.c), written out
 * (report_txt.c, report_json.c).
 */
#ifndef HOOKSCOPE_RESULTS_H
#define HOOKSCOPE_RESULTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct hs_res_func {
    uint32_t module;
    uint32_t rva, size;
    uint8_t skip, kind, entry_only, flags;   /* as in hs_func_rec */
    uint64_t calls;
    char *name;                              /* UTF-8, undecorated */
} hs_res_func;

typedef struct hs_res_module {
    int traced;                              /* hooked (or asked for with -m); else only loaded */
    char *path;                              /* UTF-8, as the target saw it */
    const char *name;                        /* file name part of path */
    uint64_t base;
    uint32_t size, timestamp, flags;
    uint32_t found, hooked;
    int32_t pattern, status;
    uint32_t skip_counts[32], patch_counts[8], entry_only_counts[16];
    double install_s;
} hs_res_module;

/* One caller edge, merged over threads: call site -> callee. */
typedef struct hs_res_edge {
    uint64_t site;                           /* return address in the caller (target address) */
    uint32_t callee;                         /* index into funcs */
    uint64_t calls;
} hs_res_edge;

/* One unique entry stack of a function, merged over threads. */
typedef struct hs_res_stack {
    uint32_t func;
    uint32_t depth;
    int truncated;                           /* deeper than --stacks=DEPTH */
    uint64_t count;
    uint64_t *frames;                        /* leaf first: [0] is the function's entry */
} hs_res_stack;

/* Durations of one function, summed over threads, in rdtsc ticks. */
typedef struct hs_res_time {
    uint64_t exits, total, self, min, max, unwinds;
    uint64_t hist[40];                       /* bucket k: [2^k, 2^(k+1)) ns */
    uint64_t open;                           /* calls still running at the end */
} hs_res_time;

/* How the trace ended. */
enum hs_stop {
    HS_STOP_EXIT = 0,      /* the target exited by itself */
    HS_STOP_CRASH,         /* the target died of an exception */
    HS_STOP_DURATION,      /* --duration elapsed */
    HS_STOP_INTERRUPT,     /* Ctrl+C */
    HS_STOP_DETACH,        /* attach mode: detached, target still running */
    HS_STOP_TARGET_GONE,   /* attach mode: the target exited */
};

typedef struct hs_results {
    char *command;             /* "run" or "attach" */
    char *target_path;         /* UTF-8 */
    char **args;               /* argv[1..] as given */
    int nargs;
    uint32_t pid;
    int exited;                /* exit_code is meaningful */
    uint32_t exit_code;
    int stop;                  /* enum hs_stop */
    double wall_s;
    double duration_s;         /* --duration, 0 if none */
    uint32_t threads;          /* regions used */
    uint32_t regions_reused;   /* regions of exited threads given to new ones */
    uint32_t tls_index;        /* the agent's TLS slot (>= 64: an expansion slot) */
    int64_t overflow_calls;
    uint64_t total_calls;
    double tsc_hz;             /* rdtsc ticks per second */
    hs_res_module *mods;
    size_t nmods;
    hs_res_func *funcs;
    size_t nfuncs;
    /* options in effect */
    int edges_on, time_on;
    uint32_t stack_depth, stack_every;       /* stack_depth 0: no stacks */
    hs_res_edge *edges;
    size_t nedges;
    uint64_t edges_lost;                     /* increments no table had room for */
    hs_res_stack *stacks;
    size_t nstacks;
    uint64_t stacks_dropped;                 /* captures no table had room for */
    hs_res_time *time;                       /* per function (nfuncs), when time_on */
    uint64_t time_dropped;                   /* calls not timed (shadow stack full) */
    char **warnings;           /* one line each */
    size_t nwarnings;
    /* stop == HS_STOP_CRASH: what happened (injector/ending.c) */
    uint32_t crash_code;       /* the exception's code, else the exit code */
    uint64_t crash_address;    /* where the exception happened, 0 if not known */
    char *crash_what;          /* its name, or what ended the process */
} hs_results;

void hs_results_warn(hs_results *r, const char *fmt, ...) __attribute__((format(gnu_printf, 2, 3)));

/* Name of a crash exit code (NTSTATUS), or NULL if it does not look like one. */
const char *hs_crash_name(uint32_t code);

#endif
