/*
 * injector/symbols/undecorate_posix.c - MSVC names on a native (Linux)
 * build: there is no MSVC undecorator outside DbgHelp, so names stay
 * decorated (hs_undecorate_msvc returns NULL, as undecorate.h says). Only
 * native tests and tools use this file; hookscope.exe uses
 * undecorate_win.c.
 */
#include <stddef.h>

#include "injector/symbols/undecorate.h"

char *hs_undecorate_msvc(const char *name, int form)
{
    (void)name;
    (void)form;
    return NULL;
}
