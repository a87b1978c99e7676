/*
 * hook/engine/names.c - see names.h.
 */
#include "hook/engine/names.h"

#include <string.h>

static int listed(const char *n, const char *const *names, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(n, names[i]) == 0)
            return 1;
    return 0;
}

int hs_name_returns_twice(const char *n)
{
    static const char *const names[] = {
        "setjmp", "_setjmp", "_setjmpex", "_setjmp3", "__mingw_setjmp", "__intrinsic_setjmp",
        "__intrinsic_setjmpex", "sigsetjmp", "__sigsetjmp", "_sigsetjmp", "vfork", "getcontext",
    };
    return n && listed(n, names, sizeof names / sizeof *names);
}

int hs_name_stack_probe(const char *n)
{
    static const char *const names[] = {
        "__chkstk", "___chkstk_ms", "__chkstk_ms", "_chkstk", "_alloca", "__alloca", "_alloca_probe",
        "__alloca_probe", "_alloca_probe_16", "_alloca_probe_8",
    };
    return n && listed(n, names, sizeof names / sizeof *names);
}
