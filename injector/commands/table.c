/*
 * injector/commands/table.c - the commands (see commands.h).
 */
#include <string.h>

#include "injector/commands/commands.h"

static const hs_command run = {
    "run", HS_CMD_RUN, "run [OPTIONS] [--] TARGET [ARGS...]", "TARGET [ARGS...]",
    "start TARGET, hook it, run it to its end, write the reports",
    "Start TARGET (a path, or a program name found the way CreateProcess finds\n"
    "it) suspended, hook every function of its exe (or of each -m module, at\n"
    "start or when it loads), run it, and write the reports. Its stdin, stdout\n"
    "and stderr pass through untouched; hookscope exits with its exit code.",
    hs_cmd_run,
};

static const hs_command attach = {
    "attach", HS_CMD_ATTACH, "attach PID [OPTIONS]", "PID",
    "hook a running process until --duration or Ctrl+C, then detach",
    "Hook the functions of a running process until --duration or Ctrl+C, then\n"
    "take every patch out, unload the agent and write the reports. The process\n"
    "keeps running as if nothing happened.",
    hs_cmd_attach,
};

static const hs_command functions = {
    "functions", HS_CMD_FUNCTIONS, "functions [-f PATTERN]... [-x PATTERN]... FILE", "FILE",
    "list the functions of a PE file and whether they can be hooked",
    "List the functions of a PE file: rva, size, whether hookscope can hook it\n"
    "(and how) or why not, its name, and a summary. With -f/-x, only the\n"
    "functions the filters select.",
    hs_cmd_functions,
};

static const hs_command report = {
    "report", HS_CMD_REPORT, "report [OPTIONS] DIR | report --etl FILE [--pid N | --process NAME] [-o DIR]", "DIR",
    "write a saved run's reports again, or the reports of an ETW trace",
    "Read DIR/report.json, written by an earlier run or attach, and write\n"
    "every report of that run again (into DIR, or the -o directory), exactly\n"
    "as the run wrote them. With --format NAME, only that output, on stdout\n"
    "(or into the -o directory). --sort, --top and --threads shape\n"
    "report.txt and print it (they imply --format txt). With --etl, read a\n"
    "trace recorded on Windows (xperf, WPR, UIforETW, PerfView, hookscope's\n"
    "own ETW sampler) and write the reports of one process's CPU samples\n"
    "(into -o, default hookscope-out); without --pid or --process, list the\n"
    "trace's processes by samples.",
    hs_cmd_report,
};

static const hs_command diff = {
    "diff", HS_CMD_DIFF, "diff [OPTIONS] A B", "A B",
    "compare two saved runs, function by function",
    "Read A/report.json and B/report.json and print, per function (matched by\n"
    "module and name), the calls, self CPU samples and self time of both runs\n"
    "and the change, the largest change first: of self time when both ran\n"
    "with --time (measured), else of self CPU samples when both have them,\n"
    "else of calls (--sort self, the default; --sort total, cpu and calls\n"
    "choose; total adds the inclusive columns). Two runs of different programs\n"
    "are matched by name alone, with a warning. With -o DIR also DIR/diff.txt\n"
    "and DIR/diff-flamegraph.svg: B's stacks, red where a frame's inclusive\n"
    "share grew since A, blue where it shrank.",
    hs_cmd_diff,
};

static const hs_command dtrace = {
    "dtrace", HS_CMD_DTRACE, "dtrace [DTRACE OPTIONS]", "[DTRACE OPTIONS]",
    "run a DTrace one-liner's subset (for cargo-flamegraph's DTRACE)",
    "Take DTrace's command line (-n PROGRAM, -c 'CMD ARGS' or -p PID, -o FILE,\n"
    "-x ustackframes=N, -q) and trace as the program asks, printing its\n"
    "aggregation as DTrace does. Programs understood:\n"
    "  profile-N /pid == $target/ { @[ustack(N)] = count(); }   (CPU samples)\n"
    "  fpid$target:MOD::entry, pid$target:MOD:FUNC:entry (FUNC a glob)\n"
    "    { @[probefunc] = count(); }, { @[probefunc, ustack()] = count(); }\n"
    "    or { @[ustack()] = count(); }                          (hooks)\n"
    "hookscope-dtrace.exe, beside hookscope.exe, is this command as a program\n"
    "of its own: set DTRACE to it for cargo-flamegraph. See\n"
    "'hookscope dtrace --help'.",
    hs_cmd_dtrace,
};

const hs_command *const hs_commands[] = { &run, &attach, &functions, &report, &diff, &dtrace, NULL };

const hs_command *hs_command_find(const char *name)
{
    for (int i = 0; hs_commands[i]; i++)
        if (!strcmp(hs_commands[i]->name, name))
            return hs_commands[i];
    return NULL;
}
