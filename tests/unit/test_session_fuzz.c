/*
 * tests/unit/test_session_fuzz.c - the importer of the live session
 * (injector/profile/from_session.c) on damaged sessions, the target being
 * able to write every byte of it (ARCHITECTURE.md, decision 15): each
 * must become a profile that names and writes (report.json, report.txt)
 * without a crash or a read outside the view (build/native-asan runs it
 * under AddressSanitizer and UBSan). Every case runs in a child process,
 * so a crash is one failing case with its number, not the end of the run.
 *
 * The seed: a session laid out by hs_session_layout (4 modules, 16
 * functions, 3 thread regions and the overflow region; edges, stacks and
 * durations on), filled as an agent fills it: modules with paths,
 * functions, call counts, inline and table edges, entry stacks with their
 * frames, durations and open calls. Its import is checked first (the
 * figures it must give). Then, with a fixed seed:
 *
 *   fuzz/session/contents   bit flips, random bytes and random words in
 *                           what the agent writes (everything but the
 *                           header's layout: records, counters, tables,
 *                           the header's counts and options)
 *   fuzz/session/layout     the same in the header's layout fields
 *                           (offsets, record sizes, capacities), which
 *                           the injector wrote but the target can
 *                           overwrite
 *
 * HS_FUZZ_SECONDS lengthens the run (fuzztime.h); HS_FUZZ_SEED changes the
 * seed; HS_FUZZ_SAVE=DIR writes each failing case there as
 * CAMPAIGN-CASE.bin (contents-842.bin). `test_session_fuzz FILE...` imports saved views
 * instead (a corpus, or a case to debug): the seed is written by
 * HS_FUZZ_SAVE too, as seed.bin.
 */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hookscope/session.h"
#include "injector/output/writers.h"
#include "injector/profile/from_session.h"
#include "injector/profile/resolve.h"
#include "tests/unit/fuzztime.h"
#include "tests/unit/tap.h"

#define NMODS 2
#define NFUNCS 10
#define NTHREADS 3

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static void put_path(uint16_t *dst, const char *s)
{
    for (size_t i = 0; s[i] && i + 1 < HS_PATH_LEN; i++)
        dst[i] = (uint16_t)s[i];
}

