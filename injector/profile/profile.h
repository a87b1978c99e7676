/*
 * injector/profile/profile.h - the neutral in-memory profile: everything a
 * run (or attach, or a saved report.json) knows, in hookscope's own terms,
 * independent of how it was collected.
 *
 *   collect (profile/from_session.c)  session -> profile, raw addresses
 *   resolve (profile/resolve.c) addresses -> functions and names, once
 *   load    (profile/load.c)   report.json -> profile (already resolved)
 *   writers (output/)          profile -> report.txt, report.json, ...
 *
 * Plain C, no Windows API: built and unit-tested natively too. Writers
 * only read a profile; nothing here refers to the shared-memory session.
 *
 * Functions are identified by their index in `funcs`, and from one
 * profile to another (a run and its saved report.json) by module and rva:
 * a name is a label, and two functions of one module can share it (static
 * functions of two files, two copies of a library function). Writers show
 * such functions apart by their rva (hs_func_label, "name@0xrva"). Besides
 * the functions found in traced modules (`in_plan`: hooked, or skipped with
 * a reason), the profile holds functions of other modules that appear as
 * callers or in stacks (named from their files), created by resolve or
 * by the loader.
 */
#ifndef HOOKSCOPE_PROFILE_H
#define HOOKSCOPE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hookscope/skip.h"
#include "injector/profile/timeline.h"

/* How the trace ended. */
typedef enum hs_stop {
    HS_STOP_EXIT = 0,      /* the target exited by itself */
    HS_STOP_CRASH,         /* the target died of an exception */
    HS_STOP_DURATION,      /* --duration elapsed */
    HS_STOP_INTERRUPT,     /* Ctrl+C */
    HS_STOP_DETACH,        /* attach: detached, target still running */
    HS_STOP_TARGET_GONE,   /* attach: the target exited */
    HS_STOP_RECORDED,      /* read from a recorded trace (ETL) */
    HS_STOP__COUNT
} hs_stop;

/* "exit", "crash", ... as in report.json; NULL for an unknown value. */
const char *hs_stop_name(int stop);
int hs_stop_from_name(const char *name);   /* -1 if unknown */

/* Name of a crash exit code (NTSTATUS), or NULL if it does not look like one. */
const char *hs_crash_name(uint32_t code);

typedef struct hs_prof_module {
    uint32_t id;                 /* stable across save and load ("id" in report.json) */
    char *name;                  /* file name */
    char *path;                  /* as the target saw it, UTF-8 (a 32-bit target's system DLLs:
                                    their SysWOW64 files, where it sees system32) */
    uint64_t base;
    uint32_t size, timestamp;
    bool traced;                 /* hooked or asked for (-m); else only loaded */
    bool main, late, unloaded, agent;
    bool kernel;                 /* kernel-mode image (ETW traces) */
    bool jit;                    /* JIT-compiled code of an assembly (ETW traces): no file, its
                                    functions named by the runtime's events */
    /* the PDB it names, for an image whose file is not here (ETW traces:
     * DbgID_RSDS); not saved */
    bool pdb_known;
    uint8_t pdb_guid[16];
    uint32_t pdb_age;
    char *pdb_name;
    uint32_t funcs_found, funcs_hooked;
    double install_s;
    uint32_t skip_counts[HS_SKIP__COUNT];      /* by hs_skip_reason */
    uint32_t patch_counts[HS_PATCH__COUNT];    /* by hs_patch_kind */
    uint32_t entry_only_counts[HS_WRAP__COUNT];/* by hs_entry_only_reason */
    uint64_t cpu_self, wait_self;  /* samples whose leaf frame is in it (hs_profile_count_samples) */
    uint64_t ready_self;
} hs_prof_module;

/* Durations of one function, in ns, summed over threads. */
#define HS_PROF_HIST 40          /* bucket k: [2^k, 2^(k+1)) ns; the last one is open */
typedef struct hs_prof_time {
    uint64_t calls;              /* calls that returned or were unwound */
    uint64_t total_ns;           /* inclusive, of the outermost activations on each thread */
    uint64_t sum_ns;             /* inclusive, of every call (avg = sum_ns / calls) */
    uint64_t self_ns, min_ns, max_ns;
    uint64_t unwinds;            /* ended by an exception or longjmp */
    uint64_t open;               /* still running at the end */
    uint64_t hist[HS_PROF_HIST];
} hs_prof_time;

#define HS_RVA_NONE UINT32_MAX

