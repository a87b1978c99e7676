/*
 * hookscope/session.h - the contract between hookscope.exe (the injector)
 * and the agent DLL inside the target: one shared-memory section.
 *
 * The injector creates the section (SEC_RESERVE, so only what is used is
 * committed), writes the header and the configuration, and keeps a view of
 * it for as long as it runs: everything the agent counts lives here, so a
 * crash or a kill of the target loses nothing that was counted.
 *
 * The section has no name and a DACL that admits only hookscope's own
 * user: no other process can open it, or create it first. The agent gets
 * it as a handle the injector duplicated into the target (hs_agent_init's
 * argument), and so gets the function service's two events (fn_*_event).
 * The target can write every byte of it, at any time: hookscope.exe keeps
 * its own copy of the layout and the configuration, and reads what the
 * agent wrote as untrusted input (injector/profile/from_session.h).
 *
 *   [header][module table][function table][thread slots][regions ...]
 *
 * Every part is found through offsets in the header, so the injector
 * reads whatever layout the header describes. Per-thread data lives in
 * "regions": one per thread that ever called a hooked function, written
 * only by that thread (no atomics, no shared cache lines on the hot path),
 * plus one shared overflow region updated with atomic adds when the slots
 * run out. The injector sums all regions.
 *
 * Only fixed-size integer types and UTF-16 strings cross the boundary.
 */
#ifndef HOOKSCOPE_SESSION_H
#define HOOKSCOPE_SESSION_H

#include <stdint.h>

#include "hookscope/tl_head.h"

#define HS_SESSION_MAGIC 0x315353455353484Bull /* "KHSSESS1" */
#define HS_SESSION_VERSION 4

#define HS_MAX_PATTERNS 32
#define HS_PATTERN_LEN 260
#define HS_PATH_LEN 520
#define HS_ERROR_LEN 512
#define HS_PAGE 4096u

/* options (hs_session_header.options) */
enum {
    HS_OPT_EDGES = 1u << 0,   /* caller edges */
    HS_OPT_STACKS = 1u << 1,  /* entry stacks */
    HS_OPT_TIME = 1u << 2,    /* return probes with durations */
    HS_OPT_ATTACH = 1u << 3,  /* injected into a running process */
    /* for the tests of the failure path (set when the environment has
     * HOOKSCOPE_TEST_STUCK_FREEZE=1): the freeze that puts the modules'
     * hooks in behaves as if a thread never stopped */
    HS_OPT_TEST_STUCK_FREEZE = 1u << 4,
    HS_OPT_TIMELINE = 1u << 5, /* --timeline: every timed call as an event (hs_tl_event) */
};

/* agent states */
enum {
    HS_AGENT_NONE = 0,     /* not loaded yet */
    HS_AGENT_LOADED = 1,   /* DllMain ran, session attached */
    HS_AGENT_READY = 2,    /* initial modules hooked */
    HS_AGENT_FAILED = 3,   /* see error_text */
    HS_AGENT_DETACHED = 4, /* hooks removed */
};

/* module flags */
enum {
    HS_MOD_MAIN = 1u << 0,      /* the target's exe */
    HS_MOD_HOOKED = 1u << 1,    /* its functions were hooked */
    HS_MOD_UNLOADED = 1u << 2,  /* FreeLibrary'd while tracing */
    HS_MOD_LATE = 1u << 3,      /* loaded after the agent started */
    HS_MOD_FAILED = 1u << 4,    /* hooking failed as a whole, see status */
    HS_MOD_UNHOOKED = 1u << 5,  /* hooks removed (detach) */
    HS_MOD_AGENT = 1u << 6,     /* hookscope's own agent */
};
/* A module with none of HS_MOD_HOOKED / HS_MOD_FAILED and pattern < 0 was
 * only recorded: loaded in the target, not traced (callers and stack
 * frames in it are named from it). */

typedef struct hs_module_rec {
    uint64_t base;
    uint32_t size;
    uint32_t timestamp;          /* PE header TimeDateStamp, to match the file */
    uint32_t first_func;         /* index of its first function in the table */
    uint32_t n_funcs;            /* functions found */
    uint32_t n_hooked;
    uint32_t flags;              /* HS_MOD_* */
    int32_t pattern;             /* which -m pattern matched, -1 for none */
    int32_t status;              /* 0 or a Win32 error when HS_MOD_FAILED */
    uint64_t install_ticks;      /* rdtsc ticks spent hooking it */
    uint32_t skip_counts[32];    /* functions not hooked, by hs_skip_reason */
    uint32_t patch_counts[8];    /* hooked functions, by hs_patch_kind */
    uint32_t entry_only_counts[16]; /* hooked with entry probe only, by reason */
    uint16_t path[HS_PATH_LEN];  /* full path, UTF-16 */
    /* where its hooks' code is (for a sampler): the arena chunk with its
     * stubs, trampolines and their unwind data, and the RUNTIME_FUNCTION
     * table registered for them (RVAs from arena_base); 0: none */
    uint64_t arena_base;
    uint32_t arena_size;
    uint32_t unwind_count;
    uint64_t unwind_table;
} hs_module_rec;

