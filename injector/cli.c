/*
 * injector/cli.c - parse the command line (see cli.h).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "hookscope/session.h"
#include "util.h"

static const char usage[] =
    "usage: hookscope run [OPTIONS] [--] TARGET [ARGS...]\n"
    "       hookscope attach PID [OPTIONS]\n"
    "       hookscope functions FILE\n"
    "       hookscope --help | --version\n";

static const char help[] =
    "hookscope - exact call counts for every function of a Windows x64 program\n"
    "\n"
    "Commands:\n"
    "  run TARGET [ARGS...]   start TARGET suspended, hook every function of its exe\n"
    "                         (or of each -m module), run it, write the reports.\n"
    "                         TARGET is a path or a program name found like\n"
    "                         CreateProcess finds it. hookscope exits with the\n"
    "                         target's exit code.\n"
    "  attach PID             hook a running process until --duration or Ctrl+C,\n"
    "                         then unhook and detach; the process keeps running.\n"
    "  functions FILE         list the functions of a PE file: rva, size, name, and\n"
    "                         whether it can be hooked or why not.\n"
    "\n"
    "Options:\n"
    "  -m, --module NAME      hook the functions of module NAME (the exe or a DLL,\n"
    "                         file name with or without extension); repeatable;\n"
    "                         default: the target's exe\n"
    "  -o, --output DIR       write report.txt and report.json into DIR\n"
    "                         (default: hookscope-out)\n"
    "  -d, --duration S       stop after S seconds (run: the target is terminated)\n"
    "  -f, --function PATTERN hook only functions whose name matches PATTERN (a glob\n"
    "                         with * and ?; \"module!glob\" limits it to one module;\n"
    "                         C++ names match raw or undecorated); repeatable\n"
    "  -x, --exclude PATTERN  do not hook functions matching PATTERN; repeatable\n"
    "      --no-edges         do not count caller edges (on by default)\n"
    "      --stacks[=DEPTH]   capture the native stack at function entry, up to\n"
    "                         DEPTH frames (default 32, at most 256)\n"
    "      --stack-every N    capture every Nth call of each function on each\n"
    "                         thread (default 1: every call)\n"
    "      --time             return probes: inclusive and self time, min, max and\n"
    "                         a log2 histogram of durations per function, and the\n"
    "                         calls that ended by exception or longjmp\n"
    "  -q, --quiet            do not print the summary line\n"
    "  -v, --verbose          say what hookscope is doing, with timestamps\n"
    "      --max-functions N  function table capacity (default 262144)\n"
    "      --max-threads N    threads alive at once with their own counters\n"
    "                         (default 256; regions of threads that ended are\n"
    "                         reused; beyond that, calls are still counted\n"
    "                         exactly, through a shared region, slower)\n"
    "  -h, --help             this text\n"
    "  -V, --version          the version\n"
    "\n"
    "Exit status: the target's exit code for run (0 after --duration); 2 for a\n"
    "usage error; 125 when hookscope cannot trace: target missing, not a 64-bit\n"
    "PE, a -m module never loaded, a function filter that matches nothing,\n"
    "injection failed.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("hookscope: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    fputs(usage, stderr);
    return HS_EXIT_USAGE;
}

static int parse_uint(const wchar_t *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    wchar_t *end;
    unsigned long long v = wcstoull(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Match "--name", "--name=value" or a short "-x"; returns the value
 * (argument or the next argv) through *val when takes_value. */
static int opt_is(const wchar_t *arg, const wchar_t *lng, const wchar_t *shrt)
{
    size_t n = wcslen(lng);
    if (wcsncmp(arg, lng, n) == 0 && (arg[n] == 0 || arg[n] == L'='))
        return 1;
    return shrt && wcscmp(arg, shrt) == 0;
}

