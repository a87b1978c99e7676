/*
 * sampler/etl/hdr_classic.c - the views of EVENT_TRACE_HEADER (the full
 * header of classic events identified by a GUID: kinds 0x0A, 0x14, 48
 * bytes) and of EVENT_INSTANCE_GUID_HEADER (kinds 0x0B, 0x15: 72 bytes):
 *   0 Size u16 (the whole event), 2 kind, 3 marker, 4 Class.Type (opcode),
 *   5 Class.Level, 6 Class.Version u16, 8 ThreadId, 12 ProcessId,
 *   16 TimeStamp u64, 24 Guid, 40 KernelTime/UserTime (or ProcessorTime);
 *   instance: 48 InstanceId, 52 ParentInstanceId, 56 ParentGuid.
 * Kernel events with a classic GUID get that GUID's group.
 */
#include "hook/base/bytes.h"
#include "sampler/etl/internal.h"

int hs_etl_hdr_classic(const uint8_t *p, size_t avail, hs_etl_event *ev, const char **why)
{
    uint8_t kind = p[2];
    int instance = kind == HS_ETL_HDR_INSTANCE32 || kind == HS_ETL_HDR_INSTANCE64;
    uint32_t hsize = instance ? 72 : 48;
    if (avail < hsize) {
        *why = "event header runs past the buffer's data";
        return -1;
    }
    uint32_t size = hs_le16(p);
    if (size < hsize) {
        *why = "event size smaller than its header";
        return -1;
    }
    if (size > avail) {
        *why = "event runs past the buffer's data";
        return -1;
    }
    *ev = (hs_etl_event){
        .header = kind, .group = hs_etl_guid_group(p + 24), .type = p[4], .version = hs_le16(p + 6),
        .ptr = kind == HS_ETL_HDR_FULL32 || kind == HS_ETL_HDR_INSTANCE32 ? 4 : 8,
        .tid = hs_le32(p + 8), .pid = hs_le32(p + 12), .ts = hs_le64(p + 16), .guid = p + 24,
        .data = p + hsize, .size = size - hsize, .total = size,
    };
    return 0;
}
