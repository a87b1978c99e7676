/*
 * sampler/etl/etl.h - hookscope's reader of Windows event trace logs (.etl):
 * the trace model it builds, and how to build it.
 *
 * hs_etl_read_file (or hs_etl_read_mem) decodes a whole file in one pass
 * and fills an hs_etl_trace: the logfile header's facts, the processes,
 * threads and images (with their ImageID / DbgID_RSDS records), every
 * CPU sample (PerfInfo SampledProfile) and every context switch (CSwitch)
 * and ReadyThread event, each with its stack if one was walked, leaf
 * first, the kernel part joined to its deferred user part; and the CLR's
 * JIT-compiled methods with their names and assemblies (hs_etl_jit). It reads kernel traces
 * written by xperf, WPR, UIforETW, PerfView and a private system-logger
 * session: 32- and 64-bit, uncompressed or compressed (XPRESS, LZNT1),
 * with full StackWalk events or stack keys.
 *
 * Plain C11, no Windows API: the same code runs on Windows and on Linux.
 * Every read is bounds-checked; a truncated or corrupt file gives -1 and
 * a one-line message naming the byte offset, never a crash or a hang.
 * Memory: the samples, stacks and images it keeps, plus one buffer per CPU
 * while decoding (a file is streamed, not read whole).
 *
 * Lower layers, usable alone: sampler/etl/reader.h (buffers, per-CPU
 * merge, the event stream and an observer interface) and
 * sampler/etl/views.h (typed views of event payloads).
 */
#ifndef HOOKSCOPE_ETL_H
#define HOOKSCOPE_ETL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HS_ETL_NONE 0xFFFFFFFFu            /* no pid, tid or index */
#define HS_ETL_NEVER UINT64_MAX            /* an end time that did not come */

/* Why a read failed: one line, for "hookscope: <msg>". When the failure
 * is at a place in the file, offset is that byte (has_offset 1) and the
 * message names it. */
typedef struct hs_etl_error {
    uint64_t offset;
    int has_offset;
    char msg[256];
} hs_etl_error;

/* What timestamps count (the logfile header's ClientContext). */
enum hs_etl_clock {
    HS_ETL_CLOCK_UNKNOWN = 0,
    HS_ETL_CLOCK_QPC = 1,                  /* QueryPerformanceCounter ticks */
    HS_ETL_CLOCK_SYSTEM = 2,               /* system time, 100 ns */
    HS_ETL_CLOCK_CYCLES = 3,               /* CPU cycles */
};

/* COMPRESSION_FORMAT_* of compressed buffers. */
enum hs_etl_compression {
    HS_ETL_COMP_NONE = 0,
    HS_ETL_COMP_LZNT1 = 2,
    HS_ETL_COMP_XPRESS = 3,                /* [MS-XCA] plain LZ77 */
    HS_ETL_COMP_XPRESS_HUFF = 4,           /* not supported: a clear error */
};

