/*
 * tests/unit/test_dcli.c - `hookscope dtrace`'s command line and D subset
 * (injector/dtrace/dcli.c), and DTrace's aggregation layout
 * (injector/output/dtrace_agg.c), natively.
 *
 * The command line is cargo-flamegraph's exact argument vector (its
 * src/lib.rs) and DTrace-for-Windows one-liners; the layout is checked
 * line by line against dt_consume.c's formats (a blank line, frames
 * indented 14 spaces, " %16lld" counts, "  %-50s" string keys), and the
 * output is folded the way inferno's collapse-dtrace folds (skip to the
 * first blank line, frames up to a line that is a number, cut at the last
 * '+'), which must give back every stack with its count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/dtrace/dcli.h"
#include "injector/output/dtrace_agg.h"
#include "injector/profile/load.h"
#include "tests/unit/tap.h"

static void test_split(void)
{
    int n;
    char **v = hs_dsplit_command("prog arg\\ with\\ spaces other", &n);
    tap_check(n == 3 && !strcmp(v[0], "prog") && !strcmp(v[1], "arg with spaces") && !strcmp(v[2], "other") &&
                  v[3] == NULL,
              "-c: split at unescaped spaces, '\\ ' a space", "n=%d", n);
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
    v = hs_dsplit_command("  C:\\work\\t.exe  a\\b  \\ lead trail\\  ", &n);
    tap_check(n == 4 && !strcmp(v[0], "C:\\work\\t.exe") && !strcmp(v[1], "a\\b") && !strcmp(v[2], " lead") &&
                  !strcmp(v[3], "trail "),
              "-c: other backslashes stay (Windows paths), edge spaces", "n=%d '%s' '%s'", n, n > 2 ? v[2] : "",
              n > 3 ? v[3] : "");
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void test_cargo_flamegraph(void)
{
    char *argv[] = { "-x", "ustackframes=100", "-n", "profile-997 /pid == $target/ { @[ustack(100)] = count(); }",
                     "-o", "cargo-flamegraph.stacks", "-c", "target\\release\\app.exe arg\\ with\\ spaces other" };
    hs_dcli c;
    char err[1024];
    int rc = hs_dcli_parse(8, argv, &c, err, sizeof err);
    tap_check(rc == 0, "cargo-flamegraph's arguments parse", "%s", err);
    if (rc)
        return;
    tap_check(c.ustackframes == 100 && c.prog.provider == HS_DPROG_PROFILE && c.prog.hz == 997 &&
                  c.prog.key == HS_DKEY_STACK && c.prog.frames == 100 && hs_dcli_frames(&c) == 100 &&
                  !strcmp(c.outfile, "cargo-flamegraph.stacks") && c.ncmd == 3 &&
                  !strcmp(c.cmd[0], "target\\release\\app.exe") && !strcmp(c.cmd[1], "arg with spaces") &&
                  !strcmp(c.cmd[2], "other") && !c.npids,
              "cargo-flamegraph: profile-997, 100 frames, -o, -c split", "wrong fields");
    hs_dcli_free(&c);

    char *help[] = { "--help" };
    tap_check(hs_dcli_parse(1, help, &c, err, sizeof err) == 0 && c.help, "--help", "%s", err);
    hs_dcli_free(&c);

    char *pids[] = { "-x", "ustackframes=100", "-n", "profile-997 /pid == $target/ { @[ustack(100)] = count(); }",
                     "-o", "f", "-p", "123", "-p", "456" };
    rc = hs_dcli_parse(10, pids, &c, err, sizeof err);
    tap_check(rc == 0 && c.npids == 2 && c.pids[0] == 123 && c.pids[1] == 456 && !c.cmd, "-p repeated", "%s", err);
    hs_dcli_free(&c);

    char *grouped[] = { "-qn", "fpid$target:demo.exe::entry { @[probefunc] = count(); }", "-cdemo.exe" };
    rc = hs_dcli_parse(3, grouped, &c, err, sizeof err);
    tap_check(rc == 0 && c.quiet && c.prog.provider == HS_DPROG_ENTRY && c.prog.nprobes == 1 &&
                  !strcmp(c.prog.modules[0], "demo.exe") && !strcmp(c.prog.funcs[0], "") &&
                  c.prog.key == HS_DKEY_FUNC && c.ncmd == 1 && !strcmp(c.cmd[0], "demo.exe"),
              "getopt style: -qn PROGRAM, -cCMD", "%s", err);
    hs_dcli_free(&c);
}

static void test_programs(void)
{
    struct {
        const char *text;
        int provider, key, nprobes;
        uint32_t hz, frames;
        const char *mod0, *fn0;
    } ok[] = {
        { "profile-997 /pid == $target/ { @[ustack(100)] = count(); }", HS_DPROG_PROFILE, HS_DKEY_STACK, 0, 997, 100, NULL, NULL },
        { "profile:::profile-99hz{@[ustack()]=count()}", HS_DPROG_PROFILE, HS_DKEY_STACK, 0, 99, 0, NULL, NULL },
        { "fpid$target:demo::entry { @[probefunc] = count(); }", HS_DPROG_ENTRY, HS_DKEY_FUNC, 1, 0, 0, "demo", "" },
        { "pid$target:demo.exe:parse_*:entry { @[probefunc, ustack()] = count(); }", HS_DPROG_ENTRY,
          HS_DKEY_FUNC_STACK, 1, 0, 0, "demo.exe", "parse_*" },
        { "pid$target::fib:entry /pid == $target/ { @calls[ustack(5)] = count(); };", HS_DPROG_ENTRY, HS_DKEY_STACK, 1,
          0, 5, "", "fib" },
        { "pid$target:a.dll:f?:entry, fpid$target:b.dll::entry { @[probefunc] = count(); }", HS_DPROG_ENTRY,
          HS_DKEY_FUNC, 2, 0, 0, "a.dll", "f?" },
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        hs_dprog p;
        char err[1024], name[64];
        snprintf(name, sizeof name, "program %zu parses", i);
        int rc = hs_dprog_parse(ok[i].text, &p, err, sizeof err);
        tap_check(rc == 0 && p.provider == ok[i].provider && p.key == ok[i].key && p.nprobes == ok[i].nprobes &&
                      p.hz == ok[i].hz && p.frames == ok[i].frames &&
                      (!ok[i].mod0 || (!strcmp(p.modules[0], ok[i].mod0) && !strcmp(p.funcs[0], ok[i].fn0))),
                  name, "%s", rc ? err : "wrong fields");
        if (rc == 0)
            hs_dprog_free(&p);
    }
    struct {
        const char *text, *reason;
    } bad[] = {
        { "syscall:::entry { @[probefunc] = count(); }", "expected a probe" },
        { "pid$target:demo:fib:return { @[probefunc] = count(); }", "only entry probes" },
        { "profile-997 { @[probefunc] = count(); }", "probefunc with profile probes" },
        { "profile-997 { @[ustack()] = sum(arg0); }", "expected 'count'" },
        { "profile-997 /execname == \"x\"/ { @[ustack()] = count(); }", "expected 'pid'" },
        { "pid$target:de*:fib:entry { @[probefunc] = count(); }", "a module must be named" },
        { "fpid$target:demo:fib:entry { @[probefunc] = count(); }", "fpid probes name no function" },
        { "profile-997 { @[ustack()] = count(); } tick-1s { exit(0); }", "more than one clause" },
        { "profile-997, pid$target:a::entry { @[ustack()] = count(); }", "profile and entry probes together" },
        { "profile-997 { @[ustack()] = count(); printf(\"x\"); }", "expected '}'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hs_dprog p;
        char err[1024], name[64];
        snprintf(name, sizeof name, "program refused %zu", i);
        int rc = hs_dprog_parse(bad[i].text, &p, err, sizeof err);
        tap_check(rc < 0 && strstr(err, bad[i].reason) && strstr(err, "supported: profile-N") && !strchr(err, '\n'),
                  name, "%s", rc < 0 ? err : "parsed");
    }
    struct {
        int argc;
        char *argv[4];
        const char *reason;
    } badargs[] = {
        { 2, { "-n", "profile-97 { @[ustack()] = count(); }" }, "nothing to trace" },
        { 2, { "-c", "x.exe" }, "no program" },
        { 4, { "-x", "bufsize=4m", "-n", "x" }, "only -x ustackframes=N" },
        { 1, { "-s" }, "'-s' is not supported" },
        { 2, { "-p", "12x" }, "invalid pid: 12x" },
        { 1, { "-o" }, "needs a value" },
    };
    for (size_t i = 0; i < sizeof badargs / sizeof *badargs; i++) {
        hs_dcli c;
        char err[1024], name[64];
        snprintf(name, sizeof name, "arguments refused %zu", i);
        int rc = hs_dcli_parse(badargs[i].argc, badargs[i].argv, &c, err, sizeof err);
        tap_check(rc < 0 && strstr(err, badargs[i].reason), name, "%s", rc < 0 ? err : "parsed");
        if (rc == 0)
            hs_dcli_free(&c);
    }
}

static char *render(const hs_profile *p, const hs_dtrace_agg *a)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    hs_write_dtrace_agg(p, a, f);
    fclose(f);
    return buf;
}

/* inferno's collapse-dtrace rules, for the test: lines up to and including
 * the first blank one are a header; then frames (trimmed, cut at the last
 * '+') until a line that is only a number, the count; root first, ';'. */
