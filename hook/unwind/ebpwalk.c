/*
 * hook/unwind/ebpwalk.c - a 32-bit thread's stack by its EBP chain, with
 * the true return addresses of timed calls (see ebpwalk.h).
 */
#include "hook/unwind/ebpwalk.h"

#include <string.h>

static uint32_t rec_field(const hs_ret_shadow *s, uint32_t i, uint32_t off)
{
    uint32_t v;
    memcpy(&v, s->recs + (size_t)i * s->size + off, 4);
    return v;
}

uint32_t hs_ret_shadow_true(const hs_ret_shadow *s, uint32_t slot, uint32_t value)
{
    if (!s || value != s->thunk)
        return value;
    /* the newest record at or above the slot: the call's own; for a copy
     * of its return address that the callee made below it (i686 gcc's
     * main realigns its stack and pushes its return address again), the
     * innermost call open above the copy (records are oldest first, their
     * slots lower as calls nest) */
    uint32_t i = s->n;
    while (i > 0 && rec_field(s, i - 1, s->slot_off) < slot)
        i--;
    /* (a tail-jumped call's true return is the thunk: the call under it
     * returns there) */
    while (i > 0 && value == s->thunk)
        value = rec_field(s, --i, s->ret_off);
    return value;
}

int hs_ebp_walk(uint32_t entry, uint32_t esp, uint32_t ebp, uint32_t lo, uint32_t hi, const hs_ret_shadow *shadow,
                hs_ebp_is_code is_code, void *ctx, uint64_t *frames, int max, int *truncated)
{
    int n = 0;
    *truncated = 0;
    if (max < 1)
        return 0;
    frames[n++] = entry;
    if (esp < lo || esp > hi - 4 || hi < 4)
        return n;
    if (n == max) {
        *truncated = 1;
        return n;
    }
    frames[n++] = hs_ret_shadow_true(shadow, esp, *(const uint32_t *)(uintptr_t)esp);
    /* each frame above the last (the stack grows down; a loop or a
     * non-frame value in ebp ends the walk) */
    uint32_t fp = ebp, floor = esp;
    while (fp >= floor && fp >= lo && fp <= hi - 8 && !(fp & 3)) {
        uint32_t ret = hs_ret_shadow_true(shadow, fp + 4, *(const uint32_t *)(uintptr_t)(fp + 4));
        /* no code lies in the lowest 64 KiB (never mapped) nor on the
         * stack: such a value says ebp was no frame */
        if (ret < HS_EBP_LOWEST_CODE || (ret >= lo && ret < hi) || (is_code && !is_code(ret, ctx)))
            break;
        if (n == max) {
            *truncated = 1;
            break;
        }
        frames[n++] = ret;
        floor = fp + 8;
        fp = *(const uint32_t *)(uintptr_t)fp;
    }
    return n;
}
