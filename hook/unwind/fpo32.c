/*
 * hook/unwind/fpo32.c - FPO_DATA records into the x86 walker's frame data
 * (see fpo32.h).
 */
#include "hook/unwind/fpo32.h"

#include <string.h>

#include "hook/base/bytes.h"

enum { FRAME_FPO = 0, FRAME_TRAP = 1, FRAME_TSS = 2, FRAME_NONFPO = 3 };

int hs_fpo32_decode(const uint8_t *rec, size_t len, uint32_t base, hs_uw32_frame_data *fd, uint32_t *end)
{
    if (len < HS_FPO_RECORD_SIZE)
        return -1;
    uint16_t bits = hs_le16(rec + 14);
    int frame = bits >> 14;
    if (frame == FRAME_TRAP || frame == FRAME_TSS)
        return -1;
    memset(fd, 0, sizeof *fd);
    fd->begin = base + hs_le32(rec);
    fd->prolog = bits & 0xFF;
    fd->locals = hs_le32(rec + 8) * 4;
    fd->saved_regs = ((bits >> 8) & 7) * 4;
    fd->params = (uint32_t)hs_le16(rec + 12) * 4;
    fd->uses_ebp = ((bits >> 12) & 1) || frame == FRAME_NONFPO;
    *end = fd->begin + hs_le32(rec + 4);
    return 0;
}