static int collapse(const char *text, char lines[][512], uint64_t *counts, int max)
{
    const char *s = strchr(text, '\n');
    while (s && s[1] != '\n' && *s) {        /* the header: up to the first blank line */
        s = strchr(s + 1, '\n');
    }
    if (!s)
        return 0;
    s++;
    char frames[64][512];
    int nf = 0, n = 0;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)len, s);
        s = e ? e + 1 : s + len;
        char *t = line;
        while (*t == ' ')
            t++;
        if (!*t)
            continue;
        char *end;
        unsigned long long v = strtoull(t, &end, 10);
        if (*end == 0 && end != t) {
            lines[n][0] = 0;
            for (int k = nf; k-- > 0;) {
                strcat(lines[n], frames[k]);
                if (k)
                    strcat(lines[n], ";");
            }
            counts[n++] = v;
            nf = 0;
            if (n == max)
                break;
            continue;
        }
        char *plus = strrchr(t, '+');
        if (plus)
            *plus = 0;
        snprintf(frames[nf++], sizeof frames[0], "%s", t);
    }
    return n;
}

static void test_layout(void)
{
    char err[512];
    hs_profile *p = hs_profile_load("tests/unit/profiles/sampled/report.json", err, sizeof err);
    if (!p) {
        tap_fail("dtrace layout", "%s", err);
        return;
    }
    hs_dtrace_agg a = { HS_DKEY_STACK, HS_STACK_CPU, 0 };
    char *out = render(p, &a);
    const char *want_first =
        "\n"
        "\n"
        "              ntdll.dll`0x170009000\n"
        "              burn.exe`worker+0x10\n"
        "              kernel32.dll`0x7b601234\n"
        "                5\n"
        "\n"
        "              burn.exe`fib+0x8\n";
    tap_check(!strncmp(out, want_first, strlen(want_first)), "ustack: blank line, 14-space frames, ' %16lld', ascending",
              "got:\n%.300s", out);
    char lines[16][512];
    uint64_t counts[16];
    int n = collapse(out, lines, counts, 16);
    uint64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += counts[i];
    tap_check(n == 5 && sum == 200 && !strcmp(lines[0], "kernel32.dll`0x7b601234;burn.exe`worker;ntdll.dll`0x170009000") &&
                  counts[0] == 5 &&
                  !strcmp(lines[4], "kernel32.dll`BaseThreadInitThunk;burn.exe`main;burn.exe`burn_b") && counts[4] == 100,
              "collapse-dtrace rules: first stack kept, counts equal the samples", "n=%d sum=%llu first=%s", n,
              (unsigned long long)sum, n ? lines[0] : "");
    free(out);

    hs_dtrace_agg cut = { HS_DKEY_STACK, HS_STACK_CPU, 2 };
    out = render(p, &cut);
    n = collapse(out, lines, counts, 16);
    /* cut to 2 frames, fib's and burn_b's stacks stay apart, the rest too */
    tap_check(n == 5 && !strcmp(lines[1], "burn.exe`fib;burn.exe`fib") && counts[1] == 15,
              "ustack(2): two frames, leaf first", "n=%d %s", n, n > 1 ? lines[1] : "");
    free(out);

    hs_dtrace_agg funcs = { HS_DKEY_FUNC, HS_STACK_ENTRY, 0 };
    out = render(p, &funcs);
    const char *want = "\n"
                       "  main                                                              1\n"
                       "  worker                                                            1\n"
                       "  fib                                                               9\n"
                       "  burn_a                                                          100\n"
                       "  burn_b                                                         1000\n";
    tap_check(!strcmp(out, want), "@[probefunc]: '  %-50s %16lld', ascending, ties by name", "got:\n%s", out);
    free(out);
    hs_profile_free(p);

    p = hs_profile_load("tests/unit/profiles/demo_stacks/report.json", err, sizeof err);
    if (!p) {
        tap_fail("dtrace entry stacks", "%s", err);
        return;
    }
    hs_dtrace_agg fs = { HS_DKEY_FUNC_STACK, HS_STACK_ENTRY, 0 };
    out = render(p, &fs);
    /* every record: "  name" padded to 52 columns, "\n", frames, count */
    const char *rec = strstr(out, "  is_odd");
    tap_check(rec && rec[52] == '\n' && !strncmp(rec + 53, "              demo.exe`is_odd\n", 30),
              "@[probefunc, ustack()]: the name padded to 50, then the stack, leaf at offset 0 without +0x0",
              "got:\n%.200s", rec ? rec : out);
    uint64_t total = 0, calls = 0;
    for (size_t i = 0; i < p->nstacks; i++)
        total += p->stacks[i].count;
    char *copy = hs_xstrdup(out);
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
        char *end;
        while (*line == ' ')
            line++;
        unsigned long long v = strtoull(line, &end, 10);
        if (*end == 0 && end != line)
            calls += v;
    }
    free(copy);
    tap_check(calls == total, "@[probefunc, ustack()]: the counts add up to the captures", "%llu != %llu",
              (unsigned long long)calls, (unsigned long long)total);
    free(out);
    hs_profile_free(p);
}

