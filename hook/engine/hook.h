/*
 * hook/engine/hook.h - the target-independent hooking engine.
 *
 * Given the bytes of one x86 function (x86-64, or 32-bit code for an
 * engine made by hs_engine_new_bits(32)), as they are mapped, and the
 * address they run at, the engine decides whether and how the entry can be
 * redirected (hs_analyze), emits the trampoline that runs the displaced
 * instructions somewhere else and jumps back (hs_emit_trampoline), and
 * emits the patch bytes (hs_emit_patch). It never writes to the function
 * itself: the caller (agent/, or a test) owns memory, protection and
 * threads.
 *
 * This file builds for Windows (mingw) and for Linux (the unit tests), so
 * it uses nothing but capstone and the C library.
 */
#ifndef HOOKSCOPE_HOOK_H
#define HOOKSCOPE_HOOK_H

#include <stddef.h>
#include <stdint.h>

#include "hookscope/skip.h"

#define HS_MAX_WINDOW_INSNS 16   /* instructions relocated at most */
#define HS_MAX_PATCH 16          /* patch bytes at most (incl. padding part) */
#define HS_TRAMP_MAX 512         /* trampoline bytes at most, for one function */

/* One engine per thread: it owns a capstone handle and scratch space. */
typedef struct hs_engine hs_engine;

hs_engine *hs_engine_new(void);   /* x86-64 code */
/* An engine for code of `bits` 64 or 32 (i386: no RIP-relative operands,
 * absolute addresses relocate unchanged, a rel32 reaches everywhere, a
 * relocated call pushes 32 bits; HS_ANALYZE_FULL's frame analysis, which
 * knows only the x64 calling convention, reports HS_FN_NO_FRAME_INFO).
 * NULL for any other width. */
hs_engine *hs_engine_new_bits(int bits);
void hs_engine_free(hs_engine *e);

/* The function to analyze.
 *
 * `code` points at readable bytes laid out exactly as in memory, such that
 * code[-gap_before .. size + gap_after - 1] are valid. `addr` is the runtime
 * address of code[0] (the entry). `size` is the function's extent (from
 * .pdata, or from symbols). gap_before/gap_after are the bytes between this
 * function and its neighbours (or the section edge) that belong to no
 * function; the engine checks itself whether they are padding (int3 or nop
 * instructions) before it uses them.
 *
 * `image_lo`/`image_hi` bound the module image; a RIP-relative operand or a
 * branch target inside it is what the arena placement guarantees to reach.
 */
typedef struct hs_func_input {
    const uint8_t *code;
    uint64_t addr;
    uint32_t size;
    uint32_t gap_before;
    uint32_t gap_after;
    uint64_t image_lo, image_hi;
    /* Optional: read `n` image bytes at absolute address `addr` (jump
     * tables usually live in .rdata, outside the function). Returns 0 on
     * success. Without it only code[-gap_before .. size+gap_after) is read. */
    int (*read)(void *ctx, uint64_t addr, void *out, size_t n);
    void *read_ctx;
    /* Optional: the bounds [*lo, *hi) of the piece of code (a function, or
     * a part of one with its own .pdata entry, like gcc's .cold parts) that
     * contains absolute address `addr`; 0 on success, -1 if none. With it,
     * HS_ANALYZE_FULL follows jumps that leave the function with its frame
     * still set up (its code is read through `read`); without, such a
     * function's stack use is unknown. */
    int (*part_at)(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi);
    void *part_ctx;
} hs_func_input;

/* Facts found by a full decode of the function (HS_ANALYZE_FULL). */
enum {
    HS_FN_HAS_CALL_IN_WINDOW = 1u << 0,  /* a call is relocated (emitted as push+jmp) */
    HS_FN_INDIRECT_JUMP = 1u << 1,       /* contains jmp reg/mem (jump table or tail call) */
    HS_FN_VARARGS = 1u << 2,             /* spills rdx/r8/r9 to home slots and takes their address */
    HS_FN_ARGS_ADDRESS = 1u << 3,        /* takes the address of its incoming argument area */
    HS_FN_STACK_PROBE = 1u << 4,         /* looks like __chkstk: probes pages below rsp using rax */
    HS_FN_ENDS_IN_WINDOW = 1u << 5,      /* ret/jmp inside the window (tiny function or thunk) */
    HS_FN_USES_PADDING = 1u << 6,        /* the patch extends into padding after the function */
    HS_FN_IMPORT_THUNK = 1u << 7,        /* jmp [rip+x] (32-bit code: jmp [abs32]) */
    HS_FN_ENDBR = 1u << 8,               /* starts with endbr64 */
    HS_FN_NO_FRAME_INFO = 1u << 9,       /* could not follow the prologue's stack adjustments */
    /* appended: */
    HS_FN_BRANCH_TO_ENTRY = 1u << 10,    /* a jmp/jcc inside the function targets its entry
                                            (a loop head at offset 0): each iteration enters
                                            the hook again, so wrap it entry-only */
    HS_FN_JUMP_TABLE = 1u << 11,         /* has a jump table that was resolved */
    HS_FN_UNRESOLVED_TABLE = 1u << 12,   /* has a table-like indirect jmp that was not resolved */
    HS_FN_MOVES_RSP = 1u << 13,          /* moves rsp or calls on some path (not a flat leaf,
                                            which runs with its return address at [rsp]) */
};

