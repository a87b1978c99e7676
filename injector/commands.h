/*
 * injector/commands.h - one function per subcommand.
 */
#ifndef HOOKSCOPE_COMMANDS_H
#define HOOKSCOPE_COMMANDS_H

#include "cli.h"

int hs_cmd_run(const hs_options *o);
int hs_cmd_attach(const hs_options *o);
int hs_cmd_functions(const hs_options *o);

#endif
