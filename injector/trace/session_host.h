/*
 * injector/trace/session_host.h - the injector owns the session: it creates
 * the section for a pid (no name; a DACL that admits only hookscope's own
 * user), lays it out, writes the configuration, keeps its view until the
 * reports are written, and hands the section and the function service's
 * events to the agent as handles duplicated into the target.
 *
 * The layout and configuration it wrote are kept here too (`layout`):
 * hookscope never reads them back from the section, which the target can
 * write. Everything the agent wrote is read through
 * injector/profile/from_session.h (hs_session_host_src).
 */
#ifndef HOOKSCOPE_SESSION_HOST_H
#define HOOKSCOPE_SESSION_HOST_H

#include <windows.h>

#include "hookscope/session.h"
#include "injector/profile/from_session.h"
#include "injector/trace/config.h"

typedef struct hs_session_host {
    HANDLE mapping;
    void *view;
    hs_session_header *hdr;     /* the view's header: only ever written through (by the injector) */
    hs_session_header layout;   /* hookscope's own copy of the layout and configuration */
    HANDLE fn_request, fn_answer; /* the function service's events (auto-reset) */
    uint64_t agent_base;        /* the agent in the target, from the target's module list */
} hs_session_host;

/* Create the session for process `pid`; `functions`: the function
 * records the program will take, when known (-1 if not), by which a
 * 32-bit target's session is sized. Returns 0, or -1 after printing an
 * error. */
int hs_session_create(hs_session_host *s, DWORD pid, const hs_trace_config *o, uint32_t options, long functions);
/* Map the session an agent in `process` serves (its section handle there
 * is `handle`, from the agent's hs_agent_public), whose agent is at
 * agent_base: to take out the hooks of a hookscope that ended without
 * detaching. Returns 0 or -1 (nothing printed). Only layout-free fields of
 * it are used (the calls into the agent). */
int hs_session_open(hs_session_host *s, HANDLE process, uint64_t handle, uint64_t agent_base);
void hs_session_close(hs_session_host *s);

/* Duplicate the section and the function service's events into `process`
 * (the events' handles there written into the header); *section gets the
 * section's handle there, for hs_agent_init or hs_agent_reattach. Returns
 * 0, or -1 after printing why. */
int hs_session_hand_over(hs_session_host *s, HANDLE process, uint64_t *section);

/* The session as from_session.h reads it. */
hs_session_src hs_session_host_src(const hs_session_host *s);
/* The header as the view has it now (hs_session_header_copy). */
void hs_session_host_header(const hs_session_host *s, hs_session_header *out);

/* Commit [p, p + len) of the view (to write the function service's list
 * there). 1 if it could, else 0. */
int hs_session_commit_ok(void *p, uint64_t len);

#endif