typedef struct hs_prof_func {
    uint32_t module;             /* index into modules */
    uint32_t rva, size;          /* rva HS_RVA_NONE: known by name only */
    char *name;                  /* UTF-8, undecorated (hs_profile_add_func, hs_profile_name_func) */
    char *label;                 /* "name@0xrva" when another function of its module has the
                                    same name, else NULL (hs_func_label) */
    bool in_plan;                /* found in a traced module: hooked or skipped */
    bool hooked, wrapped;        /* wrapped: return probe (--time) installed */
    uint8_t skip;                /* hs_skip_reason when !hooked */
    uint8_t patch;               /* hs_patch_kind when hooked */
    uint8_t entry_only;          /* hs_entry_only_reason when hooked but not wrapped */
    uint64_t calls;
    hs_prof_time *time;          /* NULL: no durations recorded */
    /* samples (hs_profile_count_samples): self = the function is the leaf
     * frame, total = it is on the stack (once per stack, however often
     * recursion puts it there) */
    uint64_t cpu_self, cpu_total, wait_self, wait_total;
    uint64_t ready_self, ready_total;
    const char *file;            /* --srcline: where it is declared (interned), or NULL */
    uint32_t line;
} hs_prof_func;

/* A source position (--srcline): file (interned) and line; file NULL: unknown. */
typedef struct hs_srcpos {
    const char *file;
    uint32_t line;
} hs_srcpos;

/* A place in code: a function and an offset from its start, or a module
 * and an offset from its base (no function known), or an address. */
typedef struct hs_loc {
    int32_t func;                /* index into funcs, or -1 */
    int32_t module;              /* index into modules, or -1 */
    uint64_t off;                /* from the function, the module base, or 0 */
} hs_loc;

/* A caller edge: calls from one caller function (or unnamed place) to a
 * hooked function, merged over threads and call sites. */
typedef struct hs_prof_edge {
    hs_loc caller;               /* off: the call site's offset when no function is known */
    uint32_t callee;             /* index into funcs */
    uint64_t calls;
    uint64_t site;               /* collect: the raw return address (0 once resolved) */
} hs_prof_edge;

typedef enum hs_stack_kind {
    HS_STACK_ENTRY = 0,          /* captured at a hooked function's entry */
    HS_STACK_CPU = 1,            /* a sample of a thread running its own code */
    HS_STACK_WAIT = 2,           /* a sample of a thread blocked in a system call: where it waits */
    HS_STACK_READY = 3,          /* a sample of a thread that could run but did not (preempted,
                                    or held by the sampler itself): where it stood */
    HS_STACK_HOOKSCOPE = 4,      /* a sample in hookscope's own code in the target (its probes,
                                    the timing wrapper, entry-stack captures): hookscope's cost,
                                    never the program's; frame 0 is the hooked function the
                                    code served (or its caller, past it), then its callers */
} hs_stack_kind;

/* The key under which report.json keeps the sampled stacks of a kind:
 * "sample_stacks" (CPU), "wait_stacks", "ready_stacks", "hookscope_stacks";
 * NULL for entry stacks and unknown kinds. */
const char *hs_stack_kind_key(int kind);

/* One unique stack with how often it was seen. Frames leaf first; for
 * entry stacks frame 0 is the function's own entry, for samples the
 * sampled instruction, then one return address per caller. */
typedef struct hs_prof_stack {
    uint8_t kind;                /* hs_stack_kind */
    bool truncated;              /* deeper than the capture depth */
    uint32_t func;               /* entry stacks: the hooked function; samples: unused */
    uint32_t tid;                /* samples: the thread; entry stacks: 0 (merged over threads) */
    int32_t *addr_modules;       /* collect: the module of each raw address when the collector
                                    knows it better than the address does (ETW: modules of
                                    different times at one base), -1: look it up; or NULL */
    uint64_t count;
    uint32_t nframes;
    hs_loc *frames;              /* resolved frames (hookscope's own omitted) */
    hs_srcpos *src;              /* --srcline: the source position of each frame, or NULL */
    uint64_t *addrs;             /* collect: raw addresses (NULL once resolved) */
} hs_prof_stack;

/* The CPU sampler of a run (or a decoded ETW trace). */
typedef struct hs_prof_sampling {
    bool on;
    char backend[16];            /* "suspend", "etw" */
    double rate_hz;
    uint64_t samples;            /* CPU samples */
    uint64_t wait_samples;
    uint64_t ready_samples;
    uint64_t hookscope_samples;  /* in hookscope's own code (HS_STACK_HOOKSCOPE) */
    bool off_cpu_unknown;        /* ready and wait were not measured (an ETW trace without context
                                    switches): their counts are unknown, not zero */
    uint64_t wait_no_stack, ready_no_stack;   /* wait and ready samples (counted above) whose stretch
                                                 off the CPU had no stack: in no stack list */
    uint64_t lost;               /* samples that could not be taken or decoded */
    char lost_why[400];          /* why, by cause, where the sampler says ("" none said) */
    uint32_t threads;            /* threads sampled */
    double cpu_s;                /* the process's CPU time (user + kernel), -1 if unknown */
    /* the suspend sampler's own cost to the target: the time its threads
     * were held suspended, in all, and the threads' run time over which
     * that was spent (wall time of each sampled thread, summed); -1 unknown */
    double held_s, threads_s;
    bool etl_kept;               /* etw: the run's trace is kept in the output directory */
    char rate_reason[320];       /* why rate_hz: "--sample-rate", "chosen: ...", "" unknown */
    int64_t suspensions;         /* suspend sampler: threads suspended for a sample; the other
                                    samples reused the stack of a thread that had not run; -1 unknown */
    int64_t reused;
} hs_prof_sampling;

