/*
 * tests/unit/xcase.h - one differential case: analyze a function placed at
 * XR_A, relocate its window to a trampoline, then run the original window
 * and, separately, the patched entry (patch -> trampoline -> back), from
 * the same state, and compare where they stop and the whole machine state.
 */
#ifndef HS_TEST_XCASE_H
#define HS_TEST_XCASE_H

#include "hook/engine/hook.h"
#include "tests/unit/xrun.h"

typedef struct xc_func {
    const char *name;
    const uint8_t *bytes;      /* the bytes of [-gap_before, size + gap_after) */
    uint32_t gap_before, size, gap_after;
} xc_func;

/* 32-bit code: enter through the counting stub (hook/engine/count32.h)
 * instead of the bare trampoline, and check the count it keeps. Variant v
 * takes the thread's counters from the TLS slot (v % 3 == 0), the same
 * with the count's low half at 0xffffffff, so that it carries (1), or
 * finds the slot empty and gets them from the slow routine (2). */
typedef struct xc_count {
    uint32_t tls;              /* TLS index: < 64, or an expansion slot */
    unsigned expect;           /* entries of the function in one run */
    uint32_t slow;             /* the slow routine the stub calls (0: the harness's
                                  `mov ecx, counters; ret`); another one returns
                                  XC_COUNTERS in ecx and may add to the `excluded`
                                  field of their region header (xc_out.excluded) */
    uint32_t edge_slow;        /* with caller edges: what the stub calls for a new
                                  caller (it counts one in the block's slots or the
                                  edge table, XC_FBLOCK..); 0: no edges. The caller
                                  is in the first slot already when v % 3 != 2 (its
                                  count about to carry when v % 3 == 1) */
    uint32_t stack_slow;       /* with edges, entry stacks every XC_STACK_EVERY-th call:
                                  what the stub calls to capture (the countdown at
                                  XC_COUNTDOWN_REL starts at 0: capture, but at 1 when
                                  v % 3 == 1); 0: no stacks */
} xc_count;

/* The counters block the counting stub's slot points at (the function's
 * count at 8 * XC_FIDX), with a region header's page below it. */
#define XC_COUNTERS (XR_SCRATCH + 0xE000)
#define XC_FIDX 3u
#define XC_EXCLUDED (XC_COUNTERS - 4096 + 72)   /* session.h: hs_region_hdr.excluded */
#define XC_STACK_TICKS (XC_COUNTERS - 4096 + 80) /* and .stack_ticks */
/* With caller edges: the function's block (session.h: hs_fblock, the
 * count then XC_INLINE caller slots of a site and a count) at
 * XC_FBLOCK * XC_FIDX, the edge table (hs_edge_rec, 32 bytes) at
 * XC_EDGES_REL from the counters; both empty at the start of a run. */
#define XC_FBLOCK 64u
#define XC_INLINE 3u
#define XC_EDGES_REL 0x1000u
#define XC_EDGES_CAP 16u
#define XC_COUNTDOWN_REL 0x800u   /* the functions' uint32 countdowns to a stack capture */
#define XC_STACK_EVERY 2u

typedef struct xc_opts {
    uint64_t tramp;            /* XR_T_NEAR, XR_T_NEG or XR_T_FAR (0: XR_T_NEAR) */
    unsigned analyze_opts;
    int nvariants;             /* input states tried (0: 3) */
    /* adjust the input of one variant (registers, flags); may be NULL */
    void (*tweak)(xr_input *in, int variant, void *ctx);
    void *ctx;
    int cmp_vec;               /* compare vector registers too */
    int plan_only;             /* plan and relocate, check the relocation by
                                  decoding (xc_check_reloc), run nothing */
    const xc_count *count;     /* 32-bit only: through the counting stub */
    int whole;                 /* run the whole function and its gaps, not only the
                                  window (a loop back to the entry) */
} xc_opts;

enum {
    XC_SAME = 0,        /* both runs ended alike in every variant */
    XC_DIFFERENT = 1,   /* why says where */
    XC_NOT_HOOKED = 2,  /* hs_analyze skipped it (plan->reason) */
    XC_NO_TRAMP = 3,    /* hs_emit_trampoline failed (*tramp_why) */
    XC_UNSAFE = 4,      /* the window has an instruction the harness will not run */
    XC_PLANNED = 5,     /* plan_only: planned, relocated and decoded alike, not run */
};

typedef struct xc_out {
    hs_plan plan;
    uint64_t counted;          /* with xc_opts.count: the count the stub kept, summed over
                                  the variants */
    uint64_t excluded;         /* with xc_count.slow: what its slow routine added to
                                  XC_EXCLUDED, summed over the variants */
    uint64_t edges;            /* with xc_count.edge_slow: the calls counted with their
                                  caller, summed over the variants */
    uint16_t tramp_off[HS_MAX_WINDOW_INSNS + 1];
    uint8_t tramp[HS_TRAMP_MAX];
    size_t tramp_len;
    hs_skip_reason tramp_why;
    int end_kind;             /* how the original run of the last variant ended */
    uint64_t end_at;
} xc_out;

int xc_diff(hs_engine *e, const xc_func *f, const xc_opts *o, xc_out *out, char *why, size_t n);

/* Without running anything: each instruction of the window and its copy
 * in the trampoline decode to the same instruction with the same operands,
 * a RIP-relative operand reaching the same absolute address from the
 * copy. 0, or -1 with why. */
int xc_check_reloc(const xc_func *f, const xc_out *out, uint64_t tramp, char *why, size_t n);

/* Does the window contain something the harness must not execute
 * (syscall, rdtsc, fs: accesses ...)? */
int xc_window_unsafe(const xc_func *f, const hs_plan *plan);

#endif
