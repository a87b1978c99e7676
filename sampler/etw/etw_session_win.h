/*
 * sampler/etw/etw_session_win.h - the live ETW layer: a private system-logger session
 * that records the kernel's CPU samples (SampledProfile), context switches
 * (CSwitch) and readied threads (ReadyThread), each with a stack walk,
 * and process, thread and image events into an .etl file, which
 * hookscope's own reader (etl.h) then decodes. Nothing else is live: no
 * real-time consumer, no OpenTrace.
 *
 *   - The session is hookscope's own (EVENT_TRACE_SYSTEM_LOGGER_MODE,
 *     Windows 8+: a name "hookscope-<pid>-<n>" and a fresh GUID): it never
 *     stops, changes or takes over a session it did not start, the "NT
 *     Kernel Logger" included.
 *   - The sampling interval is global to the machine: it is read before,
 *     set for the run, and put back by hs_etw_stop (which every way out of
 *     a run calls) and by hs_etw_start itself when a later step fails.
 *   - SeSystemProfilePrivilege is enabled first; when that fails, one line
 *     says so (an elevated hookscope is needed).
 *
 * Every system call goes through a table of function pointers
 * (hs_etw_api), so that a test can run this layer against a fake that
 * records the calls and writes a synthetic trace. The real table binds
 * the ETW functions at first use (they are Windows 8+; on Wine they do
 * not work: the layer then says in one line that ETW is not available).
 */
#ifndef HOOKSCOPE_ETW_WIN_H
#define HOOKSCOPE_ETW_WIN_H

#include <stddef.h>
#include <windows.h>
#include <evntrace.h>

typedef struct hs_etw_api {
    ULONG (WINAPI *start_trace)(TRACEHANDLE *h, LPCWSTR name, EVENT_TRACE_PROPERTIES *p);
    ULONG (WINAPI *control_trace)(TRACEHANDLE h, LPCWSTR name, EVENT_TRACE_PROPERTIES *p, ULONG code);
    ULONG (WINAPI *set_information)(TRACEHANDLE h, int info_class, void *info, ULONG len);
    ULONG (WINAPI *query_information)(TRACEHANDLE h, int info_class, void *info, ULONG len, ULONG *ret);
    /* SeSystemProfilePrivilege: ERROR_SUCCESS, or why it cannot be enabled */
    DWORD (*enable_profile_privilege)(void);
} hs_etw_api;

/* The system's ETW functions (bound at first use; an entry is NULL when
 * this Windows has no such function). */
const hs_etw_api *hs_etw_system_api(void);

typedef struct hs_etw_session {
    const hs_etw_api *api;
    TRACEHANDLE handle;
    int started;                 /* the session runs: hs_etw_stop stops it */
    int interval_changed;        /* the global interval was set: hs_etw_stop puts it back */
    ULONG old_interval;          /* 100 ns units, as read before */
    ULONG interval;              /* as set for the run */
    wchar_t name[64];
    wchar_t path[MAX_PATH * 2];  /* the .etl file */
    EVENT_TRACE_PROPERTIES *props;
} hs_etw_session;

/* Start sampling into the .etl file `path` at rate_hz (the machine's
 * sampling interval is set accordingly). Returns 0, or -1 with one line in
 * err (nothing left changed: interval restored, no session running).
 * not_available is set when ETW cannot run here at all (no such
 * functions, not implemented, no privilege): `--sampler auto` then falls
 * back to the suspend sampler. */
int hs_etw_start(hs_etw_session *s, const hs_etw_api *api, const wchar_t *path, double rate_hz,
                 int *not_available, char *err, size_t errlen);

/* Stop the session (its file is complete afterwards) and put the sampling
 * interval back. Safe to call more than once, and after a failed start. */
void hs_etw_stop(hs_etw_session *s);

/* The ETW constants the layer uses (evntrace.h names them for Windows 8+). */
#define HS_ETW_INFO_STACK_TRACING 3      /* TraceStackTracingInfo */
#define HS_ETW_INFO_PROFILE_INTERVAL 5   /* TraceSampledProfileIntervalInfo */

#endif
