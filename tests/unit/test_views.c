/*
 * tests/unit/test_views.c - what is computed from profiles beyond the
 * golden files of test_profile.c, natively: `hookscope diff`'s matching
 * (two functions of one name in rva order) and order, report.txt's --sort/--top/--threads, the flame graph's
 * merging of narrow frames and its size bound on a synthetic profile of
 * 100,000 unique stacks, the differential flame graph's colours, that
 * callgrind.out's self costs and speedscope's weights add up to the
 * samples, and the CPU estimates: what they rest on (running samples
 * only), the bound of the measured wall time, the mark of few samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hook/base/util.h"
#include "injector/output/flametree.h"
#include "injector/output/writers.h"
#include "injector/profile/load.h"
#include "injector/profile/match.h"
#include "tests/unit/tap.h"

#define PROFILES "tests/unit/profiles"

static hs_profile *load(const char *name)
{
    char path[256], err[512];
    snprintf(path, sizeof path, PROFILES "/%s/report.json", name);
    hs_profile *p = hs_profile_load(path, err, sizeof err);
    if (!p)
        tap_fail(name, "%s", err);
    return p;
}

typedef int (*writer_fn)(const hs_profile *, FILE *);

static char *render(writer_fn w, const hs_profile *p, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    w(p, f);
    fclose(f);
    if (len)
        *len = n;
    return buf;
}

static void test_diff(void)
{
    hs_profile *a = load("sampled"), *a2 = load("sampled"), *b = load("sampled_slower");
    if (!a || !a2 || !b)
        return;
    hs_diff d;
    hs_diff_build(a, a2, HS_DIFF_BY_BEST, &d);
    int unchanged = 1;
    for (size_t i = 0; i < d.n; i++)
        if (hs_diff_change(&d, &d.rows[i]) != 0 || d.rows[i].a.calls != d.rows[i].b.calls ||
            d.rows[i].a.func < 0 || d.rows[i].b.func < 0)
            unchanged = 0;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    hs_write_diff(a, "A", a2, "A2", &d, 0, f);
    fclose(f);
    tap_check(d.by == HS_DIFF_BY_SAMPLES && d.n == 7 && unchanged && strstr(out, "\nno change: the 7 functions"),
              "diff: a run against itself shows no change", "n=%zu by=%d\n%s", d.n, d.by, out);
    free(out);
    hs_diff_free(&d);

    hs_diff_build(a, b, HS_DIFF_BY_BEST, &d);
    tap_check(d.n == 7 && !strcmp(d.rows[0].name, "burn_a") && hs_diff_change(&d, &d.rows[0]) == 100 &&
                  hs_diff_change(&d, &d.rows[1]) == 0 && d.rows[0].a.calls == 100 && d.rows[0].b.calls == 100,
              "diff: the function made slower comes first (+100 self samples)", "first %s %+.0f", d.rows[0].name,
              hs_diff_change(&d, &d.rows[0]));
    out = NULL;
    f = open_memstream(&out, &len);
    hs_write_diff(a, "A", b, "B", &d, 2, f);
    fclose(f);
    const char *row = strstr(out, "burn_a");
    tap_check(row && strstr(out, "         100         100          +0          60         160        +100") &&
                  strstr(out, "(the first 2 of 7 functions)") && strstr(out, "1 of 7 functions changed"),
              "diff: the table (calls, samples, change; --top 2)", "%s", out);
    free(out);
    hs_diff_free(&d);

    /* both ran with --time: self time orders by default (measured, where
     * samples estimate); --sort cpu and --sort calls order by their own */
    a->time_on = b->time_on = true;
    for (uint32_t i = 0; i < a->nfuncs; i++) {
        hs_prof_time_of(a, i)->calls = a->funcs[i].calls ? a->funcs[i].calls : 1;
        hs_prof_time_of(a, i)->self_ns = 1000;
    }
    for (uint32_t i = 0; i < b->nfuncs; i++) {
        hs_prof_time_of(b, i)->calls = b->funcs[i].calls ? b->funcs[i].calls : 1;
        hs_prof_time_of(b, i)->self_ns = b->funcs[i].name && !strcmp(b->funcs[i].name, "fib") ? 5000 : 1000;
    }
    hs_diff_build(a, b, HS_DIFF_BY_BEST, &d);
    tap_check(d.by == HS_DIFF_BY_TIME && !strcmp(d.rows[0].name, "fib") && hs_diff_change(&d, &d.rows[0]) == 4000 &&
                  hs_diff_change(&d, &d.rows[1]) == 0,
              "diff: with --time in both, self time orders (fib +4000 ns first, burn_a's +100 samples not)",
              "by %d first %s %+.0f", d.by, d.rows[0].name, hs_diff_change(&d, &d.rows[0]));
    hs_diff_free(&d);
    hs_diff_build(a, b, HS_DIFF_BY_SAMPLES, &d);
    tap_check(d.by == HS_DIFF_BY_SAMPLES && !strcmp(d.rows[0].name, "burn_a"), "diff --sort cpu: samples order",
              "by %d first %s", d.by, d.rows[0].name);
    hs_diff_free(&d);
    hs_diff_build(a, b, HS_DIFF_BY_CALLS, &d);
    tap_check(d.by == HS_DIFF_BY_CALLS && hs_diff_change(&d, &d.rows[0]) == 0, "diff --sort calls: calls order",
              "by %d first %s", d.by, d.rows[0].name);
    hs_diff_free(&d);
    /* --sort total: main made slower through its callees (self unchanged,
     * total 1 us -> 9 us) comes first, with the inclusive columns */
    for (uint32_t i = 0; i < a->nfuncs; i++)
        hs_prof_time_of(a, i)->total_ns = 1000;
    for (uint32_t i = 0; i < b->nfuncs; i++)
        hs_prof_time_of(b, i)->total_ns = b->funcs[i].name && !strcmp(b->funcs[i].name, "main") ? 9000 : 1000;
    hs_diff_build(a, b, HS_DIFF_BY_TOTAL, &d);
    out = NULL;
    f = open_memstream(&out, &len);
    hs_write_diff(a, "A", b, "B", &d, 1, f);
    fclose(f);
    tap_check(d.by == HS_DIFF_BY_TOTAL_TIME && !strcmp(d.rows[0].name, "main") &&
                  hs_diff_change(&d, &d.rows[0]) == 8000 && strstr(out, "by the largest change of total time") &&
                  strstr(out, "     total A     total B      change") && strstr(out, "    1.00 us     9.00 us    +8.00 us  main"),
              "diff --sort total: inclusive time orders (main +8 us through its callees first)", "by %d first %s\n%s",
              d.by, d.rows[0].name, out);
    free(out);
    hs_diff_free(&d);
    a->time_on = false;
    hs_diff_build(a, b, HS_DIFF_BY_TOTAL, &d);
    tap_check(d.by == HS_DIFF_BY_TOTAL_SAMPLES && hs_diff_change(&d, &d.rows[0]) == 100 &&
                  d.rows[0].b.cpu_total - d.rows[0].a.cpu_total == 100,
              "diff --sort total without --time in both: inclusive CPU samples order", "by %d first %s %+.0f",
              d.by, d.rows[0].name, hs_diff_change(&d, &d.rows[0]));
    hs_diff_free(&d);
    hs_diff_build(a, b, HS_DIFF_BY_BEST, &d);
    tap_check(d.by == HS_DIFF_BY_SAMPLES && !strcmp(d.rows[0].name, "burn_a"),
              "diff: without --time in both, samples order", "by %d first %s", d.by, d.rows[0].name);
    tap_check(!d.other_program && d.both == d.n, "diff: two runs of one program are not told to be two programs",
              "other %d both %zu of %zu", d.other_program, d.both, d.n);
    hs_diff_free(&d);

    /* the differential flame graph: burn_a grew (red), the others shrank or stayed */
    out = NULL;
    f = open_memstream(&out, &len);
    hs_write_flamegraph_diff(a, b, HS_STACK_CPU, f);
    fclose(f);
    const char *burn_a = strstr(out, ">burn_a</text>");
    const char *g = burn_a;
    while (g && g > out && strncmp(g, "<g class", 8))
        g--;
    tap_check(g && strstr(g, "data-b=\"60\"") && strstr(g, "fill=\"#d62728\"") && strstr(out, "\"diff\": true"),
              "diff flame graph: the grown frame is the reddest", "%.300s", g ? g : out);
    const char *burn_b = strstr(out, ">burn_b</text>");
    g = burn_b;
    while (g && g > out && strncmp(g, "<g class", 8))
        g--;
    tap_check(g && strstr(g, "data-v=\"120\" data-d=\"3\" data-b=\"120\"") && strstr(g, "fill=\"#"),
              "diff flame graph: a frame whose share shrank is blue-ish", "%.300s", g ? g : out);
    if (g) {
        unsigned r, gr, bl;
        const char *fill = strstr(g, "fill=\"#");
        sscanf(fill + 7, "%2x%2x%2x", &r, &gr, &bl);
        tap_check(bl > r, "diff flame graph: shrunk share -> more blue than red", "#%02x%02x%02x", r, gr, bl);
    }
    free(out);
    hs_profile_free(a);
    hs_profile_free(a2);
    hs_profile_free(b);
}