/* Facts about the file: from its logfile header, and counted while reading. */
typedef struct hs_etl_info {
    /* the logfile header (TRACE_LOGFILE_HEADER, the file's first event) */
    uint32_t pointer_size;                 /* 4 or 8: the kernel's pointers */
    uint32_t ncpus;
    uint32_t clock;                        /* enum hs_etl_clock */
    uint64_t clock_hz;                     /* event timestamp ticks per second (0: unknown) */
    uint64_t perf_freq;                    /* QPC frequency */
    uint32_t cpu_mhz;
    uint64_t start_time, end_time;         /* FILETIME: 100 ns units since 1601 */
    uint64_t boot_time;                    /* FILETIME */
    uint32_t events_lost;                  /* as the header says */
    uint32_t buffers_lost;                 /* as the header says */
    uint32_t buffers_written;              /* as the header says */
    uint32_t buffer_size;                  /* bytes, as the header says */
    uint32_t log_file_mode;                /* EVENT_TRACE_*_MODE flags */
    uint32_t version;                      /* the header's Version field (OS major in the low byte) */
    uint32_t provider_version;             /* the OS build number */
    uint32_t timer_resolution;             /* 100 ns units */
    uint32_t max_file_size;                /* MB */
    int compressed;                        /* log_file_mode has EVENT_TRACE_COMPRESSED_MODE */
    uint32_t compression;                  /* enum hs_etl_compression of the buffers */
    char logger_name[128];                 /* UTF-8, e.g. "NT Kernel Logger" */
    char log_file_name[512];               /* UTF-8, as recorded */
    /* counted while reading */
    uint32_t buffers;                      /* buffers in the file (the header buffer too) */
    uint32_t buffers_compressed;
    uint32_t buffers_events_lost;          /* buffers flagged ETW_BUFFER_FLAG_EVENTS_LOST */
    uint32_t buffers_buffer_lost;          /* buffers flagged ETW_BUFFER_FLAG_BUFFER_LOST */
    uint32_t sequence_gaps;                /* buffer sequence numbers missing in the file */
    uint32_t cpus_seen;                    /* distinct CPUs the buffers came from */
    uint64_t events;                       /* events read */
    uint64_t first_ts, last_ts;            /* lowest and highest event timestamp (ticks) */
} hs_etl_info;

/* hs_etl_process.flags, hs_etl_thread.flags, hs_etl_image.flags: how the
 * trace saw it. A RUNDOWN_START record existed when the trace began
 * (DCStart); START/END: it began or ended during the trace; RUNDOWN_END:
 * it still existed when the trace ended (DCEnd). */
enum {
    HS_ETL_SEEN_RUNDOWN_START = 0x01,
    HS_ETL_SEEN_START = 0x02,
    HS_ETL_SEEN_END = 0x04,
    HS_ETL_SEEN_RUNDOWN_END = 0x08,
    HS_ETL_SEEN_DEFUNCT = 0x10,            /* process: a Defunct (zombie) rundown record */
    HS_ETL_IMAGE_KERNEL = 0x20,            /* image: loaded above the kernel boundary */
    HS_ETL_IMAGE_ID = 0x40,                /* image: an ImageID record gave orig_name */
    HS_ETL_IMAGE_RSDS = 0x80,              /* image: a DbgID_RSDS record gave the PDB */
};

/* One process instance (a pid reused during the trace gives two). Times
 * are event ticks: start 0 when it existed before the trace, end
 * HS_ETL_NEVER when it had not ended when the trace stopped. */
typedef struct hs_etl_process {
    uint32_t pid, ppid;
    uint32_t session;
    uint32_t exit_status;
    uint64_t start, end;
    uint64_t unique_key;                   /* the kernel's EPROCESS key, 0 if not logged */
    uint32_t flags;                        /* HS_ETL_SEEN_* */
    const char *name;                      /* image file name as logged, e.g. "POWERPNT.EXE" (UTF-8) */
    const char *cmdline;                   /* UTF-8, "" if not logged */
} hs_etl_process;

typedef struct hs_etl_thread {
    uint32_t tid, pid;
    uint32_t process;                      /* index into procs, HS_ETL_NONE if unknown */
    uint64_t start, end;                   /* as for processes */
    uint32_t flags;                        /* HS_ETL_SEEN_* */
} hs_etl_thread;

