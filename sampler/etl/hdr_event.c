/*
 * sampler/etl/hdr_event.c - the view of EVENT_HEADER (kinds 0x12, 0x13:
 * 80 bytes), which manifest and TraceLogging events carry, and of the
 * extended data items that may follow it inside the event:
 *   0 Size u16 (the whole event, items included), 2 kind, 3 marker,
 *   4 Flags u16 (0x01 extended items follow, 0x20 32-bit, 0x40 64-bit),
 *   6 EventProperty u16, 8 ThreadId, 12 ProcessId, 16 TimeStamp u64,
 *   24 ProviderId, 40 EVENT_DESCRIPTOR (Id u16, Version, Channel, Level,
 *   Opcode, Task u16, Keyword u64), 56 processor time, 64 ActivityId.
 * Each extended item: u16 its size, u16 type, u16 bit 0 = another item
 * follows, u16 data size, the data; items are 8-byte aligned (airbus-cert
 * etl-parser etl/event.py). STACK_TRACE32/64 data: a u64 match id then the
 * frames; STACK_KEY32/64: a match id then the key.
 */
#include "hook/base/bytes.h"
#include "sampler/etl/internal.h"

int hs_etl_hdr_event(const uint8_t *p, size_t avail, hs_etl_event *ev, const char **why)
{
    if (avail < 80) {
        *why = "event header runs past the buffer's data";
        return -1;
    }
    uint32_t size = hs_le16(p);
    if (size < 80) {
        *why = "event size smaller than its header";
        return -1;
    }
    if (size > avail) {
        *why = "event runs past the buffer's data";
        return -1;
    }
    uint16_t flags = hs_le16(p + 4);
    *ev = (hs_etl_event){
        .header = p[2], .group = hs_etl_guid_group(p + 24), .type = p[45], .version = p[42],
        .ptr = p[2] == HS_ETL_HDR_EVENT32 ? 4 : 8, .event_id = hs_le16(p + 40), .header_flags = flags,
        .tid = hs_le32(p + 8), .pid = hs_le32(p + 12), .ts = hs_le64(p + 16), .guid = p + 24,
        .total = size,
    };
    uint32_t at = 80;
    if (flags & 0x0001) {
        for (;;) {
            if (size - at < 8) {
                *why = "extended data item runs past the event";
                return -1;
            }
            uint16_t type = hs_le16(p + at + 2), more = hs_le16(p + at + 4), dsize = hs_le16(p + at + 6);
            if (dsize > size - at - 8) {
                *why = "extended data item runs past the event";
                return -1;
            }
            const uint8_t *d = p + at + 8;
            if ((type == HS_ETL_EXT_STACK_TRACE64 || type == HS_ETL_EXT_STACK_TRACE32) && dsize >= 8) {
                uint32_t fp = type == HS_ETL_EXT_STACK_TRACE64 ? 8 : 4;
                ev->ext_match_id = hs_le64(d);
                ev->ext_stack = (hs_etl_frames){.p = d + 8, .n = (dsize - 8u) / fp, .ptr = fp};
            } else if (type == HS_ETL_EXT_STACK_KEY64 && dsize >= 16) {
                ev->ext_match_id = hs_le64(d);
                ev->ext_stack_key = hs_le64(d + 8);
            } else if (type == HS_ETL_EXT_STACK_KEY32 && dsize >= 12) {
                ev->ext_match_id = hs_le64(d);
                ev->ext_stack_key = hs_le32(d + 8);
            }
            uint32_t step = (8u + dsize + 7) & ~7u;
            at = step > size - at ? size : at + step;
            if (!(more & 1))
                break;
        }
    }
    ev->data = p + at;
    ev->size = size - at;
    return 0;
}