/* How the entry of one function is to be redirected. */
typedef struct hs_plan {
    hs_skip_reason reason;     /* HS_OK, or why the function cannot be hooked */
    hs_patch_kind kind;        /* how */
    int32_t patch_off;         /* first patched byte, relative to the entry (< 0: padding before) */
    uint8_t patch_len;         /* bytes the patch writes, starting at patch_off */
    uint8_t window_len;        /* bytes of original code, from the entry, run by the trampoline */
    uint8_t n_insns;           /* instructions in the window */
    uint8_t insn_off[HS_MAX_WINDOW_INSNS + 1]; /* entry-relative start of each, then window_len */
    uint16_t tramp_max;        /* bytes hs_emit_trampoline needs at most */
    uint32_t flags;            /* HS_FN_* */
    int32_t stack_arg_slots;   /* highest incoming stack slot read, counting the 4 home slots
                                  (so 4 = register args only); -1 if unknown (always -1
                                  without HS_ANALYZE_FULL) */
    uint8_t orig[HS_MAX_PATCH];/* the bytes at [patch_off, patch_off+patch_len) before patching */
    /* appended: */
    int16_t pad_off;           /* HS_PATCH_SHORT_PAD: entry-relative start of the 5-byte
                                  jmp rel32 in padding (see hs_plan_pad_jmp) */
    uint8_t bits;              /* the code's width, 64 or 32 (the engine's) */
} hs_plan;

enum {
    HS_ANALYZE_FULL = 1u << 0,   /* decode the whole function: flags and stack_arg_slots */
    HS_ANALYZE_NO_PADDING = 1u << 1, /* do not use padding (jmp32 inside the function only) */
    HS_ANALYZE_ALLOW_INT3 = 1u << 2, /* fall back to an int3 patch when nothing else fits */
};

/* A jump that leaves the function, found by HS_ANALYZE_FULL: a tail call
 * (rsp back at its entry value, so the target gets the function's own
 * return address and incoming stack), or a jump into other code with the
 * frame still set up. */
typedef struct hs_exit {
    uint64_t target;           /* absolute target of a direct jmp/jcc; 0 when indirect */
    uint64_t slot;             /* `jmp [rip+x]`: the address x of the pointer it jumps
                                  through (an import, or a pointer in the image); else 0 */
    int32_t rsp;               /* rsp at the jump relative to rsp at the entry: 0 for a
                                  tail call; HS_EXIT_RSP_UNKNOWN if it could not be followed */
    int32_t off;               /* entry-relative offset of the jump (< 0: in a part before
                                  the function) */
} hs_exit;
#define HS_EXIT_RSP_UNKNOWN INT32_MIN

/* Decide how to hook. Returns plan->reason.
 *
 * Without HS_ANALYZE_FULL only the window is decoded, unless a byte-level
 * scan of the function finds a possible branch into the patched bytes or a
 * table-like indirect jmp (then the function is decoded from the entry up
 * to the last such candidate): a few microseconds per typical function.
 * Jump tables (gcc/clang int32 entries relative to the table, MSVC RVAs
 * relative to __ImageBase, absolute 64-bit pointers) are read through
 * fn->read; their entries count as branches. A table-like jump that cannot
 * be resolved makes the function HS_SKIP_JUMP_TABLE when an instruction
 * boundary lies inside the patched bytes (a case label could be there).
 * Branches from other functions (e.g. gcc's .cold parts) are not seen. */
hs_skip_reason hs_analyze(hs_engine *e, const hs_func_input *fn, unsigned opts, hs_plan *plan);

/* The exits of the function of the last hs_analyze with HS_ANALYZE_FULL
 * (none without it), valid until the next hs_analyze on this engine.
 * Returns their number and sets *out. */
size_t hs_analyze_exits(const hs_engine *e, const hs_exit **out);

