/*
 * burnlate: CPU spent in a DLL loaded and unloaded during the run. main
 * burns about 0.3 s in exe_burn(), loads burndll.dll, burns about 0.6 s in
 * its dll_burn(), unloads it (and checks that it is gone), then burns
 * about 0.3 s in exe_burn() again. Prints "dll gone 1" and exits 0 (1 if
 * the DLL could not be loaded or stayed loaded).
 */
#include <stdio.h>
#include <windows.h>

#include "burnms.h"

static volatile unsigned long long sink;

__attribute__((noinline)) void exe_burn(int ms)
{
    unsigned long long x = burn_ms(ms, sink, 20000);
    sink = x;
}

int main(void)
{
    exe_burn(300);
    HMODULE m = LoadLibraryW(L"burndll.dll");
    if (!m) {
        printf("cannot load burndll.dll (%lu)\n", GetLastError());
        return 1;
    }
    unsigned long long (*burn)(int) = (unsigned long long (*)(int))(void (*)(void))GetProcAddress(m, "dll_burn");
    if (!burn)
        return 1;
    sink += burn(600);
    FreeLibrary(m);
    int gone = GetModuleHandleW(L"burndll.dll") == NULL;
    exe_burn(300);
    printf("dll gone %d\n", gone);
    return gone ? 0 : 1;
}
