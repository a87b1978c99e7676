/*
 * injector/trace/fnservice.h - the function service: while a trace runs, a
 * thread of hookscope.exe answers the agent's requests for the functions
 * of a module it is about to hook (hookscope/session.h, hs_fn_entry): the
 * module's symbols are read here (symbols/modsyms.h: PDBs included; the
 * agent never parses one), the -f/-x filters are applied to the names the
 * reports will show, and the list goes back through the session.
 *
 * Made before the session (hs_fnservice_new), so that the exe's list can
 * be made while the target is created and a 32-bit target's session sized by
 * it (hs_fnservice_exe_functions); serving from before the agent is
 * injected (it asks while it hooks the first modules) to the end of the
 * trace. A request that finds no service is answered by the agent itself
 * from the image.
 */
#ifndef HOOKSCOPE_FNSERVICE_H
#define HOOKSCOPE_FNSERVICE_H

#include <stdint.h>
#include <wchar.h>

#include "injector/trace/config.h"
#include "injector/trace/session_host.h"

typedef struct hs_fnservice hs_fnservice;

/* The service for a trace configured by o, not serving yet. NULL (after
 * printing why) when it cannot be made. */
hs_fnservice *hs_fnservice_new(const hs_trace_config *o);
/* Make the list of the exe's functions now, while the target starts (as
 * large as --max-functions allows): the agent's request for it is then
 * answered with a copy, when the module it names is that file still. */
void hs_fnservice_prefetch(hs_fnservice *svc, const wchar_t *exe);
/* The functions (fragments aside) of the list hs_fnservice_prefetch
 * makes, once it is made (this waits for it): the function records the
 * exe takes in the session. -1 when there is no such list. */
long hs_fnservice_exe_functions(hs_fnservice *svc);
/* Serve the requests of session s (its events). Returns 0, or -1 after
 * printing why. */
int hs_fnservice_serve(hs_fnservice *svc, hs_session_host *s);
void hs_fnservice_stop(hs_fnservice *svc);

#endif