/* function flags */
enum {
    HS_FUNC_HOOKED = 1u << 0,
    HS_FUNC_WRAPPED = 1u << 2,   /* return probe (wrapper frame) installed */
};

typedef struct hs_func_rec {
    uint32_t module;             /* index into the module table */
    uint32_t rva;
    uint32_t size;
    uint8_t skip_reason;         /* hs_skip_reason */
    uint8_t patch_kind;          /* hs_patch_kind */
    uint8_t entry_only;          /* hs_entry_only_reason when hooked without wrapper */
    uint8_t flags;               /* HS_FUNC_* */
    /* its slot in the module's arena (hooked functions; slot_len 0: none):
     * [arena_base + slot_off, + slot_len) holds its wrapper descriptor
     * first when HS_FUNC_WRAPPED, its stub, and its trampoline at
     * tramp_off from the slot's start */
    uint32_t slot_off;
    uint16_t slot_len;
    uint16_t tramp_off;
} hs_func_rec;

/* One function of a module as the injector lists it for the agent (the
 * function service): the agent hooks exactly these, so the functions found
 * (.pdata, exports, COFF symbols, the PDB's procedures with their exact
 * extents) and the names the filters see are the injector's: the same as
 * every report's. Fragments (chained .pdata) are listed too, never hooked. */
enum {
    HS_FNE_ADMIT = 1u << 0,          /* the filters keep it */
    HS_FNE_RETURNS_TWICE = 1u << 1,  /* named like setjmp (hook/names.h) */
    HS_FNE_STACK_PROBE = 1u << 2,    /* named like __chkstk */
};
typedef struct hs_fn_entry {
    uint32_t rva, size;
    uint32_t gap_before, gap_after;  /* bytes to the neighbouring code */
    uint32_t unwind_rva;             /* its UNWIND_INFO, 0 if none */
    uint16_t src;                    /* HS_SRC_* (hook/pe.h) */
    uint8_t flags;                   /* HS_FNE_* */
    uint8_t reserved;
} hs_fn_entry;

/* The frame data of a 32-bit (i386) module's code, sent with its function
 * list (fn_frames_pdb, fn_frames_cfi): x86 code keeps no unwind tables in
 * its image, and a function without a frame pointer hides its caller from
 * the ebp chain, so the 32-bit agent's entry stacks walk with the frame
 * data the injector reads from the image's PDB (FPO and FrameData
 * records) and its `.eh_frame` (gcc's; its section name lives in the COFF
 * string table, which is not mapped), as the sampler does
 * (hook/unwind/unwind32.h's hs_uw32_frame_data, one record each). */
enum {
    HS_FRAME32_USES_EBP = 1u << 0,   /* ebp is its frame pointer: the chain holds */
};
typedef struct hs_frame32_entry {
    uint32_t rva, end;               /* the code it describes, [rva, end) */
    uint32_t prolog, locals, saved_regs, params, ebp_saved_at;   /* bytes (hs_uw32_frame_data) */
    uint32_t flags;                  /* HS_FRAME32_* */
} hs_frame32_entry;

/* The function service's events (auto-reset, unnamed): the agent sets
 * the request event after writing fn_request, the injector the answer
 * event after writing the list. The injector duplicates both into the
 * target and writes their handles there into fn_request_event and
 * fn_answer_event before the agent starts. */

/* thread slot states */
enum { HS_SLOT_FREE = 0, HS_SLOT_LIVE = 1, HS_SLOT_EXITED = 2 };

typedef struct hs_thread_slot {
    uint32_t tid;
    uint32_t state;
} hs_thread_slot;

/* A per-thread region starts with this header; the counters follow at
 * header.region_counters_off. The thread's TLS slot points at its
 * counters, so the entry stub needs one load to find them. */