/* How an instruction moves control or needs fixing when it runs elsewhere. */
enum hs_ikind {
    HS_I_PLAIN = 0,   /* position independent: copied as is */
    HS_I_RIPREL,      /* memory operand [rip+disp32]: copied, disp rewritten */
    HS_I_JMP,         /* jmp rel8/rel32 */
    HS_I_JCC,         /* jcc rel8/rel32 */
    HS_I_JCXZ_LOOP,   /* jrcxz/jecxz/loop/loope/loopne: rel8 only */
    HS_I_CALL,        /* call rel32 */
    HS_I_CALL_IND,    /* call reg / call [mem] (FF /2) */
    HS_I_JMP_IND,     /* jmp reg / jmp [mem] (FF /4) */
    HS_I_RET,         /* ret, ret imm16 */
    HS_I_TRAP,        /* int3, ud2, hlt, int n: ends the flow, never relocated */
    HS_I_BAD,         /* cannot run elsewhere (xbegin, far transfers, eip-relative, rel16...) */
};

/* What the engine keeps of one decoded instruction. */
typedef struct hs_insn {
    uint32_t off;        /* entry-relative offset */
    uint8_t len;
    uint8_t kind;        /* enum hs_ikind */
    uint8_t cc;          /* condition code for HS_I_JCC */
    uint8_t riprel;      /* has a [rip+disp32] operand (also for CALL_IND/JMP_IND) */
    uint8_t disp_off;    /* offset of that disp32 within the instruction */
    uint8_t modrm_off;   /* offset of the ModRM byte (0 if none) */
    uint8_t rsp_mem;     /* an operand is rsp or addresses memory through rsp */
    uint16_t id;         /* capstone x86_insn */
    uint64_t target;     /* absolute branch target, or rip-relative operand address */
} hs_insn;

/* The window instructions of the last hs_analyze on this engine that
 * planned a patch (plan->n_insns of them, as it decoded them), valid until
 * the next hs_analyze. A caller that keeps a copy hands it to
 * hs_emit_trampoline, which then decodes nothing: a decode costs more than
 * the rest of a trampoline. */
const hs_insn *hs_analyze_window(const hs_engine *e);

/* ---- tail jumps and the timing wrapper (tail.c) ----------------------------
 *
 * A timed function runs on a copy of its argument area; a function it
 * tail-jumps to reads that copy too. hs_tail finds, for every function of
 * a set, the slots the copy must hold for the function and everything it
 * reaches by tail jumps, or that this cannot be bounded. */
typedef struct hs_tail hs_tail;

/* What hs_tail_solve may ask about code outside the functions added. */
enum { HS_TAIL_UNBOUNDED = 1 };   /* func_at flag: the function walks its caller's
                                     stack in a way the analysis cannot see (setjmp) */
/* Slot counts that are not numbers (own and need):
 *   HS_TAIL_WIDE   the extent is not known, but the code is a function
 *                  entered as by a call (a function pointer, a varargs
 *                  function, code without unwind data): a wrapper copies
 *                  the widest area it copies (HS_WRAP_MAX_SLOTS, bounded
 *                  by the stack base), which holds every argument a
 *                  caller can pass in as many slots
 *   HS_TAIL_NEVER  a jump reaches code that is no function's entry, or one
 *                  that must run on its caller's own stack (setjmp, a
 *                  stack probe): no wrapper
 * NEVER absorbs WIDE, WIDE absorbs numbers. */
enum { HS_TAIL_WIDE = -1, HS_TAIL_NEVER = -3 };
typedef struct hs_tail_env {
    /* Describe the function whose entry is `addr` for hs_analyze (bytes as
     * they were before any patch, bounds, callbacks), valid until the next
     * call; *flags may get HS_TAIL_UNBOUNDED. Returns 0; -1 when `addr`
     * is code that no call enters (the middle of a function, a part
     * entered with its frame set up); -2 when nothing is known of it but
     * that it has no unwind data (a leaf: it runs with its return
     * address at [rsp], like a function called). */
    int (*func_at)(void *ctx, uint64_t addr, hs_func_input *fn, int *flags);
    /* The function pointer in `slot` if it is an entry of a loaded image's
     * import address table (bound by the loader, not a variable): 0, else -1. */
    int (*import_at)(void *ctx, uint64_t slot, uint64_t *target);
    void *ctx;
} hs_tail_env;

hs_tail *hs_tail_new(void);
void hs_tail_free(hs_tail *t);
/* The slots a function reads itself, from its full analysis: >= 4 (the home
 * slots); HS_TAIL_WIDE when its use of the argument area is not bounded
 * (varargs, the area's address taken, frame not followed); HS_TAIL_NEVER
 * for a stack probe or an unresolved jump table. */
int32_t hs_tail_own(const hs_plan *p);
/* Add a function: its entry, hs_tail_own (or HS_TAIL_NEVER for other
 * reasons, such as setjmp by name), and its exits (copied). 0, or -1
 * without memory. */
