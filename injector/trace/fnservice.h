/*
 * injector/trace/fnservice.h - the function service: while a trace runs, a
 * thread of hookscope.exe answers the agent's requests for the functions
 * of a module it is about to hook (hookscope/session.h, hs_fn_entry): the
 * module's symbols are read here (symbols/modsyms.h: PDBs included; the
 * agent never parses one), the -f/-x filters are applied to the names the
 * reports will show, and the list goes back through the session.
 *
 * Started before the agent is injected (it asks while it hooks the first
 * modules) and stopped when the trace ends; a request that finds no
 * service is answered by the agent itself from the image.
 */
#ifndef HOOKSCOPE_FNSERVICE_H
#define HOOKSCOPE_FNSERVICE_H

#include <stdint.h>
#include <wchar.h>

#include "injector/trace/config.h"
#include "injector/trace/session_host.h"

typedef struct hs_fnservice hs_fnservice;

/* Serve the requests of session s (its events). NULL (after printing
 * why) when the service cannot start. */
hs_fnservice *hs_fnservice_start(hs_session_host *s, const hs_trace_config *o);
/* Make the list of the exe's functions now, while the target starts: the
 * agent's request for it is then answered with a copy, when the module it
 * names is that file still. */
void hs_fnservice_prefetch(hs_fnservice *svc, const wchar_t *exe);
void hs_fnservice_stop(hs_fnservice *svc);

#endif
