/*
 * tests/unit/time32.h - the 32-bit agent's return probes (agent/time32.S,
 * with the timed counting stubs of hook/engine/count32.h), natively as
 * 32-bit code: hand-written callees of every convention hooked in place,
 * called from threads that each have a TEB (fs) and a region of their
 * own. Built into build/native32 only, with test_hook_exec.
 */
#ifndef HS_TEST_TIME32_H
#define HS_TEST_TIME32_H

#include "hook/engine/hook.h"

/* time32/<case> (tap results; see time32.c) and the measured cost per
 * call (a diagnostic line). */
void time32_run(hs_engine *e);

#endif
