/*
 * hook/unwind/fpo32.h - the PDB's FPO records (FPO_DATA, winnt.h; the DBI
 * stream's optional debug header names the stream of them) decoded into
 * the x86 walker's frame data (hook/unwind/unwind32.h).
 *
 * An FPO_DATA record is 16 bytes, little-endian:
 *   0  ulOffStart   the function's first byte (an RVA)
 *   4  cbProcSize   its size in bytes
 *   8  cdwLocals    its locals, in dwords
 *  12  cdwParams    its parameters, in dwords (16 bits)
 *  14  cbProlog:8 cbRegs:3 fHasSEH:1 fUseBP:1 reserved:1 cbFrame:2
 *      (cbFrame: 0 FRAME_FPO, 1 FRAME_TRAP, 2 FRAME_TSS, 3 FRAME_NONFPO)
 *
 * FPO_DATA does not say where among its saved registers a function saved
 * ebp: ebp_saved_at stays 0 (the walker then finds a frame pointer that
 * such a function scribbled by its scan, and the caller's ebp among the
 * slots below the return address it found). The newer FrameData records
 * (DEBUG_S_FRAMEDATA, with a program string that gives ebp's slot) are
 * not decoded here.
 */
#ifndef HOOKSCOPE_UNWIND_FPO32_H
#define HOOKSCOPE_UNWIND_FPO32_H

#include <stddef.h>
#include <stdint.h>

#include "hook/unwind/unwind32.h"

#define HS_FPO_RECORD_SIZE 16

/* Decode the FPO_DATA record at rec (len bytes) of an image at base:
 * *fd its frame data, *end the address after its function. 0, or -1 for
 * a short record, or a trap or task-switch frame (kernel frames, which
 * the walker does not follow). */
int hs_fpo32_decode(const uint8_t *rec, size_t len, uint32_t base, hs_uw32_frame_data *fd, uint32_t *end);

#endif