/* dupnames as another build would save it: both sprintf moved (to 0x1660
 * and 0x1f80), and listed the other way round (the one at the higher rva
 * first) */
static hs_profile *dupnames_rebuilt(void)
{
    size_t len;
    char err[512];
    char *text = (char *)hs_load_file(PROFILES "/dupnames/report.json", &len, NULL);
    if (!text) {
        tap_fail("dupnames", "cannot read it");
        return NULL;
    }
    for (char *at = text; (at = strstr(at, "0x1650")) != NULL;)
        memcpy(at, "0x1660", 6);
    for (char *at = text; (at = strstr(at, "0x1f40")) != NULL;)
        memcpy(at, "0x1f80", 6);
    /* their two lines in the functions list swapped */
    char *l1 = strstr(text, "\n  {\"module\": \"fmt.exe\", \"name\": \"sprintf\", \"rva\": \"0x1660\"");
    char *l2 = strstr(text, "\n  {\"module\": \"fmt.exe\", \"name\": \"sprintf\", \"rva\": \"0x1f80\"");
    char *e2 = l2 ? strchr(l2 + 1, '\n') : NULL;
    hs_profile *p = NULL;
    if (l1 && l2 && e2 && l1 < l2) {
        size_t n1 = (size_t)(l2 - l1), n2 = (size_t)(e2 - l2);
        char *first = hs_xstrndup(l1, n1);
        memmove(l1, l2, n2);
        memcpy(l1 + n2, first, n1);
        free(first);
        p = hs_profile_from_json(text, len, err, sizeof err);
    }
    if (!p)
        tap_fail("dupnames rebuilt", "%s", l1 && l2 ? err : "no sprintf lines");
    free(text);
    return p;
}

/* Two programs (burn.exe, fmt.exe): only main is in both, so the rows are
 * mostly "changed" by construction: the table says so before the rows. */
static void test_diff_two_programs(void)
{
    hs_profile *a = load("sampled"), *b = load("dupnames");
    if (!a || !b)
        return;
    hs_diff d;
    hs_diff_build(a, b, HS_DIFF_BY_BEST, &d);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    hs_write_diff(a, "A", b, "B", &d, 0, f);
    fclose(f);
    char want[200];
    snprintf(want, sizeof want, "\nwarning: A ran burn.exe and B ran fmt.exe, and only %zu of the %zu functions are in "
             "both: two programs, matched by name alone\n", d.both, d.n);
    tap_check(d.other_program && d.both == 1 && strstr(out, want), "diff: two programs are said to be two",
              "other %d both %zu of %zu\n%s", d.other_program, d.both, d.n, out);
    free(out);
    hs_diff_free(&d);
    hs_profile_free(a);
    hs_profile_free(b);
}

