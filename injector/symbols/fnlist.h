/*
 * injector/symbols/fnlist.h - the functions of one module as the agent is
 * to hook them (the function service's answer, hookscope/session.h's
 * hs_fn_entry): every function the module's symbols know (modsyms.h:
 * .pdata, exports, COFF symbols, the PDB's procedures with their exact
 * extents), which of them the -f/-x filters keep (matched against the
 * very names the reports show), and which are named like setjmp or
 * __chkstk (hook/names.h).
 */
#ifndef HOOKSCOPE_FNLIST_H
#define HOOKSCOPE_FNLIST_H

#include <stddef.h>

#include "hook/engine/filter.h"
#include "hookscope/session.h"
#include "injector/symbols/modsyms.h"

/* Fill out[0..cap) for module `modname` (its file name); flt may be NULL
 * (every function kept); flt->matched gets the patterns that matched.
 * Returns the number of entries, or -1 when they do not fit in cap. */
long hs_fnlist_build(hs_modsyms *t, hs_filter *flt, const char *modname, hs_fn_entry *out, size_t cap);

#endif
