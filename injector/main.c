/*
 * injector/main.c - hookscope.exe: parse the command line and run the
 * command (commands/table.c lists them, one file each).
 */
#include <windows.h>

#include "injector/commands/commands.h"

int wmain(int argc, wchar_t **argv)
{
    /* DLLs come from System32 only, never from hookscope's folder or the
     * current one (an elevated hookscope in a download folder); DbgHelp
     * and winmm are delay-loaded (Makefile: DELAY_DLLS), so this comes
     * before their first load */
    SetDllDirectoryW(L"");
    SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_SYSTEM32);
    hs_options o;
    int rc = hs_parse_cli(argc, argv, &o);
    if (rc >= 0)
        return rc;
    return o.cmd->run(&o);
}
