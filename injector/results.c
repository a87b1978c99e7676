/*
 * injector/results.c - helpers for hs_results (see results.h).
 */
#include "results.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

void hs_results_warn(hs_results *r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->warnings = hs_xrealloc(r->warnings, (r->nwarnings + 1) * sizeof *r->warnings);
    r->warnings[r->nwarnings++] = hs_xstrdup(buf);
}

const char *hs_crash_name(uint32_t code)
{
    switch (code) {
    case 0xC0000005: return "access violation";
    case 0xC00000FD: return "stack overflow";
    case 0xC000001D: return "illegal instruction";
    case 0xC0000094: return "integer divide by zero";
    case 0xC0000095: return "integer overflow";
    case 0xC0000096: return "privileged instruction";
    case 0xC000008C: return "array bounds exceeded";
    case 0xC000008E: return "float divide by zero";
    case 0xC0000409: return "stack buffer overrun";
    case 0xC0000374: return "heap corruption";
    case 0xC0000006: return "in-page error";
    case 0xC0000025: return "noncontinuable exception";
    case 0xC0000026: return "invalid disposition";
    case 0x80000003: return "breakpoint";
    case 0x80000004: return "single step";
    case 0xE06D7363: return "unhandled C++ exception";
    case 0xC0000420: return "assertion failure";
    }
    if ((code & 0xF0000000u) == 0xC0000000u)
        return "unhandled exception";
    return NULL;
}
