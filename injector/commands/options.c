/*
 * injector/commands/options.c - parse the command line (see options.h).
 *
 * One table of options: each row names the commands that take it, so a
 * command's help lists exactly its options and an option given to a
 * command that does not take it is a usage error.
 */
#include "injector/commands/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "hook/base/util.h"
#include "hookscope/session.h"
#include "injector/commands/commands.h"
#include "injector/output/writers.h"
#include "injector/symbols/symstore.h"
#include "sampler/sampler.h"

enum opt_id {
    OPT_MODULE, OPT_FUNCTION, OPT_EXCLUDE, OPT_OUTPUT, OPT_DURATION, OPT_NO_EDGES, OPT_STACKS,
    OPT_STACK_EVERY, OPT_TIME, OPT_QUIET, OPT_VERBOSE, OPT_MAX_FUNCTIONS, OPT_MAX_THREADS, OPT_HELP,
    OPT_NO_SAMPLE, OPT_SAMPLE_RATE, OPT_NO_HOOKS, OPT_SAMPLER, OPT_KEEP_ETL, OPT_ELEVATED_TARGET,
    OPT_SYMBOLS, OPT_SRCLINE, OPT_ETL, OPT_PID, OPT_PROCESS, OPT_FORMAT, OPT_SORT, OPT_TOP, OPT_THREADS,
    OPT_TIMELINE, OPT_TIMELINE_MAX, OPT_TIMELINE_BUFFER, OPT_TIMELINE_MIN, OPT_TIMELINE_DEPTH,
    OPT_TIMELINE_WAIT,
};

#define TRACE (HS_CMD_RUN | HS_CMD_ATTACH)
#define ALL (HS_CMD_RUN | HS_CMD_ATTACH | HS_CMD_FUNCTIONS | HS_CMD_REPORT | HS_CMD_DIFF)

typedef struct optdef {
    int id;
    const wchar_t *lng;           /* "--module" */
    const wchar_t *shrt;          /* "-m", or NULL */
    const char *arg;              /* the value's name, NULL for a flag */
    int arg_after_eq;             /* the value is optional and only given as --opt=VALUE */
    unsigned cmds;                /* HS_CMD_* bits of the commands that take it */
    const char *help;
} optdef;

