/*
 * sampler/sampler.h - CPU sampling behind one small interface.
 *
 * A backend watches one process and delivers samples: which thread, when,
 * what the thread was doing (running, ready, waiting, or in hookscope's
 * own code: hs_sample_kind), and its stack as raw addresses, leaf first. Samples go into a
 * sample set, which merges equal stacks of a thread and kind and keeps
 * the modules the samples were taken in; after the run the set becomes
 * stacks, threads and run figures of the profile (the importer
 * injector/profile/from_samples.c reads it back), named later by the
 * profile's resolve pass like every other address.
 *
 *   suspend  (suspend/) hookscope.exe suspends each thread in turn, takes
 *            its context and copies its stack, resumes it, and unwinds
 *            the copy; no privileges needed; runs under Wine.
 *   etw      (etw/) a private kernel session records SampledProfile,
 *            CSwitch and ReadyThread events with stacks into an .etl
 *            file, which the ETL reader (etl/) decodes at the end
 *            (etl_samples.h: the samples, and the threads' time off the
 *            CPU as ready and wait samples); administrator, Windows 8 or
 *            later.
 *   auto     not a backend: the first of the table that can run here
 *            (backends.c, hs_sampler_start).
 *
 * Plain C except the backends' *_win.c files: the sample set, the code
 * map, the ETL reader and the CPU/wait classifier are built and
 * unit-tested natively too (the unwinder is hook/unwind's, shared with the
 * agent).
 */
#ifndef HOOKSCOPE_SAMPLER_H
#define HOOKSCOPE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/unwind/fpo32.h"

/* ---- samples and the sample set ------------------------------------------ */

/* What a sample shows its thread doing (ARCHITECTURE.md, decision 12). */
enum hs_sample_kind {
    HS_SAMPLE_CPU = 1,         /* running its own code: its CPU clock moved */
    HS_SAMPLE_WAIT = 2,        /* waiting: blocked in a system call (its leaf stands at a
                                  system-call return, or the system says it waits) */
    HS_SAMPLE_READY = 3,       /* ready: runnable but not running (preempted, or held by the
                                  sampler's own suspensions: the profiler's cost) */
    HS_SAMPLE_HOOKSCOPE = 4,   /* in hookscope's own code in the target (probes, the timing
                                  wrapper, entry-stack captures): hookscope's cost */
    HS_SAMPLE__KINDS
};

/* One sample as a backend delivers it. */
typedef struct hs_sample {
    uint32_t pid, tid;
    uint64_t time_ns;          /* since the backend started */
    uint8_t kind;              /* hs_sample_kind */
    bool truncated;            /* the stack went deeper than what was walked */
    uint32_t nframes;
    const uint64_t *frames;    /* leaf first: [0] the instruction pointer, then return addresses */
} hs_sample;

typedef struct hs_sampleset hs_sampleset;

hs_sampleset *hs_sampleset_new(void);
void hs_sampleset_free(hs_sampleset *s);

/* Add one sample (its frames are copied). */
void hs_sampleset_add(hs_sampleset *s, const hs_sample *smp);
/* The same in two halves, for a backend that learns a sample's kind
 * later: the stack's id (equal stacks of a thread share one), then
 * count it once the kind is known. */
uint32_t hs_sampleset_stack(hs_sampleset *s, uint32_t tid, bool truncated, const uint64_t *frames,
                            uint32_t nframes);
/* A stack whose frames' modules are known (indices from
 * hs_sampleset_module, -1: none): a recorded trace knows which image was
 * mapped where at the sample's time, which an address alone may not say. */
uint32_t hs_sampleset_stack_in(hs_sampleset *s, uint32_t tid, bool truncated, const uint64_t *frames,
                               const int32_t *modules, uint32_t nframes);
void hs_sampleset_count(hs_sampleset *s, uint32_t stack, uint8_t kind, uint64_t n);
/* A sample that could not be taken. */
void hs_sampleset_lost(hs_sampleset *s, uint64_t n);
/* Samples taken, counted or not yet (a backend that classifies a sample
 * later says so as it takes it): for a progress line, which may read it
 * from another thread while the sampling thread adds. */
void hs_sampleset_taken_add(hs_sampleset *s, uint64_t n);
uint64_t hs_sampleset_taken(const hs_sampleset *s);

/* A module samples may point into (seen loaded; later unloaded or not);
 * returns its index (the same module again: the same index). */
