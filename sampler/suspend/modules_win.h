/*
 * sampler/suspend/modules_win.h - the target's loaded modules into the code map.
 */
#ifndef HOOKSCOPE_SAMPLER_MODULES_WIN_H
#define HOOKSCOPE_SAMPLER_MODULES_WIN_H

#include <stdbool.h>
#include <stdint.h>
#include <windows.h>

#include "sampler/codemap.h"

/* Enumerate the target's modules into m (agent_base: the agent's, to mark
 * it; 0 none). bits: the target's (32: a WOW64 process, whose 32-bit
 * modules are listed). Returns how many, or -1 when the list cannot be
 * read yet (a process that has not finished starting). */
int hs_target_modules(HANDLE process, int bits, hs_codemap *m, uint64_t agent_base);

/* One module of the target into m, listed by its loader list or by the
 * hooks' session (path: UTF-8, as the target names it): for a 32-bit
 * target (bits 32) under the name of the file hookscope reads for it,
 * and with its call-frame information. */
void hs_target_module_add(hs_codemap *m, int bits, uint64_t base, uint32_t size, const char *path, bool agent);

#endif
