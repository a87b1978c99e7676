/*
 * burndll: a DLL that burnlate.exe loads with LoadLibraryW after main has
 * started, burns CPU in, and unloads: dll_burn(ms) runs a dependent
 * multiply-add loop in its own body for about ms milliseconds.
 * Built as build/tests/burndll.dll (tests/targets/targets.mk).
 */
#include <windows.h>

static volatile unsigned long long sink;

__declspec(dllexport) __attribute__((noinline)) unsigned long long dll_burn(int ms)
{
    LARGE_INTEGER f, t0, t;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&t0);
    unsigned long long x = sink;
    do {
        for (int i = 0; i < 20000; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        QueryPerformanceCounter(&t);
    } while ((t.QuadPart - t0.QuadPart) * 1000 < (LONGLONG)ms * f.QuadPart);
    sink = x;
    return x;
}