/* The differential flame graph colours a frame by its share of the stacks
 * under top frames both runs reach: B ran slower (main 100 -> 150 samples,
 * work 20 -> 60 of them) and has one stray sample outside main; main keeps
 * all of the shared stacks (grey, not blue), work grew (red). */
static hs_profile *flame_run(uint64_t work, uint64_t rest, uint64_t stray)
{
    hs_profile *p = hs_profile_new();
    p->target_path = hs_xstrdup("x.exe");
    uint32_t m = hs_profile_add_module(p, "x.exe", 0x140000000ull, 0x10000);
    uint32_t fmain = hs_profile_add_func(p, m, 0x1000, 16, "main");
    uint32_t fwork = hs_profile_add_func(p, m, 0x2000, 16, "work");
    uint32_t fstray = hs_profile_add_func(p, m, 0x3000, 16, "stray");
    hs_prof_stack *st = hs_profile_add_stack(p, HS_STACK_CPU, 0, work, 2);
    st->frames[0] = (hs_loc){ (int32_t)fwork, -1, 0 };
    st->frames[1] = (hs_loc){ (int32_t)fmain, -1, 0 };
    st = hs_profile_add_stack(p, HS_STACK_CPU, 0, rest, 1);
    st->frames[0] = (hs_loc){ (int32_t)fmain, -1, 0 };
    if (stray) {
        st = hs_profile_add_stack(p, HS_STACK_CPU, 0, stray, 1);
        st->frames[0] = (hs_loc){ (int32_t)fstray, -1, 0 };
    }
    p->sampling.on = true;
    return p;
}

