/*
 * injector/trace/outcome.h - how the target ended: a crash or an exit, decided
 * from what the agent saw inside it (agent/exitwatch.c), not from the exit
 * code alone.
 */
#ifndef HOOKSCOPE_TRACE_ENDING_H
#define HOOKSCOPE_TRACE_ENDING_H

#include <stdint.h>

#include "hookscope/session.h"
#include "injector/profile/profile.h"

/* The target ended by itself with `exit_code`: set r->stop to
 * HS_STOP_CRASH or HS_STOP_EXIT, and for a crash r->crash_code,
 * r->crash_address and r->crash_what. `h` may be NULL (no agent): then
 * an exit code that is an NTSTATUS error is taken for a crash. */
void hs_ending_decide(const hs_session_header *h, uint32_t exit_code, hs_profile *r);

#endif
