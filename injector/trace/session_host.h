/*
 * injector/trace/session_host.h - the injector owns the session: it creates the
 * named section for a pid, lays it out, writes the configuration, and
 * keeps its view until the reports are written.
 */
#ifndef HOOKSCOPE_SESSION_HOST_H
#define HOOKSCOPE_SESSION_HOST_H

#include <windows.h>

#include "hookscope/session.h"
#include "injector/trace/config.h"

typedef struct hs_session_host {
    HANDLE mapping;
    void *view;
    hs_session_header *hdr;
    wchar_t name[64];          /* the section's name */
} hs_session_host;

/* Create the session under the name an agent loaded into `pid` finds it
 * by. Returns 0, or -1 after printing an error. */
int hs_session_create(hs_session_host *s, DWORD pid, const hs_trace_config *o, uint32_t options);
/* The same under a name of its own, for an agent that is already loaded
 * and is told the name (hs_agent_reuse). */
int hs_session_create_unique(hs_session_host *s, DWORD pid, const hs_trace_config *o, uint32_t options);
/* Map an existing session (one an agent still serves). Returns 0 or -1
 * (nothing printed). */
int hs_session_open(hs_session_host *s, const wchar_t *name);
void hs_session_close(hs_session_host *s);

/* Make our view of [p, p + len) readable: the agent commits the session's
 * tables as they fill (committing in our view too is harmless, and covers
 * systems where the commit state is per view). _ok: whether it could. */
void hs_session_commit(void *p, uint64_t len);
int hs_session_commit_ok(void *p, uint64_t len);

#endif
