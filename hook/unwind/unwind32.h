/*
 * hook/unwind/unwind32.h - an x86 (32-bit) stack walker that runs outside
 * the thread it walks, as the x64 unwinder does (unwinder.h): on a copy of
 * the thread's stack, with code bytes and per-function frame data read
 * through callbacks. Plain C, no Windows API, so that it is unit-tested
 * natively (with synthetic stacks, and on the stack of a -m32 program).
 *
 * x86 code has no unwind tables: a walker follows the ebp chain ([ebp] is
 * the caller's ebp, [ebp+4] its return address) and, on a stack it did
 * not write, checks every step of it. One step out of a frame, in the
 * order tried:
 *
 *   epilogue    (the first frame only) the code at eip is the rest of an
 *               epilogue (pops, leave, mov esp,ebp, add/lea esp, jumps,
 *               instructions that change neither esp nor ebp, then ret):
 *               it is run forward to the ret, exactly;
 *   prologue    (the first frame only) ahead of eip a function's `push
 *               ebp; mov ebp,esp` (after the hot-patch `mov edi,edi` or
 *               an instruction the scheduler put there): the return
 *               address is at [esp], or at [esp+4] with the caller's ebp
 *               at [esp] once the push ran;
 *   prologue    inside the prologue of a function with frame data: its
 *   run         pushes and allocations from its first byte to eip;
 *   frame data  the function's frame data (the PDB's FPO or FrameData
 *               record, hs_uw32_frame_data) past its prologue: the
 *               return address lies above its locals and saved registers
 *               (and above the parameters it pushed for the frame below);
 *   chain       [ebp+4], if ebp lies in the copy no lower than esp and
 *               the value there is a return address;
 *   scan        where all of that fails (code without a frame pointer
 *               and without frame data, a scribbled chain): the first
 *               slot from esp up, within HS_UW32_SCAN_SLOTS, that holds
 *               a return address; a guess, and marked so (the fallback of
 *               DbgHelp's and ETW's x86 walkers).
 *
 * A return address is a value in known code just after a call (call
 * rel32 to known code, or call r/m32 in any of its forms). Every step must
 * move esp up: a walk over a chain that loops or points outside the stack
 * ends or falls back to the scan, it never repeats a frame.
 *
 * Not done here: frame data comes through the caller's callback
 * (hook/unwind/cfi32.h gives it from gcc's `.eh_frame`;
 * hook/unwind/fpo32.h from a PDB's FPO_DATA and FrameData records, which
 * injector/symbols/pdb.h reads);
 * the WOW64 transition (a thread inside a 64-bit system call: its 32-bit
 * context is saved by wow64cpu, not on the 32-bit stack) is the caller's
 * to find and to start the walk from.
 */
#ifndef HOOKSCOPE_UNWIND_UNWIND32_H
#define HOOKSCOPE_UNWIND_UNWIND32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/unwind/retshadow.h"
#include "hook/unwind/unwinder.h"

/* Slots (4 bytes each) a scan reads at most above esp. */
#define HS_UW32_SCAN_SLOTS 256

typedef struct hs_uw32_regs {
    uint32_t eip, esp, ebp;
} hs_uw32_regs;

/* A function's frame, as its FPO (FPO_DATA) or FrameData record gives it;
 * sizes in bytes. Below the return address lie the saved registers, then
 * the locals; the parameters lie above the return address. */
typedef struct hs_uw32_frame_data {
    uint32_t begin;            /* the function's first byte */
    uint32_t prolog;           /* bytes of prologue: the frame is whole after them */
    uint32_t locals;           /* bytes of locals (FPO_DATA: cdwLocals * 4) */
    uint32_t saved_regs;       /* bytes of registers saved (FPO_DATA: cbRegs * 4) */
    uint32_t params;           /* bytes of parameters its callers push below their own frames
                                  for each call (FPO_DATA: cdwParams * 4, for code that pushes
                                  arguments, as MSVC's does); 0 where callers store arguments
                                  in their frames (gcc's -maccumulate-outgoing-args, mingw's
                                  default) */
    uint32_t ebp_saved_at;     /* the caller's ebp is saved this many bytes below the return
                                  address (4: pushed first); 0: not saved, ebp is the caller's
                                  (FrameData's program string: "$ebp $T0 N - ^ =") */
    bool uses_ebp;             /* ebp is its frame pointer: the chain holds (FPO_DATA: fUseBP) */
} hs_uw32_frame_data;

