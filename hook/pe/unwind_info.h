/*
 * hook/pe/unwind_info.h - the one decoder of x64 unwind data: UNWIND_INFO
 * (version 1 and 2) with its codes, its handler and its chained parent,
 * read from an image (hs_pe_unwind) or from bytes anyone has copied
 * (hs_unwind_parse: the unwinder reads another process's memory, the
 * agent its own). Plain C.
 *
 * Unwind codes, with their slots (16-bit units, the code's own included):
 *   0 PUSH_NONVOL 1    1 ALLOC_LARGE 2 (info 0: size/8 in the next slot)
 *   or 3 (info 1: size in the next two)    2 ALLOC_SMALL 1 (info*8 + 8)
 *   3 SET_FPREG 1      4 SAVE_NONVOL 2 (offset/8)   5 SAVE_NONVOL_FAR 3
 *   6 EPILOG (v2) 1, in version 1 the old SAVE_XMM 2     7 (v1 SAVE_XMM_FAR) 3
 *   8 SAVE_XMM128 2    9 SAVE_XMM128_FAR 3    10 PUSH_MACHFRAME 1
 */
#ifndef HOOKSCOPE_PE_UNWIND_INFO_H
#define HOOKSCOPE_PE_UNWIND_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "hook/pe/pe.h"

enum hs_uwop {
    HS_UWOP_PUSH_NONVOL = 0, HS_UWOP_ALLOC_LARGE, HS_UWOP_ALLOC_SMALL, HS_UWOP_SET_FPREG,
    HS_UWOP_SAVE_NONVOL, HS_UWOP_SAVE_NONVOL_FAR, HS_UWOP_EPILOG, HS_UWOP_SPARE,
    HS_UWOP_SAVE_XMM128, HS_UWOP_SAVE_XMM128_FAR, HS_UWOP_PUSH_MACHFRAME,
};

#define HS_UNW_EHANDLER 1
#define HS_UNW_UHANDLER 2
#define HS_UNW_CHAININFO 4

typedef struct hs_unwind {
    uint8_t version, flags, prolog_size, count_codes;
    uint8_t frame_reg, frame_off;   /* frame register number, offset/16 */
    uint32_t handler_rva;           /* if flags & (EHANDLER|UHANDLER) */
    /* if flags & CHAININFO: the parent entry (begin, end, unwind RVAs) */
    uint32_t chained_begin, chained_end, chained_unwind;
    const uint8_t *codes;           /* count_codes * 2 bytes */
} hs_unwind;

/* One unwind code. */
typedef struct hs_unwind_code {
    uint8_t off;                    /* prologue offset of the instruction */
    uint8_t op, info;               /* hs_uwop, its 4-bit operand */
    uint32_t arg;                   /* the next slot(s): size or offset as stored */
    int slots;                      /* slots it takes */
} hs_unwind_code;

/* Bytes an UNWIND_INFO with `count_codes` codes takes, with what follows
 * the codes (a handler or chained entry, 12 bytes at most). */
size_t hs_unwind_info_size(uint8_t count_codes);

/* Decode the UNWIND_INFO at p (avail bytes there; codes point into p):
 * 0, or -1 when it is not one (a version other than 1 and 2) or is cut
 * short (the codes, or the chained entry it announces). A handler RVA cut
 * short is left 0. */
int hs_unwind_parse(const uint8_t *p, size_t avail, hs_unwind *u);
/* The same at an rva of a PE image. */
int hs_pe_unwind(const hs_pe *pe, uint32_t unwind_rva, hs_unwind *out);

/* Code i (a slot index): 0, or -1 when it runs past the codes. */
int hs_unwind_code_at(const hs_unwind *u, int i, hs_unwind_code *c);

/* Does the code enter with a frame already set up (an unwind code at
 * prologue offset 0): a part of a function reached by a jump, like gcc's
 * .cold parts, not a function entered by a call? */
int hs_unwind_entered_with_frame(const hs_unwind *u);
/* Total stack the prologue allocates (pushes + allocations), in bytes, or -1. */
int hs_unwind_frame_size(const hs_unwind *u);

#endif