typedef struct hs_region_hdr {
    uint32_t tid;
    uint32_t slot;
    uint32_t committed_funcs;    /* counters committed so far */
    uint32_t edges_used;         /* entries in the edge table */
    uint64_t edges_overflowed;   /* edges counted in the overflow region (table full) */
    uint32_t stacks_used;        /* entries in the stack table */
    uint32_t frames_used;        /* frames in the frame pool */
    uint64_t stacks_dropped;     /* captures lost: table or pool full */
    uint64_t shadow_base;        /* --time: shadow stack, as addresses in the target */
    uint64_t shadow_top;         /*   next free entry */
    uint64_t shadow_limit;       /*   end (0: no timing on this thread, e.g. the sink) */
    uint64_t time_dropped;       /* calls not timed: shadow stack full */
    uint64_t excluded;           /* rdtsc ticks this thread spent in hookscope's own slow
                                    paths (entry stacks, new edges, a region for a new
                                    thread): with --time taken out of every duration they
                                    fall in */
    uint64_t stack_ticks;        /* the part of `excluded` spent capturing entry stacks:
                                    weighed against the program's own time */
    /* --timeline: the thread's ring of hs_tl_event, filled by the wrapper
     * (tl_head, the events written so far) and emptied by the injector
     * (tl_tail, the events it took); an event that finds it full waits
     * for room up to tl_wait_limit (--timeline-wait), then is dropped and
     * counted, with the range of times the drops cover */
    uint64_t tl_base;            /* the ring, as an address in the target; 0: no timeline */
    uint64_t tl_cap;             /* events it holds (a power of two; 0: every event is dropped) */
    uint64_t tl_head;
    uint64_t tl_dropped;
    uint64_t tl_drop_first;      /* rdtsc: the earliest start of a dropped call */
    uint64_t tl_drop_last;       /*   the latest end */
    uint64_t tl_min_ticks;       /* calls shorter than this leave no event (--timeline-min-duration) */
    uint64_t tl_depths;          /* calls at this depth or deeper leave no event (--timeline-depth) */
    uint64_t tl_filtered;        /* calls the two left out */
    uint64_t tl_wait_limit;      /* rdtsc ticks a full ring is waited for (0: never) */
    uint64_t tl_waits;           /* times the ring was found full and waited for */
    uint64_t tl_wait_ticks;      /*   the ticks spent waiting (in `excluded` too) */
    uint64_t tl_wait_stuck;      /* the tail + 1 when a wait last gave up: no wait again until
                                    the injector takes events (0: none gave up) */
    uint64_t tl_tail;            /* written by the injector only (a cache line of its own) */
} hs_region_hdr;

/* --timeline: one call, written at its exit (the order of events on a
 * thread is the order of the exits). t0 and t1 are the raw rdtsc at entry
 * and exit, so that calls nest exactly; ticks is the duration --time
 * counted (hookscope's slow paths inside the call taken out). depth: the
 * timed calls open on the thread around it. A ring's first event, and the
 * first after its region passed to another thread, has func HS_TL_THREAD
 * and names the thread (t0 = its id). */
#define HS_TL_THREAD 0xFFFFFFFFu
typedef struct hs_tl_event {
    uint64_t t0, t1, ticks;
    uint32_t func, depth;
} hs_tl_event;

/* A function's block in a thread's region: its call count, and with edges
 * on, its first three callers in place (the common edges are counted in
 * the cache line the call count is in; more callers go to the region's
 * edge table). Without edges a block is only the count (8 bytes). */
#define HS_INLINE_EDGES 3
typedef struct hs_fblock {
    uint64_t count;
    struct {
        uint64_t site;           /* return address in the caller; 0: free */
        uint64_t count;
    } edge[HS_INLINE_EDGES];
    uint64_t reserved;
} hs_fblock;

/* One caller edge: call site (return address) -> callee, counted. The
 * table is open-addressed by a hash of both; site 0 is an empty slot. */
typedef struct hs_edge_rec {
    uint64_t site;               /* return address in the caller */
    uint32_t callee;             /* function index */
    uint32_t reserved;
    uint64_t count;
    uint64_t reserved2;
} hs_edge_rec;

/* One unique entry stack of one function, counted. Its frames (return
 * addresses, leaf first, frame 0 = the function's entry) are in the
 * region's frame pool at [frames, frames + depth). */
typedef struct hs_stack_rec {
    uint64_t hash;               /* 0: empty slot */
    uint32_t func;
    uint16_t depth;
    uint16_t truncated;          /* the walk went deeper than --stacks=DEPTH */
    uint64_t count;
    uint32_t frames;
    uint32_t reserved;
} hs_stack_rec;

/* --time: durations of one function on one thread, in rdtsc ticks. A
 * duration never includes hookscope's own slow paths (hs_region_hdr.excluded).
 * Per call: exits, sum, min, max, hist, unwinds; per activation: self; per
 * outermost activation (no other activation of the function open on the
 * thread, as pprof and perf count cumulative time): total. */
#define HS_HIST_BUCKETS 40       /* bucket k: [2^k, 2^(k+1)) ns; the last one is open */
typedef struct hs_time_rec {
    uint64_t exits;              /* calls that returned or were unwound */
    uint64_t total;              /* inclusive ticks of the outermost activations */
    uint64_t self;               /* inclusive minus timed children on this thread */
    uint64_t min, max;           /* inclusive ticks (min valid if exits > 0) */
    uint64_t unwinds;            /* exits by exception or longjmp */
    uint64_t pending;            /* the last duration not yet in hist (0: none): the
                                    wrapper files each duration at the next exit, so
                                    that its histogram store does not wait for rdtsc */
    uint64_t active;             /* activations open on this thread (recursion depth) */
    uint64_t sum;                /* inclusive ticks of every call (for the average) */
    uint64_t hist[HS_HIST_BUCKETS];
} hs_time_rec;

