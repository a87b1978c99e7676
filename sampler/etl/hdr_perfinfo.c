/*
 * sampler/etl/hdr_perfinfo.c - the view of PERFINFO_TRACE_HEADER (kinds
 * 0x10, 0x11: 16 bytes, no thread or process), which samples and stack
 * walks carry:
 *   0 Version u16 (bit 15: a PEBS index follows the header, bits 8-10: the
 *     number of PMC counters that follow, 8 bytes each), 2 kind, 3 marker,
 *   4 Size u16 (the whole event), 6 HookId u16, 8 SystemTime u64.
 * (snail-server trace_headers/perfinfo_trace.hpp, ntwmi.h's
 * TRACE_HEADER_PEBS_INDEX_FLAG and TRACE_HEADER_PMC_COUNTERS_MASK.)
 */
#include "hook/base/bytes.h"
#include "sampler/etl/internal.h"

int hs_etl_hdr_perfinfo(const uint8_t *p, size_t avail, hs_etl_event *ev, const char **why)
{
    if (avail < 16) {
        *why = "event header runs past the buffer's data";
        return -1;
    }
    uint16_t w0 = hs_le16(p);
    uint32_t hsize = 16 + (w0 & 0x8000 ? 8 : 0) + (uint32_t)(w0 >> 8 & 7) * 8;
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
        .header = p[2], .group = (uint8_t)(hook >> 8), .type = (uint8_t)hook,
        .version = (uint16_t)(w0 & ~0x8700), .ptr = p[2] == HS_ETL_HDR_PERFINFO32 ? 4 : 8,
        .pid = HS_ETL_NONE, .tid = HS_ETL_NONE, .ts = hs_le64(p + 8),
        .data = p + hsize, .size = size - hsize, .total = size,
    };
    return 0;
}
