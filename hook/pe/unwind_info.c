/*
 * hook/pe/unwind_info.c - the decoder of x64 unwind data (see unwind_info.h).
 */
#include "hook/pe/unwind_info.h"

#include <string.h>

#include "hook/base/bytes.h"

size_t hs_unwind_info_size(uint8_t count_codes)
{
    return 4 + (size_t)((count_codes + 1u) & ~1u) * 2 + 12;
}

int hs_unwind_parse(const uint8_t *p, size_t avail, hs_unwind *u)
{
    memset(u, 0, sizeof *u);
    if (avail < 4)
        return -1;
    u->version = p[0] & 7;
    u->flags = p[0] >> 3;
    u->prolog_size = p[1];
    u->count_codes = p[2];
    u->frame_reg = p[3] & 15;
    u->frame_off = p[3] >> 4;
    if (u->version != 1 && u->version != 2)
        return -1;
    size_t codes_len = (size_t)((u->count_codes + 1u) & ~1u) * 2;
    if (avail < 4 + codes_len)
        return -1;
    u->codes = p + 4;
    const uint8_t *tail = p + 4 + codes_len;
    size_t tail_len = avail - 4 - codes_len;
    if (u->flags & HS_UNW_CHAININFO) {
        if (tail_len < 12)
            return -1;
        u->chained_begin = hs_le32(tail);
        u->chained_end = hs_le32(tail + 4);
        u->chained_unwind = hs_le32(tail + 8);
    } else if ((u->flags & (HS_UNW_EHANDLER | HS_UNW_UHANDLER)) && tail_len >= 4) {
        u->handler_rva = hs_le32(tail);
    }
    return 0;
}

int hs_pe_unwind(const hs_pe *pe, uint32_t unwind_rva, hs_unwind *u)
{
    const uint8_t *h = hs_pe_ptr(pe, unwind_rva, 4);
    if (!h) {
        memset(u, 0, sizeof *u);
        return -1;
    }
    uint32_t want = (uint32_t)hs_unwind_info_size(h[2]);
    /* what of it the image holds (the trailing handler or chain may end
     * exactly at the image's end) */
    uint32_t have = unwind_rva < pe->image_size ? (uint32_t)(pe->image_size - unwind_rva) : 0;
    return hs_unwind_parse(h, have < want ? have : want, u);
}

int hs_unwind_code_at(const hs_unwind *u, int i, hs_unwind_code *c)
{
    if (i < 0 || i >= u->count_codes)
        return -1;
    const uint8_t *s = u->codes + i * 2;
    c->off = s[0];
    c->op = s[1] & 15;
    c->info = s[1] >> 4;
    c->arg = 0;
    switch (c->op) {
    case HS_UWOP_ALLOC_LARGE: c->slots = c->info ? 3 : 2; break;
    case HS_UWOP_SAVE_NONVOL: c->slots = 2; break;
    case HS_UWOP_SAVE_NONVOL_FAR: c->slots = 3; break;
    case HS_UWOP_EPILOG: c->slots = u->version == 2 ? 1 : 2; break;   /* v1: the old SAVE_XMM */
    case HS_UWOP_SPARE: c->slots = 3; break;                          /* v1: the old SAVE_XMM_FAR */
    case HS_UWOP_SAVE_XMM128: c->slots = 2; break;
    case HS_UWOP_SAVE_XMM128_FAR: c->slots = 3; break;
    default: c->slots = 1; break;
    }
    if (i + c->slots > u->count_codes)
        return -1;
    if (c->slots == 2)
        c->arg = hs_le16(s + 2);
    else if (c->slots == 3)
        c->arg = hs_le32(s + 2);
    return 0;
}

int hs_unwind_frame_size(const hs_unwind *u)
{
    int total = 0;
    hs_unwind_code c;
    for (int i = 0; i < u->count_codes; i += c.slots) {
        if (hs_unwind_code_at(u, i, &c) < 0)
            return -1;
        switch (c.op) {
        case HS_UWOP_PUSH_NONVOL: total += 8; break;
        case HS_UWOP_ALLOC_LARGE: total += c.info ? (int)c.arg : (int)c.arg * 8; break;
        case HS_UWOP_ALLOC_SMALL: total += c.info * 8 + 8; break;
        case HS_UWOP_PUSH_MACHFRAME: total += c.info ? 48 : 40; break;
        case HS_UWOP_SPARE:
            if (u->version == 2)
                return -1;
            break;
        default: break;
        }
        if (c.op > HS_UWOP_PUSH_MACHFRAME)
            return -1;
    }
    return total;
}

int hs_unwind_entered_with_frame(const hs_unwind *u)
{
    hs_unwind_code c;
    for (int i = 0; i < u->count_codes; i += c.slots) {
        if (hs_unwind_code_at(u, i, &c) < 0)
            return 0;
        if (c.op != HS_UWOP_EPILOG && c.off == 0)
            return 1;
    }
    return 0;
}