/* One image mapped into one process (or the kernel). */
typedef struct hs_etl_image {
    uint32_t pid;                          /* as logged (0 or 4 for drivers and the kernel) */
    uint32_t process;                      /* index into procs, HS_ETL_NONE if unknown */
    uint64_t base, size, default_base;
    uint32_t checksum, timestamp;          /* PE CheckSum and TimeDateStamp */
    uint64_t load, unload;                 /* ticks: load 0 = before the trace; unload HS_ETL_NEVER = still mapped */
    uint32_t flags;                        /* HS_ETL_SEEN_*, HS_ETL_IMAGE_* */
    const char *path;                      /* UTF-8, the NT path as logged: \Device\HarddiskVolume2\...\ntdll.dll */
    const char *name;                      /* best-effort plain file name: "ntdll.dll" */
    const char *orig_name;                 /* ImageID's OriginalFileName, or NULL */
    uint8_t pdb_guid[16];                  /* DbgID_RSDS, as stored (a GUID: Data1..3 little-endian) */
    uint32_t pdb_age;
    const char *pdb_name;                  /* DbgID_RSDS PDB file name, or NULL */
} hs_etl_image;

/* One JIT-compiled method's code in one process, from the CLR's method
 * events (MethodLoadVerbose, MethodUnloadVerbose, and the rundown's
 * MethodDCStartVerbose / MethodDCEndVerbose): its range [start, start +
 * size) is its code from load (0: before the trace) to unload
 * (HS_ETL_NEVER: still there when the trace ended). A method known only
 * from a rundown record is taken to have been there since the trace
 * began; a range reused after an unload gives two records. */
typedef struct hs_etl_jit {
    uint32_t pid;
    uint32_t size;
    uint64_t start;
    uint64_t load, unload;
    uint64_t method_id, module_id;
    uint32_t token;
    const char *name;                      /* "Namespace.Method" (the namespace is the type's full
                                              name), or the method's name alone (UTF-8) */
    const char *signature;                 /* UTF-8, as logged */
    const char *module;                    /* the assembly's file as its module event logged it
                                              (ModuleILPath), or NULL: no module event for it */
} hs_etl_jit;

/* A stack walked for an event: kern_depth frames at frames[kern_frames]
 * followed by user_depth frames at frames[user_frames] of the trace's
 * frame pool, leaf first; hs_etl_stack_frame() reads it as one array. */
typedef struct hs_etl_stack {
    uint32_t kern_frames, user_frames;     /* offsets into frames */
    uint16_t kern_depth, user_depth;
} hs_etl_stack;

/* What the stack joining found, in the flags of every record that can
 * have a stack (samples and scheduling events alike). */
enum {
    HS_ETL_STACK_FOUND = 0x02,             /* it has a stack (depth >= 1); else none was found */
    HS_ETL_STACK_USER_MISSING = 0x04,      /* a kernel stack whose user part never came (trace ended) */
};

/* hs_etl_sample.flags */
enum {
    HS_ETL_SAMPLE_KERNEL = 0x01,           /* ip >= the kernel boundary */
    HS_ETL_SAMPLE_STACK = HS_ETL_STACK_FOUND,
    HS_ETL_SAMPLE_USER_MISSING = HS_ETL_STACK_USER_MISSING,
    HS_ETL_SAMPLE_DPC = 0x08,              /* the CPU ran a DPC */
    HS_ETL_SAMPLE_ISR = 0x10,              /* the CPU ran an interrupt service routine */
};

/* One CPU sample; frame 0 of its stack is the sampled instruction. Every
 * sample is kept, the idle thread's too (tid 0, pid 0: PerfView's
 * TraceLog drops those not flagged DPC or ISR). */
typedef struct hs_etl_sample {
    uint64_t ts;                           /* event ticks */
    uint64_t ip;
    uint32_t pid, tid;                     /* pid HS_ETL_NONE if the thread is unknown */
    uint32_t process;                      /* index into procs, HS_ETL_NONE if unknown */
    hs_etl_stack stack;
    uint16_t cpu;
    uint8_t flags;                         /* HS_ETL_SAMPLE_* */
    uint8_t priority;                      /* thread priority (Windows 8+, else 0) */
} hs_etl_sample;

/* hs_etl_sched.kind */
enum {
    HS_ETL_SWITCH = 1,                     /* CSwitch (thread group, type 36) */
    HS_ETL_READY = 2,                      /* ReadyThread (thread group, type 50) */
};