static void fill_of(const char *svg, const char *label, unsigned rgb[3], char *attrs, size_t n)
{
    const char *at = strstr(svg, label), *g = at;
    while (g && g > svg && strncmp(g, "<g class", 8))
        g--;
    const char *fill = g ? strstr(g, "fill=\"#") : NULL;
    rgb[0] = rgb[1] = rgb[2] = 0;
    snprintf(attrs, n, "%.*s", g && at ? (int)(at - g) : 0, g ? g : "");
    if (fill)
        sscanf(fill + 7, "%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]);
}

static void test_diff_flame_stray_sample(void)
{
    hs_profile *a = flame_run(20, 80, 0), *b = flame_run(60, 90, 1);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    hs_write_flamegraph_diff(a, b, HS_STACK_CPU, f);
    fclose(f);
    unsigned mrgb[3], wrgb[3];
    char mattrs[400], wattrs[400];
    fill_of(out, ">main</text>", mrgb, mattrs, sizeof mattrs);
    fill_of(out, ">work</text>", wrgb, wattrs, sizeof wattrs);
    tap_check(mrgb[0] == 0xe0 && mrgb[1] == 0xe0 && mrgb[2] == 0xe0 && strstr(mattrs, "data-s=\"1\""),
              "diff flame graph: one stray sample does not paint main blue (its share of the shared stacks is kept)",
              "main #%02x%02x%02x %s", mrgb[0], mrgb[1], mrgb[2], mattrs);
    tap_check(wrgb[0] > wrgb[2] && strstr(out, "\"stotal\": 150, \"sbtotal\": 100,"),
              "diff flame graph: the callee that grew is red; the shared totals are in the data",
              "work #%02x%02x%02x", wrgb[0], wrgb[1], wrgb[2]);
    free(out);
    hs_profile_free(a);
    hs_profile_free(b);
}

static void test_diff_same_name(void)
{
    hs_profile *a = dupnames_rebuilt(), *b = load("dupnames");
    if (!a || !b) {
        hs_profile_free(a);
        hs_profile_free(b);
        return;
    }
    tap_check(!strcmp(hs_func_label(a, 3), "sprintf@0x1f80") && a->funcs[3].calls == 70 && a->funcs[4].calls == 30,
              "diff, same name: the other build lists its sprintf the other way round", "%s", hs_func_label(a, 3));
    hs_diff d;
    hs_diff_build(a, b, HS_DIFF_BY_CALLS, &d);
    size_t sprintfs = 0, paired = 0;
    for (size_t i = 0; i < d.n; i++) {
        const hs_diff_row *r = &d.rows[i];
        if (strncmp(r->name, "sprintf@", 8))
            continue;
        sprintfs++;
        paired += r->a.func >= 0 && r->b.func >= 0 && r->a.calls == r->b.calls &&
                  a->funcs[r->a.func].rva == b->funcs[r->b.func].rva + (b->funcs[r->b.func].rva == 0x1650 ? 0x10 : 0x40);
    }
    tap_check(d.n == 8 && sprintfs == 2 && paired == 2 && hs_diff_change(&d, &d.rows[0]) == 0,
              "diff, same name: two functions of one name paired in rva order", "%zu rows, %zu sprintf, %zu paired", d.n,
              sprintfs, paired);
    hs_diff_free(&d);
    /* the differential flame graph: each sprintf's frame has the other
     * build's same sprintf as its baseline (unchanged: grey) */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    hs_write_flamegraph_diff(a, b, HS_STACK_CPU, f);
    fclose(f);
    const char *s1 = strstr(out, ">sprintf@0x1650</text>"), *s2 = strstr(out, ">sprintf@0x1f40</text>");
    const char *g1 = s1, *g2 = s2;
    while (g1 && g1 > out && strncmp(g1, "<g class", 8))
        g1--;
    while (g2 && g2 > out && strncmp(g2, "<g class", 8))
        g2--;
    tap_check(g1 && g2 && strstr(g1, "data-v=\"3\" data-d=\"3\" data-b=\"3\"") == strstr(g1, "data-v") &&
                  strstr(g2, "data-v=\"9\" data-d=\"3\" data-b=\"9\"") == strstr(g2, "data-v") &&
                  strstr(g1, "fill=\"#e0e0e0\"") && strstr(g2, "fill=\"#e0e0e0\""),
              "diff flame graph, same name: each sprintf against its own baseline", "%.200s\n%.200s", g1 ? g1 : out,
              g2 ? g2 : "");
    free(out);
    hs_profile_free(a);
    hs_profile_free(b);
}

static void test_view(void)
{
    hs_profile *p = load("sampled");
    if (!p)
        return;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    hs_txt_view v = { HS_SORT_CPU, 3, true, true };
    hs_write_txt_view(p, &v, f);
    fclose(f);
    const char *t = strstr(out, "               calls    cpu samples  function");
    tap_check(t && strstr(t, "\n                1000            100  burn_b") &&
                  strstr(t, "\n                 100             60  burn_a") &&
                  strstr(t, "\n                   0             20  memcpy") && !strstr(t, "  fib  ") &&
                  strstr(out, "5 of 5 hooked functions were called.\n(the tables show the first 3 by cpu)") &&
                  strstr(out, "        10           1110       195         0         0         0  195.00 ms"),
              "--sort cpu --top 3 --threads", "%s", out);
    tap_check(strstr(out, "CPU: where the program's CPU went, by self samples (the function at the leaf);") &&
                  strstr(out, "\n 50.0%     120  60.0%    120 ms      0       1000    120 us  burn_b  ") &&
                  strstr(out, "\n 30.0%      60  30.0%   60.0 ms      0        100    600 us  burn_a  ") &&
                  strstr(out, "\n 10.0%      20  10.0%   20.0 ms      0          -         -  memcpy  ") &&
                  strstr(out, "\n(4 more functions with CPU or ready samples: report.json)\n"),
              "--sort cpu --top 3: the CPU section's first 3 by self samples", "%s", out);
    free(out);

    /* --sort total --top 2: every section by its total, two rows each */
    out = NULL;
    f = open_memstream(&out, &len);
    hs_txt_view vt = { HS_SORT_TOTAL, 2, true, true };
    hs_write_txt_view(p, &vt, f);
    fclose(f);
    const char *cpu = strstr(out, "CPU: where the program's CPU went, by total samples; total:");
    const char *wait = strstr(out, "\nwait: where threads were blocked in a system call (sleep, wait, I/O),\n"
                                   "by total samples (self: the function it waited in); stacks in wait-stacks.folded\n");
    tap_check(cpu && strstr(cpu, "\n  0.0%     195  97.5%    195 ms      0          -         -  BaseThreadInitThunk  ") &&
                  strstr(cpu, "\n  0.0%     195  97.5%    195 ms      0          1    195 ms  main  ") &&
                  strstr(cpu, "\n(5 more functions with CPU or ready samples: report.json)\n"),
              "--sort total --top 2: the CPU section by total samples", "%s", out);
    tap_check(wait && strstr(wait, "    self  self%    total total%  function") &&
                  strstr(wait, "\n      50 100.0%       50 100.0%  NtWaitForSingleObject  ") &&
                  strstr(wait, "\n       0   0.0%       50 100.0%  WaitForSingleObjectEx  ") && strstr(wait, "\n(1 more)\n"),
              "--sort total --top 2: the wait section lists the functions on waiting stacks by total", "%s", out);
    tap_check(strstr(out, "on each thread, by all samples\n") &&
                  strstr(out, "\n        10           1110       195         0         0         0  195.00 ms\n"
                              "        11              1         5         0        50         0          -\n"),
              "--sort total: the threads by all their samples", "%s", out);
    free(out);

    /* --sort calls --top 1: the busiest thread by calls, the most called function first */
    out = NULL;
    f = open_memstream(&out, &len);
    hs_txt_view vc = { HS_SORT_CALLS, 1, true, true };
    hs_write_txt_view(p, &vc, f);
    fclose(f);
    cpu = strstr(out, "CPU: where the program's CPU went, by calls; total:");
    tap_check(cpu && strstr(cpu, "\n 50.0%     120  60.0%    120 ms      0       1000    120 us  burn_b  ") &&
                  !strstr(cpu, "  burn_a  ") && strstr(out, "on each thread, by calls\n") &&
                  strstr(out, "195.00 ms\n(the first 1 of 2 threads)\n"),
              "--sort calls --top 1: the CPU section and the threads by calls", "%s", out);
    free(out);
    tap_check(hs_sort_unavailable(p, HS_SORT_CPU) == NULL && hs_sort_unavailable(p, HS_SORT_SELF) == NULL,
              "sort keys available with samples", "?");
    hs_profile_free(p);
    p = load("lateload");
    if (!p)
        return;
    tap_check(hs_sort_unavailable(p, HS_SORT_CPU) && strstr(hs_sort_unavailable(p, HS_SORT_AVG), "neither"),
              "sort keys that need samples or --time are refused without them", "?");
    out = NULL;
    f = open_memstream(&out, &len);
    hs_txt_view plain = { HS_SORT_CALLS, 0, false, false };
    hs_write_txt_view(p, &plain, f);
    fclose(f);
    size_t glen;
    char *golden = (char *)hs_load_file(PROFILES "/lateload/report.txt", &glen, NULL);
    tap_check(golden && glen == len && !memcmp(golden, out, len), "the default view is the run's report.txt", "differs");
    free(golden);
    free(out);
    hs_profile_free(p);
}

/* A synthetic profile: n unique CPU stacks under a few roots, counts
 * spread from 1 to 1000, frames of 3 modules, depths 3 to 12. */
static hs_profile *synthetic(size_t n)
{
    hs_profile *p = hs_profile_new();
    p->target_path = hs_xstrdup("C:\\synthetic\\big.exe");
    p->command = hs_xstrdup("run");
    p->sampling.on = true;
    snprintf(p->sampling.backend, sizeof p->sampling.backend, "suspend");
    p->sampling.rate_hz = 1000;
    p->sampling.cpu_s = -1;
    uint32_t mods[3];
    mods[0] = hs_profile_add_module(p, "C:\\synthetic\\big.exe", 0x140000000ull, 0x1000000);
    mods[1] = hs_profile_add_module(p, "C:\\windows\\system32\\ntdll.dll", 0x170000000ull, 0x100000);
    mods[2] = hs_profile_add_module(p, "C:\\synthetic\\lib.dll", 0x180000000ull, 0x100000);
    uint32_t nf = 5000;
    for (uint32_t i = 0; i < nf; i++) {
        char name[32];
        snprintf(name, sizeof name, "fn_%u", i);
        hs_profile_add_func(p, mods[i % 3], 0x1000 + i * 16, 16, name);
    }
    /* a tree of shared prefixes (3 roots, 10 children each, ...) walked by
     * the digits of k, a leaf per stack; counts fall off as 1/k */
    uint32_t s = 12345;
    for (size_t k = 0; k < n; k++) {
        s = s * 1103515245u + 12345u;
        uint32_t depth = 4 + (s >> 16) % 8;
        uint64_t count = 2000000 / (k + 1);
        hs_prof_stack *st = hs_profile_add_stack(p, HS_STACK_CPU, 0, count ? count : 1, depth);
        st->tid = 1 + (uint32_t)(k % 4);
        size_t path = k;
        for (uint32_t level = 0; level < depth; level++) {
            uint32_t d = depth - 1 - level;   /* frames are leaf first */
            uint32_t f = level == 0 ? (uint32_t)(path % 3) : 3 + (uint32_t)((path * 7 + level * 131) % (nf - 3));
            path /= level == 0 ? 3 : 10;
            st->frames[d] = (hs_loc){ (int32_t)f, -1, level };
        }
        st->frames[0] = (hs_loc){ (int32_t)(3 + k % (nf - 3)), -1, k };
    }
    for (size_t i = 0; i < p->nstacks; i++)
        p->sampling.samples += p->stacks[i].count;
    hs_profile_count_samples(p);
    return p;
}

static void test_big_flamegraph(void)
{
    hs_profile *p = synthetic(100000);
    hs_flametree t;
    hs_flametree_build(&t, p, HS_STACK_CPU);
    size_t nodes = t.n;
    hs_flametree_free(&t);
    clock_t c0 = clock();
    size_t len;
    char *svg = render(hs_write_flamegraph, p, &len);
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    size_t boxes = 0, merged = 0;
    for (const char *s = svg; (s = strstr(s, "<g class=\"f")) != NULL; s++) {
        boxes++;
        merged += !strncmp(s, "<g class=\"f m\"", 14);
    }
    tap_diag("100,000 unique stacks (%zu tree nodes): %zu boxes (%zu merged groups), %zu bytes, written in %.2f s",
             nodes, boxes, merged, len, secs);
    tap_check(boxes > 100 && boxes <= HS_SVG_MAX_FRAMES && merged > 0 && len < 12u * 1024 * 1024,
              "100,000 unique stacks: at most 20,000 boxes, narrow frames merged, under 12 MB", "%zu boxes, %zu bytes",
              boxes, len);
    /* the merged groups and the frames drawn still add up: the root holds every sample */
    char want[64];
    snprintf(want, sizeof want, "data-x=\"0\" data-v=\"%llu\" data-d=\"0\"", (unsigned long long)p->sampling.samples);
    tap_check(strstr(svg, want) != NULL, "the root holds every sample", "no '%s'", want);
    free(svg);

    /* speedscope: the weights of the CPU profiles add up to the samples */
    char *ss = render(hs_write_speedscope, p, &len);
    unsigned long long sum = 0;
    for (const char *s = ss; (s = strstr(s, "\"weights\": [")) != NULL;) {
        s += 12;
        while (*s && *s != ']') {
            char *end;
            sum += strtoull(s, &end, 10);
            s = end;
            while (*s == ',' || *s == ' ')
                s++;
        }
    }
    tap_check(sum == p->sampling.samples, "speedscope: the weights add up to the samples", "%llu != %llu", sum,
              (unsigned long long)p->sampling.samples);
    free(ss);

    /* callgrind: the self costs add up to the samples */
    char *cg = render(hs_write_callgrind, p, &len);
    sum = 0;
    for (char *line = strtok(cg, "\n"); line; line = strtok(NULL, "\n"))
        if (!strncmp(line, "0 ", 2))
            sum += strtoull(line + 2, NULL, 10);
    tap_check(sum == p->sampling.samples, "callgrind: the self costs add up to the samples", "%llu != %llu", sum,
              (unsigned long long)p->sampling.samples);
    free(cg);
    hs_profile_free(p);
}

static void test_deep_budget(void)
{
    /* 400 unique stacks 80 frames deep, all as wide (about 3 px): 32,000
     * boxes of a pixel or more, more than the bound; merging must widen */
    hs_profile *p = hs_profile_new();
    p->target_path = hs_xstrdup("deep.exe");
    uint32_t m = hs_profile_add_module(p, "deep.exe", 0x140000000ull, 0x100000);
    for (uint32_t i = 0; i < 400 * 80; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%u", i);
        hs_profile_add_func(p, m, 0x1000 + i * 16, 16, name);
    }
    for (uint32_t k = 0; k < 400; k++) {
        hs_prof_stack *st = hs_profile_add_stack(p, HS_STACK_CPU, 0, 10 + k % 7, 80);
        for (uint32_t d = 0; d < 80; d++)
            st->frames[d] = (hs_loc){ (int32_t)(k * 80 + d), -1, 0 };
    }
    size_t len;
    char *svg = render(hs_write_flamegraph, p, &len);
    size_t boxes = 0;
    for (const char *s = svg; (s = strstr(s, "<g class=\"f")) != NULL; s++)
        boxes++;
    tap_diag("400 stacks x 80 frames: %zu boxes, %zu bytes", boxes, len);
    /* the width below which frames merge grows x1.5 from a pixel (5197
     * samples over 1180 px: 4.4 each): at 5, 7 and 10 samples every stack
     * (10 to 16 samples) is wide, 32,001 boxes; at 15 the 286 stacks of 10
     * to 14 samples are narrow, one merged box under the root: the 114
     * stacks of 15 and 16 samples x 80 frames, the root and the group */
    tap_check(boxes == 114 * 80 + 2 && boxes <= HS_SVG_MAX_FRAMES, "more boxes than the bound: merged down to it",
              "%zu boxes, want %d", boxes, 114 * 80 + 2);
    free(svg);
    hs_profile_free(p);
}

static void test_small_merge(void)
{
    /* one wide stack and 50 one-sample stacks under main: the narrow ones
     * are drawn as one box of 50 samples */
    hs_profile *p = hs_profile_new();
    p->target_path = hs_xstrdup("x.exe");
    uint32_t m = hs_profile_add_module(p, "x.exe", 0x140000000ull, 0x10000);
    uint32_t fmain = hs_profile_add_func(p, m, 0x1000, 16, "main");
    uint32_t fbig = hs_profile_add_func(p, m, 0x2000, 16, "big");
    hs_prof_stack *st = hs_profile_add_stack(p, HS_STACK_CPU, 0, 10000, 2);
    st->frames[0] = (hs_loc){ (int32_t)fbig, -1, 0 };
    st->frames[1] = (hs_loc){ (int32_t)fmain, -1, 0 };
    for (int i = 0; i < 50; i++) {
        char name[16];
        snprintf(name, sizeof name, "tiny%02d", i);
        uint32_t f = hs_profile_add_func(p, m, 0x3000 + (uint32_t)i * 16, 16, name);
        st = hs_profile_add_stack(p, HS_STACK_CPU, 0, 1, 2);
        st->frames[0] = (hs_loc){ (int32_t)f, -1, 0 };
        st->frames[1] = (hs_loc){ (int32_t)fmain, -1, 0 };
    }
    p->sampling.on = true;
    size_t len;
    char *svg = render(hs_write_flamegraph, p, &len);
    tap_check(strstr(svg, "data-n=\"-1\" data-m=\"50\" data-x=\"10000\" data-v=\"50\" data-d=\"2\"") &&
                  !strstr(svg, ">tiny"),
              "frames narrower than a pixel: one box after the wide ones", "%s", svg);
    free(svg);
    hs_profile_free(p);
}

/* ---- CPU estimates ------------------------------------------------------------------ */

static const char *const PROFILE_NAMES[] = { "demo_stacks", "dupnames", "edgecases", "lateload",
                                             "sample_kinds", "sampled", "sampled_slower" };

/* The row of report.txt's CPU section that ends in "  name " (the
 * function column), or NULL; copied into row. */
static const char *cpu_row(const char *txt, const char *name, char *row, size_t len)
{
    const char *cpu = strstr(txt, "\nCPU: "), *end = cpu ? strstr(cpu, "\nwait: ") : NULL;
    char key[64];
    snprintf(key, sizeof key, "  %s ", name);
    const char *at = cpu ? strstr(cpu, key) : NULL;
    if (!at || !end || at > end)
        return NULL;
    const char *bol = at;
    while (bol > cpu && bol[-1] != '\n')
        bol--;
    const char *eol = strchr(at, '\n');
    snprintf(row, len, "%.*s", (int)(eol - bol), bol);
    return row;
}

/* What a check of every function of every saved profile found. */
typedef struct fn_tally {
    int seen, marked, bad;
    char why[512];
} fn_tally;

/* check(p, name of the profile, function, its report.txt, tally) for every
 * function of every saved profile */
static void each_saved_func(void (*check)(const hs_profile *, const char *, uint32_t, const char *, fn_tally *),
                            fn_tally *t)
{
    for (size_t k = 0; k < sizeof PROFILE_NAMES / sizeof *PROFILE_NAMES; k++) {
        hs_profile *p = load(PROFILE_NAMES[k]);
        if (!p)
            continue;
        char *txt = render(hs_write_txt, p, NULL);
        for (uint32_t i = 0; i < p->nfuncs; i++)
            check(p, PROFILE_NAMES[k], i, txt, t);
        free(txt);
        hs_profile_free(p);
    }
}

/* marked: capped */
static void check_bound(const hs_profile *p, const char *name, uint32_t i, const char *txt, fn_tally *t)
{
    (void)txt;
    const hs_prof_func *f = &p->funcs[i];
    double wall = hs_func_wall_ns(p, i);
    hs_cpu_estimate e = hs_func_cpu_estimate(p, i);
    if (wall < 0 || e.per_call_ns < 0 || !f->cpu_total)
        return;
    t->seen++;
    t->marked += e.capped;
    double wall_per_call = (double)f->time->total_ns / (double)f->time->calls;
    if (e.per_call_ns > wall_per_call * (1 + 1e-12) || e.ns > wall * (1 + 1e-12)) {
        t->bad++;
        snprintf(t->why, sizeof t->why, "%s: %s %.1f ns per call, wall %.1f ns", name, f->name, e.per_call_ns,
                 wall_per_call);
    }
}

/* With --time, no function's CPU per call exceeds its measured wall time
 * per call, in every saved profile; dupnames and sample_kinds have
 * estimates far above it (a few samples spread over calls of microseconds,
 * or hookscope's probes inside nanosecond calls). */
static void test_cpu_bound(void)
{
    fn_tally t = { 0 };
    each_saved_func(check_bound, &t);
    tap_check(t.seen >= 10 && t.marked >= 7 && !t.bad, "with --time, CPU per call never exceeds wall per call",
              "%d checked, %d capped, %d above: %s", t.seen, t.marked, t.bad, t.why);

    hs_profile *p = load("sample_kinds");
    if (!p)
        return;
    char *txt = render(hs_write_txt, p, NULL), row[256];
    /* getstr: 65 samples in a million calls of 17 ns (its hookscope
     * samples left out): 65 ns per call by the samples, 17 measured */
    int64_t g = hs_profile_find_func(p, 0, "getstr", HS_RVA_NONE);
    hs_cpu_estimate e = hs_func_cpu_estimate(p, (uint32_t)g);
    tap_check(e.capped && e.per_call_ns == 17.0 && e.ns == 17e6 && cpu_row(txt, "getstr", row, sizeof row) &&
                  strstr(row, " <=17.0 ms ") && strstr(row, " <=17.0 ns     17 ns  getstr "),
              "an estimate above the measured wall time is that time, marked <=", "%.1f ns: %s", e.per_call_ns,
              cpu_row(txt, "getstr", row, sizeof row) ? row : txt);
    /* worker: still running at the end: its samples are not bounded by
     * the calls that ended (none) */
    int64_t w = hs_profile_find_func(p, 0, "worker", HS_RVA_NONE);
    e = hs_func_cpu_estimate(p, (uint32_t)w);
    tap_check(hs_func_wall_ns(p, (uint32_t)w) < 0 && !e.capped && e.ns == 40e6,
              "a function with calls still running is not bounded by the calls that ended", "%.0f ns", e.ns);
    free(txt);
    hs_profile_free(p);
}

/* marked: shown with "~" in its report.txt row */
static void check_few(const hs_profile *p, const char *name, uint32_t i, const char *txt, fn_tally *t)
{
    const hs_prof_func *f = &p->funcs[i];
    char row[256];
    if (!f->cpu_total || !f->name || p->sampling.cpu_s < 0 || !cpu_row(txt, hs_func_label(p, i), row, sizeof row))
        return;
    hs_cpu_estimate e = hs_func_cpu_estimate(p, i);
    bool few = f->cpu_total < HS_FEW_SAMPLES && !e.capped;
    bool shown = strstr(row, " ~") != NULL;
    t->seen++;
    t->marked += shown;
    if (few != shown || e.few != (f->cpu_total < HS_FEW_SAMPLES)) {
        t->bad++;
        snprintf(t->why, sizeof t->why, "%s: %s", name, row);
    }
}

/* "~" marks exactly the estimates from fewer than HS_FEW_SAMPLES samples
 * (and not bounded by a measurement). */
static void test_few_samples(void)
{
    fn_tally t = { 0 };
    each_saved_func(check_few, &t);
    tap_check(t.seen >= 15 && t.marked >= 3 && !t.bad, "estimates from fewer than 20 samples are marked ~",
              "%d rows, %d marked, %d wrong: %s", t.seen, t.marked, t.bad, t.why);
}

/* A function's name longer than its column keeps two spaces before the
 * module, in the CPU and the wait tables (readers split rows there). */
static void test_long_names(void)
{
    hs_profile *p = load("sampled");
    if (!p)
        return;
    static const char *const renames[][2] = {
        { "burn_b", "RtlDosPathNameToNtPathName_U_WithStatus" },
        { "NtWaitForSingleObject", "NtWaitForSingleObjectWithAVeryLongName" },
    };
    for (size_t k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < p->nfuncs; i++) {
            if (p->funcs[i].name && !strcmp(p->funcs[i].name, renames[k][0])) {
                free(p->funcs[i].name);
                hs_profile_name_func(p, i, renames[k][1]);
            }
        }
    }
    char *txt = render(hs_write_txt, p, NULL);
    tap_check(strstr(txt, "  RtlDosPathNameToNtPathName_U_WithStatus  burn.exe\n") &&
                  strstr(txt, "  NtWaitForSingleObjectWithAVeryLongName  ntdll.dll\n") &&
                  strstr(txt, "  burn_a               burn.exe\n"),
              "long names keep two spaces before the module", "%s", txt);
    free(txt);
    hs_profile_free(p);
}

