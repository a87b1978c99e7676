/*
 * hook/engine/emit.c - the x86 code writer (see emit.h).
 */
#include "hook/engine/emit.h"

void hs_emit_init(hs_emit *e, uint8_t *buf, size_t cap, uint64_t base)
{
    e->buf = buf;
    e->cap = cap;
    e->len = 0;
    e->base = base;
    e->overflow = 0;
    e->mode32 = 0;
}

void hs_emit_init32(hs_emit *e, uint8_t *buf, size_t cap, uint32_t base)
{
    hs_emit_init(e, buf, cap, base);
    e->mode32 = 1;
}

int hs_rel32_fits(uint64_t next, uint64_t target)
{
    int64_t d = (int64_t)(target - next);
    return d >= INT32_MIN && d <= INT32_MAX;
}

int hs_emit_jmp_rel32(hs_emit *e, uint64_t target)
{
    uint64_t next = hs_emit_pc(e) + 5;
    if (!hs_emit_reaches(e, next, target))
        return -1;
    hs_emit_u8(e, 0xE9);
    hs_emit_u32(e, (uint32_t)(target - next));
    return 0;
}

void hs_emit_jmp_abs(hs_emit *e, uint64_t target)
{
    static const uint8_t jmp_rip[6] = { 0xFF, 0x25, 0, 0, 0, 0 };
    hs_emit_bytes(e, jmp_rip, sizeof jmp_rip);
    hs_emit_u64(e, target);
}

void hs_emit_jmp(hs_emit *e, uint64_t target)
{
    if (hs_emit_jmp_rel32(e, target) < 0)
        hs_emit_jmp_abs(e, target);
}

void hs_emit_call_abs(hs_emit *e, uint64_t target)
{
    /* call [rip+2] ; jmp short +8 ; dq target */
    static const uint8_t seq[8] = { 0xFF, 0x15, 2, 0, 0, 0, 0xEB, 0x08 };
    hs_emit_bytes(e, seq, sizeof seq);
    hs_emit_u64(e, target);
}

int hs_emit_jcc_rel32(hs_emit *e, int cc, uint64_t target)
{
    uint64_t next = hs_emit_pc(e) + 6;
    if (!hs_emit_reaches(e, next, target))
        return -1;
    hs_emit_u8(e, 0x0F);
    hs_emit_u8(e, (uint8_t)(0x80 | (cc & 15)));
    hs_emit_u32(e, (uint32_t)(target - next));
    return 0;
}

void hs_emit_jcc_abs(hs_emit *e, int cc, uint64_t target)
{
    /* the inverted condition skips the 14-byte absolute jump */
    hs_emit_u8(e, (uint8_t)(0x70 | ((cc ^ 1) & 15)));
    hs_emit_u8(e, 14);
    hs_emit_jmp_abs(e, target);
}

void hs_emit_jcc(hs_emit *e, int cc, uint64_t target)
{
    if (hs_emit_jcc_rel32(e, cc, target) < 0)
        hs_emit_jcc_abs(e, cc, target);
}

void hs_emit_push_imm64(hs_emit *e, uint64_t v)
{
    static const uint8_t lea[5] = { 0x48, 0x8D, 0x64, 0x24, 0xF8 };   /* lea rsp,[rsp-8] */
    static const uint8_t mov0[3] = { 0xC7, 0x04, 0x24 };              /* mov dword [rsp],imm32 */
    static const uint8_t mov4[4] = { 0xC7, 0x44, 0x24, 0x04 };        /* mov dword [rsp+4],imm32 */
    hs_emit_bytes(e, lea, sizeof lea);
    hs_emit_bytes(e, mov0, sizeof mov0);
    hs_emit_u32(e, (uint32_t)v);
    hs_emit_bytes(e, mov4, sizeof mov4);
    hs_emit_u32(e, (uint32_t)(v >> 32));
}

void hs_emit_push_addr(hs_emit *e, uint64_t v)
{
    if (!e->mode32) {
        hs_emit_push_imm64(e, v);
        return;
    }
    hs_emit_u8(e, 0x68);   /* push imm32 */
    hs_emit_u32(e, (uint32_t)v);
}

void hs_emit_push_reg(hs_emit *e, int reg)
{
    if (reg >= 8)
        hs_emit_u8(e, 0x41);
    hs_emit_u8(e, (uint8_t)(0x50 | (reg & 7)));
}

void hs_emit_pop_reg(hs_emit *e, int reg)
{
    if (reg >= 8)
        hs_emit_u8(e, 0x41);
    hs_emit_u8(e, (uint8_t)(0x58 | (reg & 7)));
}

void hs_emit_mov_reg_imm64(hs_emit *e, int reg, uint64_t v)
{
    hs_emit_u8(e, (uint8_t)(reg >= 8 ? 0x49 : 0x48));
    hs_emit_u8(e, (uint8_t)(0xB8 | (reg & 7)));
    hs_emit_u64(e, v);
}

void hs_emit_int3_fill(hs_emit *e, size_t n)
{
    while (n-- > 0)
        hs_emit_u8(e, 0xCC);
}