int hs_tail_add(hs_tail *t, uint64_t entry, int32_t own, const hs_exit *x, size_t n);
/* Resolve every exit, analyzing at most `budget` functions through `env`
 * (which may be NULL: then only the functions added are known), and
 * compute every function's need. */
void hs_tail_solve(hs_tail *t, hs_engine *e, const hs_tail_env *env, int budget);
/* The slots a wrapper around the function at `entry` must copy (>= its own
 * slots), HS_TAIL_WIDE or HS_TAIL_NEVER, -2 when `entry` was never added. */
int32_t hs_tail_need(const hs_tail *t, uint64_t entry);
/* For tests: the functions known (added or analyzed on demand) and their
 * exits, with the index of the function each leads to (HS_TAIL_WIDE: a
 * function not known; HS_TAIL_NEVER: code that is no function's entry). */
size_t hs_tail_count(const hs_tail *t);
void hs_tail_node(const hs_tail *t, size_t k, uint64_t *entry, int32_t *own, int32_t *need, size_t *n_exits);
int hs_tail_exit(const hs_tail *t, size_t k, size_t j, hs_exit *x);

/* The length of a trampoline's relocated instructions alone, without the
 * jump back to `back` (the entry + window_len) that hs_emit_trampoline
 * appends when the window does not end in a jump, return or call: the
 * trampoline's `len` bytes at tramp, placed at tramp_addr. */
size_t hs_tramp_body_len(const uint8_t *tramp, uint64_t tramp_addr, size_t len, uint64_t back);

/* Emit the trampoline for `plan`, to run at `tramp_addr`: the window's
 * instructions relocated, then a jump back to addr + window_len (none when
 * the window ends in ret/jmp, or in a call, which is emitted as "push the
 * original return address; jmp target" so the callee returns into the
 * original function). At most plan->tramp_max bytes. HS_SKIP_NO_ARENA if
 * `cap` is too small.
 * tramp_off[i] receives the trampoline offset where original instruction i
 * starts (i < n_insns) and tramp_off[n_insns] the total length.
 * `window`: the plan's instructions as hs_analyze_window gave them after
 * the plan was made, or NULL: they are decoded again.
 * Returns the length written (<= cap), or 0 and sets *why
 * (HS_SKIP_OUT_OF_RANGE when a target does not reach from tramp_addr). */
size_t hs_emit_trampoline(hs_engine *e, const hs_func_input *fn, const hs_plan *plan, const hs_insn *window,
                          uint64_t tramp_addr, uint8_t *buf, size_t cap,
                          uint16_t tramp_off[HS_MAX_WINDOW_INSNS + 1], hs_skip_reason *why);

/* Emit the patch: plan->patch_len bytes to be written at fn->addr +
 * plan->patch_off so that entering the function goes to `dest`. For
 * HS_PATCH_JMP32 and HS_PATCH_SHORT_PAD, dest must be within rel32 reach of
 * the jmp. Returns 0, or -1 if dest does not reach. */
int hs_emit_patch(const hs_func_input *fn, const hs_plan *plan, uint64_t dest,
                  uint8_t out[HS_MAX_PATCH]);

/* Where the 5-byte part of a HS_PATCH_SHORT_PAD patch goes: returns 1 and
 * sets *off to its entry-relative start (in the padding before the entry,
 * -5 when possible, or after the end of a short function), or returns 0
 * for any other plan. The whole patch, both jumps and the untouched bytes
 * between them, is [patch_off, patch_off + patch_len); plan->orig holds its
 * original bytes, so unhooking writes plan->orig back over exactly that
 * range. */
int hs_plan_pad_jmp(const hs_plan *plan, int32_t *off);

/* Where a thread stopped at `orig_off` (entry-relative) inside the patched
 * window must continue after patching: the trampoline offset, or -1 if
 * orig_off is not an instruction boundary of the window. */
int hs_orig_to_tramp(const hs_plan *plan, const uint16_t tramp_off[HS_MAX_WINDOW_INSNS + 1],
                     int orig_off);

/* The reverse, for unhooking: -1 if tramp_off is not the start of a
 * relocated instruction (the thread must be let run a little further). */
int hs_tramp_to_orig(const hs_plan *plan, const uint16_t tramp_off[HS_MAX_WINDOW_INSNS + 1],
                     int tramp_offset);

/* A quick byte-level test: could any instruction starting in [from, to)
 * of the function be a relative branch into (entry+lo, entry+hi)? Sound
 * (never misses a real one); may say yes falsely, then hs_analyze decodes. */
int hs_may_branch_into(const hs_func_input *fn, uint32_t from, uint32_t to, int lo, int hi);

#endif