/* CPU time is shared out over the running samples (the program's and
 * hookscope's own); ready and wait samples never enter it. */
static void test_estimate_basis(void)
{
    hs_profile *p = load("sample_kinds");
    if (!p)
        return;
    const hs_prof_sampling *s = &p->sampling;
    int64_t work = hs_profile_find_func(p, 0, "work", HS_RVA_NONE);
    hs_cpu_estimate before = hs_func_cpu_estimate(p, (uint32_t)work);
    tap_check(hs_running_samples(p) == 250 && hs_samples_cpu_ns(p, 250) == 0.25e9 && before.ns == 155e6 &&
                  !before.capped && !before.few && before.per_call_ns == 155e3,
              "CPU time: the process's, over the running samples (hookscope's own included, not charged)",
              "running %llu, work %.0f ns", (unsigned long long)hs_running_samples(p), before.ns);
    /* a thousand more ready samples on work's stack: no estimate moves */
    hs_prof_stack *st = hs_profile_add_stack(p, HS_STACK_READY, 0, 1000, 2);
    st->tid = 10;
    st->frames[0] = (hs_loc){ (int32_t)work, -1, 0x10 };
    st->frames[1] = (hs_loc){ (int32_t)hs_profile_find_func(p, 0, "main", HS_RVA_NONE), -1, 0x40 };
    p->sampling.ready_samples += 1000;
    hs_profile_count_samples(p);
    hs_cpu_estimate after = hs_func_cpu_estimate(p, (uint32_t)work);
    tap_check(after.ns == before.ns && p->funcs[work].ready_total == 1025 && s->samples == 205,
              "ready samples are not CPU: they change no estimate", "%.0f ns", after.ns);
    hs_profile_free(p);
}