/* The step out of the frame at a return address, made from its frame
 * data as found in place (HS_UW32_FRAME_DATA): the same for every stack
 * through that return address whose frame below pushed as many bytes of
 * parameters, so a walker that meets the same return addresses again and
 * again (the 32-bit agent's entry stacks) keeps it and runs it again,
 * without frame data or code. */
typedef struct hs_uw32_plan {
    uint32_t callee_params;    /* the frame below's parameters, in bytes (part of its key) */
    uint32_t ra_off;           /* the caller's return address at esp + ra_off */
    uint32_t ebp_saved_at;     /* the caller's ebp this many bytes below it; 0: ebp unchanged */
    uint32_t params;           /* the frame's own parameters (the frame data's) */
} hs_uw32_plan;

typedef struct hs_uw32_env {
    void *ctx;
    /* Is addr code of a known module? */
    bool (*is_code)(void *ctx, uint32_t addr);
    /* Read len code bytes at addr: 0, or -1 if unreadable. */
    int (*read)(void *ctx, uint32_t addr, void *buf, size_t len);
    /* Optional (NULL: none): the frame data of the function holding pc
     * (the thread's eip; for a return address, the address before it, in
     * the call): 1 with *fd filled, or 0 when there is none. */
    int (*frame_data)(void *ctx, uint32_t pc, hs_uw32_frame_data *fd);
    /* Optional (NULL: none): the thread's shadow return stack, when the
     * stack is the live one of a thread with timed calls open (a copy has
     * the true return addresses put back instead): every slot is read as
     * its true value (hs_ret_shadow_true). */
    const hs_ret_shadow *shadow;
    /* Optional (NULL: none), a keeper of plans: plan_get, 1 with *plan
     * the plan of the step out of return address ret's frame made with
     * callee_params (hs_uw32_plan), else 0; plan_put, keep the plan of
     * ret just made. */
    int (*plan_get)(void *ctx, uint32_t ret, uint32_t callee_params, hs_uw32_plan *plan);
    void (*plan_put)(void *ctx, uint32_t ret, const hs_uw32_plan *plan);
} hs_uw32_env;

/* How a frame was found. */
enum hs_uw32_how {
    HS_UW32_CONTEXT = 0,       /* the first frame: the thread's eip */
    HS_UW32_EPILOGUE,          /* the first frame's epilogue, run forward */
    HS_UW32_PROLOGUE,          /* a prologue, read from its code */
    HS_UW32_FRAME_DATA,        /* from the frame data of the frame below */
    HS_UW32_CHAIN,             /* from the ebp chain */
    HS_UW32_SCAN,              /* by a scan of the stack: a guess */
};

/* Walk from regs over the stack copy st (32-bit addresses): frames[0] =
 * regs->eip, then one return address per caller, leaf first, at most max
 * frames; how[i] (if how is not NULL) says how frames[i] was found. The
 * result's stop is an hs_uw_stop: HS_UW_END (a return address of 0, a
 * chain that ends with ebp 0 and nothing above, or the base of a complete
 * copy), HS_UW_TRUNCATED (beyond an incomplete copy, or max frames),
 * HS_UW_UNKNOWN_PC (eip, or a return address found from code or frame
 * data, outside known code), HS_UW_BAD (nothing found within the scan). */
hs_uw_result hs_unwind32_walk(const hs_uw32_env *env, const hs_uw_stack *st, const hs_uw32_regs *regs,
                              uint32_t *frames, uint8_t *how, uint32_t max);

/* The same from a function's entry, as a hook sees it: regs->eip its
 * first instruction, not yet run (its bytes may be a hook's patch: they
 * are not read), the return address at [esp]. frames[1] is that return
 * address (how: HS_UW32_PROLOGUE), and its caller's frame is stepped out
 * of with the entry's frame data telling the parameters pushed for it. */
hs_uw_result hs_unwind32_walk_entry(const hs_uw32_env *env, const hs_uw_stack *st, const hs_uw32_regs *regs,
                                    uint32_t *frames, uint8_t *how, uint32_t max);

#endif
