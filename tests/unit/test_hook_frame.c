/*
 * tests/unit/test_hook_frame.c - HS_ANALYZE_FULL on functions compiled by
 * x86_64-w64-mingw32-gcc at -O0, -O1 and -O2 (fixtures/frame_src.c,
 * extracted into frame_cases.h by gen_real_prologues.py), whose stack use
 * is known from their source: how many incoming argument slots they read,
 * varargs, the address of an argument taken, stack probes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/engine/hook.h"
#include "tests/unit/tap.h"

struct frame_case {
    const char *name;
    const uint8_t *bytes;
    uint32_t gap_before, size, gap_after;
    uint64_t addr;
    int slots_a, slots_b;      /* acceptable stack_arg_slots (-2: not checked) */
    unsigned flags, noflags;   /* must be set / must not be set */
};

#include "tests/unit/frame_cases.h"

int main(void)
{
    hs_engine *e = hs_engine_new();
    for (size_t i = 0; i < sizeof frame_cases / sizeof frame_cases[0]; i++) {
        const struct frame_case *c = &frame_cases[i];
        hs_func_input fn = {
            .code = c->bytes + c->gap_before, .addr = c->addr, .size = c->size,
            .gap_before = c->gap_before, .gap_after = c->gap_after,
            .image_lo = c->addr & ~0xFFFFFull, .image_hi = (c->addr & ~0xFFFFFull) + 0x100000,
        };
        hs_plan p;
        hs_analyze(e, &fn, HS_ANALYZE_FULL, &p);
        char name[100];
        snprintf(name, sizeof name, "frame/%s", c->name);
        int slots_ok = c->slots_a == -2 || p.stack_arg_slots == c->slots_a || p.stack_arg_slots == c->slots_b;
        if (getenv("HS_TEST_VERBOSE"))
            tap_diag("%s: slots %d flags %#x", c->name, p.stack_arg_slots, p.flags);
        tap_check(p.reason == HS_OK && slots_ok && (p.flags & c->flags) == c->flags && !(p.flags & c->noflags),
                  name, "reason %s, stack_arg_slots %d (want %d%s%d), flags %#x (want %#x, not %#x)",
                  hs_skip_reason_name(p.reason), p.stack_arg_slots, c->slots_a,
                  c->slots_b != c->slots_a ? " or " : " / ", c->slots_b, p.flags, c->flags, c->noflags);
    }
    hs_engine_free(e);
    return tap_status();
}
