/*
 * sampler/etl/guids.c - the classic GUIDs of the kernel event groups the
 * reader decodes (events logged with a full or event header under these
 * GUIDs carry the same payloads as the hook-id forms), and of
 * KernelTraceControl's ImageID task (TraceEvent KernelTraceEventParser.cs,
 * SymbolTraceEventParser.cs).
 */
#include <string.h>

#include "sampler/etl/internal.h"

static const struct {
    uint32_t d1;
    uint16_t d2, d3;
    uint8_t d4[8];
    uint8_t group;
} known[] = {
    {0x3d6fa8d0, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}, HS_ETL_GROUP_PROCESS},
    {0x3d6fa8d1, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}, HS_ETL_GROUP_THREAD},
    {0x2cb15d1d, 0x5fc1, 0x11d2, {0xab, 0xe1, 0x00, 0xa0, 0xc9, 0x11, 0xf5, 0x18}, HS_ETL_GROUP_IMAGE},
    {0xce1dbfb4, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}, HS_ETL_GROUP_PERFINFO},
    {0xdef2fe46, 0x7bd6, 0x4b80, {0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3}, HS_ETL_GROUP_STACKWALK},
    {0xb3e675d7, 0x2554, 0x4f18, {0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde}, HS_ETL_GROUP_IMAGEID},
};

uint8_t hs_etl_guid_group(const uint8_t *g)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        uint32_t d1 = hs_le32(g);
        uint16_t d2 = (uint16_t)(g[4] | g[5] << 8), d3 = (uint16_t)(g[6] | g[7] << 8);
        if (d1 == known[i].d1 && d2 == known[i].d2 && d3 == known[i].d3 && !memcmp(g + 8, known[i].d4, 8))
            return known[i].group;
    }
    return HS_ETL_GROUP_NONE;
}
