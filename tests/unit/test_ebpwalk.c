/*
 * tests/unit/test_ebpwalk.c - the bare EBP-chain walk the harnesses of the
 * 32-bit agent's thunks check with (tests/unit/ebpwalk32.c) on stacks
 * laid out by hand, run natively as a
 * 32-bit program (-m32): a whole EBP chain, and the chain of a caller
 * without a frame pointer whose ebp holds a stack address that is no
 * frame (the slot above it a small number, a stack address, or one the
 * caller's test says is in no code): the walk ends there instead of giving
 * that value as a return address.
 */
#include <stdint.h>
#include <string.h>

#include "tests/unit/ebpwalk32.h"
#include "tests/unit/tap.h"

#define ENTRY 0x00401000u
#define RET_A 0x00401234u   /* return addresses in the exe's code */
#define RET_B 0x00402345u
#define RET_C 0x00403456u

static uint32_t stack[64];

static uint32_t at(int i)
{
    return (uint32_t)(uintptr_t)&stack[i];
}

/* code here: the exe's first MiB */
static int in_exe(uint32_t addr, void *ctx)
{
    (void)ctx;
    return addr >= 0x400000u && addr < 0x500000u;
}

/* the walk from esp = stack[0] (RET_A there), ebp = stack[4] */
static int walk(uint64_t *frames, int max, int *truncated)
{
    return hs_ebp_walk(ENTRY, at(0), at(4), at(0), at(64), NULL, in_exe, NULL, frames, max, truncated);
}

static void test_chain(void)
{
    memset(stack, 0, sizeof stack);
    stack[0] = RET_A;
    stack[4] = at(10), stack[5] = RET_B;   /* frame: saved ebp, return address */
    stack[10] = 0, stack[11] = RET_C;      /* the outermost: ebp 0 */
    uint64_t f[8];
    int tr, n = walk(f, 8, &tr);
    tap_check(n == 4 && f[0] == ENTRY && f[1] == RET_A && f[2] == RET_B && f[3] == RET_C && !tr,
              "ebpwalk/chain: entry, [esp], then each frame's return address", "%d frames", n);
}

static void test_not_a_frame(void)
{
    uint64_t f[8];
    int tr, n;
    const uint32_t junk[] = { 0xa, 0xffff, 0xdeadbabe, 0 };
    for (int k = 0; k < 4; k++) {
        memset(stack, 0, sizeof stack);
        stack[0] = RET_A;
        stack[4] = at(10), stack[5] = RET_B;
        stack[10] = at(20), stack[11] = junk[k] ? junk[k] : at(30);   /* ebp: a local's address */
        n = walk(f, 8, &tr);
        tap_check(n == 3 && f[2] == RET_B, k < 2 ? "ebpwalk/junk: a small number is no return address"
                                           : junk[k] ? "ebpwalk/junk: an address in no code is no return address"
                                                     : "ebpwalk/junk: a stack address is no return address",
                  "%d frames, frame 3 %#llx", n, n > 3 ? (unsigned long long)f[3] : 0ull);
    }
}

int main(void)
{
    test_chain();
    test_not_a_frame();
    return tap_status();
}