uint32_t hs_sampleset_module(hs_sampleset *s, const char *path, uint64_t base, uint32_t size,
                             uint32_t timestamp, bool unloaded, bool agent);
/* What else is known of a module: its name (NULL: its path's file name),
 * a kernel image, the PDB it names (guid NULL: none), for naming it when
 * its file is not here. */
void hs_sampleset_module_identity(hs_sampleset *s, uint32_t module, const char *name, bool kernel,
                                  const uint8_t guid[16], uint32_t age, const char *pdb_name);
/* A function the backend itself names in a module that has no file (code
 * JIT-compiled at run time, named by the runtime's events): rva and size
 * from the module's base; the name is copied. */
void hs_sampleset_module_func(hs_sampleset *s, uint32_t module, uint32_t rva, uint32_t size, const char *name);
/* A thread's CPU time in seconds (-1 unknown); threads are known from
 * their samples too. */
void hs_sampleset_thread(hs_sampleset *s, uint32_t tid, double cpu_s);
/* The time a thread spent running, waiting and ready, in seconds, where
 * the backend measured it (from context switches: etw). */
void hs_sampleset_thread_states(hs_sampleset *s, uint32_t tid, double running_s, double wait_s, double ready_s);
/* The backend cannot tell running from ready and waiting here (an ETW
 * trace without context switches): its samples are all CPU samples, and
 * the set has no wait and ready samples because they are unknown, not
 * because there were none. */
void hs_sampleset_off_cpu_unknown(hs_sampleset *s);
bool hs_sampleset_off_cpu_known(const hs_sampleset *s);

/* Samples with their times (--timeline): once asked for (at most max
 * of them; the rest are counted in hs_sampleset_times_dropped), a backend
 * gives each sample it takes its time: a QueryPerformanceCounter value
 * read while the thread stood where its stack shows it, and the stack's
 * id (hs_sampleset_stack). */
void hs_sampleset_keep_times(hs_sampleset *s, size_t max);
/* Returns the time's index, or HS_NO_TIME when it was not kept. */
#define HS_NO_TIME ((size_t)-1)
size_t hs_sampleset_time(hs_sampleset *s, uint32_t stack, int64_t qpc);
/* What the sample at time index i was counted as (hs_sample_kind), once
 * the backend decided it (a classifier decides over windows of samples). */
void hs_sampleset_time_kind(hs_sampleset *s, size_t i, uint8_t kind);
typedef struct hs_sample_time {
    uint32_t stack;            /* index of hs_sampleset_stack_at */
    uint8_t kind;              /* hs_sample_kind it was counted as; 0: not told */
    int64_t qpc;
} hs_sample_time;
size_t hs_sampleset_ntimes(const hs_sampleset *s);
hs_sample_time hs_sampleset_time_at(const hs_sampleset *s, size_t i);
uint64_t hs_sampleset_times_dropped(const hs_sampleset *s);

/* Totals so far. */
uint64_t hs_sampleset_total(const hs_sampleset *s, uint8_t kind);
size_t hs_sampleset_unique(const hs_sampleset *s);

/* Reading a set back (the profile's importer, injector/profile/from_samples.c). */
typedef struct hs_sample_stack {
    uint32_t tid;
    uint32_t nframes;
    const uint64_t *frames;    /* leaf first */
    const int32_t *modules;    /* each frame's module (-1: none), or NULL: not given */
    bool truncated;
    uint64_t count[HS_SAMPLE__KINDS];   /* by hs_sample_kind */
} hs_sample_stack;

typedef struct hs_sample_func {
    uint32_t rva, size;
    const char *name;
} hs_sample_func;

typedef struct hs_sample_module {
    const char *path;
    const char *name;          /* NULL: the path's file name */
    uint64_t base;
    uint32_t size, timestamp;
    bool unloaded, agent;
    bool kernel, pdb_known;    /* hs_sampleset_module_identity */
    uint8_t pdb_guid[16];
    uint32_t pdb_age;
    const char *pdb_name;
    const hs_sample_func *funcs;   /* hs_sampleset_module_func: a module of named code, no file */
    size_t nfuncs;
} hs_sample_module;

typedef struct hs_sample_thread {
    uint32_t tid;
    double cpu_s;              /* -1: unknown */
    double running_s, wait_s, ready_s;   /* hs_sampleset_thread_states; -1: not measured */
    uint64_t count[HS_SAMPLE__KINDS];
} hs_sample_thread;

