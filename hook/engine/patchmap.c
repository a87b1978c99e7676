/*
 * hook/engine/patchmap.c - the patch bytes and the maps between original and
 * trampoline offsets (for moving frozen threads at hook and unhook time).
 */
#include <string.h>

#include "hook/engine/engine_int.h"

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Does the patch's jmp rel32 ending at `next` reach `dest`? (Always in
 * 32-bit code: the instruction pointer wraps at 4 GB.) */
static int patch_reaches(const hs_plan *plan, uint64_t next, uint64_t dest)
{
    return plan->bits == 32 || hs_rel32_fits(next, dest);
}

int hs_emit_patch(const hs_func_input *fn, const hs_plan *plan, uint64_t dest,
                  uint8_t out[HS_MAX_PATCH])
{
    if (plan->reason != HS_OK || plan->patch_len == 0 || plan->patch_len > HS_MAX_PATCH)
        return -1;
    memcpy(out, plan->orig, plan->patch_len);
    switch (plan->kind) {
    case HS_PATCH_JMP32: {
        uint64_t next = fn->addr + 5;
        if (!patch_reaches(plan, next, dest))
            return -1;
        out[0] = 0xE9;
        put32(out + 1, (uint32_t)(dest - next));
        return 0;
    }
    case HS_PATCH_SHORT_PAD: {
        int32_t jo = plan->pad_off - plan->patch_off;   /* the jmp rel32, in out[] */
        int32_t eo = -plan->patch_off;                   /* the entry, in out[] */
        uint64_t next = fn->addr + (uint64_t)(int64_t)plan->pad_off + 5;
        if (!patch_reaches(plan, next, dest) || jo < 0 || jo + 5 > plan->patch_len ||
            eo + 2 > plan->patch_len)
            return -1;
        int32_t rel8 = plan->pad_off - 2;
        if (rel8 < -128 || rel8 > 127)
            return -1;
        out[jo] = 0xE9;
        put32(out + jo + 1, (uint32_t)(dest - next));
        out[eo] = 0xEB;
        out[eo + 1] = (uint8_t)(int8_t)rel8;
        return 0;
    }
    case HS_PATCH_INT3:
        out[0] = 0xCC;
        return 0;
    default:
        return -1;
    }
}

int hs_plan_pad_jmp(const hs_plan *plan, int32_t *off)
{
    if (plan->reason != HS_OK || plan->kind != HS_PATCH_SHORT_PAD)
        return 0;
    if (off)
        *off = plan->pad_off;
    return 1;
}

int hs_orig_to_tramp(const hs_plan *plan, const uint16_t tramp_off[HS_MAX_WINDOW_INSNS + 1],
                     int orig_off)
{
    for (int i = 0; i < plan->n_insns; i++)
        if (plan->insn_off[i] == orig_off)
            return tramp_off[i];
    return -1;
}

int hs_tramp_to_orig(const hs_plan *plan, const uint16_t tramp_off[HS_MAX_WINDOW_INSNS + 1],
                     int tramp_offset)
{
    for (int i = 0; i < plan->n_insns; i++)
        if (tramp_off[i] == tramp_offset)
            return plan->insn_off[i];
    return -1;
}