/* KTHREAD_STATE, as CSwitch's OldThreadState gives it ("CSwitch class"). */
enum {
    HS_ETL_THREAD_INITIALIZED = 0,
    HS_ETL_THREAD_READY = 1,
    HS_ETL_THREAD_RUNNING = 2,
    HS_ETL_THREAD_STANDBY = 3,
    HS_ETL_THREAD_TERMINATED = 4,
    HS_ETL_THREAD_WAITING = 5,
    HS_ETL_THREAD_TRANSITION = 6,          /* ready, but its kernel stack is paged out */
    HS_ETL_THREAD_DEFERRED_READY = 7,
};

/* What a context switch tells besides its two threads ("CSwitch class"). */
typedef struct hs_etl_switch_facts {
    int8_t new_priority, old_priority;
    uint8_t previous_cstate;
    uint8_t old_wait_reason;               /* KWAIT_REASON: why the old thread waits */
    uint8_t old_wait_mode;                 /* 0 kernel, 1 user */
    uint8_t old_state;                     /* HS_ETL_THREAD_* */
    int8_t old_ideal_cpu;                  /* OldThreadWaitIdealProcessor */
    uint32_t new_wait_time;                /* NewThreadWaitTime */
} hs_etl_switch_facts;

/* What a ReadyThread tells besides its thread ("ReadyThread class"). */
typedef struct hs_etl_ready_facts {
    int8_t adjust_reason, adjust_increment;
    uint8_t flags;                         /* 1 readied from a DPC, 2 kernel stack, 4 process swapped out */
} hs_etl_ready_facts;

/* One scheduling event: a context switch, or a thread made ready.
 *
 *   switch: on CPU `cpu`, thread `tid` (NewThreadId) replaced `other_tid`
 *     (OldThreadId), which left in state sw.old_state (HS_ETL_THREAD_*:
 *     WAITING when it blocked, READY, STANDBY or RUNNING when it was
 *     preempted, TERMINATED when it ended) for sw.old_wait_reason. Its stack
 *     is the one the kernel walked for the event, which is that of the
 *     thread switched *in* (the event's thread is NewThreadId, PerfView's
 *     CSwitchTraceData; TraceLog.cs: "the normal callStack is for the
 *     thread that GOT the CPU"): where that thread stood while it was off
 *     the CPU, as it resumes from the point where it was switched out.
 *   ready: thread `tid` (TThreadId) was made ready to run; other_tid is
 *     the thread that readied it (the event's thread: from its header, or,
 *     when the header has none, from the stack walked for it), and the
 *     stack is that thread's.
 *
 * pid and process are tid's, other_pid and other_process other_tid's, at
 * the event's time (HS_ETL_NONE: unknown), found as for samples. */
typedef struct hs_etl_sched {
    uint64_t ts;
    uint8_t kind;                          /* HS_ETL_SWITCH, HS_ETL_READY */
    uint8_t flags;                         /* HS_ETL_STACK_* */
    uint16_t cpu;
    uint32_t tid, pid, process;
    uint32_t other_tid, other_pid, other_process;
    hs_etl_stack stack;
    hs_etl_switch_facts sw;                /* HS_ETL_SWITCH */
    hs_etl_ready_facts rd;                 /* HS_ETL_READY */
} hs_etl_sched;

/* What the stack joining saw (for reports and tests). */
typedef struct hs_etl_stack_stats {
    uint64_t stackwalks;                   /* StackWalk events (all events, not only samples') */
    uint64_t key_refs, key_defs;           /* StackKeyKernel/User references; key create/delete/rundown */
    uint64_t ext_stacks;                   /* extended-item stacks of event-header records */
    uint64_t orphans;                      /* stack events whose event (a sample, a context switch, a
                                              ReadyThread) was not found, or is of another kind */
    uint64_t kernel_keys_unresolved;       /* kernel keys of those events never defined */
    uint64_t user_keys_unresolved;         /* user keys of those events never defined */
} hs_etl_stack_stats;

