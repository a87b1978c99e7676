/*
 * injector/commands/commands.h - hookscope's commands, one file each, and
 * the table that dispatches to them and describes them for help.
 */
#ifndef HOOKSCOPE_COMMANDS_H
#define HOOKSCOPE_COMMANDS_H

#include "injector/commands/options.h"

/* Command bits, as used by the option table's rows. */
enum {
    HS_CMD_RUN = 1u << 0,
    HS_CMD_ATTACH = 1u << 1,
    HS_CMD_FUNCTIONS = 1u << 2,
    HS_CMD_REPORT = 1u << 3,
    HS_CMD_DIFF = 1u << 4,
    HS_CMD_DTRACE = 1u << 5,
};

typedef struct hs_command {
    const char *name;
    unsigned bit;                 /* HS_CMD_* */
    const char *usage;            /* "run [OPTIONS] [--] TARGET [ARGS...]" */
    const char *args;             /* "TARGET [ARGS...]", for the command list */
    const char *summary;          /* one line */
    const char *description;      /* a paragraph, for `hookscope help NAME` */
    int (*run)(const hs_options *o);
} hs_command;

/* The commands, NULL-terminated; the command named `name`, or NULL. */
extern const hs_command *const hs_commands[];
const hs_command *hs_command_find(const char *name);

int hs_cmd_run(const hs_options *o);
int hs_cmd_attach(const hs_options *o);
int hs_cmd_functions(const hs_options *o);
int hs_cmd_report(const hs_options *o);
int hs_cmd_diff(const hs_options *o);
int hs_cmd_dtrace(const hs_options *o);

#endif
