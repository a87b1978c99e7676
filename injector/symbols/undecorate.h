/*
 * injector/symbols/undecorate.h - C++ names as people read them.
 *
 *   Itanium (`_Z...`, what gcc and clang for mingw emit): the C++ runtime's
 *   __cxa_demangle, full form with parameters (`ns::f(int) const`);
 *   gcc clone suffixes stay (`_Z1fi.constprop.0` -> `f(int) [clone
 *   .constprop.0]`, the demangler's own form). Portable.
 *   MSVC (`?name@@...`, what cl and clang for the msvc target emit): DbgHelp's
 *   UnDecorateSymbolName, on Windows only (undecorate_win.c). The native
 *   (Linux) build has no MSVC undecorator: there the function returns NULL
 *   and names stay decorated; tests check the Windows build against
 *   llvm-undname under Wine.
 *
 * Forms:
 *   HS_UND_FULL  the signature without access, calling convention or return
 *                type: `ns::Counter::add<int>(int)`, `f(int) const`
 *   HS_UND_NAME  the qualified name only: `ns::Counter::add<int>`, the form
 *                of a PDB procedure's name
 */
#ifndef HOOKSCOPE_UNDECORATE_H
#define HOOKSCOPE_UNDECORATE_H

enum { HS_UND_FULL = 0, HS_UND_NAME = 1 };

/* Returns a malloc'd undecorated name, or NULL when name is not decorated
 * or cannot be undecorated here. */
char *hs_undecorate_sym(const char *name, int form);

/* A name of an i386 image (PE32): its C decoration taken off, then as
 * hs_undecorate_sym. A COFF symbol carries the object file's decoration:
 * `_f` (cdecl), `_f@12` (stdcall, 12 bytes of arguments), `@f@8`
 * (fastcall), `f@@8` (vectorcall), `__Z...` (Itanium C++, one more
 * underscore); an export carries only what the linker kept (`f@12`; a
 * leading underscore there is the name's own, as msvcrt's `_open`), so
 * only `@N` (and fastcall's `@`) comes off. `?f@@...` (MSVC C++) has no C decoration. Returns
 * a malloc'd name, or NULL when name has no decoration. */
char *hs_undecorate_sym32(const char *name, int form, int is_coff);

/* The two parts (hs_undecorate_sym picks by the first characters). */
char *hs_undecorate_itanium(const char *name, int form);
char *hs_undecorate_msvc(const char *name, int form);

#endif
