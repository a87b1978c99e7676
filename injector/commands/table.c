/*
 * injector/commands/table.c - the commands (see commands.h).
 */
#include <string.h>

#include "commands/commands.h"

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
    "as the run wrote them. With --etl, read a trace recorded on Windows\n"
    "(xperf, WPR, UIforETW, PerfView, hookscope's own ETW sampler) and write\n"
    "the reports of one process's CPU samples (into -o, default\n"
    "hookscope-out); without --pid or --process, list the trace's processes\n"
    "by samples.",
    hs_cmd_report,
};

const hs_command *const hs_commands[] = { &run, &attach, &functions, &report, NULL };

const hs_command *hs_command_find(const char *name)
{
    for (int i = 0; hs_commands[i]; i++)
        if (!strcmp(hs_commands[i]->name, name))
            return hs_commands[i];
    return NULL;
}