size_t hs_sampleset_nstacks(const hs_sampleset *s);
hs_sample_stack hs_sampleset_stack_at(const hs_sampleset *s, size_t i);
size_t hs_sampleset_nmodules(const hs_sampleset *s);
hs_sample_module hs_sampleset_module_at(const hs_sampleset *s, size_t i);
size_t hs_sampleset_nthreads(const hs_sampleset *s);
hs_sample_thread hs_sampleset_thread_at(const hs_sampleset *s, size_t i);
uint64_t hs_sampleset_lost_total(const hs_sampleset *s);

/* ---- hookscope's own code in the target --------------------------------------- */

/* What the hooks put into the target, for a sampler: samples in it are
 * attributed to the hooked function it serves, and unwinding passes
 * through it. Filled from the session (trace/owncode.c). */
typedef struct hs_own_arena {
    uint64_t base;             /* stubs, trampolines and their unwind data of one module */
    uint32_t size;
    uint64_t table;            /* its RUNTIME_FUNCTIONs (RVAs from base), in the target */
    uint32_t ntable;
} hs_own_arena;

typedef struct hs_own_slot {
    uint64_t lo, hi;           /* one hooked function's slot: descriptor, stub, trampoline */
    uint64_t tramp;            /* its trampoline (the relocated first instructions) */
    uint64_t entry;            /* the function it serves */
    uint64_t desc;             /* its timing wrapper's descriptor, 0 when not timed */
} hs_own_slot;

/* A module the hooks' session recorded (loaded, perhaps unloaded since). */
typedef struct hs_own_module {
    uint64_t base;
    uint32_t size;
    bool unloaded, agent;
    char *path;                /* UTF-8 */
} hs_own_module;

typedef struct hs_owncode {
    uint64_t agent_base;       /* the agent DLL (0: none) */
    uint32_t agent_size;
    /* its timing wrapper: [wrap_begin, wrap_rsi) rbp holds the timed
     * function's descriptor, [wrap_rsi, wrap_gone) rsi does, [wrap_gone,
     * wrap_end) neither (the function has returned); wrap_ret is the
     * return address of its call into the function (0: not known) */
    uint64_t wrap_begin, wrap_rsi, wrap_gone, wrap_end, wrap_ret;
    hs_own_arena *arenas;
    size_t narenas;
    hs_own_slot *slots;        /* sorted by lo */
    size_t nslots;
    uint32_t tids[64];         /* hookscope's threads in the target: never sampled */
    size_t ntids;
    hs_own_module *modules;    /* the target's modules as the agent recorded them (with
                                  hooks: no need to list them from outside) */
    size_t nmodules;
} hs_owncode;

void hs_owncode_free(hs_owncode *o);

/* ---- backends ------------------------------------------------------------------- */

/* An open timed call of a 32-bit thread (the 32-bit agent's shadow
 * return stack): the stack slot that holds the return thunk's address,
 * and the caller's true return address. */
typedef struct hs_true_return {
    uint64_t slot, ret;
} hs_true_return;

typedef struct hs_sampler_config {
    uint32_t pid;
    int bits;                  /* the target's: 64 (0 too), or 32: i386 code under WOW64 */
    double rate_hz;            /* samples per second per thread; 0: the backend's default
                                  (suspend: chosen from what its suspensions cost, see
                                  HS_RATE_*; etw: HS_ETW_DEFAULT_RATE) */
    /* Fills *o when hookscope's own code or threads in the target changed
     * since the last call (returns 1), else returns 0; NULL: no hooks. */
    int (*own)(void *ctx, hs_owncode *o);
    void *own_ctx;
    /* A 32-bit target timed by the 32-bit agent: the return addresses its
     * return probes moved off thread tid's stack, its open calls oldest
     * first, the newest `cap`; returns how many. ctx: own_ctx. NULL: none. */
    size_t (*true_returns)(void *ctx, uint32_t tid, hs_true_return *out, size_t cap);
    /* The return addresses of the target's open timed calls are moved off
     * its stacks (a 32-bit target under --time): "auto" passes over a
     * backend that cannot put them back (hs_sampler_backend.true_returns). */
    bool returns_moved;
    /* A 32-bit target: the frame data of the PDB of an i386 image (its
     * FPO and FrameData records, for the x86 walker), asked once when the
     * image is first listed (path: the file hookscope reads, UTF-8); the
     * table becomes the sampler's. NULL: no PDB is looked for. */
    hs_fpo32 *(*pdb_frames)(void *ctx, const char *path);
    void *pdb_frames_ctx;
    /* etw: the .etl file to record into (UTF-8), kept after the run when
     * keep_etl, else removed once read */
    const char *etl_path;
    bool keep_etl;
} hs_sampler_config;