/* The sample kinds from report.json: counts per kind, per function and
 * thread, the sampler's cost and hookscope's; the wait section lists
 * only waiting samples. */
static void test_sample_kinds(void)
{
    hs_profile *p = load("sample_kinds");
    if (!p)
        return;
    const hs_prof_sampling *s = &p->sampling;
    int64_t work = hs_profile_find_func(p, 0, "work", HS_RVA_NONE);
    const hs_prof_thread *t11 = hs_profile_thread(p, 11);
    tap_check(s->samples == 205 && s->ready_samples == 40 && s->wait_samples == 40 && s->hookscope_samples == 45 &&
                  s->held_s == 0.08 && s->threads_s == 2.0 && hs_stacks_total(p, HS_STACK_READY) == 40 &&
                  hs_stacks_total(p, HS_STACK_HOOKSCOPE) == 45 && p->funcs[work].ready_self == 20 &&
                  p->funcs[work].ready_total == 25 && p->funcs[work].wait_total == 0 && t11->ready_samples == 12 &&
                  p->modules[0].ready_self == 40,
              "report.json: ready and hookscope samples, the sampler's cost", "?");
    char *txt = render(hs_write_txt, p, NULL), row[256];
    const char *wait = strstr(txt, "\nwait: ");
    const char *wait_end = wait ? strstr(wait, "\nthreads: ") : NULL;
    tap_check(strstr(txt, "\nsamples    205 CPU, 40 ready, 40 wait, 45 in hookscope (suspend sampler, 1000 Hz, 2 "
                          "threads, 0 lost)\n") &&
                  strstr(txt, "\nsampler    held the threads 0.080 s, 4.0% of their sampled time (2.000 s)\n") &&
                  strstr(txt, "\nhookscope  45 samples in its own code in the target, 18.0% of the running "
                              "samples (45.0 ms of CPU)\n"
                              "           spent on the hooks of getstr (30), work (15): stacks in "
                              "hookscope-stacks.folded\n"),
              "report.txt's header: samples of each kind, the sampler's hold, hookscope's share and where",
              "%s", txt);
    tap_check(cpu_row(txt, "work", row, sizeof row) && strstr(row, "    155 ms     25 ") &&
                  cpu_row(txt, "preempted", row, sizeof row) && strstr(row, "         -      3 "),
              "the CPU section: ready samples beside CPU", "%s", txt);
    char *section = wait && wait_end ? hs_xstrndup(wait, (size_t)(wait_end - wait)) : NULL;
    tap_check(section && strstr(section, "NtDelayExecution") && !strstr(section, "work"),
              "the wait section: only waiting samples", "%s", wait ? wait : txt);
    free(section);
    free(txt);
    char *ready = render(hs_write_folded_ready, p, NULL), *own = render(hs_write_folded_hookscope, p, NULL);
    tap_check(!strcmp(ready, "kernel32.dll!BaseThreadInitThunk;mix.exe!main;mix.exe!preempted 3\n"
                             "kernel32.dll!BaseThreadInitThunk;mix.exe!main;mix.exe!work 20\n"
                             "kernel32.dll!BaseThreadInitThunk;mix.exe!main;mix.exe!work;mix.exe!getstr 5\n"
                             "kernel32.dll!BaseThreadInitThunk;mix.exe!worker 12\n") &&
                  !strcmp(own, "kernel32.dll!BaseThreadInitThunk;mix.exe!main;mix.exe!work 15\n"
                               "kernel32.dll!BaseThreadInitThunk;mix.exe!main;mix.exe!work;mix.exe!getstr 30\n"),
              "ready-stacks.folded and hookscope-stacks.folded", "%s--\n%s", ready, own);
    free(ready);
    free(own);
    /* the flame graph and speedscope show CPU samples (speedscope: and
     * waits), never ready or hookscope's */
    char *svg = render(hs_write_flamegraph, p, NULL), *ss = render(hs_write_speedscope, p, NULL);
    tap_check(strstr(svg, ": CPU samples (205 samples)</text>") && !strstr(svg, "preempted") &&
                  !strstr(ss, "ready") && !strstr(ss, "preempted") && !strstr(ss, "hookscope samples"),
              "the flame graph and speedscope: no ready or hookscope samples", "?");
    free(ss);
    free(svg);
    hs_profile_free(p);
}