static const optdef options[] = {
    { OPT_MODULE, L"--module", L"-m", "NAME", 0, TRACE,
      "hook the functions of module NAME (the exe or a\n"
      "DLL, with or without extension); repeatable;\n"
      "default: the target's exe" },
    { OPT_FUNCTION, L"--function", L"-f", "PATTERN", 0, TRACE | HS_CMD_FUNCTIONS,
      "only functions whose name matches PATTERN (a\n"
      "glob with * and ?; \"module!glob\" limits it to\n"
      "one module; C++ names match raw or undecorated);\n"
      "repeatable" },
    { OPT_EXCLUDE, L"--exclude", L"-x", "PATTERN", 0, TRACE | HS_CMD_FUNCTIONS,
      "leave out functions matching PATTERN; repeatable" },
    { OPT_OUTPUT, L"--output", L"-o", "DIR", 0, TRACE | HS_CMD_REPORT | HS_CMD_DIFF,
      "write the reports into DIR (default: hookscope-out;\n"
      "report: the run's own directory, or stdout with\n"
      "--format; diff: stdout, and with -o also\n"
      "diff.txt and diff-flamegraph.svg there)" },
    { OPT_DURATION, L"--duration", L"-d", "S", 0, TRACE,
      "stop after S seconds (run: the target is\n"
      "terminated; attach: detach)" },
    { OPT_NO_EDGES, L"--no-edges", NULL, NULL, 0, TRACE, "do not count caller edges (on by default)" },
    { OPT_STACKS, L"--stacks", NULL, "DEPTH", 1, TRACE,
      "capture the native stack at function entry, up\n"
      "to DEPTH frames (default 32, at most 256)" },
    { OPT_STACK_EVERY, L"--stack-every", NULL, "N", 0, TRACE,
      "capture every Nth call of each function on each\n"
      "thread (default 1: every call)" },
    { OPT_TIME, L"--time", NULL, NULL, 0, TRACE,
      "return probes: inclusive and self time, min, max\n"
      "and a log2 histogram of durations per function,\n"
      "and the calls that ended by exception or longjmp" },
    { OPT_TIMELINE, L"--timeline", NULL, NULL, 0, TRACE,
      "every timed call of every thread on a time axis\n"
      "(implies --time): trace.json for Perfetto,\n"
      "chrome://tracing and speedscope, and\n"
      "profile.firefox.json for the Firefox Profiler" },
    { OPT_TIMELINE_MAX, L"--timeline-max", NULL, "SIZE", 0, TRACE,
      "bytes the timeline's file may take (K, M, G:\n"
      "binary units; default 1G); later calls are\n"
      "dropped and counted" },
    { OPT_TIMELINE_BUFFER, L"--timeline-buffer", NULL, "N", 0, TRACE,
      "calls each thread's timeline buffer holds until\n"
      "hookscope takes them (a power of two from 16 to\n"
      "16777216, default 262144); a call that finds it\n"
      "full waits for room (--timeline-wait)" },
    { OPT_TIMELINE_WAIT, L"--timeline-wait", NULL, "T", 0, TRACE,
      "how long a thread whose timeline buffer is full\n"
      "waits for hookscope to take its calls (ns, us,\n"
      "ms or s; default 1s; 0: never), its calls' times\n"
      "less the wait; then its calls are dropped and\n"
      "counted until hookscope takes some again" },
    { OPT_TIMELINE_MIN, L"--timeline-min-duration", NULL, "T", 0, TRACE,
      "a call shorter than T (ns, us, ms or s, e.g. 1us)\n"
      "leaves no event on the timeline (its time stays\n"
      "in its caller's; the report counts it as ever)" },
    { OPT_TIMELINE_DEPTH, L"--timeline-depth", NULL, "N", 0, TRACE,
      "only the calls of the N outermost timed levels of\n"
      "each thread leave events on the timeline" },
    { OPT_NO_SAMPLE, L"--no-sample", NULL, NULL, 0, TRACE,
      "do not sample where the CPU goes (sampling is on\n"
      "by default: CPU and wait stacks of every thread)" },
    { OPT_SAMPLE_RATE, L"--sample-rate", NULL, "HZ", 0, TRACE,
      "samples per second of each thread, from 1 to\n"
      "10000 (default: etw 1000; suspend the highest up\n"
      "to 1000 whose measured cost keeps a busy thread\n"
      "within 5% of its speed, at least 50)" },
    { OPT_NO_HOOKS, L"--no-hooks", NULL, NULL, 0, TRACE,
      "hook nothing and inject nothing: CPU samples only" },
    { OPT_SAMPLER, L"--sampler", NULL, "NAME", 0, TRACE,
      "how to sample: auto (the default: the first\n"
      "of these that can run here) or one of them:" },
    { OPT_KEEP_ETL, L"--keep-etl", NULL, NULL, 0, TRACE,
      "keep the etw sampler's trace as hookscope.etl in\n"
      "the output directory (report --etl reads it)" },
    { OPT_ELEVATED_TARGET, L"--elevated-target", NULL, NULL, 0, HS_CMD_RUN,
      "when hookscope runs elevated, start the target\n"
      "elevated too (by default it gets the user's\n"
      "unelevated token)" },
    { OPT_ETL, L"--etl", NULL, "FILE", 0, HS_CMD_REPORT,
      "read a recorded ETW trace (.etl: xperf, WPR,\n"
      "UIforETW, PerfView) instead of a run's directory" },
    { OPT_PID, L"--pid", NULL, "N", 0, HS_CMD_REPORT,
      "with --etl: the process to report (0: Idle; without\n"
      "--pid or --process: a table of the processes)" },
    { OPT_PROCESS, L"--process", NULL, "NAME", 0, HS_CMD_REPORT,
      "with --etl: the process to report, by image name" },
    { OPT_SYMBOLS, L"--symbols", NULL, "PATH", 0, TRACE | HS_CMD_FUNCTIONS | HS_CMD_REPORT,
      "where else to look for PDBs: folders, srv*DIR and\n"
      "cache*DIR symbol stores, srv*DIR*https://SERVER\n"
      "symbol servers (downloaded into DIR), separated\n"
      "by ';' (after the image's own path and folder;\n"
      "then _NT_SYMBOL_PATH); a download waits at most\n"
      "HOOKSCOPE_SYMSRV_TIMEOUT s (default 10) for each\n"
      "answer, and lasts at most twice that, and that\n"
      "again per MB that comes" },
    { OPT_SRCLINE, L"--srcline", NULL, NULL, 0, TRACE | HS_CMD_REPORT,
      "add file:line (PDB or DWARF line tables) to each\n"
      "function and stack frame in the reports" },
    { OPT_QUIET, L"--quiet", L"-q", NULL, 0, TRACE | HS_CMD_REPORT,
      "no summary line, no progress line" },
    { OPT_FORMAT, L"--format", NULL, "NAME", 0, HS_CMD_REPORT,
      "write only this output: txt, json, folded, svg,\n"
      "speedscope, callgrind, pprof, trace, firefox or\n"
      "dtrace; to stdout, or into the -o directory\n"
      "under its file name" },
    { OPT_SORT, L"--sort", NULL, "KEY", 0, HS_CMD_REPORT,
      "order report.txt's functions by calls, self,\n"
      "total (time with --time, else CPU samples), cpu\n"
      "(self CPU samples) or avg (time per call, else\n"
      "CPU time per call); implies --format txt" },
    { OPT_SORT, L"--sort", NULL, "KEY", 0, HS_CMD_DIFF,
      "order the rows by the largest change of: self\n"
      "(the default: self time when both ran with\n"
      "--time, else self CPU samples, else calls),\n"
      "total (inclusive time when both ran with --time,\n"
      "else inclusive CPU samples: a function made\n"
      "slower through its callees), cpu (self CPU\n"
      "samples) or calls" },
    { OPT_TOP, L"--top", NULL, "N", 0, HS_CMD_REPORT | HS_CMD_DIFF,
      "only the first N functions (report: implies\n"
      "--format txt)" },
    { OPT_THREADS, L"--threads", NULL, NULL, 0, HS_CMD_REPORT,
      "add the calls and samples of each thread to\n"
      "report.txt; implies --format txt" },
    { OPT_VERBOSE, L"--verbose", L"-v", NULL, 0, ALL, "say what hookscope is doing, with timestamps" },
    { OPT_MAX_FUNCTIONS, L"--max-functions", NULL, "N", 0, TRACE,
      "function table capacity (default 262144)" },
    { OPT_MAX_THREADS, L"--max-threads", NULL, "N", 0, TRACE,
      "threads alive at once with their own counters\n"
      "(default 256; regions of threads that ended are\n"
      "reused; beyond that, calls are still counted\n"
      "exactly, through a shared region, slower)" },
    { OPT_HELP, L"--help", L"-h", NULL, 0, ALL, "this command's help" },
};
#define NOPTIONS (sizeof options / sizeof *options)

