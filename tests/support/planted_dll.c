/*
 * tests/support/planted_dll.c - a DLL planted beside hookscope.exe under
 * the name of a system DLL that is not a KnownDLL (dbghelp.dll,
 * winmm.dll), as in a download folder: when it is loaded it appends its
 * name to the file HS_PLANTED_LOG names (tests/test_dll_search.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

BOOL WINAPI DllMain(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
    (void)reserved;
    if (reason == DLL_PROCESS_ATTACH) {
        char name[MAX_PATH] = "?";
        GetModuleFileNameA(inst, name, MAX_PATH);
        const char *log = getenv("HS_PLANTED_LOG");
        FILE *f = log && *log ? fopen(log, "a") : NULL;
        if (f) {
            fprintf(f, "loaded %s\n", name);
            fclose(f);
        }
    }
    return TRUE;
}
