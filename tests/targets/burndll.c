/*
 * burndll: a DLL that burnlate.exe loads with LoadLibraryW after main has
 * started, burns CPU in, and unloads: dll_burn(ms) runs a dependent
 * multiply-add loop in its own body for about ms milliseconds.
 * Built as build/tests/burndll.dll (tests/targets/targets.mk).
 */
#include <windows.h>

#include "burnms.h"

static volatile unsigned long long sink;

__declspec(dllexport) __attribute__((noinline)) unsigned long long dll_burn(int ms)
{
    unsigned long long x = burn_ms(ms, sink, 20000);
    sink = x;
    return x;
}
