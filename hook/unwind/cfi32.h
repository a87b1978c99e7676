/*
 * hook/unwind/cfi32.h - the x86 walker's frame data (hook/unwind/unwind32.h)
 * from an i386 image's DWARF call-frame information: the `.eh_frame` that
 * gcc's i686 builds carry (hook/pe/eh_frame.h reads its records). gcc
 * omits the frame pointer at -O1 and above, and its tables are exact at
 * every instruction (asynchronous unwind tables), so they say where each
 * frame's return address and saved ebp are where the ebp chain cannot:
 * a leaf without a frame pointer called from a function with one (the
 * chain would skip its caller), a frame whose ebp is a general register
 * (the walker would scan, and a stale return address in its locals would
 * be taken for its caller).
 *
 * At pc the call-frame instructions give the CFA (the caller's esp: the
 * return address is just below it) as a register plus an offset, and the
 * slot where ebp was saved. The frame data of pc: with the CFA from esp,
 * the return address esp + offset - 4 (`locals`, nothing else, and no
 * parameters: the tables count pushed arguments in the offset) and ebp's
 * slot below it; with the CFA from ebp, `uses_ebp` (the chain holds);
 * anything else (a CFA expression: gcc's stack realignment in main and
 * the C runtime's start; another register) gives none. Plain C.
 */
#ifndef HOOKSCOPE_UNWIND_CFI32_H
#define HOOKSCOPE_UNWIND_CFI32_H

#include <stddef.h>
#include <stdint.h>

#include "hook/pe/pe.h"
#include "hook/unwind/unwind32.h"

typedef struct hs_cfi32 hs_cfi32;

/* The call-frame information of an i386 image laid out by RVA (its FDEs'
 * instructions are copied). NULL when it has none (no .eh_frame, not
 * i386, out of memory). */
hs_cfi32 *hs_cfi32_from_pe(const hs_pe *pe);
void hs_cfi32_free(hs_cfi32 *t);
/* Its FDEs (functions described). */
size_t hs_cfi32_count(const hs_cfi32 *t);

/* The frame data at rva of the image loaded at base: 1 with *fd filled
 * (begin: the instruction's own address, prolog 0: exact for that
 * instruction), or 0 when no FDE covers rva or its rule there is not one
 * the walker can use. */
int hs_cfi32_frame_data(const hs_cfi32 *t, uint32_t rva, uint32_t base, hs_uw32_frame_data *fd);

/* The whole table as rows, by rva: fn(ctx, rva, end, fd) for each range
 * [rva, end) over which the frame data is one that the walker can use
 * (fd as hs_cfi32_frame_data gives it at base 0 for any instruction of
 * the range; a range of several rows alike is one call). For a table
 * kept where the call-frame instructions are not (the 32-bit agent's,
 * sent to it with the module's function list). */
typedef void (*hs_cfi32_row_fn)(void *ctx, uint32_t rva, uint32_t end, const hs_uw32_frame_data *fd);
void hs_cfi32_each_row(const hs_cfi32 *t, hs_cfi32_row_fn fn, void *ctx);

#endif
