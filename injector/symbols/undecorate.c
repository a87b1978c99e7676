/*
 * injector/symbols/undecorate.c - see undecorate.h.
 */
#include "symbols/undecorate.h"

#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <windows.h>
#include <dbghelp.h>
#endif

#include "base/util.h"

/* from the C++ runtime (libstdc++) */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *hs_undecorate(const char *name)
{
    if (name[0] == '_' && name[1] == 'Z') {
        int status = 0;
        char *d = __cxa_demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
            char *r = hs_xstrdup(d);
            free(d);
            return r;
        }
        free(d);
    }
#ifdef _WIN32
    else if (name[0] == '?') {
        char buf[2048];
        if (UnDecorateSymbolName(name, buf, sizeof buf, UNDNAME_NAME_ONLY) && buf[0])
            return hs_xstrdup(buf);
    }
#endif
    return hs_xstrdup(name);
}
