/*
 * injector/trace/inject.h - load the agent into a process and start it.
 */
#ifndef HOOKSCOPE_INJECT_H
#define HOOKSCOPE_INJECT_H

#include <stdbool.h>
#include <windows.h>

#include "injector/trace/session_host.h"

/* Is `process` a WOW64 one (a 32-bit program, which gets the 32-bit
 * agent)? */
bool hs_is_wow64(HANDLE process);

/* Load hookscope-agent.dll (hookscope-agent32.dll into a WOW64 process;
 * next to hookscope.exe, by its full path) into
 * `process` with a remote LoadLibraryW, hand it the session (handles
 * duplicated into the process), then run its hs_agent_init in a second
 * remote thread; both are waited for. Returns 0, or -1 after printing an
 * error. */
int hs_inject(HANDLE process, hs_session_host *s);

/* Run agent export `name` in a remote thread of `process` and wait for it;
 * *code receives its exit code. Returns 0, or -1 after printing an error. */
int hs_agent_call(HANDLE process, hs_session_host *s, const char *name, DWORD timeout_ms,
                  DWORD *code);

/* FreeLibrary the agent in `process` (after hs_agent_detach). */
int hs_agent_unload(HANDLE process, hs_session_host *s);

/* Is hookscope's agent loaded in `process` already (left by an earlier
 * attach, or serving another hookscope)? 1 with its base and what it says
 * about itself (pub->state HS_PUBLIC_NONE when it cannot say: another
 * build), 0 when not, -1 when the modules cannot be listed. */
int hs_agent_find(HANDLE process, uint64_t *base, hs_agent_public *pub);

/* Have the resident agent at `base` serve session s (handed over as for
 * hs_inject) and hook. Returns 0, or -1 after printing an error. */
int hs_agent_reuse(HANDLE process, hs_session_host *s, uint64_t base);

#endif