/* The histogram bucket of a duration of `ticks`: floor(log2(ns)), at
 * most HS_HIST_BUCKETS - 1, with ns = (ticks * mult) >> 32 (mult:
 * hs_session_header.tsc_ns_mult). Shared by the wrapper and the injector. */
static inline uint32_t hs_hist_bucket(uint64_t ticks, uint64_t mult)
{
    /* the 128-bit product from 32-bit halves (a 32-bit agent has no
     * 128-bit type): bits 32..95, or the top bucket when wider */
    uint64_t t0 = (uint32_t)ticks, t1 = ticks >> 32, m0 = (uint32_t)mult, m1 = mult >> 32;
    uint64_t p01 = t0 * m1, p10 = t1 * m0;
    uint64_t mid = ((t0 * m0) >> 32) + (uint32_t)p01 + (uint32_t)p10;
    uint64_t high = t1 * m1 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);   /* bits 64..127 */
    if (high >> 32)
        return HS_HIST_BUCKETS - 1;
    uint64_t v = (high << 32 | (uint32_t)mid) | 1;
    uint32_t b = 63 - (uint32_t)__builtin_clzll(v);
    return b < HS_HIST_BUCKETS ? b : HS_HIST_BUCKETS - 1;
}

/* Add the durations of `from` (one thread's record) to `into`, filing
 * from's pending duration into the histogram. `into` must not be written
 * concurrently; from's pending stays as it is. */
