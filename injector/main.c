/*
 * injector/main.c - hookscope.exe: parse the command line and run the
 * command (commands/table.c lists them, one file each).
 */
#include "injector/commands/commands.h"

int wmain(int argc, wchar_t **argv)
{
    hs_options o;
    int rc = hs_parse_cli(argc, argv, &o);
    if (rc >= 0)
        return rc;
    return o.cmd->run(&o);
}
