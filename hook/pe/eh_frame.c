/*
 * hook/pe/eh_frame.c - function extents from `.eh_frame` (see eh_frame.h).
 */
#include "hook/pe/eh_frame.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/vec.h"

enum { PE_OMIT = 0xff, PE_PCREL = 0x10 };

/* A value of encoding `enc` at the cursor (its application aside). */
static int64_t read_encoded(hs_cur *c, uint8_t enc, int bits)
{
    switch (enc & 0x0f) {
    case 0x00: return bits == 32 ? (int64_t)hs_cur_u32(c) : (int64_t)hs_cur_u64(c);
    case 0x01: return (int64_t)hs_cur_uleb(c);
    case 0x02: return hs_cur_u16(c);
    case 0x03: return hs_cur_u32(c);
    case 0x04: return (int64_t)hs_cur_u64(c);
    case 0x09: return hs_cur_sleb(c);
    case 0x0a: return (int16_t)hs_cur_u16(c);
    case 0x0b: return (int32_t)hs_cur_u32(c);
    case 0x0c: return (int64_t)hs_cur_u64(c);
    }
    c->bad = true;
    return 0;
}

/* The CIE at offset `at` of the section: 0, or -1 when it cannot be read. */
static int read_cie(const uint8_t *sec, size_t size, size_t at, int bits, hs_eh_cie *cie)
{
    memset(cie, 0, sizeof *cie);
    if (at > size || size - at < 9)
        return -1;
    hs_cur c = hs_cur_of(sec + at, size - at);
    uint32_t len = hs_cur_u32(&c);
    if (len < 5 || len == 0xffffffffu || len > size - at - 4 || hs_cur_u32(&c) != 0)
        return -1;
    c.len = 4 + (size_t)len;
    uint8_t version = hs_cur_u8(&c);
    const uint8_t *aug = c.p + c.off;
    size_t n = 0;
    while (c.off + n < c.len && aug[n])
        n++;
    if (c.off + n >= c.len || (version != 1 && version != 3))
        return -1;
    hs_cur_skip(&c, n + 1);
    if (n >= 2 && aug[0] == 'e' && aug[1] == 'h')
        return -1;        /* the old "eh" augmentation: not written by gcc for a long time */
    cie->code_align = hs_cur_uleb(&c);
    cie->data_align = hs_cur_sleb(&c);
    cie->ra_reg = version == 1 ? hs_cur_u8(&c) : (uint32_t)hs_cur_uleb(&c);
    if (n) {
        if (aug[0] != 'z')
            return -1;
        cie->z = true;
        size_t data = (size_t)hs_cur_uleb(&c), data_at = c.off;
        for (size_t i = 1; i < n && !c.bad; i++) {
            if (aug[i] == 'R') {
                cie->enc = hs_cur_u8(&c);
            } else if (aug[i] == 'P') {
                uint8_t penc = hs_cur_u8(&c);
                read_encoded(&c, penc & 0x7f, bits);   /* the personality routine */
            } else if (aug[i] == 'L') {
                cie->lsda = true;
                hs_cur_u8(&c);
            } else if (aug[i] != 'S' && aug[i] != 'B') {
                return -1;
            }
        }
        if (!c.bad && c.off - data_at < data)
            hs_cur_skip(&c, data_at + data - c.off);   /* what is not read here */
    }
    if (c.bad || c.off > c.len)
        return -1;
    cie->insns = c.p + c.off;
    cie->ninsns = c.len - c.off;
    return 0;
}

/* The image's .eh_frame (NULL when it has none or it cannot be read). */
static const uint8_t *eh_frame_of(const hs_pe *pe, uint32_t *size, const hs_pe_section **sec)
{
    const hs_pe_section *s = hs_pe_section_named(pe, ".eh_frame");
    if (!s)   /* an image linked stripped (ld -s) has no string table: the name is cut to 8 bytes */
        s = hs_pe_section_named(pe, ".eh_fram");
    if (!s)
        return NULL;
    *size = s->vsize < s->raw_size || !s->raw_size ? s->vsize : s->raw_size;
    *sec = s;
    return hs_pe_ptr(pe, s->rva, *size);
}