/* Damaged programs and command lines: each parses or is refused with one
 * line, never a crash (fixed seed). */
static void test_fuzz(void)
{
    const char *seeds[] = {
        "profile-997 /pid == $target/ { @[ustack(100)] = count(); }",
        "pid$target:demo.exe:parse_*:entry, fpid$target:b.dll::entry /pid == $target/ { @x[probefunc, ustack(4)] = count(); };",
    };
    uint32_t s = 20261123;
    int parsed = 0, refused = 0, bad_errors = 0;
    for (int c = 0; c < 20000; c++) {
        const char *seed = seeds[c % 2];
        char buf[256];
        size_t n = strlen(seed);
        memcpy(buf, seed, n + 1);
        for (int k = 0; k < 3; k++) {
            s = s * 1664525u + 1013904223u;
            size_t at = (s >> 8) % n;
            int what = (int)(s >> 28) % 3;
            static const char junk[] = "{}[]()/@,:;$*?= \\0123456789abz\"-";
            if (what == 0)
                buf[at] = junk[(s >> 4) % (sizeof junk - 1)];
            else if (what == 1)
                buf[at] = 0;
            else
                memmove(buf + at, buf + at + 1, n - at);
        }
        hs_dprog p;
        char err[1024];
        if (hs_dprog_parse(buf, &p, err, sizeof err) == 0) {
            parsed++;
            hs_dprog_free(&p);
        } else {
            refused++;
            if (strchr(err, '\n') || !strstr(err, "supported:"))
                bad_errors++;
        }
        int nc;
        char **v = hs_dsplit_command(buf, &nc);
        for (int i = 0; i < nc; i++)
            free(v[i]);
        free(v);
    }
    tap_check(parsed > 0 && refused > 0 && bad_errors == 0, "fuzz: 20,000 damaged programs parsed or refused in one line",
              "%d parsed, %d refused, %d bad messages", parsed, refused, bad_errors);
}

int main(void)
{
    test_split();
    test_cargo_flamegraph();
    test_programs();
    test_layout();
    test_fuzz();
    return tap_status();
}
