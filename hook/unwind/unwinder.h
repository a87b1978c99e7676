/*
 * hook/unwind/unwinder.h - an x64 stack unwinder that runs outside the thread
 * it walks: on a copy of that thread's stack, with the images' unwind
 * data (.pdata RUNTIME_FUNCTION entries and their UNWIND_INFO) and code
 * bytes read through callbacks. Plain C, no Windows API, so that it is
 * unit-tested natively with synthetic images and stacks.
 *
 * One step unwinds one frame the way RtlVirtualUnwind does:
 *   - in an epilogue (add rsp / lea rsp,[frame] ; pops ; ret or a tail
 *     jump): the rest of the epilogue is emulated;
 *   - otherwise the unwind codes that the prologue has executed so far
 *     are undone (pushes, allocations, the frame register, saves, a
 *     machine frame), chained entries included; then the return address
 *     is popped;
 *   - code of an image without an entry is a leaf: the return address is
 *     at rsp;
 *   - code the lookup marks for emulation (generated code that has no
 *     unwind data, such as the few instructions of an entry stub between
 *     its described ranges) is run forward, instruction by instruction,
 *     as long as it only pushes, pops, moves constants or loads into
 *     registers, and jumps: until it reaches code with unwind data (the
 *     same frame, in a described state) or returns.
 *
 * A step out of code with a function entry is decoded into a plan first
 * (the loads from the stack and the changes of rsp that undoing its
 * epilogue or its unwind codes makes, hs_uw_plan), then the plan is run.
 * The plan depends on pc alone (its code, its unwind data), so a walker
 * that meets the same return addresses again and again (the agent's entry
 * stacks) keeps the plans and runs them without reading unwind data or
 * code: hs_unwind_step_plan, hs_unwind_run.
 */
#ifndef HOOKSCOPE_SAMPLER_UNWIND_H
#define HOOKSCOPE_SAMPLER_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/base/x64.h"

typedef struct hs_uw_regs {
    uint64_t r[16];            /* by register number (hook/base/x64.h); r[HS_RSP] is the stack pointer */
    uint64_t rip;
} hs_uw_regs;

/* What the code at an address is, for the unwinder. */
enum hs_uw_kind {
    HS_UW_UNKNOWN = 0,         /* no known code there */
    HS_UW_TABLE,               /* covered by a function entry (*entry filled) */
    HS_UW_LEAF,                /* in an image, but no entry covers it: a leaf */
    HS_UW_EMULATE,             /* generated code without unwind data: run forward */
};

/* A RUNTIME_FUNCTION and the base its RVAs are relative to. */
typedef struct hs_uw_entry {
    uint64_t base;
    uint32_t begin, end, unwind;
} hs_uw_entry;

typedef struct hs_uw_env {
    void *ctx;
    /* Classify pc (an hs_uw_kind); fill *e for HS_UW_TABLE. */
    int (*lookup)(void *ctx, uint64_t pc, hs_uw_entry *e);
    /* Read len bytes of code or unwind data at addr: 0, or -1 if unreadable. */
    int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
    /* Optional (NULL: none): where len readable bytes at addr already are
     * (memory of this process, a cached page), valid until the next call;
     * NULL when not all of them are at hand (read is asked then). */
    const uint8_t *(*view)(void *ctx, uint64_t addr, size_t len);
} hs_uw_env;

/* The thread's stack, copied at the sample: [lo, lo + len). */
typedef struct hs_uw_stack {
    uint64_t lo;
    const uint8_t *data;
    size_t len;
    bool complete;             /* the copy reaches the stack's base */
} hs_uw_stack;

/* Why a walk ended. */
enum hs_uw_stop {
    HS_UW_END = 0,             /* a return address of 0, or the base of a complete stack */
    HS_UW_TRUNCATED,           /* beyond the copied part of the stack, or the frame limit */
    HS_UW_UNKNOWN_PC,          /* a return address outside every known code (see unknown_pc) */
    HS_UW_BAD,                 /* unwind data or code that cannot be followed; the stack does
                                  not move up */
    HS_UW_AT_BASE,             /* hs_unwind_step: the caller's frame would lie past the base of
                                  a complete stack: there is none (a walk ends with HS_UW_END) */
};

/* Where the `size` bytes at addr are in the stack copy: 0 with *p set,
 * or why not (below the copy: HS_UW_BAD; beyond it: HS_UW_AT_BASE for a
 * complete copy, else HS_UW_TRUNCATED). */
static inline int hs_uw_stack_at(const hs_uw_stack *st, uint64_t addr, size_t size, const uint8_t **p)
{
    if (addr < st->lo)
        return HS_UW_BAD;
    uint64_t off = addr - st->lo;
    if (off > st->len || st->len - off < size)
        return st->complete ? HS_UW_AT_BASE : HS_UW_TRUNCATED;
    *p = st->data + off;
    return 0;
}

typedef struct hs_uw_result {
    uint32_t n;                /* frames written */
    int stop;                  /* hs_uw_stop */
    uint64_t unknown_pc;       /* HS_UW_UNKNOWN_PC: the address */
} hs_uw_result;

/* What one step out of a frame with a function entry does (unwinder.c
 * lists the operations): at most HS_UW_PLAN_OPS operations, each of them
 * (op[i] low 4 bits) with a register (high 4 bits) and arg[i]; then the
 * return address is popped, unless a machine frame gave rip and rsp. */
#define HS_UW_PLAN_OPS 9
typedef struct hs_uw_plan {
    uint8_t n;                 /* operations */
    uint8_t whole;             /* 1: the plan is the whole step of its pc, to be run again
                                  (hs_unwind_run); 0: none, or a part of a longer step */
    uint8_t op[HS_UW_PLAN_OPS];
    uint32_t arg[HS_UW_PLAN_OPS];
} hs_uw_plan;

/* The entry of a function table covering rva: `table` holds n
 * RUNTIME_FUNCTIONs as (begin, end, unwind) RVA triples sorted by begin
 * (an image's .pdata, or the table of generated code). NULL: none. */
const uint32_t *hs_pdata_find(const uint32_t *table, size_t n, uint32_t rva);

/* Unwind one frame: regs (rip, rsp, nonvolatile registers) become the
 * caller's. Returns HS_UW_END (0) on success, else why it cannot (regs
 * then unchanged). */
int hs_unwind_step(const hs_uw_env *env, const hs_uw_stack *st, hs_uw_regs *regs);
/* The same, and the step's plan in *plan: plan->whole is 1 when the step
 * from this pc is always that plan (the code has a function entry and its
 * step fits one plan), whatever the registers and the stack. */
int hs_unwind_step_plan(const hs_uw_env *env, const hs_uw_stack *st, hs_uw_regs *regs, hs_uw_plan *plan);
/* Run a whole plan of regs->rip again (from hs_unwind_step_plan, while the
 * code and unwind data it came from stay mapped): what hs_unwind_step
 * would do, without the environment. */
int hs_unwind_run(const hs_uw_plan *plan, const hs_uw_stack *st, hs_uw_regs *regs);

/* Walk from regs: frames[0] = regs->rip, then one return address per
 * caller, leaf first, at most max frames. */
hs_uw_result hs_unwind_walk(const hs_uw_env *env, const hs_uw_stack *st, const hs_uw_regs *regs,
                            uint64_t *frames, uint32_t max);

#endif