/* The seed session; *n its size. */
static uint8_t *seed_session(size_t *n)
{
    hs_session_header tmp;
    memset(&tmp, 0, sizeof tmp);
    hs_capacity c = { 4, 16, NTHREADS, sizeof(hs_fblock), 64, 16, 256, 16 };
    uint64_t size = hs_session_layout(&tmp, &c);
    uint8_t *v = calloc(1, size);
    hs_session_header *h = (hs_session_header *)v;
    memcpy(h, &tmp, sizeof tmp);
    h->magic = HS_SESSION_MAGIC;
    h->version = HS_SESSION_VERSION;
    h->total_size = size;
    h->options = HS_OPT_EDGES | HS_OPT_STACKS | HS_OPT_TIME;
    h->stack_depth = 8;
    h->stack_every = 1;
    h->n_modules = NMODS;
    h->n_functions = NFUNCS;
    h->threads_used = NTHREADS - 1;
    h->tsc_hz = 1e9;
    h->tsc_ns_mult = 1ull << 32;
    h->overflow_calls = 3;
    static const char *paths[NMODS] = { "C:\\fuzz\\main.exe", "C:\\fuzz\\lib.dll" };
    for (uint32_t m = 0; m < NMODS; m++) {
        hs_module_rec *r = hs_session_module(v, m);
        r->base = 0x140000000ull + (uint64_t)m * 0x10000000ull;
        r->size = 0x10000;
        r->first_func = m * (NFUNCS / 2);
        r->n_funcs = r->n_hooked = NFUNCS / 2;
        r->flags = HS_MOD_HOOKED | (m ? 0 : HS_MOD_MAIN);
        r->pattern = (int32_t)m;
        r->patch_counts[1] = NFUNCS / 2;
        put_path(r->path, paths[m]);
    }
    for (uint32_t i = 0; i < NFUNCS; i++) {
        hs_func_rec *f = hs_session_func(v, i);
        f->module = i / (NFUNCS / 2);
        f->rva = 0x1000 + (i % (NFUNCS / 2)) * 0x100;
        f->size = 0x80;
        f->patch_kind = 1;
        f->flags = HS_FUNC_HOOKED | HS_FUNC_WRAPPED;
    }
    for (uint32_t k = 0; k <= NTHREADS; k++) {
        if (k == NTHREADS - 1)
            continue;   /* a region not handed out */
        char *base = hs_session_region(v, k);
        hs_region_hdr *rh = (hs_region_hdr *)base;
        rh->tid = 100 + k;
        rh->committed_funcs = NFUNCS;
        uint64_t *cnt = hs_region_counters(v, k);
        for (uint32_t i = 0; i < NFUNCS; i++) {
            hs_fblock *b = (hs_fblock *)hs_fblock_at(h, cnt, i);
            b->count = 10 * (k + 1) + i;
            b->edge[0].site = 0x140001010ull + i;
            b->edge[0].count = b->count;
        }
        hs_edge_rec *e = hs_region_edges(v, k);
        e[5] = (hs_edge_rec){ 0x150001234ull, 3, 0, 7, 0 };
        rh->edges_used = 1;
        hs_stack_rec *s = (hs_stack_rec *)(base + h->region_stacks_off);
        uint64_t *pool = (uint64_t *)(base + h->region_frames_off);
        for (uint32_t j = 0; j < 4; j++) {
            s[j] = (hs_stack_rec){ 0x1234 + j, j, 3, (uint16_t)(j == 3), 5 + j, j * 3, 0 };
            for (uint32_t d = 0; d < 3; d++)
                pool[j * 3 + d] = 0x140001000ull + j * 0x100 + d * 0x10;
        }
        rh->stacks_used = 4;
        rh->frames_used = 12;
        hs_time_rec *t = (hs_time_rec *)(base + h->region_time_off);
        for (uint32_t i = 0; i < NFUNCS; i++) {
            t[i].exits = 10 * (k + 1) + i;
            t[i].total = t[i].sum = t[i].self = 1000 * (i + 1);
            t[i].min = 10;
            t[i].max = 500;
            t[i].hist[9] = t[i].exits;
        }
        hs_shadow_rec *sh = (hs_shadow_rec *)(base + h->region_shadow_off);
        sh[0].func = 2;
        rh->shadow_base = 0x7000000;
        rh->shadow_top = rh->shadow_base + sizeof *sh;
        rh->shadow_limit = rh->shadow_base + 16 * sizeof *sh;
    }
    *n = (size_t)size;
    return v;
}

/* Import, name and write one view: the whole path of a run's end. */
static hs_profile *import(uint8_t *view)
{
    hs_profile *p = hs_profile_new();
    p->tsc_hz = 1e9;
    hs_profile_from_session(p, view, NULL);
    hs_profile_resolve(p, NULL);
    FILE *devnull = fopen("/dev/null", "w");
    hs_write_json(p, devnull);
    hs_write_txt(p, devnull);
    fclose(devnull);
    return p;
}

/* Run one import in a child: "" when it ended well, else why. */
static const char *in_child(uint8_t *view)
{
    static char why[96];
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return "fork failed";
    if (pid == 0) {
        hs_profile_free(import(view));
        _exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return "";
    if (WIFSIGNALED(st))
        snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(st));
    else
        snprintf(why, sizeof why, "exit status %d (a sanitizer's report above)", WEXITSTATUS(st));
    return why;
}

static void save(const char *name, const uint8_t *v, size_t n)
{
    const char *dir = getenv("HS_FUZZ_SAVE");
    if (!dir || !*dir)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(v, 1, n, f);
        fclose(f);
    }
}

