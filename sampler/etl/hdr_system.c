/*
 * sampler/etl/hdr_system.c - the view of SYSTEM_TRACE_HEADER (kinds 1, 2:
 * 32 bytes) and of the compact header (kinds 3, 4: 24 bytes, no kernel and
 * user times), which kernel events carry:
 *   0 Version u16, 2 kind, 3 marker, 4 Size u16 (the whole event),
 *   6 HookId u16 (group << 8 | type), 8 ThreadId, 12 ProcessId,
 *   16 SystemTime u64, 24 KernelTime, 28 UserTime.
 * Odd kinds have 4-byte payload pointers, even kinds 8-byte ones.
 */
#include "hook/base/bytes.h"
#include "sampler/etl/internal.h"

int hs_etl_hdr_system(const uint8_t *p, size_t avail, hs_etl_event *ev, const char **why)
{
    uint8_t kind = p[2];
    uint32_t hsize = kind <= HS_ETL_HDR_SYSTEM64 ? 32 : 24;
    if (avail < hsize) {
        *why = "event header runs past the buffer's data";
        return -1;
    }
    uint32_t size = hs_le16(p + 4);
    if (size < hsize) {
        *why = "event size smaller than its header";
        return -1;
    }
    if (size > avail) {
        *why = "event runs past the buffer's data";
        return -1;
    }
    uint16_t hook = hs_le16(p + 6);
    *ev = (hs_etl_event){
        .header = kind, .group = (uint8_t)(hook >> 8), .type = (uint8_t)hook, .version = hs_le16(p),
        .ptr = kind == HS_ETL_HDR_SYSTEM32 || kind == HS_ETL_HDR_COMPACT32 ? 4 : 8,
        .tid = hs_le32(p + 8), .pid = hs_le32(p + 12), .ts = hs_le64(p + 16),
        .data = p + hsize, .size = size - hsize, .total = size,
    };
    return 0;
}