int hs_pe_eh_frame_personality(const hs_pe *pe)
{
    uint32_t size = 0;
    const hs_pe_section *s;
    const uint8_t *sec = eh_frame_of(pe, &size, &s);
    for (size_t at = 0; sec && size - at >= 9;) {
        uint32_t len = hs_le32(sec + at);
        if (len == 0) {
            at += 4;
            continue;
        }
        if (len == 0xffffffffu || len > size - at - 4)
            break;
        if (hs_le32(sec + at + 4) == 0 && len >= 6 && sec[at + 9] == 'z')   /* a CIE: version, "z..." */
            for (size_t i = at + 10; i < at + 4 + len && sec[i]; i++)
                if (sec[i] == 'P')
                    return 1;
        at += 4 + (size_t)len;
    }
    return 0;
}

int hs_pe_eh_frame_fdes(const hs_pe *pe, int (*fn)(void *ctx, const hs_eh_fde *f), void *ctx)
{
    uint32_t size = 0;
    const hs_pe_section *s;
    const uint8_t *sec = eh_frame_of(pe, &size, &s);
    if (!sec)
        return 0;
    size_t at = 0;
    while (size - at >= 8) {
        uint32_t len = hs_le32(sec + at), id = hs_le32(sec + at + 4);
        if (len == 0) {   /* a terminator; the linker may put more after it (crtbegin.o's) */
            at += 4;
            continue;
        }
        if (len == 0xffffffffu || len > size - at - 4)
            break;
        size_t next = at + 4 + len;
        hs_eh_fde f;
        if (id != 0 && id <= at + 4 && read_cie(sec, size, at + 4 - id, pe->bits, &f.cie) == 0) {
            uint8_t enc = f.cie.enc;
            if (!(enc & 0x80) && ((enc & 0x70) == 0 || (enc & 0x70) == PE_PCREL)) {
                hs_cur c = hs_cur_of(sec + at + 8, len - 4);
                uint32_t field = s->rva + (uint32_t)at + 8;
                int64_t begin = read_encoded(&c, enc, pe->bits);
                int64_t range = read_encoded(&c, enc & 0x0f, pe->bits);
                int64_t rva = (enc & 0x70) == PE_PCREL ? (int64_t)field + begin
                                                       : begin - (int64_t)pe->image_base;
                int sec_i = !c.bad && rva > 0 && rva < UINT32_MAX ? hs_pe_section_of(pe, (uint32_t)rva) : -1;
                if (f.cie.z)   /* the FDE's augmentation data (its LSDA pointer): before its instructions */
                    hs_cur_skip(&c, (size_t)hs_cur_uleb(&c));
                if (sec_i >= 0 && range > 0 && hs_pe_is_exec(pe, (uint32_t)rva) &&
                    range <= (int64_t)pe->sections[sec_i].rva + pe->sections[sec_i].vsize - rva) {
                    f.rva = (uint32_t)rva;
                    f.size = (uint32_t)range;
                    f.insns = c.bad ? NULL : c.p + c.off;
                    f.ninsns = c.bad ? 0 : c.len - c.off;
                    if (fn(ctx, &f) < 0)
                        return -1;
                }
            }
        }
        at = next;
    }
    return 0;
}

typedef struct extents {
    hs_pe_extent *v;
    size_t n, cap;
} extents;

static int add_extent(void *ctx, const hs_eh_fde *f)
{
    extents *e = ctx;
    if (hs_grow(&e->v, &e->cap, e->n, sizeof *e->v) < 0)
        return -1;
    e->v[e->n].rva = f->rva;
    e->v[e->n++].size = f->size;
    return 0;
}

int hs_pe_eh_frame(const hs_pe *pe, hs_pe_extent **out, size_t *count)
{
    extents e = { NULL, 0, 0 };
    *out = NULL;
    *count = 0;
    if (hs_pe_eh_frame_fdes(pe, add_extent, &e) < 0) {
        free(e.v);
        return -1;
    }
    *out = e.v;
    *count = e.n;
    return 0;
}
