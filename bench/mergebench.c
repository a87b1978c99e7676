/*
 * bench/mergebench.c - the time to turn samples into reports, natively:
 * 1,000,000 synthetic samples over 100,000 functions of one traced module,
 * through the same code a run uses after the target ends. The samples
 * repeat as a real program's do: 20,000 call paths (4 to 40 frames, fixed
 * call sites, every function on some path) drawn with a Zipf law (a few
 * hot paths take most samples), the sampled instruction one of 4 in the
 * leaf, on 8 threads, 10% of them wait samples:
 *
 *   set     interning into the sample set (what the sampler does while
 *           the target runs; shown apart)
 *   merge   hs_profile_add_samples
 *   resolve hs_profile_resolve (naming every frame)
 *   count   hs_profile_count_samples (self and total per function)
 *   write   every writer (report.txt, report.json, the folded files) into
 *           files in a temporary directory
 *
 * Prints one line per step, "name seconds" (CPU seconds of the process),
 * then "merge_report S" (merge through write, CPU) and "merge_report_wall S"
 * for bench/run.py; the goal is at most 1 s.
 *
 *   mergebench [samples [functions [outdir]]]
 *
 * With outdir the files are written there and kept (to compare the
 * writers' output before and after a change), else into a temporary
 * directory that is removed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "injector/output/writers.h"
#include "injector/profile/from_samples.h"
#include "injector/profile/profile.h"
#include "injector/profile/resolve.h"
#include "sampler/sampler.h"

/* The process's CPU time: on a machine shared with other work the steps'
 * wall times say more about the others than about this code. merge_report
 * is also given as wall time (merge_report_wall), which is what a user
 * waits. */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

#define BASE 0x140000000ull
#define FSIZE 64

int main(int argc, char **argv)
{
    uint32_t nsamples = argc > 1 ? (uint32_t)atoi(argv[1]) : 1000000;
    uint32_t nfuncs = argc > 2 ? (uint32_t)atoi(argv[2]) : 100000;
    hs_profile *p = hs_profile_new();
    p->command = strdup("run");
    p->target_path = strdup("C:\\bench\\big.exe");
    uint32_t m = hs_profile_add_module(p, "C:\\bench\\big.exe", BASE, 0x1000 + nfuncs * FSIZE + 0x1000);
    p->modules[m].traced = true;
    p->modules[m].main = true;
    p->modules[m].funcs_found = p->modules[m].funcs_hooked = nfuncs;
    for (uint32_t i = 0; i < nfuncs; i++) {
        char name[32];
        snprintf(name, sizeof name, "func_%u", i);
        uint32_t f = hs_profile_add_func(p, m, 0x1000 + i * FSIZE, FSIZE, name);
        p->funcs[f].in_plan = p->funcs[f].hooked = true;
        p->funcs[f].calls = 1 + rnd(1000);
    }
    p->total_calls = nfuncs;

    /* call paths, leaf last; each function lies on some path */
    enum { PATHS = 20000 };
    uint32_t *path[PATHS], plen[PATHS];
    uint32_t next_func = 0;
    for (int k = 0; k < PATHS; k++) {
        plen[k] = 4 + rnd(37);
        path[k] = malloc(plen[k] * sizeof *path[k]);
        for (uint32_t d = 0; d < plen[k]; d++)
            path[k][d] = d == 0 ? 0 : next_func < nfuncs ? next_func++ : rnd(nfuncs);
    }
    /* Zipf weights (exponent 1.1) over the paths: a cumulative table */
    double *cum = malloc(PATHS * sizeof *cum), total = 0;
    for (int k = 0; k < PATHS; k++)
        cum[k] = total += 1.0 / pow((double)(k + 1), 1.1);
    double t0 = cpu_s();
    hs_sampleset *set = hs_sampleset_new();
    uint64_t frames[48];
    for (uint32_t i = 0; i < nsamples; i++) {
        double u = (double)rnd(1u << 30) / (double)(1u << 30) * total;
        int lo = 0, hi = PATHS - 1;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (cum[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        int k = lo;
        uint32_t n = plen[k];
        /* leaf first: the sampled instruction, then the call sites up to the root */
        frames[0] = BASE + 0x1000 + (uint64_t)path[k][n - 1] * FSIZE + 8 * rnd(4);
        for (uint32_t d = 1; d < n; d++)
            frames[d] = BASE + 0x1000 + (uint64_t)path[k][n - 1 - d] * FSIZE + 5 + (uint64_t)(path[k][n - d] % 40);
        hs_sample s = { 1, 100 + (uint32_t)(k % 8), i, rnd(10) ? HS_SAMPLE_CPU : HS_SAMPLE_WAIT, false, n, frames };
        hs_sampleset_add(set, &s);
    }
    double t1 = cpu_s(), w1 = wall_s();
    hs_profile_add_samples(p, set);
    snprintf(p->sampling.backend, sizeof p->sampling.backend, "suspend");
    p->sampling.rate_hz = 1000;
    p->sampling.cpu_s = 10;
    double t2 = cpu_s();
    hs_profile_resolve(p, NULL);
    double t3 = cpu_s();
    hs_profile_count_samples(p);
    double t4 = cpu_s();
    char tmp[] = "/tmp/hs-mergebench-XXXXXX";
    const char *dir = argc > 3 ? argv[3] : tmp;
    if (argc <= 3 && !mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    double tw[16];
    int nw = 0;
    for (int i = 0; hs_writers[i] && nw < 16; i++) {
        double a = cpu_s();
        if ((!hs_writers[i]->wanted || hs_writers[i]->wanted(p)) &&
            hs_write_file(hs_writers[i], p, dir, hs_writers[i]->file ? hs_writers[i]->file : "dtrace.out") < 0)
            return 1;
        tw[nw++] = cpu_s() - a;
    }
    double t5 = cpu_s(), w5 = wall_s();
    printf("samples %u\nfunctions %u\nunique_stacks %zu\n", nsamples, nfuncs, p->nstacks);
    printf("set %.3f\nmerge %.3f\nresolve %.3f\ncount %.3f\nwrite %.3f\n", t1 - t0, t2 - t1, t3 - t2, t4 - t3,
           t5 - t4);
    for (int i = 0; i < nw; i++)
        printf("write_%s %.3f\n", hs_writers[i]->format, tw[i]);
    printf("merge_report %.3f\nmerge_report_wall %.3f\n", t5 - t1, w5 - w1);
    for (int i = 0; argc <= 3 && hs_writers[i]; i++) {
        char path_[256];
        snprintf(path_, sizeof path_, "%s/%s", dir, hs_writers[i]->file ? hs_writers[i]->file : "dtrace.out");
        unlink(path_);
    }
    if (argc <= 3)
        rmdir(dir);
    hs_sampleset_free(set);
    hs_profile_free(p);
    for (int k = 0; k < PATHS; k++)
        free(path[k]);
    free(cum);
    return 0;
}
