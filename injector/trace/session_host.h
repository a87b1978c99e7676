/*
 * injector/trace/session_host.h - the injector owns the session: it creates the
 * named section for a pid, lays it out, writes the configuration, and
 * keeps its view until the reports are written.
 */
#ifndef HOOKSCOPE_SESSION_HOST_H
#define HOOKSCOPE_SESSION_HOST_H

#include <windows.h>

#include "commands/options.h"
#include "hookscope/session.h"

typedef struct hs_session_host {
    HANDLE mapping;
    void *view;
    hs_session_header *hdr;
} hs_session_host;

/* Returns 0, or -1 after printing an error. */
int hs_session_create(hs_session_host *s, DWORD pid, const hs_options *o, uint32_t options);
void hs_session_close(hs_session_host *s);

#endif
