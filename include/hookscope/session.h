/*
 * hookscope/session.h - the contract between hookscope.exe (the injector)
 * and the agent DLL inside the target: one named shared-memory section.
 *
 * The injector creates the section (SEC_RESERVE, so only what is used is
 * committed), writes the header and the configuration, and keeps a view of
 * it for as long as it runs: everything the agent counts lives here, so a
 * crash or a kill of the target loses nothing that was counted.
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

#define HS_SESSION_MAGIC 0x315353455353484Bull /* "KHSSESS1" */
#define HS_SESSION_VERSION 1

/* The section's name is derived from the target's pid, so the agent finds
 * it whether it was injected at launch or by attach. */
#define HS_SESSION_NAME_FMT L"Local\\hookscope-session-%lu"

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
    HS_OPT_NO_INT3 = 1u << 4, /* never fall back to int3 patches */
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
};

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
} hs_module_rec;

/* function flags */
enum {
    HS_FUNC_HOOKED = 1u << 0,
    HS_FUNC_FRAGMENT = 1u << 1,  /* never used: fragments are not listed */
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
} hs_func_rec;

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
    uint64_t edges_dropped;      /* edge increments that found the table full (counted in overflow) */
} hs_region_hdr;

/* One caller edge: call site (return address) -> callee, counted. */
typedef struct hs_edge_rec {
    uint64_t site;               /* return address in the caller */
    uint32_t callee;             /* function index */
    uint32_t reserved;
    uint64_t count;
    uint64_t reserved2;
} hs_edge_rec;

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
    uint64_t region_counters_off;/* offsets within a region */
    uint64_t region_edges_off;
    uint32_t region_edges_cap;   /* power of two */
    uint32_t reserved0;

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
} hs_session_header;

/* Accessors, shared by both sides. `base` is the start of the view. */
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

static inline hs_edge_rec *hs_region_edges(void *base, uint32_t k)
{
    hs_session_header *h = (hs_session_header *)base;
    return (hs_edge_rec *)(hs_session_region(base, k) + h->region_edges_off);
}

/* Round up to a page. */
static inline uint64_t hs_page_up(uint64_t n) { return (n + HS_PAGE - 1) & ~(uint64_t)(HS_PAGE - 1); }

/* Compute the layout for the given capacities and options; fills the
 * layout fields of `h` and returns the total size. Shared so both sides
 * agree, and so the unit tests can check it. */
static inline uint64_t hs_session_layout(hs_session_header *h, uint32_t max_modules,
                                         uint32_t max_functions, uint32_t max_threads,
                                         uint32_t edges_cap)
{
    uint64_t off = hs_page_up(sizeof(hs_session_header));
    h->header_size = (uint32_t)sizeof(hs_session_header);
    h->modules_off = off;
    h->max_modules = max_modules;
    h->module_rec_size = (uint32_t)sizeof(hs_module_rec);
    off = hs_page_up(off + (uint64_t)max_modules * sizeof(hs_module_rec));
    h->funcs_off = off;
    h->max_functions = max_functions;
    h->func_rec_size = (uint32_t)sizeof(hs_func_rec);
    off = hs_page_up(off + (uint64_t)max_functions * sizeof(hs_func_rec));
    h->slots_off = off;
    h->max_threads = max_threads;
    h->slot_size = (uint32_t)sizeof(hs_thread_slot);
    off = hs_page_up(off + (uint64_t)(max_threads + 1) * sizeof(hs_thread_slot));
    h->regions_off = off;
    h->region_counters_off = HS_PAGE;
    h->region_edges_off = hs_page_up(HS_PAGE + (uint64_t)max_functions * 8);
    h->region_edges_cap = edges_cap;
    h->region_size = hs_page_up(h->region_edges_off + (uint64_t)edges_cap * sizeof(hs_edge_rec));
    off += (uint64_t)(max_threads + 1) * h->region_size;
    h->total_size = off;
    return off;
}

#endif
