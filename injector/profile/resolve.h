/*
 * injector/profile/resolve.h - the profile's one naming pass: every
 * function found in a traced module gets its name, and every raw address
 * (edge call sites, stack frames) becomes a location: a function of a
 * traced module, a function of another module named from its file (added
 * to the profile), a module and offset, or a bare address. Frames in
 * hookscope's own agent are dropped. Names come from the modules' symbol
 * tables (symbols/symtab.h), each opened once.
 */
#ifndef HOOKSCOPE_RESOLVE_H
#define HOOKSCOPE_RESOLVE_H

#include "injector/profile/profile.h"
#include "injector/symbols/modsyms.h"

/* Name and resolve a collected profile; then merge its edges. Problems
 * with module files and their debug information become warnings of the
 * profile. conf (may be NULL) says where else to look for PDBs. */
void hs_profile_resolve(hs_profile *p, const hs_symconf *conf);

#endif
