/*
 * sampler/suspend/modules_win.h - the target's loaded modules into the code map.
 */
#ifndef HOOKSCOPE_SAMPLER_MODULES_WIN_H
#define HOOKSCOPE_SAMPLER_MODULES_WIN_H

#include <stdint.h>
#include <windows.h>

#include "sampler/codemap.h"

/* Enumerate the target's modules into m (agent_base: the agent's, to mark
 * it; 0 none). bits: the target's (32: a WOW64 process, whose 32-bit
 * modules are listed). Returns how many, or -1 when the list cannot be
 * read yet (a process that has not finished starting). */
int hs_target_modules(HANDLE process, int bits, hs_codemap *m, uint64_t agent_base);

#endif
