/*
 * hook/base/bytes.h - little-endian reads from a byte array whose bounds
 * the caller has checked. ETL files are little-endian whatever the host.
 */
#ifndef HOOKSCOPE_ETL_BYTES_H
#define HOOKSCOPE_ETL_BYTES_H

#include <stdint.h>

static inline uint16_t hs_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t hs_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t hs_le64(const uint8_t *p)
{
    return (uint64_t)hs_le32(p) | (uint64_t)hs_le32(p + 4) << 32;
}

/* A pointer-sized field of a trace with ptr-byte pointers (4 or 8). */
static inline uint64_t hs_leptr(const uint8_t *p, unsigned ptr)
{
    return ptr == 8 ? hs_le64(p) : hs_le32(p);
}

#endif