/* What a backend measured besides its samples. */
/* The default rate of the suspend backend: the highest up to HS_RATE_MAX
 * whose cost keeps a CPU-bound thread within HS_RATE_COST of its speed
 * (rate x the median time a suspension holds a thread), never below
 * HS_RATE_MIN; ETW's samples cost the target nothing: HS_ETW_DEFAULT_RATE. */
#define HS_RATE_MAX 1000.0
#define HS_RATE_MIN 50.0
#define HS_RATE_COST 0.05
#define HS_ETW_DEFAULT_RATE 1000.0

typedef struct hs_sampler_stats {
    double cpu_s;              /* the process's CPU time while sampled, -1 if unknown */
    uint32_t threads;          /* threads sampled */
    uint64_t ticks;            /* sampling rounds */
    /* suspend backend: microseconds a thread stayed suspended per sample
     * (median, 99th percentile) and the unwind time per sample */
    double suspended_us_p50, suspended_us_p99, unwind_us_avg;
    bool cycle_clock;          /* CPU/wait from cycle counters (else thread times) */
    double rate_hz;            /* the rate used (its mean over the run when it changed) */
    char rate_reason[320];     /* why that rate: "--sample-rate", "chosen: ..." */
    int64_t suspensions;       /* suspend backend: threads suspended for a sample (-1: not
                                  this backend); the other samples reused a stack */
    int64_t reused;            /* samples of threads whose CPU clock had not moved: their
                                  last stack again, no suspension */
    const char *backend;       /* the backend that ran (NULL: the one started) */
    uint64_t events_lost, buffers_lost;   /* etw: what the session could not record */
    double held_s;             /* suspend backend: time the target's threads were held by it */
    double threads_s;          /* the sampled threads' wall time (summed), for held_s's share;
                                  -1 unknown */
    bool stalled;              /* sampling stopped early: a thread's context never came */
    char note[400];            /* what went wrong that the report must say (said on stderr too), or "" */
    char lost_why[400];        /* suspend backend: why samples were lost, by cause ("" none) */
    bool etl_left;             /* etw: the session did not stop; its file is left as it is */
} hs_sampler_stats;

typedef struct hs_sampler hs_sampler;

/* Why a backend did not start. */
typedef struct hs_sampler_refusal {
    bool not_available;        /* it cannot run here at all (no ETW, no privilege): not an error
                                  when another backend is chosen instead */
    char text[320];            /* one line */
} hs_sampler_refusal;

typedef struct hs_sampler_backend {
    const char *name;          /* "suspend", "etw" */
    const char *help;          /* what it is and needs, for `help run` */
    /* Start sampling (a thread of its own); NULL with *why filled when it
     * cannot (it prints nothing). The set is the backend's until stop. */
    hs_sampler *(*start)(const hs_sampler_config *c, hs_sampleset *out, hs_sampler_refusal *why);
    /* Stop, deliver every pending sample, fill stats, free the sampler. */
    void (*stop)(hs_sampler *s, hs_sampler_stats *stats);
    /* The rate in force now (read from another thread, for a progress
     * line); NULL: the configured one. */
    double (*rate_now)(const hs_sampler *s);
    /* It puts back the return addresses the 32-bit agent's return probes
     * moved (cfg.true_returns, while a thread is stopped): a walk that
     * reads the stacks itself (ETW's, in the kernel) finds hookscope's
     * return thunk where each timed call's caller should be. */
    bool true_returns;
} hs_sampler_backend;

/* The backends, in the order "auto" tries them; NULL-terminated. */
extern const hs_sampler_backend *const hs_sampler_backends[];

/* The backend named `name`, or NULL ("auto" is a choice, not a backend). */
const hs_sampler_backend *hs_sampler_backend_named(const char *name);
/* Is `name` a sampler that can be asked for: a backend, or "auto"? */
bool hs_sampler_name_ok(const char *name);
/* "suspend, etw or auto": the names that can be asked for, for messages. */
const char *hs_sampler_names(void);

/* Start the sampler named `name`: a backend, or "auto", the first backend
 * of the table that can run here (each one passed over said with -v).
 * Returns the backend that runs, its sampler in *s; NULL after printing
 * why none runs. */
const hs_sampler_backend *hs_sampler_start(const char *name, const hs_sampler_config *c, hs_sampleset *out,
                                           hs_sampler **s);

#endif
