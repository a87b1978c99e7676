/*
 * tests/support/etw_fake.h - a fake of the system's ETW functions for the
 * live ETW layer (sampler/etw/etw_session_win.h): it records every call, can fail any
 * step on request, keeps a "machine" sampling interval and a foreign
 * session ("NT Kernel Logger") that must never be touched, and when its
 * session is stopped writes a synthetic .etl file (tests/unit/etl_build.h,
 * the documented layouts) with the process, thread, image and sample
 * events, context switches and ReadyThread events the test scripted, and
 * the timer's interval (a CollectionStart): what the kernel would have
 * recorded.
 */
#ifndef HS_TEST_ETW_FAKE_H
#define HS_TEST_ETW_FAKE_H

#include <stdint.h>

#include "sampler/etw/etw_session_win.h"

#define FAKE_MAX_CALLS 64
#define FAKE_MAX_SAMPLES 16

typedef struct fake_call {
    char what[32];                 /* "privilege", "query-interval", "set-interval", "start",
                                      "stack-tracing", "stop", "stop-name", "flush",
                                      "query-all", "stop-leftover", "foreign" */
    unsigned long value;           /* the interval, the handle, the stack-traced event type ... */
} fake_call;

#define FAKE_MAX_FRAMES 8
#define FAKE_MAX_IMAGES 4
#define FAKE_MAX_SCHED 32
#define FAKE_MAX_STACK_CLASSES 8
#define FAKE_MAIN 0xFFFFFFFFu      /* in a fake_sched: the scripted tid */

#define FAKE_MAX_JITS 4
#define FAKE_MAX_ENABLES 8

/* A method the .NET runtime compiled (a MethodLoadVerbose event when the
 * session enabled its runtime provider for JIT events, verbose). */
typedef struct fake_jit {
    uint64_t start;
    uint32_t size;
    char ns[64], name[64];
} fake_jit;

/* A provider enabled in the session (EnableTraceEx2). */
typedef struct fake_enable {
    char provider[16];             /* "clr-runtime", "clr-rundown", "other" */
    unsigned level;
    unsigned long long keywords;
    uint32_t pid;                  /* its process filter (0: none) */
} fake_enable;

typedef struct fake_sample {
    uint64_t ip, ret;              /* the sampled instruction and one return address */
    uint32_t count;
    /* optional: the whole stack (leaf first) instead of ip, ret; and the
     * process and thread (0: the scripted pid and tid; a process other
     * than pid gets process and thread events of its own) */
    uint64_t frames[FAKE_MAX_FRAMES];
    uint32_t nframes;
    uint32_t pid, tid;
} fake_sample;

/* A context switch (thread `in` replaces `out`, which leaves in state
 * `state`, KTHREAD_STATE: 1 ready, 4 terminated, 5 waiting), with the
 * stack walked for `in` (nframes 0: none); or a ReadyThread for `in`.
 * Written after the samples, at us microseconds after the trace's first
 * event; tid 0 is the idle thread. */
typedef struct fake_sched {
    int ready;
    uint32_t us;
    uint32_t in, out;
    uint8_t state;
    uint64_t frames[FAKE_MAX_FRAMES];
    uint32_t nframes;
} fake_sched;

/* One class of events whose stacks were asked for (CLASSIC_EVENT_ID). */
typedef struct fake_stack_class {
    char provider[16];             /* "perfinfo", "thread", or "other" */
    unsigned type;
} fake_stack_class;

typedef struct fake_image {
    uint32_t pid;                  /* 0: the kernel's (system-wide) */
    uint64_t base, size;
    uint32_t timestamp;
    char path[260];
} fake_image;

typedef struct etw_fake {
    /* the script */
    DWORD fail_privilege;          /* ERROR_SUCCESS, or what the privilege step answers */
    ULONG fail_query, fail_set_interval, fail_start, fail_stack;   /* ERROR_SUCCESS or an error */
    ULONG fail_stop, fail_stop_name;   /* the stop by handle, by name (ERROR_MORE_DATA: stopped) */
    int no_samples;                /* the machine records no samples at all */
    int no_samples_after;          /* ... in the trace written at stop (a flush's has them) */
    unsigned long retune;          /* another tool sets the machine's interval to this at a flush */
    int fill;                      /* the file reaches its cap (MaximumFileSize) */
    int timed;                     /* samples at the real clock's times, spread over the session */
    ULONG fail_enable;             /* what EnableTraceEx2 answers (ERROR_SUCCESS: it enables) */
    fake_jit jits[FAKE_MAX_JITS];
    int njits;
    fake_enable enables[FAKE_MAX_ENABLES];
    int nenables;
    long long qpc_start;           /* QueryPerformanceCounter when the session started */
    /* sessions of others that run already (named; leftovers of hookscopes
     * among them), and whether each still runs */
    wchar_t others[4][64];
    int nothers, other_running[4];
    uint32_t pid, tid;             /* the process the trace shows */
    char process_name[64];
    char image_path[520];          /* its exe, as the trace records it */
    uint64_t image_base, image_size;
    uint32_t image_timestamp;
    fake_sample samples[FAKE_MAX_SAMPLES];
    int nsamples;
    fake_image images[FAKE_MAX_IMAGES];   /* more images (kernel, other processes) */
    int nimages;
    fake_sched sched[FAKE_MAX_SCHED];
    int nsched;
    /* what happened */
    ULONG machine_interval;        /* the global interval (starts at 10000) */
    ULONG start_interval;          /* the global interval when the session started */
    ULONG session_interval;        /* the first one set while it ran (0: none) */
    fake_call calls[FAKE_MAX_CALLS];
    int ncalls;
    int running;                   /* our session runs */
    int foreign_touched;           /* something was done to a session that was not ours */
    wchar_t session_name[64];
    GUID session_guid;
    ULONG log_file_mode, enable_flags, client_context, max_file_mb;
    int flushes;
    fake_stack_class stack_classes[FAKE_MAX_STACK_CLASSES];   /* the last list given */
    int nstack_classes;
    wchar_t log_file[520];
    int wrote_trace;
} etw_fake;

/* Reset to a script with no failures and no samples. */
void etw_fake_reset(etw_fake *f);
/* A session of others that runs already (a leftover of a hookscope, or
 * any other). */
void etw_fake_other(etw_fake *f, const wchar_t *name);
/* The function table that runs against f (one fake at a time). */
const hs_etw_api *etw_fake_api(etw_fake *f);

#endif
