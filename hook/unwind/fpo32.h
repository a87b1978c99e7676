/*
 * hook/unwind/fpo32.h - the frame data a PDB keeps for x86 code (the DBI
 * stream's optional debug header names two streams of it) decoded into
 * the x86 walker's frame data (hook/unwind/unwind32.h), and a table of it
 * for one image, looked up by RVA.
 *
 * FPO_DATA (winnt.h; debug header slot 0, "FPO"), 16 bytes, little-endian:
 *   0  ulOffStart   the function's first byte (an RVA)
 *   4  cbProcSize   its size in bytes
 *   8  cdwLocals    its locals, in dwords
 *  12  cdwParams    its parameters, in dwords (16 bits)
 *  14  cbProlog:8 cbRegs:3 fHasSEH:1 fUseBP:1 reserved:1 cbFrame:2
 *      (cbFrame: 0 FRAME_FPO, 1 FRAME_TRAP, 2 FRAME_TSS, 3 FRAME_NONFPO)
 * FPO_DATA does not say where among its saved registers a function saved
 * ebp: ebp_saved_at stays 0 (the walker then finds a frame pointer that
 * such a function scribbled by its scan, and the caller's ebp among the
 * slots below the return address it found).
 *
 * FrameData (cvinfo.h FRAMEDATA; debug header slot 9, "NewFPO"; what
 * MSVC and LLVM write today), 32 bytes, little-endian, the stream an array
 * of them:
 *   0  ulRvaStart   4  cbBlock (code size)   8  cbLocals   12 cbParams
 *  16  cbStkMax     20 frameFunc (the program string: an offset in the
 *                      PDB's "/names")
 *  24  cbProlog:16  26 cbSavedRegs:16
 *  28  flags: 1 fHasSEH, 2 fHasEH, 4 fIsFunctionStart
 * Sizes are in bytes. LLVM writes one record per prologue step (a push,
 * the stack allocation, `mov ebp,esp`), each from that instruction to the
 * function's end with what the frame holds by then; only the first is a
 * function start. MSVC writes one per function (or per region of it). A
 * record that is not a start describes the frame as of its own first
 * byte: its prolog is taken as 0.
 *
 * The program string says how to get the caller's registers, in reverse
 * Polish: `$T0 .raSearch = $eip $T0 ^ = $esp $T0 4 + = $ebp $T0 4 - ^ =`
 * (T0 is where the search for the return address starts; eip is read
 * there, esp is above it, ebp was saved 4 bytes below it), or for a frame
 * on ebp `$T0 $ebp 4 + = $eip $T0 ^ = ...` (MSVC: `$T0 $ebp = $eip $T0 4
 * + ^ = ...`). The walker searches for the return address itself (above
 * locals, saved registers and the parameters pushed for the frame below,
 * .raSearch's definition), so only two facts are taken from the program,
 * by evaluating it symbolically, each value an offset from .raSearch,
 * from the frame's ebp or from its esp, or a slot read at one:
 *   uses_ebp       eip is read at ebp + 4: the chain holds;
 *   ebp_saved_at   eip is read at .raSearch + a and ebp at .raSearch + b:
 *                  a - b.
 * Anything else (an aligned frame's `@`, a register the program leaves
 * unknown) leaves the record's numeric fields alone to the walker.
 */
#ifndef HOOKSCOPE_UNWIND_FPO32_H
#define HOOKSCOPE_UNWIND_FPO32_H

#include <stddef.h>
#include <stdint.h>

#include "hook/unwind/unwind32.h"

#define HS_FPO_RECORD_SIZE 16
#define HS_FRAMEDATA_RECORD_SIZE 32

/* Decode the FPO_DATA record at rec (len bytes) of an image at base:
 * *fd its frame data, *end the address after its function. 0, or -1 for
 * a short record, or a trap or task-switch frame (kernel frames, which
 * the walker does not follow). */
int hs_fpo32_decode(const uint8_t *rec, size_t len, uint32_t base, hs_uw32_frame_data *fd, uint32_t *end);

/* Decode the FrameData record at rec (len bytes) of an image at base,
 * with its program string (NULL: none): as hs_fpo32_decode. 0, or -1 for
 * a short record. */
int hs_framedata_decode(const uint8_t *rec, size_t len, const char *program, uint32_t base, hs_uw32_frame_data *fd,
                        uint32_t *end);

/* What a program string says (see above): 1 with *uses_ebp and
 * *ebp_saved_at set, or 0 when it does not say where eip is read. */
int hs_fpo32_program(const char *program, bool *uses_ebp, uint32_t *ebp_saved_at);

/* One image's records, both kinds. */
typedef struct hs_fpo32 hs_fpo32;

hs_fpo32 *hs_fpo32_new(void);
void hs_fpo32_free(hs_fpo32 *t);
/* Add a record (as the decoders above, at base 0). 0, -1 (refused or out
 * of memory). */
int hs_fpo32_add_fpo(hs_fpo32 *t, const uint8_t *rec, size_t len);
int hs_fpo32_add_framedata(hs_fpo32 *t, const uint8_t *rec, size_t len, const char *program);
/* Add a record already decoded (fd->begin: its rva; end: the rva after
 * it; as hs_fpo32_record gives them back). 0, -1 (empty, or out of
 * memory). */
int hs_fpo32_add(hs_fpo32 *t, const hs_uw32_frame_data *fd, uint32_t end);
/* Sort what was added; before any lookup. */
void hs_fpo32_finish(hs_fpo32 *t);
size_t hs_fpo32_count(const hs_fpo32 *t);
/* Its i-th record by rva (begin: the rva; *end the rva after it), or NULL
 * past the last. */
const hs_uw32_frame_data *hs_fpo32_record(const hs_fpo32 *t, size_t i, uint32_t *end);
/* The frame data at rva of the image loaded at base: the record that
 * starts last at or before rva and covers it; 1 with *fd filled, or 0. */
int hs_fpo32_frame_data(const hs_fpo32 *t, uint32_t rva, uint32_t base, hs_uw32_frame_data *fd);

#endif
