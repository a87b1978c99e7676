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
    char *path;                              /* UTF-8, as the target saw it */
    const char *name;                        /* file name part of path */
    uint64_t base;
    uint32_t size, timestamp, flags;
    uint32_t found, hooked;
    int32_t pattern, status;
    uint32_t skip_counts[32], patch_counts[8], entry_only_counts[16];
    double install_s;
} hs_res_module;

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
    int64_t overflow_calls;
    uint64_t total_calls;
    double tsc_hz;             /* rdtsc ticks per second */
    hs_res_module *mods;
    size_t nmods;
    hs_res_func *funcs;
    size_t nfuncs;
    char **warnings;           /* one line each */
    size_t nwarnings;
} hs_results;

void hs_results_warn(hs_results *r, const char *fmt, ...) __attribute__((format(gnu_printf, 2, 3)));
void hs_results_free(hs_results *r);

/* Name of a crash exit code (NTSTATUS), or NULL if it does not look like one. */
const char *hs_crash_name(uint32_t code);

#endif