static const char overview_tail[] =
    "\n"
    "Run 'hookscope help COMMAND' (or 'hookscope COMMAND --help') for a\n"
    "command's options.\n"
    "\n"
    "Exit status: the target's exit code for run (0 after --duration); 2 for a\n"
    "usage error; 125 when hookscope cannot trace: target missing, not an x86\n"
    "or x64 PE program, a function filter that matches nothing, injection\n"
    "failed (a -m module never loaded is said, the target's exit code kept).\n";

static void print_usage_lines(FILE *out)
{
    for (int i = 0; hs_commands[i]; i++)
        fprintf(out, "%s hookscope %s\n", i ? "      " : "usage:", hs_commands[i]->usage);
    fprintf(out, "       hookscope help [COMMAND] | --help | --version\n");
}

static void print_options(FILE *out, unsigned cmds, int with_commands);

static void print_overview(FILE *out)
{
    fprintf(out, "hookscope - exact call counts for every function of a Windows x64 or x86 program\n\n");
    print_usage_lines(out);
    fprintf(out, "\nCommands:\n");
    for (int i = 0; hs_commands[i]; i++) {
        char head[64];
        snprintf(head, sizeof head, "%s %s", hs_commands[i]->name, hs_commands[i]->args);
        fprintf(out, "  %-24s %s\n", head, hs_commands[i]->summary);
    }
    fprintf(out, "\nOptions (the commands that take each in brackets):\n");
    print_options(out, ~0u, 1);
    fputs(overview_tail, out);
}

/* "  -m, --module NAME" */
static void option_label(const optdef *d, char *buf, size_t len)
{
    char *lng = hs_utf8(d->lng);
    char *shrt = d->shrt ? hs_utf8(d->shrt) : NULL;
    if (d->arg && d->arg_after_eq)
        snprintf(buf, len, "%s%s%s[=%s]", shrt ? shrt : "", shrt ? ", " : "    ", lng, d->arg);
    else
        snprintf(buf, len, "%s%s%s%s%s", shrt ? shrt : "", shrt ? ", " : "    ", lng, d->arg ? " " : "",
                 d->arg ? d->arg : "");
    free(lng);
    free(shrt);
}

/* The options some command of `cmds` takes, each with its help text
 * (and the commands that take it). */
