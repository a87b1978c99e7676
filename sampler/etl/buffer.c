/*
 * sampler/etl/buffer.c - the view of a WMI_BUFFER_HEADER, the 72 bytes that
 * open every buffer of an .etl file (Geoff Chappell's WMI_BUFFER_HEADER
 * page; snail-server snail/etl/parser/buffer.hpp):
 *   0x00 BufferSize       bytes of the buffer in the file
 *   0x04 SavedOffset      end of its events
 *   0x08 CurrentOffset
 *   0x10 TimeStamp
 *   0x18 SequenceNumber   per logger, counts the buffers written
 *   0x28 ClientContext    processor number in the low byte, or a 16-bit
 *                         processor index when BufferFlag has 0x20
 *   0x2C State            in the first buffer of a compressed file, the
 *                         COMPRESSION_FORMAT_* in its low 16 bits
 *   0x30 Offset           end of the events (some writers leave SavedOffset 0)
 *   0x34 BufferFlag       0x02 events lost, 0x04 buffer lost, 0x40 compressed
 *   0x36 BufferType       4 = the header buffer
 * A compressed buffer keeps these 72 bytes plain; BufferSize is then its
 * size in the file and SavedOffset the size once decompressed.
 */
#include "hook/base/bytes.h"
#include "sampler/etl/internal.h"

void hs_etl_bufhdr_parse(const uint8_t *p, hs_etl_bufhdr *b)
{
    b->size = hs_le32(p + 0x00);
    b->saved = hs_le32(p + 0x04);
    b->ts = hs_le64(p + 0x10);
    b->seq = hs_le64(p + 0x18);
    b->state = hs_le32(p + 0x2C);
    b->offset = hs_le32(p + 0x30);
    b->flags = hs_le16(p + 0x34);
    b->type = hs_le16(p + 0x36);
    b->cpu = b->flags & HS_ETL_BUF_PROC_INDEX ? hs_le16(p + 0x28) : p[0x28];
}