typedef struct hs_etl_trace {
    hs_etl_info info;
    uint64_t kernel_boundary;              /* 0x80000000 (4-byte pointers) or 0xFFFF000000000000 */
    hs_etl_process *procs;
    uint32_t nprocs;
    hs_etl_thread *threads;
    uint32_t nthreads;
    hs_etl_image *images;
    uint32_t nimages;
    hs_etl_sample *samples;                /* in time order */
    uint32_t nsamples;
    hs_etl_sched *sched;                   /* context switches and ReadyThread events, in time order */
    uint32_t nsched;
    uint32_t nswitches, nreadies;          /* of each kind */
    uint32_t sample_interval;              /* the CPU sampling interval (100 ns units) in force at
                                              the first sample, from PerfInfo CollectionStart and
                                              SetInterval events (collector.c), 0 if it has none */
    hs_etl_jit *jits;                      /* JIT-compiled methods, in the order they came */
    uint32_t njits;
    uint64_t *frames;                      /* the frame pool every stack points into */
    uint32_t nframes;
    hs_etl_stack_stats stacks;
    void *priv;                            /* strings and lookup tables */
} hs_etl_trace;

/* Decode a whole file. Returns 0, or -1 with err filled (the trace is then
 * empty; hs_etl_trace_free is still safe). */
int hs_etl_read_file(const char *path, hs_etl_trace *t, hs_etl_error *err);
/* The same for a file's bytes in memory (they must stay valid during the call). */
int hs_etl_read_mem(const void *data, size_t size, hs_etl_trace *t, hs_etl_error *err);
/* The same for an open stream (e.g. from _wfopen for a path that is not
 * ASCII on Windows); the caller closes it. */
int hs_etl_read_fp(FILE *fp, hs_etl_trace *t, hs_etl_error *err);
void hs_etl_trace_free(hs_etl_trace *t);

/* The depth of a stack, and its frame i (leaf first). */
static inline uint32_t hs_etl_stack_depth(const hs_etl_stack *s)
{
    return (uint32_t)s->kern_depth + s->user_depth;
}
static inline uint64_t hs_etl_stack_frame(const hs_etl_trace *t, const hs_etl_stack *s, uint32_t i)
{
    return i < s->kern_depth ? t->frames[s->kern_frames + i] : t->frames[s->user_frames + (i - s->kern_depth)];
}
/* The same for a sample's stack. */
static inline uint32_t hs_etl_depth(const hs_etl_sample *s)
{
    return hs_etl_stack_depth(&s->stack);
}
static inline uint64_t hs_etl_frame(const hs_etl_trace *t, const hs_etl_sample *s, uint32_t i)
{
    return hs_etl_stack_frame(t, &s->stack, i);
}

/* Whether addr is a kernel address in this trace. */
static inline int hs_etl_is_kernel(const hs_etl_trace *t, uint64_t addr)
{
    return addr >= t->kernel_boundary;
}

/* The image containing addr at time ts: for a kernel address one of the
 * kernel images, else one mapped into process pid. NULL if none. */
const hs_etl_image *hs_etl_image_at(const hs_etl_trace *t, uint32_t pid, uint64_t addr, uint64_t ts);
/* The JIT-compiled method of process pid whose code held addr at time ts
 * (of several, the one loaded last), or NULL. */
const hs_etl_jit *hs_etl_jit_at(const hs_etl_trace *t, uint32_t pid, uint64_t addr, uint64_t ts);
/* The process record pid had at time ts, or NULL. */
const hs_etl_process *hs_etl_process_at(const hs_etl_trace *t, uint32_t pid, uint64_t ts);
/* Seconds from the first event to ts (0 if the clock is unknown). */
double hs_etl_seconds(const hs_etl_trace *t, uint64_t ts);

#endif