int hs_parse_cli(int argc, wchar_t **argv, hs_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_functions = 1u << 18;
    o->max_threads = 256;
    o->edges = 1;
    o->stack_every = 1;
    o->outdir = hs_xstrdup("hookscope-out");
    if (argc < 2) {
        fputs(usage, stderr);
        return HS_EXIT_USAGE;
    }
    const wchar_t *cmd = argv[1];
    if (!wcscmp(cmd, L"--help") || !wcscmp(cmd, L"-h") || !wcscmp(cmd, L"help")) {
        fputs(help, stdout);
        return 0;
    }
    if (!wcscmp(cmd, L"--version") || !wcscmp(cmd, L"-V")) {
        printf("hookscope %s\n", HOOKSCOPE_VERSION);
        return 0;
    }
    if (!wcscmp(cmd, L"run"))
        o->command = "run";
    else if (!wcscmp(cmd, L"attach"))
        o->command = "attach";
    else if (!wcscmp(cmd, L"functions"))
        o->command = "functions";
    else {
        char *c = hs_utf8(cmd);
        return usage_error(cmd[0] == L'-' ? "unknown option '%s'" : "unknown command '%s'", c);
    }

    o->modules = hs_xcalloc((size_t)argc, sizeof *o->modules);
    int positional = 0;
    for (int i = 2; i < argc; i++) {
        const wchar_t *a = argv[i];
        const wchar_t *val = NULL;
        char *au = hs_utf8(a);
        if (!wcscmp(a, L"--")) {
            if (strcmp(o->command, "run") == 0) {
                o->target_argv = &argv[i + 1];
                o->target_argc = argc - i - 1;
                break;
            }
            continue;
        }
        if (a[0] == L'-' && a[1] != 0) {
            int takes = opt_is(a, L"--module", L"-m") || opt_is(a, L"--output", L"-o") ||
                        opt_is(a, L"--duration", L"-d") || opt_is(a, L"--max-functions", NULL) ||
                        opt_is(a, L"--max-threads", NULL) || opt_is(a, L"--stack-every", NULL) ||
                        opt_is(a, L"--function", L"-f") || opt_is(a, L"--exclude", L"-x");
            if (takes) {
                const wchar_t *eq = a[1] == L'-' ? wcschr(a, L'=') : NULL;
                if (eq)
                    val = eq + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                else
                    return usage_error("option '%s' needs a value", au);
            }
            if (opt_is(a, L"--module", L"-m")) {
                if (!*val)
                    return usage_error("option '%s' needs a module name", au);
                if (o->nmodules >= HS_MAX_PATTERNS)
                    return usage_error("too many modules (at most 32) at '%s'", au);
                if (wcslen(val) >= HS_PATTERN_LEN)
                    return usage_error("module name too long: '%s'", hs_utf8(val));
                o->modules[o->nmodules++] = (wchar_t *)val;
            } else if (opt_is(a, L"--output", L"-o")) {
                if (!*val)
                    return usage_error("option '%s' needs a directory", au);
                free(o->outdir);
                o->outdir = hs_utf8(val);
            } else if (opt_is(a, L"--duration", L"-d")) {
                wchar_t *end;
                double d = wcstod(val, &end);
                if (!*val || *end || !(d > 0) || d > 1e7)
                    return usage_error("--duration needs a positive number of seconds, not '%s'",
                                       hs_utf8(val));
                o->duration = d;
            } else if (opt_is(a, L"--max-functions", NULL)) {
                if (parse_uint(val, 1024, 1u << 24, &o->max_functions) < 0)
                    return usage_error("--max-functions needs a number from 1024 to 16777216, not '%s'",
                                       hs_utf8(val));
            } else if (opt_is(a, L"--max-threads", NULL)) {
                if (parse_uint(val, 1, 4096, &o->max_threads) < 0)
                    return usage_error("--max-threads needs a number from 1 to 4096, not '%s'",
                                       hs_utf8(val));
            } else if (opt_is(a, L"--function", L"-f") || opt_is(a, L"--exclude", L"-x")) {
                if (!*val)
                    return usage_error("option '%s' needs a pattern", au);
                if (o->nfilters >= 32)
                    return usage_error("too many function filters (at most 32) at '%s'", au);
                char *vu = hs_utf8(val);
                if (strlen(vu) >= 256)
                    return usage_error("function filter too long: '%s'", vu);
                o->filter_exclude[o->nfilters] = opt_is(a, L"--exclude", L"-x");
                o->filters[o->nfilters++] = val;
            } else if (opt_is(a, L"--stack-every", NULL)) {
                if (parse_uint(val, 1, 1u << 30, &o->stack_every) < 0)
                    return usage_error("--stack-every needs a positive number, not '%s'", hs_utf8(val));
            } else if (opt_is(a, L"--stacks", NULL)) {
                const wchar_t *eq = wcschr(a, L'=');
                o->stacks = 32;
                if (eq && parse_uint(eq + 1, 1, 256, &o->stacks) < 0)
                    return usage_error("--stacks=DEPTH needs a depth from 1 to 256, not '%s'",
                                       hs_utf8(eq + 1));
            } else if (!wcscmp(a, L"--no-edges")) {
                o->edges = 0;
            } else if (!wcscmp(a, L"--time")) {
                o->time = 1;
            } else if (opt_is(a, L"--verbose", L"-v")) {
                hs_verbose = 1;
            } else if (opt_is(a, L"--quiet", L"-q")) {
                o->quiet = 1;
            } else if (opt_is(a, L"--help", L"-h")) {
                fputs(help, stdout);
                return 0;
            } else {
                return usage_error("unknown option '%s'", au);
            }
            free(au);
            continue;
        }
        free(au);
        /* positional */
        if (!strcmp(o->command, "run")) {
            o->target_argv = &argv[i];
            o->target_argc = argc - i;
            break;
        } else if (!strcmp(o->command, "attach")) {
            if (positional++ > 0)
                return usage_error("unexpected argument '%s'", hs_utf8(a));
            if (parse_uint(a, 1, UINT32_MAX, &o->pid) < 0)
                return usage_error("attach needs a process id, not '%s'", hs_utf8(a));
        } else {
            if (positional++ > 0)
                return usage_error("unexpected argument '%s'", hs_utf8(a));
            o->file = a;
        }
    }
    if (!strcmp(o->command, "run") && o->target_argc < 1)
        return usage_error("%s", "run needs a target program");
    if (!strcmp(o->command, "attach") && !o->pid)
        return usage_error("%s", "attach needs a process id");
    if (!strcmp(o->command, "functions") && !o->file)
        return usage_error("%s", "functions needs a file");
    return -1;
}
