/*
 * hook/unwind/ebpwalk.c - a 32-bit thread's stack by its EBP chain (see
 * ebpwalk.h).
 */
#include "hook/unwind/ebpwalk.h"

int hs_ebp_walk(uint32_t entry, uint32_t esp, uint32_t ebp, uint32_t lo, uint32_t hi, uint64_t *frames, int max,
                int *truncated)
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
    frames[n++] = *(const uint32_t *)(uintptr_t)esp;
    /* each frame above the last (the stack grows down; a loop or a
     * non-frame value in ebp ends the walk) */
    uint32_t fp = ebp, floor = esp;
    while (fp >= floor && fp >= lo && fp <= hi - 8 && !(fp & 3)) {
        uint32_t ret = *(const uint32_t *)(uintptr_t)(fp + 4);
        if (!ret)
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
