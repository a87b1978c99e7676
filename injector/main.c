/*
 * injector/main.c - hookscope.exe: dispatch to the subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "util.h"

int wmain(int argc, wchar_t **argv)
{
    hs_options o;
    int rc = hs_parse_cli(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (!strcmp(o.command, "run"))
        return hs_cmd_run(&o);
    if (!strcmp(o.command, "attach"))
        return hs_cmd_attach(&o);
    return hs_cmd_functions(&o);
}