/* The recorded trace a profile was read from (report --etl). */
typedef struct hs_prof_trace {
    char *file;                  /* as given; NULL: not from a trace */
    char machine[96];            /* "Windows 6.1 build 7601, 4 CPUs" (its header), "" unknown */
    char start[64];              /* when it began, "2016-03-01 10:20:30 UTC", "" unknown */
    double span_s;               /* its first to its last event */
    uint32_t named;              /* processes of the name asked for (--process): more than 1,
                                    the one with the most samples was taken */
} hs_prof_trace;

/* One thread of the target. */
typedef struct hs_prof_thread {
    uint32_t tid;
    uint64_t calls;              /* hooked calls counted on it */
    uint64_t cpu_samples, wait_samples, ready_samples, hookscope_samples;
    double cpu_s;                /* its CPU time, -1 if unknown */
    double running_s, wait_s, ready_s;   /* its time running, waiting and ready, where measured
                                            (ETW: from the context switches; to 100 ns), -1 if not */
} hs_prof_thread;

typedef struct hs_profile {
    /* the run */
    char *command;               /* "run", "attach" */
    char *target_path;           /* UTF-8 */
    char *target_rights;         /* run by an elevated hookscope: "user" (its unelevated token),
                                    "user-restricted", "administrator" (--elevated-target),
                                    "administrator-only" (no unelevated token exists); NULL: the
                                    same rights as hookscope's */
    char **args;                 /* argv[1..] */
    int nargs;
    uint32_t pid;
    int bits;                    /* the target's: 64, or 32 (i386 under WOW64); 0 not known
                                    (a foreign trace) */
    bool exited;                 /* exit_code is meaningful */
    uint32_t exit_code;
    int stop;                    /* hs_stop */
    /* stop == HS_STOP_CRASH: what happened (trace/outcome.c) */
    uint32_t crash_code;         /* the exception's code, else the exit code */
    uint64_t crash_address;      /* where the exception happened, 0 if not known */
    hs_loc crash_at;             /* resolve: crash_address as a place in code */
    char *crash_what;            /* its name, or what ended the process */
    double wall_s;
    double duration_s;           /* --duration, 0 if none */
    uint32_t threads;            /* threads that called a hooked function (counter regions) */
    uint32_t regions_reused;
    uint32_t agent_tls_index;
    int64_t overflow_calls;
    uint64_t total_calls;
    double tsc_hz;
    char **warnings;
    size_t nwarnings;
    hs_prof_trace trace;         /* report --etl: the trace's facts */

    /* options in effect */
    bool edges_on, time_on;
    bool srcline_on;             /* source lines of functions and frames */
    uint32_t stack_depth;        /* 0: no entry stacks */
    uint32_t stack_every;

    /* losses */
    uint64_t edges_lost, stacks_dropped, time_dropped;
    /* rdtsc ticks the threads spent capturing entry stacks (from the
     * session only) */
    uint64_t stack_ticks;

    hs_prof_module *modules;
    size_t nmodules;
    hs_prof_func *funcs;
    size_t nfuncs;
    hs_prof_edge *edges;
    size_t nedges;
    hs_prof_stack *stacks;
    size_t nstacks;

    hs_prof_sampling sampling;
    hs_prof_thread *threads_list; /* per thread, by tid */
    size_t nthreads_list;

    hs_prof_timeline *timeline;  /* --timeline: its file and figures; NULL: none */
    char **strings;              /* interned strings (source file names) */
    size_t nstrings;
} hs_profile;

hs_profile *hs_profile_new(void);
void hs_profile_free(hs_profile *p);

/* Append; return the new element's index. Strings are copied. */
uint32_t hs_profile_add_module(hs_profile *p, const char *path, uint64_t base, uint32_t size);
uint32_t hs_profile_add_func(hs_profile *p, uint32_t module, uint32_t rva, uint32_t size,
                             const char *name);
/* Name a function added without a name (copied). */
void hs_profile_name_func(hs_profile *p, uint32_t func, const char *name);
void hs_profile_add_edge(hs_profile *p, hs_loc caller, uint32_t callee, uint64_t calls,
                         uint64_t site);
