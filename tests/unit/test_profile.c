/*
 * tests/unit/test_profile.c - the profile, its loader and every writer,
 * natively (no Wine).
 *
 * tests/unit/profiles/NAME/report.json are saved runs (two real ones, one
 * made by hand to reach every corner: a crash, quotes and non-ASCII in
 * names and arguments, 64-bit counts, every kind of caller and frame,
 * two modules of the same name, gaps in module ids; dupnames: two
 * functions of one name in a module; sample_kinds: CPU, ready, wait and
 * hookscope samples, the sampler's cost, CPU estimates above the measured
 * wall time and from few samples, a call still running). Each is loaded and
 * written by every writer; the output must equal NAME/<file> byte for
 * byte (report.json: the input itself). After a deliberate change of a
 * writer, regenerate with `tests/run.py --regen-golden -k test_profile`
 * (HS_REGEN_GOLDEN=1) and review the diff.
 *
 * Also: the JSON reader, the loader's errors, edge merging and order,
 * location names, tick conversion, the stable sort, two functions of one
 * name from merge to load (and from a report.json that did not save their
 * rvas in stacks), a report.json from before ready and hookscope samples,
 * one thread's read of a timeline file, its first calls and its longest
 * calls that fit a view, and a fuzz of the loader with a
 * fixed seed.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hook/base/text.h"
#include "hook/base/util.h"
#include "injector/output/format.h"
#include "injector/output/writers.h"
#include "injector/profile/json_read.h"
#include "injector/profile/load.h"
#include "injector/profile/profile.h"
#include "tests/unit/tap.h"

#define PROFILES "tests/unit/profiles"

static int regen;

static char *read_text(const char *path, size_t *len)
{
    const char *why;
    return (char *)hs_load_file(path, len, &why);
}

/* Write with w into a string. */
static char *render(const hs_writer *w, const hs_profile *p, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    int rc = w->write(p, f);
    fclose(f);
    if (rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void first_difference(const char *a, size_t alen, const char *b, size_t blen, char *out, size_t len)
{
    size_t i = 0, line = 1;
    while (i < alen && i < blen && a[i] == b[i])
        line += a[i++] == '\n';
    /* show the difference itself: from a little before it, never before its line */
    size_t s = i;
    while (s > 0 && a[s - 1] != '\n' && i - s < 30)
        s--;
    snprintf(out, len, "line %zu column %zu: got '%.60s' expected '%.60s'", line, i - s + 1, a + s, b + s);
}

static void check_profile_dir(const char *name)
{
    char path[512], tname[256];
    snprintf(path, sizeof path, "%s/%s/report.json", PROFILES, name);
    char err[512];
    hs_profile *p = hs_profile_load(path, err, sizeof err);
    snprintf(tname, sizeof tname, "load %s", name);
    tap_check(p != NULL, tname, "%s", err);
    if (!p)
        return;
    for (int i = 0; hs_writers[i]; i++) {
        const hs_writer *w = hs_writers[i];
        /* a writer that runs do not write is kept under its format's name */
        const char *file = w->file ? w->file : w->format;
        snprintf(tname, sizeof tname, "%s: %s", name, file);
        bool wanted = !w->wanted || w->wanted(p);
        snprintf(path, sizeof path, "%s/%s/%s", PROFILES, name, file);
        size_t got_len = 0, want_len = 0;
        char *got = wanted ? render(w, p, &got_len) : NULL;
        if (regen && wanted && got && strcmp(w->format, "json") != 0) {
            FILE *f = fopen(path, "wb");
            fwrite(got, 1, got_len, f);
            fclose(f);
        }
        char *want = read_text(path, &want_len);
        if (!wanted) {
            tap_check(want == NULL, tname, "written by an earlier version, not wanted now");
        } else if (!got || !want) {
            tap_fail(tname, "%s", !got ? "the writer failed" : "no expected file (tests/run.py --regen-golden)");
        } else if (got_len != want_len || memcmp(got, want, got_len) != 0) {
            char d[300];
            first_difference(got, got_len, want, want_len, d, sizeof d);
            tap_fail(tname, "differs at %s", d);
        } else {
            tap_ok(tname);
        }
        free(got);
        free(want);
    }
    hs_profile_free(p);
}

static void test_saved_profiles(void)
{
    DIR *d = opendir(PROFILES);
    if (!d) {
        tap_fail("profiles", "no %s (run from the repository root)", PROFILES);
        return;
    }
    char *names[64];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64)
        if (e->d_name[0] != '.')
            names[n++] = hs_xstrdup(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[i], names[j]) > 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    tap_check(n >= 3, "three saved profiles", "found %d", n);
    for (int i = 0; i < n; i++) {
        check_profile_dir(names[i]);
        free(names[i]);
    }
}

/* ---- the JSON reader -------------------------------------------------------- */

static void test_json(void)
{
    char err[128];
    const char *text = " {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\\\"\"], "
                       "\"big\": 18446744073709551615, \"o\": {}} ";
    hs_json *j = hs_json_parse(text, strlen(text), err, sizeof err);
    tap_check(j && j->type == HS_JOBJ && j->n == 3, "json: object", "%s", j ? "" : err);
    if (j) {
        const hs_json *a = hs_json_get(j, "a");
        tap_check(a && a->n == 6 && hs_json_i64(&a->v[0], 0) == 1 && hs_json_num(&a->v[1], 0) == -2500.0 &&
                      hs_json_bool(&a->v[2], false) && !hs_json_bool(&a->v[3], true) && a->v[4].type == HS_JNULL,
                  "json: scalars", "wrong values");
        tap_check(a && !strcmp(hs_json_str(&a->v[5], ""), "x\xc3\xa9\xf0\x9f\x98\x80\n\""), "json: escapes",
                  "got '%s'", a ? hs_json_str(&a->v[5], "") : "");
        tap_check(hs_json_u64(hs_json_get(j, "big"), 0) == UINT64_MAX, "json: 64-bit integers", "lost precision");
        tap_check(hs_json_get(j, "missing") == NULL && hs_json_u64(NULL, 7) == 7, "json: missing keys", "?");
    }
    hs_json_free(j);

    struct {
        const char *text, *error;
    } bad[] = {
        { "", "line 1 column 1: unexpected end of the text" },
        { "{\"a\" 1}", "line 1 column 6: expected ':'" },
        { "[1,\n 2,\n x]", "line 3 column 2: bad number" },
        { "\"abc", "line 1 column 5: unterminated string" },
        { "[1] 2", "line 1 column 5: text after the JSON value" },
        { "\"\\q\"", "line 1 column 4: bad escape in a string" },
        { "[01]", "line 1 column 3: expected ',' or ']'" },
        { "{\"a\":1,}", "line 1 column 8: expected a string key" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char name[64];
        snprintf(name, sizeof name, "json: error %zu", i);
        hs_json *b = hs_json_parse(bad[i].text, strlen(bad[i].text), err, sizeof err);
        tap_check(!b && !strcmp(err, bad[i].error), name, "got '%s', expected '%s'", b ? "(parsed)" : err,
                  bad[i].error);
        hs_json_free(b);
    }
    char deep[2000];
    memset(deep, '[', sizeof deep);
    j = hs_json_parse(deep, sizeof deep, err, sizeof err);
    tap_check(!j && strstr(err, "nested too deep"), "json: nesting limit", "%s", j ? "parsed" : err);
    hs_json_free(j);
}

/* ---- the loader's errors ------------------------------------------------------ */

static void test_load_errors(void)
{
    char err[256];
    struct {
        const char *text, *error;
    } cases[] = {
        { "{\"version\": 1", "not valid JSON: line 1 column 14: expected ',' or '}'" },
        { "{\"version\": 2, \"tool\": {\"name\": \"hookscope\"}}",
          "not a hookscope report (no \"version\": 1 from tool \"hookscope\")" },
        { "[]", "not a hookscope report (no \"version\": 1 from tool \"hookscope\")" },
        { "{\"version\": 1, \"tool\": {\"name\": \"hookscope\"}}", "no \"target\" object" },
        { "{\"version\": 1, \"tool\": {\"name\": \"hookscope\"}, \"target\": {}, "
          "\"functions\": [{\"module\": \"nope.dll\", \"name\": \"f\"}]}",
          "a function names a module that is not in the report" },
        { "{\"version\": 1, \"tool\": {\"name\": \"hookscope\"}, \"target\": {}, "
          "\"modules\": [{\"name\": \"a.exe\", \"path\": \"a.exe\", \"id\": 0}, {\"name\": \"b\", \"path\": \"b\", \"id\": 0}]}",
          "two modules with the same id" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[64];
        snprintf(name, sizeof name, "load: error %zu", i);
        hs_profile *p = hs_profile_from_json(cases[i].text, strlen(cases[i].text), err, sizeof err);
        tap_check(!p && !strcmp(err, cases[i].error), name, "got '%s', expected '%s'", p ? "(loaded)" : err,
                  cases[i].error);
        hs_profile_free(p);
    }
    hs_profile *p = hs_profile_load("tests/unit/profiles/no-such/report.json", err, sizeof err);
    tap_check(!p && !strncmp(err, "cannot read tests/unit/profiles/no-such/report.json: ", 53), "load: missing file",
              "%s", err);
}

/* ---- the profile itself -------------------------------------------------------- */

static void test_profile_basics(void)
{
    hs_profile *p = hs_profile_new();
    uint32_t exe = hs_profile_add_module(p, "C:\\x\\app.exe", 0x140000000ull, 0x10000);
    uint32_t dll = hs_profile_add_module(p, "C:\\x\\lib.dll", 0x180000000ull, 0x10000);
    uint32_t f_main = hs_profile_add_func(p, exe, 0x1000, 0x100, "main");
    uint32_t f_work = hs_profile_add_func(p, exe, 0x1100, 0x100, "work");
    uint32_t f_lib = hs_profile_add_func(p, dll, 0x2000, 0x10, "lib_call");
    hs_loc by_main = { (int32_t)f_main, -1, 0 }, by_lib = { (int32_t)f_lib, -1, 0 };
    hs_loc in_dll = { -1, (int32_t)dll, 0x345 }, nowhere = { -1, -1, 0x7ff0 };
    hs_profile_add_edge(p, by_main, f_work, 3, 0);
    hs_profile_add_edge(p, by_lib, f_work, 5, 0);
    hs_profile_add_edge(p, by_main, f_work, 4, 0);   /* same caller: merged */
    hs_profile_add_edge(p, nowhere, f_work, 1, 0);
    hs_profile_add_edge(p, in_dll, f_main, 2, 0);
    hs_profile_merge_edges(p);
    tap_check(p->nedges == 4, "edges merged", "%zu edges", p->nedges);
    /* by callee (main before work), then caller module name ("" < app.exe < lib.dll) */
    tap_check(p->edges[0].callee == f_main && p->edges[1].caller.func == -1 && p->edges[1].caller.module == -1 &&
                  p->edges[2].caller.func == (int32_t)f_main && p->edges[2].calls == 7 &&
                  p->edges[3].caller.func == (int32_t)f_lib,
              "edges in report order", "wrong order");
    char buf[128];
    hs_loc at = { (int32_t)f_lib, -1, 0x1f };
    tap_check(!strcmp(hs_loc_format(p, at, true, true, buf, sizeof buf), "lib.dll!lib_call+0x1f") &&
                  !strcmp(hs_loc_format(p, at, false, false, buf, sizeof buf), "lib_call") &&
                  !strcmp(hs_loc_format(p, in_dll, true, true, buf, sizeof buf), "lib.dll+0x345") &&
                  !strcmp(hs_loc_format(p, nowhere, true, false, buf, sizeof buf), "0x7ff0"),
              "location names", "got %s", buf);
    p->tsc_hz = 3e9;
    tap_check(hs_profile_ticks_ns(p, 3) == 1 && hs_profile_ticks_ns(p, 4) == 1 && hs_profile_ticks_ns(p, 5) == 2 &&
                  hs_profile_ticks_ns(p, 3000000000ull) == 1000000000ull,
              "ticks to ns, rounded", "wrong");
    p->tsc_hz = 0;
    tap_check(hs_profile_ticks_ns(p, 1000) == 0, "ticks to ns without a rate", "not 0");
    /* a run's times in seconds become what report.json will hold: a wall
     * time just over 5.5 ms was 0.006 s in the run's report.txt and 0.005 s
     * in the one rendered again from its report.json ("0.005500") */
    p->wall_s = 0.0055002;
    p->sampling.cpu_s = -1;
    hs_profile_round_seconds(p);
    char txt_run[32], txt_again[32];
    snprintf(txt_run, sizeof txt_run, "%.3f", p->wall_s);
    snprintf(txt_again, sizeof txt_again, "%.3f", strtod("0.005500", NULL));
    tap_check(p->wall_s == strtod("0.005500", NULL) && !strcmp(txt_run, txt_again) && p->sampling.cpu_s == -1,
              "seconds rounded as report.json keeps them", "wall %.9f (%s vs %s)", p->wall_s, txt_run, txt_again);
    tap_check(hs_profile_find_module(p, "LIB.DLL") == (int64_t)dll &&
                  hs_profile_find_func(p, exe, "work", HS_RVA_NONE) == (int64_t)f_work &&
                  hs_profile_find_func(p, exe, "work", 0x1000) == -1,
              "find module and function", "wrong");
    hs_profile_free(p);
}

/* ---- two functions of one name ---------------------------------------------- */

/* The text of writer `format` for p. */
static char *render_format(const char *format, const hs_profile *p, size_t *len)
{
    return render(hs_writer_find(format), p, len);
}

/* A function of p by module index and rva, or NULL. */
static const hs_prof_func *func_at(const hs_profile *p, uint32_t module, uint32_t rva)
{
    for (size_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].module == module && p->funcs[i].rva == rva)
            return &p->funcs[i];
    return NULL;
}

/* The calls on the edge from the function of module 0 at rva `from` to the one at `to`, or -1. */
static int64_t edge_calls(const hs_profile *p, uint32_t from, uint32_t to)
{
    for (size_t i = 0; i < p->nedges; i++) {
        const hs_prof_edge *e = &p->edges[i];
        if (e->caller.func >= 0 && p->funcs[e->caller.func].module == 0 && p->funcs[e->caller.func].rva == from &&
            p->funcs[e->callee].module == 0 && p->funcs[e->callee].rva == to)
            return (int64_t)e->calls;
    }
    return -1;
}

static void test_same_name(void)
{
    /* lua.exe's two sprintf: each with its own callers, callee edge and samples */
    hs_profile *p = hs_profile_new();
    p->command = hs_xstrdup("run");
    p->target_path = hs_xstrdup("C:\\x\\lua.exe");
    p->edges_on = true;
    p->sampling.on = true;
    snprintf(p->sampling.backend, sizeof p->sampling.backend, "suspend");
    p->sampling.rate_hz = 1000;
    p->sampling.cpu_s = -1;
    uint32_t exe = hs_profile_add_module(p, "C:\\x\\lua.exe", 0x140000000ull, 0x100000);
    p->modules[exe].traced = p->modules[exe].main = true;
    uint32_t f_main = hs_profile_add_func(p, exe, 0x1000, 0x100, "main");
    uint32_t f_s1 = hs_profile_add_func(p, exe, 0x165e0, 34, "sprintf");
    uint32_t f_s2 = hs_profile_add_func(p, exe, 0x1f4d0, 34, "sprintf");
    uint32_t f_v = hs_profile_add_func(p, exe, 0x2000, 0x100, "__mingw_vsprintf");
    for (uint32_t f = f_main; f <= f_v; f++)
        p->funcs[f].in_plan = p->funcs[f].hooked = true;
    p->funcs[f_main].calls = 1;
    p->funcs[f_s1].calls = 51982;
    p->funcs[f_s2].calls = 229513;
    p->funcs[f_v].calls = 281495;
    hs_loc by_main = { (int32_t)f_main, -1, 0 }, by_s1 = { (int32_t)f_s1, -1, 0 }, by_s2 = { (int32_t)f_s2, -1, 0 };
    hs_profile_add_edge(p, by_s2, f_v, 229513, 0);
    hs_profile_add_edge(p, by_main, f_s1, 51982, 0);
    hs_profile_add_edge(p, by_s1, f_v, 51982, 0);
    hs_profile_add_edge(p, by_main, f_s2, 229513, 0);
    hs_profile_merge_edges(p);
    tap_check(p->nedges == 4 && edge_calls(p, 0x165e0, 0x2000) == 51982 && edge_calls(p, 0x1f4d0, 0x2000) == 229513,
              "same name: two callers of one name stay two edges", "%zu edges", p->nedges);
    hs_prof_stack *st = hs_profile_add_stack(p, HS_STACK_CPU, 0, 7, 3);
    st->tid = 1;
    st->frames[0] = (hs_loc){ (int32_t)f_v, -1, 0x10 };
    st->frames[1] = (hs_loc){ (int32_t)f_s2, -1, 0x12 };
    st->frames[2] = (hs_loc){ (int32_t)f_main, -1, 0x30 };
    st = hs_profile_add_stack(p, HS_STACK_CPU, 0, 2, 2);
    st->tid = 1;
    st->frames[0] = (hs_loc){ (int32_t)f_s1, -1, 0x3 };
    st->frames[1] = (hs_loc){ (int32_t)f_main, -1, 0x20 };
    p->sampling.samples = 9;
    hs_profile_count_samples(p);

    size_t len = 0, len2 = 0;
    char *txt = render_format("txt", p, &len);
    tap_check(txt && strstr(txt, "\n               51982  sprintf@0x165e0 ") &&
                  strstr(txt, "\n              229513  sprintf@0x1f4d0 ") &&
                  strstr(txt, "    <-       229513  sprintf@0x1f4d0\n    <-        51982  sprintf@0x165e0\n") &&
                  strstr(txt, "\nsprintf@0x165e0                                         51982  lua.exe\n"
                              "    <-        51982  main\n    ->        51982  __mingw_vsprintf\n"),
              "same name: report.txt shows the two apart, each with its calls, callers and callees", "%s", txt);
    free(txt);
    char *folded = render_format("folded-cpu", p, &len);
    tap_check(folded && !strcmp(folded, "lua.exe!main;lua.exe!sprintf@0x165e0 2\n"
                                        "lua.exe!main;lua.exe!sprintf@0x1f4d0;lua.exe!__mingw_vsprintf 7\n"),
              "same name: folded stacks name them apart", "%s", folded);
    free(folded);
    char buf[128];
    hs_loc at = { (int32_t)f_s2, -1, 0x12 };
    tap_check(!strcmp(hs_loc_format(p, at, true, true, buf, sizeof buf), "lua.exe!sprintf@0x1f4d0+0x12") &&
                  !strcmp(hs_loc_format_saved(p, at, true, true, buf, sizeof buf), "lua.exe!sprintf+0x12") &&
                  !strcmp(hs_func_label(p, f_main), "main"),
              "same name: labels for writers, names for report.json", "%s", buf);

    /* saved and loaded: the same two functions, with their own edges and
     * samples, and the same bytes written again */
    char *json = render_format("json", p, &len);
    char err[256];
    hs_profile *q = json ? hs_profile_from_json(json, len, err, sizeof err) : NULL;
    tap_check(q != NULL, "same name: report.json loads", "%s", q ? "" : err);
    if (q) {
        const hs_prof_func *s1 = func_at(q, 0, 0x165e0), *s2 = func_at(q, 0, 0x1f4d0);
        tap_check(s1 && s2 && s1 != s2 && s1->calls == 51982 && s2->calls == 229513 && s1->cpu_self == 2 &&
                      s1->cpu_total == 2 && s2->cpu_self == 0 && s2->cpu_total == 7 &&
                      edge_calls(q, 0x165e0, 0x2000) == 51982 && edge_calls(q, 0x1f4d0, 0x2000) == 229513 &&
                      edge_calls(q, 0x1000, 0x165e0) == 51982 && edge_calls(q, 0x1000, 0x1f4d0) == 229513,
                  "same name: loaded, each keeps its calls, callers, callees and samples", "s1 %p s2 %p", (void *)s1,
                  (void *)s2);
        for (int i = 0; hs_writers[i]; i++) {
            const hs_writer *w = hs_writers[i];
            if (w->wanted && !w->wanted(p))
                continue;
            char *a = render(w, p, &len), *b = render(w, q, &len2);
            char name[96];
            snprintf(name, sizeof name, "same name: %s written again from report.json, byte for byte", w->format);
            tap_check(a && b && len == len2 && !memcmp(a, b, len), name, "differs");
            free(a);
            free(b);
        }
    }
    free(json);
    hs_profile_free(q);
    hs_profile_free(p);
}

/* A report.json written before rvas were saved beside shared names loads:
 * the functions and edges (which always had rvas) stay apart; frames
 * named only "module!sprintf" are the first sprintf. */
static void test_same_name_old_report(void)
{
    size_t len = 0;
    char *text = read_text(PROFILES "/dupnames/report.json", &len);
    if (!text) {
        tap_fail("same name: an older report.json", "no dupnames profile");
        return;
    }
    /* drop every field that tells frames apart by rva: from `from` up to
     * `to` (and past it, unless keep) */
    static const struct {
        const char *from, *to;
        bool keep;
    } fields[] = {
        { ", \"frame_rvas\": [", "]", false },
        { ", \"crash_at_rva\": \"", "\"", false },
        { ", \"rva\": \"0x1650\", \"count\"", ", \"count\"", true },
        { ", \"rva\": \"0x1f40\", \"count\"", ", \"count\"", true },
    };
    for (size_t k = 0; k < sizeof fields / sizeof *fields; k++) {
        char *at;
        while ((at = strstr(text, fields[k].from)) != NULL) {
            char *end = strstr(at + (fields[k].keep ? 1 : strlen(fields[k].from)), fields[k].to);
            end += fields[k].keep ? 0 : strlen(fields[k].to);
            memmove(at, end, strlen(end) + 1);
        }
    }
    char err[256];
    hs_profile *p = hs_profile_from_json(text, strlen(text), err, sizeof err);
    tap_check(p != NULL && !strstr(text, "rvas") && !strstr(text, "crash_at_rva"), "same name: an older report.json loads",
              "%s", p ? "fields left" : err);
    if (p) {
        const hs_prof_func *s1 = func_at(p, 0, 0x1650), *s2 = func_at(p, 0, 0x1f40);
        tap_check(s1 && s2 && s1->calls == 30 && s2->calls == 70 && edge_calls(p, 0x1650, 0x2000) == 30 &&
                      edge_calls(p, 0x1f40, 0x2000) == 70 && edge_calls(p, 0x1200, 0x1f40) == 70 &&
                      s1->cpu_total == 12 && s2->cpu_total == 0,
                  "same name: an older report.json keeps the functions and edges apart, frames by name go to the first",
                  "s1 %llu/%llu s2 %llu/%llu", s1 ? (unsigned long long)s1->calls : 0,
                  s1 ? (unsigned long long)s1->cpu_total : 0, s2 ? (unsigned long long)s2->calls : 0,
                  s2 ? (unsigned long long)s2->cpu_total : 0);
    }
    hs_profile_free(p);
    free(text);
}

/* What a read of the timeline saw: events per thread, open ones apart. */
typedef struct tl_seen {
    uint32_t events[3], open[3];
} tl_seen;

static int tl_count(void *ctx, uint32_t tid, bool open, const hs_tl_rec *ev, uint32_t n)
{
    (void)ev;
    tl_seen *s = ctx;
    if (tid < 3)
        (open ? s->open : s->events)[tid] += n;
    return 0;
}

/* One thread's read of a timeline file: its blocks only, the others
 * skipped; a skipped block that claims more events than the file holds
 * makes the file "cut short", as a block read would. */
static void test_timeline_one_thread(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/hs-timeline-%d.bin", (int)getpid());
    hs_tl_file_hdr h = { .event_size = sizeof(hs_tl_rec) };
    hs_tl_rec ev[2] = { { 10, 20, 10, 0, 1 }, { 5, 30, 25, 1, 0 } };
    hs_tl_block blocks[3] = { { HS_TL_BLOCK_MAGIC, 1, 2, 0 }, { HS_TL_BLOCK_MAGIC, 2, 1, 0 },
                              { HS_TL_BLOCK_MAGIC, 1, 1, HS_TL_BLOCK_OPEN } };
    FILE *f = fopen(path, "wb");
    memcpy(h.magic, HS_TL_FILE_MAGIC, 8);
    fwrite(&h, sizeof h, 1, f);
    for (int i = 0; i < 3; i++) {
        fwrite(&blocks[i], sizeof blocks[i], 1, f);
        fwrite(ev, sizeof ev[0], blocks[i].count, f);
    }
    fclose(f);
    uint32_t map[2] = { 0, 1 };
    hs_prof_timeline t = { .file = path, .func_map = map, .nfunc_map = 2 };
    char err[300] = "";
    tl_seen s1 = { 0 }, s2 = { 0 }, all = { 0 };
    int r1 = hs_timeline_read_thread(&t, 2, 1, tl_count, &s1, NULL, err, sizeof err);
    int r2 = hs_timeline_read_thread(&t, 2, 2, tl_count, &s2, NULL, err, sizeof err);
    int ra = hs_timeline_read(&t, 2, tl_count, &all, NULL, err, sizeof err);
    tap_check(!r1 && !r2 && !ra && s1.events[1] == 2 && s1.open[1] == 1 && !s1.events[2] && s2.events[2] == 1 &&
                  !s2.events[1] && !s2.open[1] && all.events[1] == 2 && all.events[2] == 1 && all.open[1] == 1,
              "timeline: one thread's blocks", "%d %d %d: thread 1 %u+%u open, thread 2 %u; %s", r1, r2, ra,
              s1.events[1], s1.open[1], s2.events[2], err);
    /* thread 2's block claims 1000 events: thread 1's read skips it unread */
    f = fopen(path, "r+b");
    long at = (long)(sizeof h + sizeof blocks[0] + 2 * sizeof ev[0]);
    blocks[1].count = 1000;
    fseek(f, at, SEEK_SET);
    fwrite(&blocks[1], sizeof blocks[1], 1, f);
    fclose(f);
    char want[160];
    snprintf(want, sizeof want, "%s is cut short at byte %ld (a block of 1000 events)", path,
             at + (long)sizeof blocks[1]);
    memset(&s1, 0, sizeof s1);
    r1 = hs_timeline_read_thread(&t, 2, 1, tl_count, &s1, NULL, err, sizeof err);
    tap_check(r1 == -1 && !strcmp(err, want) && s1.events[1] == 2 && !s1.open[1],
              "timeline: a skipped block past the end is refused", "%d, '%s', not '%s'", r1, err, want);
    remove(path);
}

/* A timeline file of one block: n events of thread 1. */
static void write_one_block(const char *path, const hs_tl_rec *ev, uint32_t n)
{
    hs_tl_file_hdr h = { .event_size = sizeof(hs_tl_rec) };
    memcpy(h.magic, HS_TL_FILE_MAGIC, 8);
    hs_tl_block b = { HS_TL_BLOCK_MAGIC, 1, n, 0 };
    FILE *f = fopen(path, "wb");
    fwrite(&h, sizeof h, 1, f);
    fwrite(&b, sizeof b, 1, f);
    fwrite(ev, sizeof ev[0], n, f);
    fclose(f);
}

/* The first calls of a timeline that fit a view: those that begin before
 * the cut, as many as fit. */
static void test_timeline_cutoff(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/hs-timeline-cut-%d.bin", (int)getpid());
    hs_tl_rec ev[10];
    for (int i = 0; i < 10; i++)   /* (in the order they end: the last to begin first) */
        ev[i] = (hs_tl_rec){ (uint64_t)(1000 - 100 * i), (uint64_t)(1050 - 100 * i), 50, 0, 0 };
    write_one_block(path, ev, 10);
    uint32_t map[1] = { 0 };
    hs_prof_timeline t = { .file = path, .func_map = map, .nfunc_map = 1 };
    char err[300] = "";
    uint64_t cut, kept, total;
    int rc = hs_timeline_cutoff(&t, 1, 4, &cut, &kept, &total, err, sizeof err);
    tap_check(!rc && kept == 4 && total == 10 && cut > 400 && cut <= 500, "timeline: the first calls that fit",
              "%d: cut %llu, %llu of %llu; %s", rc, (unsigned long long)cut, (unsigned long long)kept,
              (unsigned long long)total, err);
    rc = hs_timeline_cutoff(&t, 1, 10, &cut, &kept, &total, err, sizeof err);
    tap_check(!rc && kept == 10 && total == 10 && cut == UINT64_MAX, "timeline: all calls fit", "%d: cut %llu, %llu",
              rc, (unsigned long long)cut, (unsigned long long)kept);
    remove(path);
}

/* The longest calls of a timeline that fit a view: whole durations (1
 * tick apart below 4096 ticks, 1/4096 of a duration above), from the
 * longest down, the cut just above the longest call left out; of the
 * durations that do not fit whole, the first to begin. */
static void test_timeline_longest(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/hs-timeline-long-%d.bin", (int)getpid());
    hs_tl_rec ev[12];
    for (int i = 0; i < 10; i++)   /* 10 to 100 ticks */
        ev[i] = (hs_tl_rec){ (uint64_t)(1000 * i), (uint64_t)(1000 * i + 10 * (i + 1)), 5, 0, 0 };
    /* 1,000,000 and 1,000,050 ticks: one bucket, 999,936 to 1,000,063 */
    ev[10] = (hs_tl_rec){ 20000, 1020000, 5, 0, 0 };
    ev[11] = (hs_tl_rec){ 30000, 1030050, 5, 0, 0 };
    write_one_block(path, ev, 12);
    uint32_t map[1] = { 0 };
    hs_prof_timeline t = { .file = path, .func_map = map, .nfunc_map = 1 };
    char err[300] = "";
    hs_tl_longest l;
    int rc = hs_timeline_longest(&t, 1, 6, &l, err, sizeof err);
    tap_check(!rc && l.kept == 6 && l.total == 12 && l.min_ticks == 61 && !l.edge_until,
              "timeline: the longest calls that fit", "%d: shortest %llu, %llu of %llu, edge until %llu; %s", rc,
              (unsigned long long)l.min_ticks, (unsigned long long)l.kept, (unsigned long long)l.total,
              (unsigned long long)l.edge_until, err);
    rc = hs_timeline_longest(&t, 1, 2, &l, err, sizeof err);
    tap_check(!rc && l.kept == 2 && l.min_ticks == 101 && !l.edge_until, "timeline: the longest 2 calls",
              "%d: shortest %llu, %llu kept", rc, (unsigned long long)l.min_ticks, (unsigned long long)l.kept);
    rc = hs_timeline_longest(&t, 1, 1, &l, err, sizeof err);
    tap_check(!rc && l.kept == 1 && l.min_ticks == 1000064 && l.edge_ticks == 999936 && l.edge_until > 20000 &&
                  l.edge_until <= 30000 && hs_tl_longest_keeps(&l, &ev[10]) && !hs_tl_longest_keeps(&l, &ev[11]) &&
                  !hs_tl_longest_keeps(&l, &ev[9]),
              "timeline: the longest call, the first of its bucket", "%d: %llu kept, %llu.., %llu until %llu", rc,
              (unsigned long long)l.kept, (unsigned long long)l.min_ticks, (unsigned long long)l.edge_ticks,
              (unsigned long long)l.edge_until);
    rc = hs_timeline_longest(&t, 1, 12, &l, err, sizeof err);
    tap_check(!rc && l.kept == 12 && l.total == 12 && l.min_ticks == 0 && hs_tl_longest_keeps(&l, &ev[0]),
              "timeline: every call fits", "%d: shortest %llu, %llu", rc, (unsigned long long)l.min_ticks,
              (unsigned long long)l.kept);
    remove(path);
}

/* A sampled stack deeper than the sampler walked keeps its "[truncated]"
 * root when written again from report.json. */
static void test_truncated_samples(void)
{
    hs_profile *p = hs_profile_new();
    p->command = hs_xstrdup("run");
    p->target_path = hs_xstrdup("deep.exe");
    p->sampling.on = true;
    p->sampling.cpu_s = -1;
    uint32_t m = hs_profile_add_module(p, "deep.exe", 0x140000000ull, 0x10000);
    uint32_t f = hs_profile_add_func(p, m, 0x1000, 0x10, "is_even");
    for (int cut = 0; cut < 2; cut++) {
        hs_prof_stack *st = hs_profile_add_stack(p, HS_STACK_CPU, 0, 1, 2);
        st->truncated = cut;
        st->frames[0] = st->frames[1] = (hs_loc){ (int32_t)f, -1, 0x4 };
    }
    size_t len = 0, len2 = 0;
    char *json = render_format("json", p, &len), err[256];
    hs_profile *q = hs_profile_from_json(json, len, err, sizeof err);
    char *a = render_format("folded-cpu", p, &len), *b = q ? render_format("folded-cpu", q, &len2) : NULL;
    tap_check(b && !strcmp(a, "[truncated];deep.exe!is_even;deep.exe!is_even 1\ndeep.exe!is_even;deep.exe!is_even 1\n") &&
                  !strcmp(a, b),
              "a sampled stack cut short stays so in report.json", "%s / %s", a, b ? b : err);
    free(a);
    free(b);
    free(json);
    hs_profile_free(q);
    hs_profile_free(p);
}

/* A report.json written before samples were told into CPU, ready, wait
 * and hookscope's (tests/unit/old_reports/sampled.json: the sampled
 * profile as that version wrote it) loads, with no ready or hookscope
 * samples and the sampler's cost unknown, and every writer gives what it
 * gives for the same run saved by this version (profiles/sampled; its
 * report.json: the old one with the new fields added). */
static void test_old_report_kinds(void)
{
    char err[512];
    hs_profile *p = hs_profile_load("tests/unit/old_reports/sampled.json", err, sizeof err);
    tap_check(p && p->sampling.samples == 200 && p->sampling.wait_samples == 50 && !p->sampling.ready_samples &&
                  !p->sampling.hookscope_samples && p->sampling.held_s < 0 && p->sampling.threads_s < 0,
              "an older report.json (CPU and wait samples only) loads", "%s", p ? "figures" : err);
    if (!p)
        return;
    int same = 0, writers = 0;
    char differs[600] = "";
    for (int i = 0; hs_writers[i]; i++) {
        const hs_writer *w = hs_writers[i];
        if (w->wanted && !w->wanted(p))
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/sampled/%s", PROFILES, w->file ? w->file : w->format);
        size_t got_len = 0, want_len = 0;
        char *got = render(w, p, &got_len), *want = read_text(path, &want_len);
        writers++;
        if (got && want && got_len == want_len && !memcmp(got, want, got_len))
            same++;
        else
            snprintf(differs, sizeof differs, "%s", path);
        free(got);
        free(want);
    }
    tap_check(writers >= 10 && same == writers, "an older report.json renders as the same run saved now",
              "%d of %d the same; %s differs", same, writers, differs);
    hs_profile_free(p);
}

typedef struct pair {
    int key, seq;
} pair;

static int cmp_pair(const void *a, const void *b, void *ctx)
{
    int dir = *(int *)ctx;
    const pair *x = a, *y = b;
    return dir * (x->key - y->key);
}

static void test_sort(void)
{
    pair v[1000];
    uint32_t s = 12345;
    for (int i = 0; i < 1000; i++) {
        s = s * 1103515245u + 12345u;
        v[i].key = (int)(s >> 16) % 17;
        v[i].seq = i;
    }
    int dir = 1;
    hs_sort(v, 1000, sizeof *v, cmp_pair, &dir);
    int ok = 1;
    for (int i = 1; i < 1000; i++)
        if (v[i - 1].key > v[i].key || (v[i - 1].key == v[i].key && v[i - 1].seq > v[i].seq))
            ok = 0;
    tap_check(ok, "stable sort with a context", "out of order");
    /* in order but for the last element (the check for an array already
     * in order runs to its end), then in order already: left as it is */
    for (int i = 0; i < 1000; i++) {
        v[i].key = i / 3;
        v[i].seq = i;
    }
    v[999].key = 1;
    hs_sort(v, 1000, sizeof *v, cmp_pair, &dir);
    ok = v[6].key == 1 && v[6].seq == 999 && v[5].seq == 5 && v[7].seq == 6 && v[999].seq == 998;
    hs_sort(v, 1000, sizeof *v, cmp_pair, &dir);
    ok &= v[6].seq == 999 && v[7].seq == 6;
    tap_check(ok, "stable sort: the last out of order, then all in order", "got seq %d %d %d at 5..7", v[5].seq,
              v[6].seq, v[7].seq);
}

/* hs_sort_top: the first `top` of hs_sort's order, ties (17 keys over 1000
 * elements) in their first order, for tops below, at and above n */
static void test_sort_top(void)
{
    static const size_t tops[] = { 0, 1, 15, 40, 999, 1000, 2000 };
    int bad = 0;
    for (size_t t = 0; t < sizeof tops / sizeof *tops; t++) {
        pair all[1000], top[1000];
        uint32_t s = 777;
        for (int i = 0; i < 1000; i++) {
            s = s * 1103515245u + 12345u;
            all[i].key = (int)(s >> 16) % 17;
            all[i].seq = i;
        }
        memcpy(top, all, sizeof all);
        int dir = -1;
        hs_sort(all, 1000, sizeof *all, cmp_pair, &dir);
        size_t k = hs_sort_top(top, 1000, sizeof *top, tops[t], cmp_pair, &dir);
        size_t want = tops[t] < 1000 ? tops[t] : 1000;
        if (k != want || memcmp(top, all, want * sizeof *top))
            bad++;
        /* the elements left after the first k are the others, each once */
        int seen[1000] = { 0 };
        for (size_t i = 0; i < 1000; i++)
            seen[top[i].seq]++;
        for (size_t i = 0; i < 1000; i++)
            bad += seen[i] != 1;
    }
    tap_check(!bad, "the first elements of a stable sort, picked", "not hs_sort's first elements");
}

/* ---- fuzz ---------------------------------------------------------------------- */

static void test_fuzz_loader(void)
{
    size_t len = 0;
    char *orig = read_text(PROFILES "/edgecases/report.json", &len);
    if (!orig) {
        tap_fail("fuzz loader", "no edgecases profile");
        return;
    }
    char *buf = hs_xmalloc(len + 64);
    uint32_t s = 20261123;
    int loaded = 0, cases = 4000;
    for (int c = 0; c < cases; c++) {
        memcpy(buf, orig, len);
        size_t n = len;
        s = s * 1664525u + 1013904223u;
        int kind = (int)(s >> 28) % 4;
        s = s * 1664525u + 1013904223u;
        size_t at = (size_t)(s >> 8) % len;
        if (kind == 0) {
            n = at;                                      /* truncated */
        } else if (kind == 1) {
            buf[at] ^= (char)(1u << ((s >> 4) & 7));      /* one bit flipped */
        } else if (kind == 2) {
            static const char junk[] = "{}[],:\"\\0-e9";
            for (int k = 0; k < 4; k++) {                /* structure characters */
                s = s * 1664525u + 1013904223u;
                buf[(at + (size_t)k * 7) % len] = junk[(s >> 20) % (sizeof junk - 1)];
            }
        } else {
            s = s * 1664525u + 1013904223u;               /* a digit changed */
            for (size_t k = at; k < len; k++)
                if (buf[k] >= '0' && buf[k] <= '9') {
                    buf[k] = (char)('0' + (s >> 24) % 10);
                    break;
                }
        }
        char err[256];
        hs_profile *p = hs_profile_from_json(buf, n, err, sizeof err);
        if (!p)
            continue;
        loaded++;
        for (int i = 0; hs_writers[i]; i++) {
            size_t olen;
            free(render(hs_writers[i], p, &olen));
        }
        hs_profile_free(p);
    }
    tap_check(loaded > 0 && loaded < cases, "fuzz: 4000 damaged reports loaded or refused, no crash",
              "%d of %d loaded", loaded, cases);
    free(buf);
    free(orig);
}

/* Is s valid UTF-8 throughout? */
static int valid_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = hs_utf8_seq((const uint8_t *)s + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

/* A location's text cut to its buffer ends on a character (a module name
 * of 3-byte characters, as a target's scribbled path gives: the frame
 * name of a sample stack), and JSON strings of any bytes are valid UTF-8:
 * a byte that starts no valid sequence is written as \ufffd. */
static void test_utf8_kept_whole(void)
{
    hs_profile *p = hs_profile_new();
    char path[400] = "C:\\";
    for (int i = 0; i < 120; i++)
        strcat(path, "\xe6\x97\xa5");   /* U+65E5, 3 bytes */
    strcat(path, ".dll");
    uint32_t m = hs_profile_add_module(p, path, 0x180000000ull, 0x10000);
    uint32_t f = hs_profile_add_func(p, m, 0x1000, 0x20, NULL);
    hs_profile_name_func(p, f, "work");
    int bad = 0;
    for (size_t len = 2; len < 380; len++) {
        char buf[400];
        hs_loc l = { (int32_t)f, (int32_t)m, 5 };
        hs_loc_format(p, l, true, true, buf, len);
        bad += !valid_utf8(buf, strlen(buf)) || strlen(buf) >= len;
    }
    tap_check(!bad, "utf8/location-cut", "%d buffer sizes cut a character", bad);
    static const char *const junk[] = { "ab\xe6\x97", "\x80x", "\xc0\xaf", "\xed\xa0\x80z", "\xf4\x90\x80\x80",
                                        "ok \xe6\x97\xa5 \"q\"\n\x01", "\xff" };
    static const char *const want[] = { "\"ab\\ufffd\\ufffd\"", "\"\\ufffdx\"", "\"\\ufffd\\ufffd\"",
                                        "\"\\ufffd\\ufffd\\ufffdz\"", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"",
                                        "\"ok \xe6\x97\xa5 \\\"q\\\"\\n\\u0001\"", "\"\\ufffd\"" };
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
        char *got = NULL;
        size_t n = 0;
        FILE *o = open_memstream(&got, &n);
        hs_json_quote(o, junk[i]);
        fclose(o);
        char inside[64];
        hs_json_quoted(junk[i], inside, sizeof inside);
        char name[40];
        snprintf(name, sizeof name, "utf8/json-%zu", i);
        tap_check(!strcmp(got, want[i]) && !strncmp(want[i] + 1, inside, strlen(inside)) &&
                      strlen(inside) == strlen(want[i]) - 2,
                  name, "quote %s, quoted %s, want %s", got, inside, want[i]);
        free(got);
    }
    hs_profile_free(p);
}

int main(void)
{
    regen = getenv("HS_REGEN_GOLDEN") && !strcmp(getenv("HS_REGEN_GOLDEN"), "1");
    test_json();
    test_load_errors();
    test_profile_basics();
    test_sort();
    test_sort_top();
    test_same_name();
    test_same_name_old_report();
    test_truncated_samples();
    test_timeline_one_thread();
    test_timeline_cutoff();
    test_timeline_longest();
    test_old_report_kinds();
    test_saved_profiles();
    test_fuzz_loader();
    test_utf8_kept_whole();
    return tap_status();
}
