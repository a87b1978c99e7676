/*
 * tests/support/fuzz_session_main.c - the session's fuzz target
 * (tests/unit/session_fuzz.h) for libFuzzer: `make fuzz-session` builds
 * build/native/fuzz/fuzz_session with clang's -fsanitize=fuzzer,address,
 * undefined; run it on a copy of the corpus, e.g.
 *
 *   build/native/fuzz/fuzz_session -max_total_time=600 \
 *       -max_len=128 build/native/fuzz/corpus tests/unit/fixtures/session_corpus
 *
 * and add what it finds (crash-*, after the fix) to the corpus.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tests/unit/session_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[300];
    if (session_fuzz_one(data, size, why, sizeof why) < 0) {
        fprintf(stderr, "session fuzz: %s\n", why);
        abort();
    }
    return 0;
}
