/*
 * exports32.c - a 32-bit (i686) DLL, built as exports32.dll and, linked
 * stripped (no COFF symbols), as exports32s.dll: what names the latter's
 * functions is its export table, with the names as the linker exports
 * each calling convention.
 *
 *   dll_cdecl      exported as "dll_cdecl"
 *   dll_stdcall    exported as "dll_stdcall@12" (12 bytes of arguments)
 *   dll_fastcall   exported as "@dll_fastcall@8"
 *   _underscored   exported as "_underscored": the underscore is the name's
 *
 * tests/test_wow64.py reads it with `hookscope functions`.
 */
#define EXPORT __declspec(dllexport)

EXPORT int dll_cdecl(int a)
{
    return a * 3;
}

EXPORT int __attribute__((stdcall)) dll_stdcall(int a, int b, int c)
{
    return a * b - c;
}

EXPORT int __attribute__((fastcall)) dll_fastcall(int a, int b)
{
    return a ^ b;
}

EXPORT int _underscored(int a)
{
    return a + 1;
}
