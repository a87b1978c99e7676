/*
 * injector/trace/checks.h - what the user asked for against what the
 * target has: -m modules that are not loaded, function filters that match
 * nothing (with the nearest names, or the -m a "module!glob" needs), and
 * filters that leave nothing to hook. Checked right after hooking (when
 * every -m module is loaded, a filter that matched nothing never will)
 * and again at the end.
 */
#ifndef HOOKSCOPE_CHECKS_H
#define HOOKSCOPE_CHECKS_H

#include <stdint.h>

#include "injector/profile/profile.h"
#include "injector/trace/config.h"

/* After hooking: say which -m modules are not loaded yet (they are traced
 * if they load later; not with -q); if all are loaded, a filter that matched nothing or
 * filters that exclude every function are errors. `p` holds the modules
 * and the named functions found so far. Returns -1 after printing an
 * error, else 0. */
int hs_check_at_start(const hs_trace_config *o, const hs_profile *p, uint32_t modules_matched,
                      uint32_t filters_matched, int attach);

/* At the end: -m modules never loaded (a warning: the target still ran)
 * and filters that matched nothing (an error: returns -1 after printing). */
int hs_check_at_end(const hs_trace_config *o, const hs_profile *p, uint32_t modules_matched,
                    uint32_t filters_matched);

#endif
