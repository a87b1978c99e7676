/*
 * sampler/etl/hdr.c - which trace header kind an event has, and its size.
 *
 * Byte 3 of every event is a marker: 0x80 (TRACE_HEADER_FLAG) must be set;
 * with 0x40 (TRACE_HEADER_EVENT_TRACE) byte 2 names the header kind, else
 * the record is a trace message (WPP), sized by its first 16 bits. Kinds
 * 1-4 and 0x10/0x11 keep their size at offset 4 (the first 16 bits are a
 * version), every other kind at offset 0. 0xFFFFFFFF is padding: no more
 * events in this buffer.
 */
#include "hook/base/bytes.h"
#include "sampler/etl/internal.h"

int hs_etl_hdr_parse(const uint8_t *p, size_t avail, hs_etl_event *ev, int *has_ts, const char **why)
{
    if (avail < 4 || hs_le32(p) == 0xFFFFFFFFu)
        return 1;
    uint8_t kind = p[2], marker = p[3];
    *has_ts = 1;
    if (!(marker & 0x80)) {
        *why = "not an event header (no trace header marker)";
        return -1;
    }
    if (!(marker & 0x40)) {
        /* a trace message: skip it whole */
        uint32_t size = hs_le16(p);
        if (size < 4 || size > avail) {
            *why = size < 4 ? "trace message size below 4" : "trace message runs past the buffer's data";
            return -1;
        }
        *ev = (hs_etl_event){.header = HS_ETL_HDR_MESSAGE, .group = HS_ETL_GROUP_NONE, .ptr = 8,
                             .pid = HS_ETL_NONE, .tid = HS_ETL_NONE, .data = p + 4, .size = size - 4,
                             .total = size};
        *has_ts = 0;
        return 0;
    }
    switch (kind) {
    case HS_ETL_HDR_SYSTEM32: case HS_ETL_HDR_SYSTEM64:
    case HS_ETL_HDR_COMPACT32: case HS_ETL_HDR_COMPACT64:
        return hs_etl_hdr_system(p, avail, ev, why);
    case HS_ETL_HDR_PERFINFO32: case HS_ETL_HDR_PERFINFO64:
        return hs_etl_hdr_perfinfo(p, avail, ev, why);
    case HS_ETL_HDR_FULL32: case HS_ETL_HDR_FULL64:
    case HS_ETL_HDR_INSTANCE32: case HS_ETL_HDR_INSTANCE64:
        return hs_etl_hdr_classic(p, avail, ev, why);
    case HS_ETL_HDR_EVENT32: case HS_ETL_HDR_EVENT64:
        return hs_etl_hdr_event(p, avail, ev, why);
    case HS_ETL_HDR_TIMED: case HS_ETL_HDR_ERROR: case HS_ETL_HDR_WNODE: case HS_ETL_HDR_MESSAGE: {
        uint32_t size = hs_le16(p);
        if (size < 4 || size > avail) {
            *why = size < 4 ? "event size below 4" : "event runs past the buffer's data";
            return -1;
        }
        *ev = (hs_etl_event){.header = kind, .group = HS_ETL_GROUP_NONE, .ptr = 8, .pid = HS_ETL_NONE,
                             .tid = HS_ETL_NONE, .data = p + 4, .size = size - 4, .total = size};
        *has_ts = 0;
        return 0;
    }
    default:
        *why = "unknown trace header kind";
        return -1;
    }
}
