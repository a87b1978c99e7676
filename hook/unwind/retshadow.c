/*
 * hook/unwind/retshadow.c - a timed call's true return address from the
 * thread's shadow return stack (see retshadow.h).
 */
#include "hook/unwind/retshadow.h"

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