static inline void hs_time_rec_merge(hs_time_rec *into, const hs_time_rec *from, uint64_t mult)
{
    if (!from->exits)
        return;
    if (!into->exits || from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
    into->exits += from->exits;
    into->total += from->total;
    into->sum += from->sum;
    into->self += from->self;
    into->unwinds += from->unwinds;
    for (int b = 0; b < HS_HIST_BUCKETS; b++)
        into->hist[b] += from->hist[b];
    if (from->pending)
        into->hist[hs_hist_bucket(from->pending, mult)]++;
}

/* --time: one open call on a thread's shadow stack. */
typedef struct hs_shadow_rec {
    uint64_t desc;               /* the function's wrapper descriptor (agent) */
    uint64_t t0;                 /* rdtsc at entry */
    uint64_t child;              /* ticks of timed children so far */
    uint64_t frame;              /* the wrapper frame's rbp: matches it at exit and unwind
                                    (32-bit agent: the entry esp, where the return address was) */
    uint64_t t1;                 /* rdtsc at exit (scratch of the wrapper, for --timeline) */
    uint64_t ret;                /* 32-bit agent: the caller's true return address (its
                                    slot holds the return thunk's) */
    uint32_t func;
    uint32_t reserved;
    uint64_t excluded;           /* the region's `excluded` at entry */
} hs_shadow_rec;

typedef struct hs_session_header {
    uint64_t magic;
    uint32_t version;
    uint32_t header_size;
    uint64_t total_size;         /* bytes reserved for the section */

    /* layout: offsets from the start of the section */
    uint64_t modules_off;
    uint32_t max_modules, module_rec_size;
    uint64_t funcs_off;
    uint32_t max_functions, func_rec_size;
    uint64_t slots_off;
    uint32_t max_threads, slot_size;
    uint64_t regions_off;        /* region k at regions_off + k * region_size */
    uint64_t region_size;        /* k == max_threads is the shared overflow region */
    uint64_t region_counters_off;/* offsets within a region: the function blocks */
    uint64_t region_edges_off;
    uint32_t region_edges_cap;   /* power of two */
    uint32_t reserved0;
    uint64_t region_countdown_off; /* uint32 per function: calls left until the next stack capture */
    uint64_t region_stacks_off;  /* hs_stack_rec[region_stacks_cap], power of two */
    uint32_t region_stacks_cap;
    uint32_t region_frames_cap;  /* uint64 frames in the pool */
    uint64_t region_frames_off;
    uint64_t region_time_off;    /* hs_time_rec per function */
    uint64_t region_shadow_off;  /* hs_shadow_rec[region_shadow_cap] */
    uint32_t region_shadow_cap;
    uint32_t region_fblock;      /* bytes per function block: 8, or sizeof(hs_fblock) with edges */

    /* configuration, written by the injector before the agent starts */
    uint32_t options;            /* HS_OPT_* */
    uint32_t stack_depth;
    uint32_t stack_every;        /* capture every Nth call per function */
    uint32_t n_patterns;
    uint16_t patterns[HS_MAX_PATTERNS][HS_PATTERN_LEN]; /* -m module names */
    uint32_t injector_pid;
    uint32_t target_pid;

    /* written by the agent */
    volatile int32_t agent_state;   /* HS_AGENT_* */
    volatile int32_t agent_error;   /* Win32 error or 0 */
    char error_text[HS_ERROR_LEN];  /* UTF-8, one line */
    uint64_t agent_base;            /* where the agent DLL is loaded */
    volatile uint32_t n_modules;
    volatile uint32_t n_functions;
    volatile int32_t threads_used;  /* slots handed out (may exceed max_threads) */
    uint32_t tls_index;
    uint32_t pattern_matched;       /* bit i: pattern i matched a loaded module */
    uint64_t tsc_start;             /* rdtsc when the agent started */
    volatile uint32_t stop_requested;
    uint32_t reserved1;
    uint64_t install_ticks_total;
    volatile int64_t overflow_calls;  /* calls counted in the overflow region */
    volatile uint32_t threads_moved;  /* threads moved into/out of trampolines while patching */
    volatile uint32_t freezes;        /* times the other threads were frozen to patch */
    double tsc_hz;                    /* rdtsc ticks per second, measured by the agent */
    uint64_t tsc_ns_mult;             /* ns = (ticks * mult) >> 32, for histogram buckets */
    /* threads hookscope created in the target (written by the injector
     * before they run): whatever they call is not the target's doing */
    volatile uint32_t injector_tids[16];
    /* function filters (-f include, -x exclude), UTF-8 */
    uint32_t n_filters;
    uint32_t filter_exclude;          /* bit i: filter i excludes */
    char filters[32][256];
    volatile uint32_t filter_matched; /* bit i: filter i matched some function (agent) */
    volatile uint32_t regions_reused; /* regions of exited threads folded and given to others */
    /* the function service (hs_fn_entry): the agent asks for the functions
     * of module record i by writing fn_request = seq << 16 | (i + 1), a new
     * seq each time; the injector answers in fn_list with fn_count entries
     * (-1: no list; the agent then finds the functions itself, from the
     * image) and echoes the request in fn_answered; for a 32-bit module
     * with --stacks, fn_frames_pdb then fn_frames_cfi hs_frame32_entry at
     * fn_frames_off (hs_session_fn_frames), each part sorted by rva */
    volatile uint32_t fn_service;     /* the injector serves requests (its events exist) */
    volatile uint32_t fn_request;
    volatile uint32_t fn_answered;
    volatile int32_t fn_count;
    uint32_t fn_list_cap;
    uint64_t fn_list_off;
    uint64_t fn_request_event;        /* the events, as handles of the target (the injector's */
    uint64_t fn_answer_event;         /*   duplicates, written before the agent starts) */
    /* threads the agent started in the target (its freeze workers), for
     * a sampler, which never samples them; 0: a free entry */
    volatile uint32_t agent_tids[8];
    /* the agent's thread freezes (hook/suspend/threads_win.h), for -v and for
     * saying why one failed */
    uint32_t freeze_rounds;           /* rounds of suspending every thread, over all freezes */
    uint32_t freeze_timeouts;         /* contexts that did not come within a round */
    uint32_t freeze_failures;         /* freezes given up (their budget spent) */
    uint32_t freeze_ms_max;           /* the longest freeze took this long to stop everyone */
    uint32_t freeze_ms_total;
    uint32_t freeze_stuck_tid;        /* the last thread whose context did not come */
    /* how the target ended, as the agent saw it from inside (agent/exitwatch.c) */
    volatile uint32_t end_watch;      /* HS_END_WATCH_*: what the agent watches */
    volatile uint32_t end_seen;       /* HS_END_*: what it saw */
    uint32_t end_code;                /* the unhandled exception's code */
    uint32_t end_tid;                 /*   on this thread */
    uint64_t end_addr;                /*   at this address */
    uint32_t end_exit_code;           /* the code the process asked to end with */
    volatile uint32_t timeline_wait_ms; /* --timeline-wait: how long a thread waits for room in its
                                       full ring (0: never; the injector sets it to 0 when it
                                       stops taking events) */
    /* the agent's timing wrapper, for a sampler that finds a thread in it
     * (agent/wrapper.S): [wrap_begin, wrap_rsi) rbp holds the timed
     * function's descriptor, [wrap_rsi, wrap_gone) rsi does, [wrap_gone,
     * wrap_end) neither; wrap_ret is its call's return address */
    uint64_t wrap_begin, wrap_rsi, wrap_gone, wrap_end, wrap_ret;
    /* rdtsc ticks of each step of installing hooks, summed over modules
     * (HS_STEP_*; agent/install.c), for -v */
    uint64_t install_step_ticks[16];
    /* --timeline: each region's ring of hs_tl_event (layout) */
    uint64_t region_timeline_off;
    uint32_t region_timeline_cap;     /* events, a power of two */
    uint32_t timeline_depths;         /* --timeline-depth N (0: every depth) */
    uint64_t timeline_min_ns;         /* --timeline-min-duration (0: every call) */
    /* the agent's own work at the target's threads' starts and ends
     * (HS_THREAD_*; agent/dllmain.c, probes.c, exitwatch.c): rdtsc ticks
     * summed over threads, and how many times, for -v */
    volatile uint64_t thread_cost_ticks[4];
    volatile uint32_t thread_cost_count[4];
    volatile uint32_t thread_cost_hist[4][128];  /* how many took ticks in each hs_cost_bucket */
    /* the function service's frame data of a 32-bit module (hs_frame32_entry, at
     * fn_frames_off, room for fn_frames_cap; 0: none is sent) */
    volatile int32_t fn_frames_pdb;   /* records from its PDB */
    volatile int32_t fn_frames_cfi;   /* rows of its .eh_frame */
    uint32_t fn_frames_cap;
    uint32_t reserved2;
    uint64_t fn_frames_off;
} hs_session_header;

/* thread_cost_hist: four buckets to each doubling of rdtsc ticks (a
 * median within 25%, which a few preempted threads do not move as they
 * move a mean). */
#define HS_COST_BUCKETS 128
static inline uint32_t hs_cost_bucket(uint64_t ticks)
{
    if (ticks < 4)
        return (uint32_t)ticks;
    uint32_t msb = 63 - (uint32_t)__builtin_clzll(ticks);
    uint32_t b = (msb - 1) * 4 + (uint32_t)((ticks >> (msb - 2)) & 3);
    return b < HS_COST_BUCKETS ? b : HS_COST_BUCKETS - 1;
}

/* The fewest ticks of bucket b. */
static inline uint64_t hs_cost_bucket_low(uint32_t b)
{
    return b < 4 ? b : (uint64_t)(4 + b % 4) << (b / 4 - 1);
}

/* thread_cost_ticks: the agent's work on a thread of the target */
enum {
    HS_THREAD_ATTACH,   /* its DLL_THREAD_ATTACH */
    HS_THREAD_REGION,   /* its first hooked call: a region taken (the slow path) */
    HS_THREAD_EXIT,     /* its RtlExitUserThread (the detour) */
    HS_THREAD_DETACH,   /* its DLL_THREAD_DETACH: the region given back */
    HS_THREAD_COSTS
};

/* install_step_ticks: the steps of hooking a module, in their order */
enum {
    HS_STEP_OPEN,       /* its PE, its file, its module record */
    HS_STEP_LIST,       /* its functions: the injector's list (asked and waited for) or the image's */
    HS_STEP_RECORDS,    /* the function records and per-function arrays */
    HS_STEP_ANALYZE,    /* names, filters, analysis of every function */
    HS_STEP_SIZE,       /* tail jump slots, stub sizes */
    HS_STEP_EMIT,       /* the arena chunk, stubs and trampolines */
    HS_STEP_UNWIND,     /* the module's state, the stubs' unwind data registered */
    HS_STEP_PATCH,      /* the entries patched, the other threads frozen (not in install_ticks) */
    HS_STEPS
};

/* end_watch: the detours in place */
enum {
    HS_END_WATCH_UNHANDLED = 1u << 0, /* UnhandledExceptionFilter */
    HS_END_WATCH_EXIT = 1u << 1,      /* NtTerminateProcess */
    HS_END_WATCH_ABORT = 1u << 2,     /* abort() of msvcrt or ucrtbase */
    HS_END_WATCH_LAST = 1u << 3,      /* RtlExitUserThread, and threads left */
};

/* end_seen */
enum {
    HS_END_UNHANDLED = 1u << 0,       /* an exception nothing handled (end_code, end_addr) */
    HS_END_EXIT = 1u << 1,            /* the process ended itself (end_exit_code) */
    HS_END_ABORT = 1u << 2,           /* abort() was called */
    HS_END_VANISHED = 1u << 3,        /* its last thread ended without exiting (Wine: a stack
                                         overflow with no room to report it); the agent
                                         ended the process */
};

/* What a loaded agent says about itself, for the next hookscope that
 * finds it in the process (an exported variable of the agent DLL,
 * hs_agent_public, read with ReadProcessMemory). An agent stays loaded
 * after a detach while timed calls that entered its wrapper are still
 * running (they return into it); a later attach reuses it with a session
 * of its own (hs_agent_reattach). */
#define HS_PUBLIC_MAGIC 0x3142555048534B48ull /* "HKSHPUB1" */
enum {
    HS_PUBLIC_NONE = 0,
    HS_PUBLIC_ACTIVE = 1,     /* serving the session of `injector_pid` */
    HS_PUBLIC_RESIDENT = 2,   /* detached (every patch out), kept for open timed calls */
    HS_PUBLIC_SWITCHING = 3,  /* a hookscope is taking it over */
};

typedef struct hs_agent_public {
    uint64_t magic;
    uint32_t version;            /* HS_SESSION_VERSION */
    volatile uint32_t state;     /* HS_PUBLIC_* */
    volatile uint32_t injector_pid; /* of the session being served (or last served) */
    volatile uint32_t sessions;  /* sessions served so far */
    volatile uint64_t frames_open; /* timed calls open at the last detach */
    volatile uint64_t session_handle; /* the section being served, as a handle of this process: a
                                         later hookscope duplicates it to take over an agent whose
                                         hookscope ended without detaching */
} hs_agent_public;

/* Accessors for the agent, which trusts the header it maps (it is the
 * injector's). `base` is the start of the view. hookscope.exe never
 * follows the view's header: it reads through injector/profile/
 * from_session.h, with its own copy of the layout. */
static inline hs_module_rec *hs_session_module(void *base, uint32_t i)
{
    hs_session_header *h = (hs_session_header *)base;
    return (hs_module_rec *)((char *)base + h->modules_off + (uint64_t)i * h->module_rec_size);
}

static inline hs_func_rec *hs_session_func(void *base, uint32_t i)
{
    hs_session_header *h = (hs_session_header *)base;
    return (hs_func_rec *)((char *)base + h->funcs_off + (uint64_t)i * h->func_rec_size);
}

static inline hs_fn_entry *hs_session_fn_list(void *base)
{
    hs_session_header *h = (hs_session_header *)base;
    return (hs_fn_entry *)((char *)base + h->fn_list_off);
}

static inline hs_frame32_entry *hs_session_fn_frames(void *base)
{
    hs_session_header *h = (hs_session_header *)base;
    return (hs_frame32_entry *)((char *)base + h->fn_frames_off);
}

static inline hs_thread_slot *hs_session_slot(void *base, uint32_t i)
{
    hs_session_header *h = (hs_session_header *)base;
    return (hs_thread_slot *)((char *)base + h->slots_off + (uint64_t)i * h->slot_size);
}

static inline char *hs_session_region(void *base, uint32_t k)
{
    hs_session_header *h = (hs_session_header *)base;
    return (char *)base + h->regions_off + (uint64_t)k * h->region_size;
}

static inline uint64_t *hs_region_counters(void *base, uint32_t k)
{
    hs_session_header *h = (hs_session_header *)base;
    return (uint64_t *)(hs_session_region(base, k) + h->region_counters_off);
}

/* Function i's block in the function blocks starting at `counters`
 * (its call count is the first word). */
static inline uint64_t *hs_fblock_at(const hs_session_header *h, uint64_t *counters, uint32_t i)
{
    return (uint64_t *)((char *)counters + (uint64_t)i * h->region_fblock);
}

static inline hs_edge_rec *hs_region_edges(void *base, uint32_t k)
{
    hs_session_header *h = (hs_session_header *)base;
    return (hs_edge_rec *)(hs_session_region(base, k) + h->region_edges_off);
}

/* The first page of every region holds its hs_region_hdr; its bytes from
 * HS_REGION_AGENT_OFF to the end are the agent's own (the stack walk's
 * cache), which the injector never reads. */
#define HS_REGION_AGENT_OFF 512u

/* Round up to a page. */
static inline uint64_t hs_page_up(uint64_t n) { return (n + HS_PAGE - 1) & ~(uint64_t)(HS_PAGE - 1); }

/* Capacities of one session, chosen by the injector. */
typedef struct hs_capacity {
    uint32_t modules, functions, threads;
    uint32_t fblock;     /* bytes per function block (8, or sizeof(hs_fblock) with edges) */
    uint32_t edges;      /* per thread, power of two */
    uint32_t stacks;     /* per thread, power of two */
    uint32_t frames;     /* per thread */
    uint32_t shadow;     /* per thread: deepest timed nesting */
    uint32_t timeline;   /* per thread: events in the ring (a power of two), 0: none */
    uint32_t x86_frames; /* 1: room for a 32-bit module's frame data (hs_frame32_entry), sent
                            with its function list for the entry stacks; 0: none */
} hs_capacity;

/* One layout for a 64-bit and a 32-bit agent (hookscope.exe, always
 * 64-bit, reads both): every field of fixed width, no pointer or size_t,
 * 64-bit fields 8-aligned in both. The sizes here hold in every build;
 * test_session_layout compares every field's offset as the x86-64 and
 * the i686 compilers lay them out. */
_Static_assert(sizeof(hs_module_rec) == 1336, "hs_module_rec");
_Static_assert(sizeof(hs_func_rec) == 24, "hs_func_rec");
_Static_assert(sizeof(hs_fn_entry) == 24, "hs_fn_entry");
_Static_assert(sizeof(hs_frame32_entry) == 32, "hs_frame32_entry");
_Static_assert(sizeof(hs_thread_slot) == 8, "hs_thread_slot");
_Static_assert(sizeof(hs_region_hdr) == 200, "hs_region_hdr");
_Static_assert(sizeof(hs_tl_event) == 32, "hs_tl_event");
_Static_assert(sizeof(hs_fblock) == 64, "hs_fblock");
_Static_assert(sizeof(hs_edge_rec) == 32, "hs_edge_rec");
_Static_assert(sizeof(hs_stack_rec) == 32, "hs_stack_rec");
_Static_assert(sizeof(hs_time_rec) == 392, "hs_time_rec");
_Static_assert(sizeof(hs_shadow_rec) == 64, "hs_shadow_rec");
_Static_assert(sizeof(hs_session_header) == 28160, "hs_session_header");
_Static_assert(sizeof(hs_agent_public) == 40, "hs_agent_public");
_Static_assert(sizeof(hs_capacity) == 40, "hs_capacity");

/* Entries of the function service's list for a table of `functions`:
 * one module's list at a time, fragments too. */
static inline uint32_t hs_fn_list_cap(uint32_t functions) { return functions * 2 + 4096; }

/* Entries of room for a 32-bit module's frame data (hs_frame32_entry):
 * gcc's .eh_frame has some 8 rows a function (a row per push and pop). */
static inline uint32_t hs_fn_frames_cap(uint32_t functions) { return functions * 10 + 4096; }

/* Compute the layout for the given capacities; fills the layout fields
 * of `h` and returns the total size to reserve. Shared so both sides
 * agree (and tests can build a session themselves). Only what the
 * options use is ever committed. */
static inline uint64_t hs_session_layout(hs_session_header *h, const hs_capacity *c)
{
    uint64_t off = hs_page_up(sizeof(hs_session_header));
    h->header_size = (uint32_t)sizeof(hs_session_header);
    h->modules_off = off;
    h->max_modules = c->modules;
    h->module_rec_size = (uint32_t)sizeof(hs_module_rec);
    off = hs_page_up(off + (uint64_t)c->modules * sizeof(hs_module_rec));
    h->funcs_off = off;
    h->max_functions = c->functions;
    h->func_rec_size = (uint32_t)sizeof(hs_func_rec);
    off = hs_page_up(off + (uint64_t)c->functions * sizeof(hs_func_rec));
    h->fn_list_off = off;
    h->fn_list_cap = hs_fn_list_cap(c->functions);
    off = hs_page_up(off + (uint64_t)h->fn_list_cap * sizeof(hs_fn_entry));
    h->fn_frames_off = off;          /* that module's frame data */
    h->fn_frames_cap = c->x86_frames ? hs_fn_frames_cap(c->functions) : 0;
    off = hs_page_up(off + (uint64_t)h->fn_frames_cap * sizeof(hs_frame32_entry));
    h->slots_off = off;
    h->max_threads = c->threads;
    h->slot_size = (uint32_t)sizeof(hs_thread_slot);
    off = hs_page_up(off + (uint64_t)(c->threads + 1) * sizeof(hs_thread_slot));
    h->regions_off = off;

    uint64_t r = HS_PAGE;                       /* the region header */
    h->region_counters_off = r;
    h->region_fblock = c->fblock ? c->fblock : 8;
    r = hs_page_up(r + (uint64_t)c->functions * h->region_fblock);
    h->region_countdown_off = r;
    r = hs_page_up(r + (uint64_t)c->functions * 4);
    h->region_edges_off = r;
    h->region_edges_cap = c->edges;
    r = hs_page_up(r + (uint64_t)c->edges * sizeof(hs_edge_rec));
    h->region_stacks_off = r;
    h->region_stacks_cap = c->stacks;
    r = hs_page_up(r + (uint64_t)c->stacks * sizeof(hs_stack_rec));
    h->region_frames_off = r;
    h->region_frames_cap = c->frames;
    r = hs_page_up(r + (uint64_t)c->frames * 8);
    h->region_time_off = r;     /* time records only when timing (shadow > 0) */
    r = hs_page_up(r + (c->shadow ? (uint64_t)c->functions * sizeof(hs_time_rec) : 0));
    h->region_shadow_off = r;
    h->region_shadow_cap = c->shadow;
    r = hs_page_up(r + (uint64_t)c->shadow * sizeof(hs_shadow_rec));
    h->region_timeline_off = r;
    h->region_timeline_cap = c->timeline;
    r = hs_page_up(r + (uint64_t)c->timeline * sizeof(hs_tl_event));
    h->region_size = r;

    off += (uint64_t)(c->threads + 1) * h->region_size;
    h->total_size = off;
    return off;
}

/* Events of a thread's timeline ring by default (8 MiB, committed at its first timed call). */
#define HS_TL_DEFAULT_EVENTS (1u << 18)

/* The default capacities for the given options (--max-functions and
 * --max-threads set the first two); parts an option does not use get no
 * room at all. */
static inline hs_capacity hs_default_capacity(uint32_t functions, uint32_t threads, uint32_t options)
{
    hs_capacity c = { 1024, functions, threads, (options & HS_OPT_EDGES) ? (uint32_t)sizeof(hs_fblock) : 8,
                      1u << 14, 0, 0, 0, 0, 0 };
    if (options & HS_OPT_STACKS) {
        c.stacks = 1u << 13;
        c.frames = 1u << 18;
    }
    if (options & HS_OPT_TIME)
        c.shadow = 1u << 16;
    if (options & HS_OPT_TIMELINE)
        c.timeline = HS_TL_DEFAULT_EVENTS;
    return c;
}

#endif
