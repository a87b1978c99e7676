/*
 * dlluser32.c - a 32-bit (i686) test program that loads exports32.dll
 * (next to it in build/tests32) and calls each of its functions through
 * GetProcAddress, by the names the linker exported for each convention:
 * `-m exports32.dll` hooks the DLL's functions, and their callers are
 * call_exports here.
 *
 * Calls (exact): main 1, call_exports 1, dll_cdecl 11, dll_stdcall 12,
 * dll_fastcall 13, _underscored 14
 *
 * Edges (exact): main->call_exports 1, call_exports->dll_cdecl 11,
 * call_exports->dll_stdcall 12, call_exports->dll_fastcall 13,
 * call_exports->_underscored 14
 *
 * Output (exact, checked by tests/test_wow64_hard.py), exit code 0, no args:
 *   dll_cdecl 165 dll_stdcall 482 dll_fastcall 11 _underscored 105
 */
#include <stdio.h>
#include <windows.h>

#define NOINLINE __attribute__((noinline, noclone))

typedef int (*cdecl_fn)(int);
typedef int(__attribute__((stdcall)) *stdcall_fn)(int, int, int);
typedef int(__attribute__((fastcall)) *fastcall_fn)(int, int);

NOINLINE int call_exports(HMODULE dll)
{
    cdecl_fn cd = (cdecl_fn)(void *)GetProcAddress(dll, "dll_cdecl");
    stdcall_fn sd = (stdcall_fn)(void *)GetProcAddress(dll, "dll_stdcall@12");
    fastcall_fn fc = (fastcall_fn)(void *)GetProcAddress(dll, "@dll_fastcall@8");
    cdecl_fn us = (cdecl_fn)(void *)GetProcAddress(dll, "_underscored");
    if (!cd || !sd || !fc || !us)
        return 1;
    int a = 0, b = 0, c = 0, d = 0;
    for (int i = 0; i < 11; i++)
        a += cd(i);
    for (int i = 0; i < 12; i++)
        b += sd(i, i, 2);
    for (int i = 0; i < 13; i++)
        c ^= fc(i, 7);
    for (int i = 0; i < 14; i++)
        d += us(i);
    printf("dll_cdecl %d dll_stdcall %d dll_fastcall %d _underscored %d\n", a, b, c, d);
    return 0;
}

int main(void)
{
    HMODULE dll = LoadLibraryA("exports32.dll");
    if (!dll)
        return 2;
    return call_exports(dll);
}
