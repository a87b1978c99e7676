/*
 * injector/trace/outcome.c - crash or exit (see ending.h).
 *
 * What the agent notes (session.h, end_*): an exception that reached the
 * unhandled-exception filter and was not repaired there; abort() of the C
 * runtime; the process's own request to end (NtTerminateProcess); a last
 * thread that vanished without either (Wine, stack overflow). In that
 * order of precedence: a crash also ends with a request to end, after
 * the exception was noted. With the exit detour in place and none of
 * these noted, the process did not end itself: something outside ended
 * it, or a fault that runs no handler (a fast fail on Windows) did; that
 * is reported as a crash too.
 */
#include "injector/trace/outcome.h"

#include <stdlib.h>

#include "hook/base/util.h"

#define STATUS_STACK_BUFFER_OVERRUN_CODE 0xC0000409u
#define STATUS_CONTROL_C_EXIT_CODE 0xC000013Au   /* Ctrl+C: an ending, not a crash */

void hs_ending_decide(const hs_session_header *h, uint32_t exit_code, hs_profile *r)
{
    uint32_t seen = h ? h->end_seen : 0, watch = h ? h->end_watch : 0;
    const char *what = NULL;
    r->stop = HS_STOP_EXIT;
    if (seen & HS_END_UNHANDLED) {
        r->crash_code = h->end_code;
        r->crash_address = h->end_addr;
        what = hs_crash_name(h->end_code);
        if (!what)
            what = "unhandled exception";
    } else if (seen & HS_END_ABORT) {
        r->crash_code = exit_code;
        what = "abort(): an uncaught C++ exception or a failed assertion";
    } else if (seen & HS_END_VANISHED) {
        r->crash_code = exit_code;
        what = "its last thread died without exiting (under Wine: a stack overflow with no room to report it)";
    } else if (seen & HS_END_EXIT) {
        return;
    } else if (watch & HS_END_WATCH_EXIT) {
        r->crash_code = exit_code;
        what = exit_code == STATUS_STACK_BUFFER_OVERRUN_CODE
                   ? "fast fail (stack buffer overrun): no handler ran"
                   : "it ended without exiting: killed by another process, or a fault no handler saw";
    } else if (hs_crash_name(exit_code) && (exit_code & 0xC0000000u) == 0xC0000000u &&
               exit_code != STATUS_CONTROL_C_EXIT_CODE) {
        /* no agent to ask: the exit code is all there is */
        r->crash_code = exit_code;
        what = hs_crash_name(exit_code);
    } else {
        return;
    }
    r->stop = HS_STOP_CRASH;
    r->crash_what = hs_xstrdup(what);
}
