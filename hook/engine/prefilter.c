/*
 * hook/engine/prefilter.c - byte-level scans that decide whether a function has
 * to be decoded at all.
 *
 * Decoding costs ~250 ns per instruction with capstone, so hs_analyze
 * decodes only the window unless one of these scans finds a byte pattern
 * that could be a branch into the patched bytes or an indirect jump. The
 * scans are sound: every byte position is tried as the opcode of such an
 * instruction. Prefixes do not matter: a relative branch's target is the
 * end of the instruction plus the displacement, and the end is fixed by
 * where the opcode is (no prefix changes the length of these encodings in
 * 64-bit mode; a 66 prefix, which would, is refused by the relocator).
 */
#include "hook/engine/engine_int.h"

/* 1: opcode + rel8 (jmp short, jcc short, loop*, jrcxz); 2: E8/E9 + rel32;
 * 3: 0F, maybe followed by 80-8F + rel32 */
static const uint8_t branch_class[256] = {
    [0x70] = 1, [0x71] = 1, [0x72] = 1, [0x73] = 1, [0x74] = 1, [0x75] = 1, [0x76] = 1, [0x77] = 1,
    [0x78] = 1, [0x79] = 1, [0x7A] = 1, [0x7B] = 1, [0x7C] = 1, [0x7D] = 1, [0x7E] = 1, [0x7F] = 1,
    [0xE0] = 1, [0xE1] = 1, [0xE2] = 1, [0xE3] = 1, [0xEB] = 1,
    [0xE8] = 2, [0xE9] = 2,
    [0x0F] = 3,
};

int hs__scan_branches(const hs_func_input *fn, uint32_t from, uint32_t to, int lo, int hi,
                      uint32_t *last)
{
    const uint8_t *c = fn->code;
    uint32_t size = fn->size;
    int n = 0;
    if (to > size)
        to = size;
    *last = 0;
    for (uint32_t q = from; q < to; q++) {
        uint8_t cls = branch_class[c[q]];
        if (!cls)
            continue;
        int64_t t;
        if (cls == 1) {
            if (q + 2 > size)
                continue;
            t = (int64_t)q + 2 + (int8_t)c[q + 1];
        } else if (cls == 2) {
            if (q + 5 > size)
                continue;
            t = (int64_t)q + 5 + (int32_t)hs_le32(c + q + 1);
        } else {
            if (q + 6 > size || (c[q + 1] & 0xF0) != 0x80)
                continue;
            t = (int64_t)q + 6 + (int32_t)hs_le32(c + q + 2);
        }
        if (t > lo && t < hi) {
            n++;
            *last = q + 1;
        }
    }
    return n;
}

int hs__scan_indirect(const hs_func_input *fn, uint32_t from, uint32_t to, uint32_t *last)
{
    const uint8_t *c = fn->code;
    uint32_t size = fn->size;
    int n = 0;
    if (to > size)
        to = size;
    *last = 0;
    for (uint32_t q = from; q + 1 < to; q++) {
        if (c[q] != 0xFF)
            continue;
        uint8_t m = c[q + 1];
        /* FF /4: jmp r/m64. A table needs a register or an indexed (SIB)
         * memory operand; [rip+x] and [reg+disp] are tail calls through a
         * pointer, which cannot target the patched bytes of this function. */
        if ((m & 0x38) == 0x20 && ((m & 0xC0) == 0xC0 || (m & 7) == 4)) {
            n++;
            *last = q + 2;
        }
    }
    return n;
}

int hs_may_branch_into(const hs_func_input *fn, uint32_t from, uint32_t to, int lo, int hi)
{
    uint32_t last;
    return hs__scan_branches(fn, from, to, lo, hi, &last) > 0;
}
