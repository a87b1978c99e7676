/*
 * hook/engine/emit.h - a small x86 code writer for trampolines and stubs.
 *
 * The writer appends to a caller-owned buffer that will run at `base`, as
 * x86-64 code, or as 32-bit code after hs_emit_init32: there a rel32 field
 * reaches every address (the instruction pointer wraps at 4 GB), so the
 * jumps never take their absolute forms, and a push is of 32 bits.
 * Every append is bounds-checked: on overflow `overflow` is set and
 * nothing more is written, so a sequence of emits needs one check at the
 * end. Functions returning int give -1 when a relative target does not
 * reach (and write nothing).
 */
#ifndef HOOKSCOPE_EMIT_H
#define HOOKSCOPE_EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "hook/base/x64.h"

typedef struct hs_emit {
    uint8_t *buf;
    size_t cap;
    size_t len;
    uint64_t base;   /* runtime address of buf[0] */
    int overflow;
    int mode32;      /* 32-bit code (hs_emit_init32) */
} hs_emit;

/* x86 condition codes (the low nibble of 0x7x / 0x0F 0x8x). */
enum {
    HS_CC_O = 0, HS_CC_NO, HS_CC_B, HS_CC_AE, HS_CC_E, HS_CC_NE, HS_CC_BE, HS_CC_A,
    HS_CC_S, HS_CC_NS, HS_CC_P, HS_CC_NP, HS_CC_L, HS_CC_GE, HS_CC_LE, HS_CC_G,
};

void hs_emit_init(hs_emit *e, uint8_t *buf, size_t cap, uint64_t base);
/* The same, for 32-bit code. */
void hs_emit_init32(hs_emit *e, uint8_t *buf, size_t cap, uint32_t base);

static inline uint64_t hs_emit_pc(const hs_emit *e) { return e->base + e->len; }

/* Does a rel32 field ending at `next` (the address after the instruction)
 * reach `target`? */
int hs_rel32_fits(uint64_t next, uint64_t target);
/* The same for the code this writer emits (always, in 32-bit code). */
static inline int hs_emit_reaches(const hs_emit *e, uint64_t next, uint64_t target)
{
    return e->mode32 || hs_rel32_fits(next, target);
}

/* Inline, so that an append of a constant size is a few stores: a stub
 * is written an instruction at a time, tens of thousands of them per
 * module (a call to memcpy for each cost a third of writing them). */
static inline void hs_emit_bytes(hs_emit *e, const void *p, size_t n)
{
    if (e->overflow || n > e->cap - e->len) {
        e->overflow = 1;
        return;
    }
    __builtin_memcpy(e->buf + e->len, p, n);
    e->len += n;
}

static inline void hs_emit_u8(hs_emit *e, uint8_t v) { hs_emit_bytes(e, &v, 1); }

static inline void hs_emit_u16(hs_emit *e, uint16_t v)
{
    const uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    hs_emit_bytes(e, b, 2);
}

static inline void hs_emit_u32(hs_emit *e, uint32_t v)
{
    const uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    hs_emit_bytes(e, b, 4);
}

static inline void hs_emit_u64(hs_emit *e, uint64_t v)
{
    hs_emit_u32(e, (uint32_t)v);
    hs_emit_u32(e, (uint32_t)(v >> 32));
}

/* jmp rel32 (5 bytes). */
int hs_emit_jmp_rel32(hs_emit *e, uint64_t target);
/* jmp qword [rip+0]; dq target (14 bytes, reaches anywhere, clobbers
 * nothing; x86-64 only). */
void hs_emit_jmp_abs(hs_emit *e, uint64_t target);
/* jmp rel32 when it reaches, else the absolute form. */
void hs_emit_jmp(hs_emit *e, uint64_t target);
/* call qword [rip+2]; jmp +8; dq target (16 bytes): an absolute call. */
void hs_emit_call_abs(hs_emit *e, uint64_t target);
/* jcc rel32 (6 bytes). */
int hs_emit_jcc_rel32(hs_emit *e, int cc, uint64_t target);
/* j!cc over an absolute jmp (2 + 14 bytes). */
void hs_emit_jcc_abs(hs_emit *e, int cc, uint64_t target);
/* jcc rel32 when it reaches, else the inverted form. */
void hs_emit_jcc(hs_emit *e, int cc, uint64_t target);

/* Push a 64-bit constant without touching any register or flag:
 * lea rsp,[rsp-8]; mov dword [rsp],lo; mov dword [rsp+4],hi (20 bytes). */
void hs_emit_push_imm64(hs_emit *e, uint64_t v);
/* Push a return address, a pointer-sized constant: push_imm64 in x86-64
 * code, `push imm32` (5 bytes, no flag touched) in 32-bit code. */
void hs_emit_push_addr(hs_emit *e, uint64_t v);

/* push/pop of a general register (with REX.B for r8-r15). */
void hs_emit_push_reg(hs_emit *e, int reg);
void hs_emit_pop_reg(hs_emit *e, int reg);

/* mov reg, imm64 (10 bytes). */
void hs_emit_mov_reg_imm64(hs_emit *e, int reg, uint64_t v);

/* int3 fill up to `n` bytes. */
void hs_emit_int3_fill(hs_emit *e, size_t n);

#endif