static void check_seed(const uint8_t *seed, size_t n)
{
    uint8_t *v = malloc(n);
    memcpy(v, seed, n);
    hs_profile *p = import(v);
    /* regions 0, 1 and the overflow region: counts 10k+i, 20k+i, 40k+i */
    uint64_t want = 0;
    for (uint32_t i = 0; i < NFUNCS; i++)
        want += (10 + i) + (20 + i) + (40 + i);
    int ok = p->nfuncs == NFUNCS && p->nmodules == NMODS && p->total_calls == want && p->nstacks == 4 &&
             p->threads == NTHREADS - 1;
    tap_check(ok, "fuzz/session/seed", "functions %zu modules %zu calls %llu (want %llu) stacks %zu threads %u",
              p->nfuncs, p->nmodules, (unsigned long long)p->total_calls, (unsigned long long)want, p->nstacks,
              p->threads);
    hs_profile_free(p);
    free(v);
}

/* One mutation at a random offset of [lo, hi). */
static void mutate(uint8_t *v, size_t lo, size_t hi)
{
    size_t off = lo + (size_t)(rnd() % (hi - lo));
    switch (rnd() % 4) {
    case 0:
        v[off] ^= (uint8_t)(1u << (rnd() % 8));
        break;
    case 1:
        v[off] = (uint8_t)rnd();
        break;
    case 2: {   /* a word of 0, all ones, a small or a random number */
        static const uint64_t words[] = { 0, ~0ull, 1, 0x80000000ull, 0xFFFFFFFFull, 0x7FFFFFFFull };
        uint64_t w = rnd() % 2 ? words[rnd() % 6] : rnd();
        size_t k = off & ~(size_t)3;
        size_t len = k + 8 <= hi ? 8 : k + 4 <= hi ? 4 : 1;
        memcpy(v + k, &w, len);
        break;
    }
    default:
        v[off] = 0;
        break;
    }
}

static void campaign(const char *name, const uint8_t *seed, size_t n, size_t lo, size_t hi, int cases)
{
    uint8_t *v = malloc(n);
    double deadline = fuzz_time_slice();
    int c, failed = 0;
    char first[200] = "";
    for (c = 0; fuzz_time_more(c, cases, deadline); c++) {
        memcpy(v, seed, n);
        for (int k = 1 + (int)(rnd() % 4); k > 0; k--)
            mutate(v, lo, hi);
        const char *why = in_child(v);
        if (*why) {
            if (!failed++)
                snprintf(first, sizeof first, "case %d: %s", c, why);
            char file[96];
            snprintf(file, sizeof file, "%s-%d.bin", strrchr(name, '/') + 1, c);
            save(file, v, n);
        }
    }
    tap_diag("%s: %d cases, %d failed", name, c, failed);
    tap_check(!failed, name, "%d of %d cases failed, the first %s", failed, c, first);
    free(v);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        /* import saved views */
        for (int i = 1; i < argc; i++) {
            FILE *f = fopen(argv[i], "rb");
            if (!f) {
                tap_fail(argv[i], "cannot open it");
                continue;
            }
            fseek(f, 0, SEEK_END);
            size_t n = (size_t)ftell(f);
            fseek(f, 0, SEEK_SET);
            uint8_t *v = malloc(n ? n : 1);
            size_t got = fread(v, 1, n, f);
            fclose(f);
            const char *why = got == n && n >= sizeof(hs_session_header) ? in_child(v) : "shorter than a header";
            tap_check(!*why, argv[i], "%s", why);
            free(v);
        }
        return tap_status();
    }
    if (getenv("HS_FUZZ_SEED"))
        rng = strtoull(getenv("HS_FUZZ_SEED"), NULL, 0) | 1;
    size_t n;
    uint8_t *seed = seed_session(&n);
    save("seed.bin", seed, n);
    check_seed(seed, n);
    fuzz_time_begin(2);
    /* the header's layout fields run from total_size to region_fblock */
    size_t layout_lo = offsetof(hs_session_header, total_size);
    size_t layout_hi = offsetof(hs_session_header, options);
    /* what the agent writes: the rest of the header and everything after it */
    campaign("fuzz/session/contents", seed, n, layout_hi, n, 2000);
    campaign("fuzz/session/layout", seed, n, layout_lo, layout_hi, 1000);
    free(seed);
    return tap_status();
}
