/*
 * tests/unit/session_fuzz.h - the fuzz target of the session boundary:
 * hookscope.exe's reader of the session (injector/profile/from_session.h)
 * over a session the target scribbled on.
 *
 * A session is built as an agent would have filled it (two modules, their
 * functions, three thread regions and the overflow region with counters,
 * caller edges, entry stacks, durations and open timed calls). An input
 * is a list of patches to that session, 16 bytes each:
 *
 *   u32 offset   where (modulo the session's size)
 *   u16 width    bytes of value written: 1, 2, 4 or 8 (else 8)
 *   u16 count    times it is written, one after the other (1 + count % 1100)
 *   u64 value    little-endian
 *
 * so that a few bytes say "huge count", "offset past the end", "a path
 * with no terminator". The patched session is read by every reader
 * (profile, header copy, live calls, own code) and then named and
 * written, and the result is checked: counts, indices and depths within
 * the capacities, every function in a module, every slot in its arena,
 * and a problem reported whenever the patches left a value no agent
 * writes (a count over its capacity, a path with no terminator, ...).
 *
 * Used by tests/unit/test_session_fuzz.c (its corpus and a seeded random
 * run, in `make test`) and by the libFuzzer build (tests/support/
 * fuzz_session_main.c, `make fuzz-session`).
 */
#ifndef HS_TEST_SESSION_FUZZ_H
#define HS_TEST_SESSION_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#define SESSION_PATCH_SIZE 16

/* Read the template session patched by `data`; 0, or -1 with why. With
 * expect_clean, the unpatched session must read back exactly as built,
 * with no problem. */
int session_fuzz_one(const uint8_t *data, size_t size, char *why, size_t len);
int session_fuzz_clean(char *why, size_t len);

/* Patches for a random input (seeded): adversarial values at the fields
 * that matter and at random places. Writes at most cap bytes into out;
 * returns the bytes written. */
size_t session_fuzz_random(uint64_t *seed, uint8_t *out, size_t cap);

/* The corpus's seeds: one input per kind of adversarial value (a name
 * saying which, and its patches); returns how many. */
typedef struct session_seed {
    const char *name;
    uint8_t data[SESSION_PATCH_SIZE * 4];
    size_t size;
} session_seed;
size_t session_fuzz_seeds(session_seed *out, size_t cap);

#endif
