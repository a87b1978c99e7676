/*
 * hook/engine/engine_int.h - what the engine's files share and nobody else sees.
 *
 * The engine is split by job:
 *   engine.c     the capstone handle, decoding one instruction, classifying it
 *   prefilter.c  byte-level scans (branch into the patch, indirect jumps)
 *   sweep.c      linear decode of a function: branch targets, jump tables
 *   frame.c      HS_ANALYZE_FULL: stack tracking, argument slots, flags
 *   analyze.c    hs_analyze: choosing the window and the patch kind
 *   tail.c       hs_tail: the slots a timed function's tail jumps need
 *   relocate.c   hs_emit_trampoline
 *   patchmap.c   hs_emit_patch and the offset maps
 *   count32.c    the counting stub of 32-bit code (its own header, count32.h)
 * One engine serves x86-64 and 32-bit code (hs_engine_new_bits): `bits`
 * below, and each plan's.
 */
#ifndef HOOKSCOPE_ENGINE_INT_H
#define HOOKSCOPE_ENGINE_INT_H

#include <capstone/capstone.h>

#include "hook/base/bytes.h"
#include "hook/engine/emit.h"
#include "hook/engine/hook.h"

/* One linearly decoded instruction with the operand facts the jump-table
 * resolver and the frame tracker need (a compact copy of cs_x86). */
typedef struct hs_op {
    uint8_t type;        /* X86_OP_REG / IMM / MEM */
    uint8_t size;
    uint8_t access;      /* CS_AC_READ / CS_AC_WRITE */
    uint16_t reg;        /* REG: register; MEM: base */
    uint16_t index;      /* MEM: index register */
    uint8_t scale;
    int64_t val;         /* IMM: value; MEM: displacement */
} hs_op;

typedef struct hs_sinsn {
    hs_insn i;
    uint8_t nops;
    hs_op op[4];
} hs_sinsn;

/* A branch inside the function: source instruction offset -> target offset
 * (both entry-relative; targets outside the function are not kept). */
typedef struct hs_edge {
    uint32_t src;
    uint32_t dst;
    uint8_t kind;        /* enum hs_ikind of the source (HS_I_JMP_IND: jump table entry) */
} hs_edge;

struct hs_engine {
    csh cs;
    int bits;                /* 64 or 32: the code decoded */
    cs_insn *ci;             /* scratch instruction for cs_disasm_iter */
    hs_sinsn *sw;            /* linear sweep of the current function */
    size_t sw_n, sw_cap;
    hs_edge *tgt;            /* branches found by the sweep (entry-relative) */
    size_t tgt_n, tgt_cap;
    void *frame_scratch;     /* frame.c's per-instruction state */
    size_t frame_cap;
    uint8_t *map;            /* sweep.c: per byte of the function, what is decoded */
    size_t map_cap;
    uint32_t *work, *weak, *data; /* sweep.c: offsets to follow, after calls, data starts */
    uint64_t *keys;          /* sweep.c: sorting e->sw */
    hs_sinsn *sw2;
    size_t keys_cap, sw2_cap;
    size_t work_n, work_cap, weak_n, weak_cap, data_n, data_cap;
    hs_exit *exits;          /* jumps out of the function (frame.c) */
    size_t exits_n, exits_cap;
    hs_insn win[HS_MAX_WINDOW_INSNS]; /* the window of the last plan (hs_analyze_window) */
};

/* Decode one instruction at entry-relative `off`, reading no byte at or
 * past entry-relative `limit`. Returns 0 and fills *out (and, if `ops` is
 * given, the operands), or -1 if capstone cannot decode it. */
int hs__decode(hs_engine *e, const hs_func_input *fn, int32_t off, int32_t limit,
               hs_insn *out, hs_sinsn *ops);

/* Is [off, off+n) of the function padding: every byte int3, or nop
 * instructions that tile the range exactly? Reads only inside the range. */
int hs__is_padding(hs_engine *e, const hs_func_input *fn, int32_t off, int32_t n);

/* Is [from, need_to) covered by padding instructions (int3, nops) decoded
 * from `from` (an instruction boundary), none reaching past `limit`? */
int hs__padding_run(hs_engine *e, const hs_func_input *fn, int32_t from, int32_t need_to,
                    int32_t limit);

/* Read image bytes at an absolute address: from the function's own bytes
 * (with its gaps) or through fn->read. 0 on success. */
int hs__read(const hs_func_input *fn, uint64_t addr, void *out, size_t n);

/* The 64-bit general register (0-15, HS_RAX...) a capstone register is part
 * of, or -1 (not a general register). */
int hs__gpr(unsigned reg);

/* Byte-level candidates: does any position q in [from,to) hold what could
 * be the opcode of a relative branch into the open interval (lo, hi)?
 * Returns the number of candidates and sets *last to one past the last
 * opcode byte position found. */
int hs__scan_branches(const hs_func_input *fn, uint32_t from, uint32_t to, int lo, int hi,
                      uint32_t *last);

/* Byte-level candidates for an indirect jmp that could use a jump table
 * (FF /4 with a register or an indexed memory operand). Same return. */
int hs__scan_indirect(const hs_func_input *fn, uint32_t from, uint32_t to, uint32_t *last);

/* Result of looking at the indirect jumps of the sweep. */
typedef struct hs_indirect_info {
    int n_indirect;      /* indirect jmps seen */
    int n_tables;        /* jump tables resolved */
    int n_unresolved;    /* table-like jumps that could not be resolved */
    int n_tailcalls;     /* indirect jmps that look like tail calls */
} hs_indirect_info;

/* Decode the whole function into e->sw (sorted by offset): first along its
 * flow from the entry (fall-through, direct branches, the entries of jump
 * tables it resolves), then, linearly, what the flow does not reach
 * (exception landing pads) up to any data the code refers to inside the
 * function (a jump table, constants of hand-written code): data is never
 * decoded as code. Fills e->tgt with every branch edge inside the function
 * and *ii. Returns 0, or -1 when some instruction does not decode (e->sw
 * then holds the rest). */
int hs__sweep(hs_engine *e, const hs_func_input *fn, hs_indirect_info *ii);

/* The cheap first look: decode linearly from the entry up to
 * entry-relative `upto` (the last byte-level candidate), as if there were
 * no data in between; fills e->sw, e->tgt and *ii the same way. */
int hs__sweep_linear(hs_engine *e, const hs_func_input *fn, uint32_t upto, hs_indirect_info *ii);

/* Frame analysis for HS_ANALYZE_FULL, on what hs__sweep found (`complete`:
 * it decoded every instruction). */
void hs__frame_analyze(hs_engine *e, const hs_func_input *fn, int complete, hs_plan *plan);

/* Upper bound of the trampoline bytes one instruction needs. */
int hs__reloc_max(const hs_insn *in);

#endif