/* report.txt's order by calls: calls (descending), then the name as
 * strcmp orders it, then module and rva; names that differ before, at and
 * after their 16th byte, end there, hold bytes above 0x7f, are the same */
static int by_calls_ref(const hs_profile *p, uint32_t a, uint32_t b)
{
    const hs_prof_func *x = &p->funcs[a], *y = &p->funcs[b];
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");
    if (c)
        return c;
    return x->module != y->module ? (x->module < y->module ? -1 : 1) : (x->rva < y->rva ? -1 : x->rva > y->rva);
}

static void test_by_calls_order(void)
{
    static const char *const names[] = {
        "", "a", "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklmnoq", "abcdefghijklmnopq",
        "abcdefghijklmnopr", "abcdefghijklmnop\xc3\xa9", "abcdefghijklmno\xc3\xa9", "\xc3\xa9t\xc3\xa9",
        "abcdefgh", "abcdefgg", "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyy", "zz",
    };
    size_t nn = sizeof names / sizeof *names;
    hs_profile *p = hs_profile_new();
    uint32_t m0 = hs_profile_add_module(p, "C:\\a.exe", 0x140000000ull, 0x100000);
    uint32_t m1 = hs_profile_add_module(p, "C:\\b.dll", 0x180000000ull, 0x100000);
    uint32_t s = 99;
    for (uint32_t i = 0; i < 300; i++) {
        s = s * 1103515245u + 12345u;
        uint32_t f = hs_profile_add_func(p, (s >> 8) % 3 ? m0 : m1, 0x1000 + ((s >> 4) % 50) * 16 + i * 0x1000, 16,
                                         names[(s >> 16) % nn]);
        p->funcs[f].calls = (s >> 12) % 4;
    }
    size_t n;
    uint32_t *idx = hs_funcs_by_calls(p, &n);
    size_t want = 0;
    for (size_t i = 0; i < p->nfuncs; i++)
        want += p->funcs[i].calls > 0;
    int bad = n != want;
    for (size_t k = 1; k < n; k++)
        bad += by_calls_ref(p, idx[k - 1], idx[k]) > 0;
    tap_check(!bad, "functions by calls: names ordered as strcmp orders them", "%d out of order (of %zu)", bad, n);
    free(idx);
    hs_profile_free(p);
}

int main(void)
{
    test_by_calls_order();
    test_diff();
    test_diff_same_name();
    test_diff_two_programs();
    test_diff_flame_stray_sample();
    test_view();
    test_cpu_bound();
    test_few_samples();
    test_estimate_basis();
    test_sample_kinds();
    test_long_names();
    test_small_merge();
    test_deep_budget();
    test_big_flamegraph();
    return tap_status();
}
