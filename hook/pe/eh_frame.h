/*
 * hook/pe/eh_frame.h - function extents from an image's `.eh_frame`: the
 * DWARF call-frame records gcc's i686 (DW2 unwinding) builds carry, one
 * FDE per function with unwind tables, exact [begin, begin + range) as
 * .pdata gives on x86-64. The section's name is a long one, in the COFF
 * string table (so read with the file bytes), or, in an image linked
 * stripped (`ld -s`: no string table), cut to `.eh_fram`.
 *
 * Layout (the LSB's .eh_frame, DWARF 4 section 6.4.1): records of a
 * 32-bit length (0: a terminator, read past as objdump does: the linker
 * puts crtbegin.o's records after crtend.o's; 0xffffffff, a 64-bit length,
 * is not read) and a 32-bit id: 0 for a CIE, else the distance back to
 * the FDE's CIE. A CIE's augmentation "zR..." gives the encoding of the FDE's
 * pc_begin and pc_range (DW_EH_PE_*: absptr, udata/sdata 2/4/8, uleb and
 * sleb; applied as is or pc-relative). An FDE whose CIE or encoding cannot
 * be read, or whose extent is not inside one executable section, is left
 * out; the walk stops at the first record that runs past the section.
 */
#ifndef HOOKSCOPE_PE_EH_FRAME_H
#define HOOKSCOPE_PE_EH_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/pe/functions.h"
#include "hook/pe/pe.h"

/* The FDEs' extents, malloc'd (NULL and 0 when the image has no
 * .eh_frame). Returns 0, or -1 out of memory. */
int hs_pe_eh_frame(const hs_pe *pe, hs_pe_extent **out, size_t *count);

/* A CIE: what its FDEs share (their call-frame instructions start with
 * its initial ones). */
typedef struct hs_eh_cie {
    uint8_t enc;               /* the FDEs' pointer encoding (DW_EH_PE_*) */
    bool z, lsda;              /* augmentation data ('z'); an LSDA pointer in it ('L') */
    uint64_t code_align;
    int64_t data_align;
    uint32_t ra_reg;           /* the return address's column */
    const uint8_t *insns;      /* initial instructions (in the image) */
    size_t ninsns;
} hs_eh_cie;

/* An FDE: one function's extent and call-frame instructions. */
typedef struct hs_eh_fde {
    uint32_t rva, size;
    hs_eh_cie cie;
    const uint8_t *insns;      /* (in the image; NULL when unreadable) */
    size_t ninsns;
} hs_eh_fde;

/* Call fn for each FDE whose extent lies in one executable section, in
 * the section's order (fn returns 0, or -1 to stop: then -1). */
int hs_pe_eh_frame_fdes(const hs_pe *pe, int (*fn)(void *ctx, const hs_eh_fde *f), void *ctx);

/* Does a CIE of the image's .eh_frame name a personality routine (a 'P'
 * in its "z..." augmentation: g++'s "zPLR")? Then the image's code
 * throws, catches or cleans up C++ exceptions by DWARF-2 unwinding, which
 * steps from frame to frame by return address. 1 or 0. */
int hs_pe_eh_frame_personality(const hs_pe *pe);

#endif