static void print_options(FILE *out, unsigned cmds, int with_commands)
{
    for (size_t i = 0; i < NOPTIONS; i++) {
        const optdef *d = &options[i];
        if (!(d->cmds & cmds))
            continue;
        char label[64];
        option_label(d, label, sizeof label);
        fprintf(out, "  %-24s ", label);
        for (const char *h = d->help; *h; h++) {
            fputc(*h, out);
            if (*h == '\n')
                fprintf(out, "  %-24s ", "");
        }
        if (d->id == OPT_SAMPLER)
            for (size_t k = 0; hs_sampler_backends[k]; k++)
                fprintf(out, "\n  %-24s   %-8s %s", "", hs_sampler_backends[k]->name, hs_sampler_backends[k]->help);
        if (with_commands) {
            fprintf(out, " [");
            for (int k = 0, any = 0; hs_commands[k]; k++)
                if (d->cmds & hs_commands[k]->bit)
                    fprintf(out, "%s%s", any++ ? " " : "", hs_commands[k]->name);
            fputc(']', out);
        }
        fputc('\n', out);
    }
}

static void print_command_help(FILE *out, const hs_command *c)
{
    fprintf(out, "usage: hookscope %s\n\n%s\n", c->usage, c->description);
    int any = 0;   /* dtrace takes DTrace's options, none of the table's */
    for (size_t i = 0; i < NOPTIONS; i++)
        any |= (options[i].cmds & c->bit) != 0;
    if (any) {
        fprintf(out, "\nOptions:\n");
        print_options(out, c->bit, 0);
    }
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("hookscope: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    print_usage_lines(stderr);
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

/* SIZE: bytes, with a K, M or G suffix (binary units), from lo to hi. */
static int parse_size(const wchar_t *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    wchar_t *end;
    unsigned long long v = wcstoull(s, &end, 10);
    if (!*s || end == s || *s == L'-')
        return -1;
    int shift = 0;
    if (*end == L'K' || *end == L'k')
        shift = 10;
    else if (*end == L'M' || *end == L'm')
        shift = 20;
    else if (*end == L'G' || *end == L'g')
        shift = 30;
    if (shift)
        end++;
    if (*end || v > (hi >> shift) || (v << shift) < lo)
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* T: a duration with its unit (ns, us, ms, s), as nanoseconds up to hi. */
static int parse_duration_ns(const wchar_t *s, uint64_t hi, uint64_t *out)
{
    wchar_t *end;
    double v = wcstod(s, &end);
    double unit = !wcscmp(end, L"ns") ? 1 : !wcscmp(end, L"us") ? 1e3 : !wcscmp(end, L"ms") ? 1e6
                : !wcscmp(end, L"s")  ? 1e9 : 0;
    if (!*s || end == s || !unit || !(v >= 0) || v * unit > (double)hi)
        return -1;
    *out = (uint64_t)(v * unit + 0.5);
    return 0;
}

/* The row of an option argument ("--name", "--name=value", "-x"): the
 * one for command `cmd` where an option has a row per command (its help
 * differs), else the first. */
static const optdef *find_option(const wchar_t *arg, unsigned cmd)
{
    const optdef *first = NULL;
    for (size_t i = 0; i < NOPTIONS; i++) {
        const optdef *d = &options[i];
        size_t n = wcslen(d->lng);
        if ((wcsncmp(arg, d->lng, n) == 0 && (arg[n] == 0 || (arg[n] == L'=' && d->arg))) ||
            (d->shrt && !wcscmp(arg, d->shrt))) {
            if (d->cmds & cmd)
                return d;
            if (!first)
                first = d;
        }
    }
    return first;
}

static int all_digits(const wchar_t *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < L'0' || *s > L'9')
            return 0;
    return 1;
}

/* Apply one option with its value (NULL for a flag or an absent optional
 * value). Returns -1, or a usage error's exit code. */
static int apply(hs_options *o, const optdef *d, const wchar_t *a, const wchar_t *val)
{
    char *au = hs_utf8(a);
    switch (d->id) {
    case OPT_MODULE:
        if (!*val)
            return usage_error("option '%s' needs a module name", au);
        if (o->nmodules >= HS_MAX_PATTERNS)
            return usage_error("too many modules (at most 32) at '%s'", au);
        if (wcslen(val) >= HS_PATTERN_LEN)
            return usage_error("module name too long: '%s'", hs_utf8(val));
        o->modules[o->nmodules++] = (wchar_t *)val;
        break;
    case OPT_OUTPUT:
        if (!*val)
            return usage_error("option '%s' needs a directory", au);
        free(o->outdir);
        o->outdir = hs_utf8(val);
        break;
    case OPT_DURATION: {
        wchar_t *end;
        double s = wcstod(val, &end);
        if (!*val || *end || !(s > 0) || s > 1e7)
            return usage_error("--duration needs a positive number of seconds, not '%s'", hs_utf8(val));
        o->duration = s;
        break;
    }
    case OPT_MAX_FUNCTIONS:
        if (parse_uint(val, 1024, 1u << 24, &o->max_functions) < 0)
            return usage_error("--max-functions needs a number from 1024 to 16777216, not '%s'", hs_utf8(val));
        break;
    case OPT_MAX_THREADS:
        if (parse_uint(val, 1, 4096, &o->max_threads) < 0)
            return usage_error("--max-threads needs a number from 1 to 4096, not '%s'", hs_utf8(val));
        break;
    case OPT_FUNCTION:
    case OPT_EXCLUDE: {
        if (!*val)
            return usage_error("option '%s' needs a pattern", au);
        if (o->nfilters >= 32)
            return usage_error("too many function filters (at most 32) at '%s'", au);
        char *vu = hs_utf8(val);
        if (strlen(vu) >= 256)
            return usage_error("function filter too long: '%s'", vu);
        free(vu);
        o->filter_exclude[o->nfilters] = d->id == OPT_EXCLUDE;
        o->filters[o->nfilters++] = val;
        break;
    }
    case OPT_STACK_EVERY:
        if (parse_uint(val, 1, 1u << 30, &o->stack_every) < 0)
            return usage_error("--stack-every needs a positive number, not '%s'", hs_utf8(val));
        break;
    case OPT_STACKS:
        o->stacks = 32;
        if (val && parse_uint(val, 1, 256, &o->stacks) < 0)
            return usage_error("--stacks=DEPTH needs a depth from 1 to 256, not '%s'", hs_utf8(val));
        break;
    case OPT_SAMPLE_RATE:
        if (parse_uint(val, 1, 10000, &o->sample_rate_hz) < 0)
            return usage_error("--sample-rate needs a rate from 1 to 10000 (per second), not '%s'", hs_utf8(val));
        break;
    case OPT_SAMPLER: {
        char *v = hs_utf8(val);
        if (!hs_sampler_name_ok(v))
            return usage_error(hs_xasprintf("--sampler is %s, not '%%s'", hs_sampler_names()), v);
        o->sampler = v;
        break;
    }
    case OPT_NO_SAMPLE: o->sample = 0; break;
    case OPT_KEEP_ETL: o->keep_etl = 1; break;
    case OPT_ELEVATED_TARGET: o->elevated_target = 1; break;
    case OPT_NO_HOOKS: o->no_hooks = 1; break;
    case OPT_SYMBOLS: {
        if (!*val)
            return usage_error("option '%s' needs a path", au);
        free(o->symbols);
        o->symbols = hs_utf8(val);
        char why[700], warn[700];
        if (hs_symstore_check(o->symbols, hs_symfs_host(), why, sizeof why, warn, sizeof warn) < 0)
            return usage_error("--symbols: %s", why);
        if (*warn)
            hs_err("--symbols: %s (the other places are searched)", warn);
        break;
    }
    case OPT_SRCLINE: o->srcline = 1; break;
    case OPT_ETL:
        if (!*val)
            return usage_error("option '%s' needs a file", au);
        free(o->etl);
        o->etl = hs_utf8(val);
        break;
    case OPT_PID:
        if (parse_uint(val, 0, UINT32_MAX, &o->etl_pid) < 0)
            return usage_error("--pid needs a process id, not '%s'", hs_utf8(val));
        o->etl_pid_set = true;
        break;
    case OPT_PROCESS:
        if (!*val)
            return usage_error("option '%s' needs a process name", au);
        free(o->etl_process);
        o->etl_process = hs_utf8(val);
        break;
    case OPT_FORMAT: {
        char *f = hs_utf8(val);
        if (!hs_writer_find(f))
            return usage_error("--format needs one of txt, json, folded, svg, speedscope, callgrind, pprof, trace, "
                               "firefox, dtrace, not '%s'", f);
        free(o->format);
        o->format = f;
        break;
    }
    case OPT_SORT: {
        char *k = hs_utf8(val);
        o->sort = hs_sort_key_from_name(k);
        if (o->sort < 0)
            return usage_error("--sort needs calls, self, total, cpu or avg, not '%s'", k);
        free(k);
        break;
    }
    case OPT_TOP:
        if (parse_uint(val, 1, UINT32_MAX, &o->top) < 0)
            return usage_error("--top needs a positive number, not '%s'", hs_utf8(val));
        break;
    case OPT_THREADS: o->threads = 1; break;
    case OPT_NO_EDGES: o->edges = 0; break;
    case OPT_TIME: o->time = 1; break;
    case OPT_TIMELINE: o->timeline = o->time = 1; break;
    case OPT_TIMELINE_MAX:
        if (parse_size(val, 4096, 1ull << 40, &o->timeline_max) < 0)
            return usage_error("--timeline-max needs a size from 4K to 1024G (bytes, or with K, M or G), not '%s'",
                               hs_utf8(val));
        break;
    case OPT_TIMELINE_MIN:
        if (parse_duration_ns(val, 3600ull * 1000000000, &o->timeline_min_ns) < 0)
            return usage_error("--timeline-min-duration needs a duration with its unit (ns, us, ms or s) up to "
                               "1 hour, not '%s'", hs_utf8(val));
        break;
    case OPT_TIMELINE_WAIT:
        if (!wcscmp(val, L"0"))
            o->timeline_wait_ns = 0;
        else if (parse_duration_ns(val, 3600ull * 1000000000, &o->timeline_wait_ns) < 0)
            return usage_error("--timeline-wait needs a duration with its unit (ns, us, ms or s) up to 1 hour, "
                               "or 0, not '%s'", hs_utf8(val));
        break;
    case OPT_TIMELINE_DEPTH:
        if (parse_uint(val, 1, 65536, &o->timeline_depth) < 0)
            return usage_error("--timeline-depth needs a number from 1 to 65536, not '%s'", hs_utf8(val));
        break;
    case OPT_TIMELINE_BUFFER:
        if (parse_uint(val, 16, 1u << 24, &o->timeline_buffer) < 0 || (o->timeline_buffer & (o->timeline_buffer - 1)))
            return usage_error("--timeline-buffer needs a power of two from 16 to 16777216, not '%s'", hs_utf8(val));
        break;
    case OPT_VERBOSE: hs_verbose = 1; break;
    case OPT_QUIET: o->quiet = 1; break;
    case OPT_HELP:
        print_command_help(stdout, o->cmd);
        return 0;
    }
    free(au);
    return -1;
}

/* The option (as given) with id `id` among argv's options, or NULL. */
static const wchar_t *given(int argc, wchar_t **argv, const hs_options *o, int id)
{
    for (int i = 2; i < argc; i++) {
        if (o->target_argv && argv + i >= o->target_argv)
            break;
        if (!wcscmp(argv[i], L"--"))
            break;
        const optdef *d = argv[i][0] == L'-' ? find_option(argv[i], o->cmd->bit) : NULL;
        if (d && d->id == id)
            return argv[i];
    }
    return NULL;
}

/* What --no-hooks and --no-sample leave: something to do, and no option
 * that needs what they turn off. -1, or a usage error's exit code. */
static int check_sampling(const hs_options *o, int argc, wchar_t **argv)
{
    if (o->no_hooks && !o->sample)
        return usage_error("%s", "--no-hooks with --no-sample leaves nothing to trace");
    if (o->no_hooks) {
        static const int needs_hooks[] = { OPT_MODULE, OPT_FUNCTION, OPT_EXCLUDE, OPT_NO_EDGES, OPT_STACKS,
                                           OPT_STACK_EVERY, OPT_TIME, OPT_MAX_FUNCTIONS, OPT_MAX_THREADS,
                                           OPT_TIMELINE, OPT_TIMELINE_MAX, OPT_TIMELINE_BUFFER, OPT_TIMELINE_MIN,
                                           OPT_TIMELINE_DEPTH, OPT_TIMELINE_WAIT };
        for (size_t i = 0; i < sizeof needs_hooks / sizeof *needs_hooks; i++) {
            const wchar_t *a = given(argc, argv, o, needs_hooks[i]);
            if (a)
                return usage_error("option '%s' needs the hooks, which --no-hooks turns off", hs_utf8(a));
        }
    }
    if (!o->timeline) {
        static const int needs_timeline[] = { OPT_TIMELINE_MAX, OPT_TIMELINE_BUFFER, OPT_TIMELINE_MIN,
                                              OPT_TIMELINE_DEPTH, OPT_TIMELINE_WAIT };
        for (size_t i = 0; i < sizeof needs_timeline / sizeof *needs_timeline; i++) {
            const wchar_t *a = given(argc, argv, o, needs_timeline[i]);
            if (a)
                return usage_error("option '%s' needs --timeline", hs_utf8(a));
        }
    }
    const wchar_t *keep = given(argc, argv, o, OPT_KEEP_ETL);
    if (keep && o->sample && o->sampler && !strcmp(o->sampler, "suspend"))
        return usage_error("%s", "--keep-etl keeps the etw sampler's trace; --sampler suspend records none");
    if (!o->sample) {
        static const int needs_sampling[] = { OPT_SAMPLE_RATE, OPT_SAMPLER, OPT_KEEP_ETL };
        for (size_t i = 0; i < sizeof needs_sampling / sizeof *needs_sampling; i++) {
            const wchar_t *a = given(argc, argv, o, needs_sampling[i]);
            if (a)
                return usage_error("option '%s' needs the sampler, which --no-sample turns off", hs_utf8(a));
        }
    }
    return -1;
}

hs_symconf hs_options_symconf(const hs_options *o)
{
    hs_symconf c = { o->symbols, getenv("_NT_SYMBOL_PATH"), hs_symfetch_host() };
    if (c.nt_symbol_path && !*c.nt_symbol_path)
        c.nt_symbol_path = NULL;
    /* the environment's path is not this command's: said, not refused */
    char why[700], warn[700];
    if (c.nt_symbol_path && hs_symstore_check(c.nt_symbol_path, hs_symfs_host(), why, sizeof why, warn, sizeof warn) < 0)
        hs_err("_NT_SYMBOL_PATH: %s (that entry is not used)", why);
    else if (c.nt_symbol_path && *warn)
        hs_err("_NT_SYMBOL_PATH: %s (the other places are searched)", warn);
    return c;
}

hs_trace_config hs_options_trace(const hs_options *o)
{
    hs_trace_config c;
    memset(&c, 0, sizeof c);
    c.command = o->cmd ? o->cmd->name : "";
    c.modules = o->modules;
    c.nmodules = o->nmodules;
    for (int i = 0; i < o->nfilters; i++) {
        c.filters[i] = o->filters[i];
        c.filter_exclude[i] = o->filter_exclude[i];
    }
    c.nfilters = o->nfilters;
    c.outdir = o->outdir;
    c.duration = o->duration;
    c.quiet = o->quiet;
    c.max_functions = o->max_functions;
    c.max_threads = o->max_threads;
    c.edges = o->edges;
    c.stacks = o->stacks;
    c.stack_every = o->stack_every;
    c.time = o->time;
    c.timeline = o->timeline;
    c.timeline_max = o->timeline_max;
    c.timeline_buffer = o->timeline_buffer;
    c.timeline_min_ns = o->timeline_min_ns;
    c.timeline_depth = o->timeline_depth;
    c.timeline_wait_ns = o->timeline_wait_ns;
    c.sample = o->sample;
    c.sampler = o->sampler;
    c.keep_etl = o->keep_etl;
    c.sample_rate_hz = o->sample_rate_hz;
    c.symbols = hs_options_symconf(o);
    c.srcline = o->srcline;
    return c;
}

int hs_parse_cli(int argc, wchar_t **argv, hs_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_functions = 1u << 18;
    o->max_threads = 256;
    o->edges = 1;
    o->stack_every = 1;
    o->timeline_max = 1ull << 30;
    o->timeline_buffer = HS_TL_DEFAULT_EVENTS;
    o->timeline_wait_ns = 1000000000;
    o->sample = 1;
    o->sort = -1;
    if (argc < 2) {
        print_usage_lines(stderr);
        return HS_EXIT_USAGE;
    }
    const wchar_t *first = argv[1];
    if (!wcscmp(first, L"--help") || !wcscmp(first, L"-h")) {
        print_overview(stdout);
        return 0;
    }
    if (!wcscmp(first, L"--version") || !wcscmp(first, L"-V")) {
        printf("hookscope %s\n", HOOKSCOPE_VERSION);
        return 0;
    }
    char *name = hs_utf8(first);
    if (!strcmp(name, "help")) {
        if (argc < 3) {
            print_overview(stdout);
            return 0;
        }
        char *what = hs_utf8(argv[2]);
        const hs_command *c = hs_command_find(what);
        if (!c)
            return usage_error("no command '%s' to help with", what);
        print_command_help(stdout, c);
        return 0;
    }
    o->cmd = hs_command_find(name);
    if (!o->cmd)
        return usage_error(first[0] == L'-' ? "unknown option '%s'" : "unknown command '%s'", name);
    free(name);
    o->outdir = hs_xstrdup(o->cmd->bit & (HS_CMD_REPORT | HS_CMD_DIFF) ? "" : "hookscope-out");

    o->modules = hs_xcalloc((size_t)argc, sizeof *o->modules);
    if (o->cmd->bit == HS_CMD_DTRACE) {
        /* DTrace's own options (-n, -c, -p, -o, -x, ...): the command reads them */
        o->target_argv = &argv[2];
        o->target_argc = argc - 2;
        return -1;
    }
    int positional = 0;
    const optdef *prev = NULL;   /* the option just before, for hints */
    for (int i = 2; i < argc; i++) {
        const wchar_t *a = argv[i];
        if (!wcscmp(a, L"--")) {
            if (o->cmd->bit == HS_CMD_RUN) {
                o->target_argv = &argv[i + 1];
                o->target_argc = argc - i - 1;
                break;
            }
            continue;
        }
        if (a[0] == L'-' && a[1] != 0) {
            const optdef *d = find_option(a, o->cmd->bit);
            if (!d)
                return usage_error("unknown option '%s'", hs_utf8(a));
            if (!(d->cmds & o->cmd->bit)) {
                char *au = hs_utf8(a);
                fprintf(stderr, "hookscope: %s does not take option '%s' (see 'hookscope help %s')\n",
                        o->cmd->name, au, o->cmd->name);
                return HS_EXIT_USAGE;
            }
            const wchar_t *val = NULL;
            if (d->arg) {
                const wchar_t *eq = a[1] == L'-' ? wcschr(a, L'=') : NULL;
                if (eq)
                    val = eq + 1;
                else if (!d->arg_after_eq && i + 1 < argc)
                    val = argv[++i];
                else if (!d->arg_after_eq)
                    return usage_error("option '%s' needs a value", hs_utf8(a));
            }
            int rc = apply(o, d, a, val);
            if (rc >= 0)
                return rc;
            prev = d;
            continue;
        }
        /* positional */
        if (o->cmd->bit == HS_CMD_RUN) {
            if (prev && prev->id == OPT_STACKS && all_digits(a) && wcschr(argv[i - 1], L'=') == NULL) {
                char *au = hs_utf8(a);
                fprintf(stderr, "hookscope: '%s' after --stacks would be the program to run; "
                                "write --stacks=%s\n", au, au);
                return HS_EXIT_USAGE;
            }
            o->target_argv = &argv[i];
            o->target_argc = argc - i;
            break;
        }
        int nwanted = o->cmd->bit == HS_CMD_DIFF ? 2 : 1;
        if (positional++ >= nwanted)
            return usage_error("unexpected argument '%s'", hs_utf8(a));
        if (o->cmd->bit == HS_CMD_ATTACH) {
            if (parse_uint(a, 1, UINT32_MAX, &o->pid) < 0)
                return usage_error("attach needs a process id, not '%s'", hs_utf8(a));
        } else if (positional == 2) {
            o->file2 = a;
        } else {
            o->file = a;
        }
        prev = NULL;
    }
    if (o->cmd->bit & (HS_CMD_RUN | HS_CMD_ATTACH)) {
        int rc = check_sampling(o, argc, argv);
        if (rc >= 0)
            return rc;
    }
    if (o->cmd->bit == HS_CMD_RUN && o->target_argc < 1)
        return usage_error("%s", "run needs a target program");
    if (o->cmd->bit == HS_CMD_ATTACH && !o->pid)
        return usage_error("%s", "attach needs a process id");
    if (o->cmd->bit == HS_CMD_FUNCTIONS && !o->file)
        return usage_error("%s", "functions needs a file");
    if ((o->etl_pid_set || o->etl_process) && !o->etl)
        return usage_error("%s", "--pid and --process choose a process of an --etl trace");
    if (o->cmd->bit == HS_CMD_REPORT && !o->file && !o->etl)
        return usage_error("%s", "report needs the directory of a run (with its report.json), or --etl FILE");
    if (o->cmd->bit == HS_CMD_REPORT && o->file && o->etl)
        return usage_error("%s", "report reads a run's directory or an --etl file, not both");
    if (o->etl_pid_set && o->etl_process)
        return usage_error("%s", "give --pid or --process, not both");
    if (o->cmd->bit == HS_CMD_DIFF && !o->file2)
        return usage_error("%s", "diff needs the directories of two runs (with their report.json)");
    if (o->cmd->bit == HS_CMD_DIFF && o->sort == HS_SORT_AVG)
        return usage_error("diff orders by the change of calls, self, total or cpu, not %s", hs_sort_key_name(o->sort));
    if (o->cmd->bit == HS_CMD_REPORT && (o->sort >= 0 || o->top || o->threads)) {
        if (o->format && strcmp(o->format, "txt") != 0)
            return usage_error("--sort, --top and --threads shape report.txt; not with --format %s", o->format);
        if (!o->format)
            o->format = hs_xstrdup("txt");
    }
    return -1;
}
