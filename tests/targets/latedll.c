/*
 * latedll: a DLL that lateload.exe loads with LoadLibraryW after main has
 * started (it is not linked to any exe). Three exported functions with
 * known call counts; dll_poly calls the other two internally (noipa: no
 * inlining, no clones, so every call enters the exported function).
 * Built as build/tests/latedll.dll (tests/targets/targets.mk).
 */
#define LATE_API __declspec(dllexport) __attribute__((noipa))

LATE_API long long dll_add(long long a, long long b)
{
    return a + b;
}

LATE_API long long dll_mul(long long a, long long b)
{
    return a * b;
}

/* x*x + 3*x: two calls of dll_mul, one of dll_add */
LATE_API long long dll_poly(long long x)
{
    return dll_add(dll_mul(x, x), dll_mul(3, x));
}
