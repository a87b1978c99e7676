/*
 * tests/unit/test_session_fuzz.c - the session boundary, fuzzed (see
 * tests/unit/session_fuzz.h): the session as an agent fills it reads back
 * exactly, with no problem; every input of the corpus
 * (tests/unit/fixtures/session_corpus/, inputs that once found a fault,
 * and the adversarial values named in their file names) and a fixed
 * number of seeded random inputs read without a fault, a hang (an alarm)
 * or an allocation by a size the target wrote (the address space is
 * limited), within the capacities, and with a problem reported whenever
 * the input left a value no agent writes.
 *
 * HS_FUZZ_ITERATIONS and HS_FUZZ_SEED change the random run; a failing
 * input is written to build/native/session-fuzz-failure.bin (add it to
 * the corpus once fixed). `test_session_fuzz --write-seeds DIR` writes
 * the corpus's named seeds (session_fuzz_seeds) into DIR.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "hook/base/util.h"
#include "tests/unit/session_fuzz.h"
#include "tests/unit/tap.h"

#define CORPUS "tests/unit/fixtures/session_corpus"
#ifdef __SANITIZE_ADDRESS__
#define ITERATIONS 3000     /* (~1 ms each under AddressSanitizer) */
#else
#define ITERATIONS 50000
#endif
#define SEED 21
#define ALARM_S 30

static void save_failure(const uint8_t *data, size_t n)
{
    FILE *f = fopen("build/native/session-fuzz-failure.bin", "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void corpus(void)
{
    DIR *d = opendir(CORPUS);
    if (!d) {
        tap_fail("corpus", "no %s", CORPUS);
        return;
    }
    struct dirent *e;
    int files = 0, failed = 0;
    char why[300] = "";
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", CORPUS, e->d_name);
        size_t n = 0;
        const char *err;
        uint8_t *data = hs_load_file(path, &n, &err);
        if (!data)
            continue;
        files++;
        alarm(ALARM_S);
        if (session_fuzz_one(data, n, why, sizeof why) < 0) {
            tap_fail(e->d_name, "%s", why);
            failed++;
        }
        free(data);
    }
    closedir(d);
    alarm(0);
    tap_check(files > 0 && !failed, "corpus", "%d files, %d failed", files, failed);
}

static void random_inputs(void)
{
    const char *it = getenv("HS_FUZZ_ITERATIONS"), *sd = getenv("HS_FUZZ_SEED");
    long n = it ? atol(it) : ITERATIONS;
    uint64_t seed = sd ? strtoull(sd, NULL, 0) : SEED;
    if (!seed)
        seed = 1;
    uint8_t data[SESSION_PATCH_SIZE * 8];
    char why[300];
    clock_t t0 = clock();
    for (long i = 0; i < n; i++) {
        size_t len = session_fuzz_random(&seed, data, sizeof data);
        alarm(ALARM_S);
        if (session_fuzz_one(data, len, why, sizeof why) < 0) {
            save_failure(data, len);
            tap_fail("random inputs", "input %ld: %s (written to build/native/session-fuzz-failure.bin)", i, why);
            alarm(0);
            return;
        }
    }
    alarm(0);
    tap_ok("random inputs");
    tap_diag("%ld random inputs in %.1f s", n, (double)(clock() - t0) / CLOCKS_PER_SEC);
}

static int write_seeds(const char *dir)
{
    session_seed seeds[64];
    size_t n = session_fuzz_seeds(seeds, 64);
    for (size_t i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(seeds[i].data, 1, seeds[i].size, f) != seeds[i].size || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
    }
    printf("%zu seeds written to %s\n", n, dir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-seeds"))
        return write_seeds(argv[2]);
    /* an allocation by a size the target wrote fails here (and the test
     * with it: hs_xmalloc exits) */
#ifndef __SANITIZE_ADDRESS__   /* (AddressSanitizer reserves terabytes for itself) */
    struct rlimit lim = { 1u << 30, 1u << 30 };
    setrlimit(RLIMIT_AS, &lim);
#endif
    char why[300];
    alarm(ALARM_S);
    tap_check(session_fuzz_clean(why, sizeof why) == 0, "the session as the agent writes it", "%s", why);
    alarm(0);
    corpus();
    random_inputs();
    return tap_status();
}
