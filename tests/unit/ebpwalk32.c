/*
 * tests/unit/ebpwalk32.c - a 32-bit thread's stack by its EBP chain, with
 * the true return addresses of timed calls (retshadow.h; see ebpwalk32.h).
 */
#include "tests/unit/ebpwalk32.h"

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
