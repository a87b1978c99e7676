/*
 * hook/engine/count32.h - the counting entry stub of a hooked 32-bit function.
 *
 * The patched entry of a 32-bit function (hs_engine_new_bits(32)) jumps to
 * this stub, which adds one to the function's 64-bit count in the calling
 * thread's counters and falls into the trampoline. Like the x64 count-only
 * stub (agent/stubs.c) it calls no C code once the thread has counters and
 * preserves every register, EFLAGS (only mov, lea, xchg and jecxz), the
 * x87/SSE state and LastError (it touches neither). The thread's counters
 * come from a TLS slot read straight from the TEB at fs:0.
 *
 * With caller edges it also counts the (return address, function) pair:
 * in one of the function block's caller slots (session.h: hs_fblock, the
 * count's cache line), else in the thread's edge table
 * (hs_edge_rec, probed from the slot agent/edgehash.h's hash gives); a
 * pair in neither calls `edge_slow`, which inserts it. That part saves edx,
 * finds and counts a caller slot's pair flag-free as the call's count, and
 * saves the flags (pushfd/popfd) around the table's probe only: the stub
 * still changes nothing the function can see.
 *
 * With entry stacks it counts the function's calls down and calls
 * `stack_slow` every stack_every-th (the first included), with the same
 * pushes as the slow routine's call.
 *
 * A timed function's stub then enters its return probe (`time_enter`,
 * the 32-bit agent's time32.S), once its own pushes are popped: the
 * caller's return address is where the probe expects it, above the
 * descriptor it pushes.
 *
 * Portable (no Windows code), so that the native -m32 unit test runs it.
 */
#ifndef HOOKSCOPE_COUNT32_H
#define HOOKSCOPE_COUNT32_H

#include <stddef.h>
#include <stdint.h>

#include "hook/engine/hook.h"

/* The 32-bit TEB: TlsSlots[64], and the pointer to the expansion slots. */
#define HS_TEB32_TLS_SLOTS 0xE10
#define HS_TEB32_TLS_EXPANSION 0xF94

typedef struct hs_count32 {
    uint32_t tls;            /* TLS index whose slot holds the thread's counters
                                (0 in the slot: the thread has none yet) */
    uint32_t count_off;      /* byte offset of the function's uint64 count from them */
    uint32_t fidx;           /* handed to `slow` */
    uint32_t slow;           /* called when the thread has no counters yet, with
                                eax = fidx and the stub's two pushes (ecx, eax) above
                                its return address; returns ecx = the counters, or
                                0 (then the call goes uncounted); it keeps every
                                other register, the flags and LastError (eax may change) */
    /* caller edges (edges_cap 0: none); the function's block (session.h:
     * hs_fblock) is at count_off: the count, then `inline_edges` caller
     * slots of a 64-bit site and a 64-bit count */
    uint32_t inline_edges;   /* HS_INLINE_EDGES, at most HS_COUNT32_INLINE_MAX */
    uint32_t edges_cap;      /* entries of the thread's edge table (a power of two) */
    uint32_t edges_rel;      /* its offset from the counters */
    uint32_t edge_mix;       /* hs_edge_mix(fidx) and HS_EDGE_MULT (agent/edgehash.h) */
    uint32_t edge_mult;
    uint32_t edge_slow;      /* called for a pair in neither, with eax = fidx and the
                                stub's pushes (ecx, eax, edx, flags: 16 bytes) above its
                                return address; keeps every register but eax and ecx */
    /* entry stacks (stack_every 0: none): every stack_every-th call of the
     * function on a thread, counted down flag-free in a uint32 */
    uint32_t stack_every;
    uint32_t countdown_rel;  /* the function's countdown, from the counters */
    uint32_t stack_slow;     /* called to capture, with eax = fidx and the stub's two
                                pushes above its return address; keeps every
                                register but eax and ecx */
    /* return probes (time_desc 0: none): after the count the stub does
     * `push time_desc; call time_enter` (agent/time32.S: the call's entry
     * on the thread's shadow return stack), which returns with `ret 4`
     * into the trampoline keeping every register (not the arithmetic
     * flags, dead at an entry) */
    uint32_t time_desc;      /* the function's descriptor (agent.h: hs_wrap_desc) */
    uint32_t time_enter;
} hs_count32;

#define HS_COUNT32_INLINE_MAX 3

/* Where the parts of an emitted stub are (offsets into its buffer). */
typedef struct hs_stub32 {
    uint16_t entry;          /* where the patch jumps to */
    uint16_t tramp;          /* the trampoline */
    uint16_t len;            /* all of it */
    uint16_t tramp_off[HS_MAX_WINDOW_INSNS + 1];   /* hs_emit_trampoline's, from `tramp` */
} hs_stub32;

/* Bytes hs_stub32_emit needs at most for `plan` (with caller edges, entry
 * stacks, a return probe, or not). */
size_t hs_stub32_size_max(const hs_plan *plan, int edges, int stacks, int timed);

/* Emit the stub for `c` and then the trampoline of `plan` (a plan of an
 * engine of 32 bits; `window` as for hs_emit_trampoline), to run at `addr`.
 * Returns the length (out filled), or 0 with *why set. */
size_t hs_stub32_emit(hs_engine *e, const hs_func_input *fn, const hs_plan *plan, const hs_insn *window,
                      const hs_count32 *c, uint32_t addr, uint8_t *buf, size_t cap, hs_stub32 *out,
                      hs_skip_reason *why);

#endif