hs_prof_stack *hs_profile_add_stack(hs_profile *p, uint8_t kind, uint32_t func, uint64_t count,
                                    uint32_t nframes);
#ifdef __MINGW32__
void hs_profile_warn(hs_profile *p, const char *fmt, ...) __attribute__((format(gnu_printf, 2, 3)));
#else
void hs_profile_warn(hs_profile *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif

hs_prof_thread *hs_profile_thread(hs_profile *p, uint32_t tid);   /* found or added */

/* One copy of s for the whole profile (file names of source positions). */
const char *hs_profile_intern(hs_profile *p, const char *s);

/* Fill the functions' and modules' sample counts (cpu_self, cpu_total,
 * wait_self, wait_total, ready_self, ready_total) from the CPU, wait and
 * ready stacks. */
void hs_profile_count_samples(hs_profile *p);
/* Round every time in seconds to the microsecond (a thread's times in
 * each state, measured from context switches, to 100 ns), as report.json
 * keeps it, so that a report rendered from a saved run (formats coarser than
 * the microsecond round the same value) is byte for byte the run's own. */
void hs_profile_round_seconds(hs_profile *p);

/* The function's durations, allocated on first use. */
hs_prof_time *hs_prof_time_of(hs_profile *p, uint32_t func);
/* Read-only: zeros when none were recorded. */
const hs_prof_time *hs_prof_time_get(const hs_profile *p, uint32_t func);

/* The function of `module` named `name` (and at `rva` unless HS_RVA_NONE),
 * or -1; of several, the first added. */
int64_t hs_profile_find_func(const hs_profile *p, uint32_t module, const char *name, uint32_t rva);
/* The function of `module` at `rva` (its start), or -1. */
int64_t hs_profile_func_at(const hs_profile *p, uint32_t module, uint32_t rva);

/* How writers name a function: its name, or "name@0xrva" when another
 * function of its module has the same name (NULL when it has no name). */
static inline const char *hs_func_label(const hs_profile *p, uint32_t func)
{
    return p->funcs[func].label ? p->funcs[func].label : p->funcs[func].name;
}
/* The module a location is in, or -1. */
int32_t hs_loc_module(const hs_profile *p, hs_loc l);

/* A sampling rate as report.json keeps it (6 significant digits): the
 * profile holds that value, so that every figure made from it (CPU time
 * of samples, speedscope's and pprof's weights) is the same when `report
 * DIR` writes the run again. */
double hs_rate_as_saved(double hz);
/* The module named `name` (case-insensitive), or -1. */
int64_t hs_profile_find_module(const hs_profile *p, const char *name);

/* A caller as edges are ordered and merged by: its module's name, then
 * base and index (two modules may share a name), then its name (the
 * caller as report.json names it: function, "module+0xoff" or "0xaddr"),
 * then its function's rva (two functions of one name). */
typedef struct hs_caller_key {
    const char *mod;             /* "" when in no module */
    uint64_t base;
    int32_t module;              /* -1 when in no module */
    uint32_t rva;                /* the function's; 0 when no function is known */
    char label[512];
} hs_caller_key;
void hs_caller_key_of(const hs_profile *p, hs_loc caller, hs_caller_key *k);
int hs_caller_key_cmp(const hs_caller_key *a, const hs_caller_key *b);

/* Merge edges with the same caller and callee (after resolve), and sort
 * them by callee, then caller module name, then caller label: the order
 * of report.json. */
void hs_profile_merge_edges(hs_profile *p);

/* v as "0x" and lower-case hex digits (printf's "0x%llx"), not terminated,
 * into out; returns its length. */
#define HS_HEX_TEXT 18
size_t hs_hex_text(uint64_t v, char out[HS_HEX_TEXT]);
/* v in decimal (printf's "%llu"), not terminated; returns its length. */
#define HS_DEC_TEXT 20
size_t hs_dec_text(uint64_t v, char out[HS_DEC_TEXT]);

/* A location as text: "function" (with_module: "module!function") and
 * "+0xoff" when with_offset; "module+0xoff" or "0xaddr" when no function
 * is known. The function as writers show it (hs_func_label). Returns buf. */
char *hs_loc_format(const hs_profile *p, hs_loc l, bool with_module, bool with_offset, char *buf,
                    size_t len);
/* The same with the function's name, as report.json keeps locations
 * (beside the rva where names repeat). */
char *hs_loc_format_saved(const hs_profile *p, hs_loc l, bool with_module, bool with_offset, char *buf,
                          size_t len);

/* Durations: ns from rdtsc ticks at the profile's tsc_hz, rounded (0 if unknown). */
uint64_t hs_profile_ticks_ns(const hs_profile *p, uint64_t ticks);

#endif
