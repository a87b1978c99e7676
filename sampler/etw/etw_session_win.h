/*
 * sampler/etw/etw_session_win.h - the live ETW layer: a private system-logger session
 * that records the kernel's CPU samples (SampledProfile), context switches
 * (CSwitch) and readied threads (ReadyThread), each with a stack walk,
 * and process, thread and image events into an .etl file, which
 * hookscope's own reader (etl.h) then decodes. Nothing else is live: no
 * real-time consumer, no OpenTrace.
 *
 *   - The session is hookscope's own (EVENT_TRACE_SYSTEM_LOGGER_MODE,
 *     Windows 8+: a name "hookscope-<pid>-<n>-i<interval>" and a fresh
 *     GUID): it never stops, changes or takes over a session it did not
 *     start, the "NT Kernel Logger" included, with one exception below.
 *   - The sampling interval is global to the machine: it is read before
 *     the session starts, recorded in the session's name, set once the
 *     session runs, and put back by hs_etw_stop before the session stops
 *     (and by hs_etw_start itself when a later step fails). So whenever
 *     the interval is hookscope's, a session exists whose name says what
 *     to put back.
 *   - A hookscope killed hard (TerminateProcess, a fail-fast crash, a
 *     debugger) leaves its session running: it keeps sampling the whole
 *     machine, holds one of the few system-logger slots and keeps its
 *     file open. So every start first looks for sessions named
 *     "hookscope-<pid>-..." whose hookscope is gone (no such process, or
 *     a process that is not hookscope.exe), stops them and puts back the
 *     interval the newest one recorded (unless a live hookscope's session
 *     runs: its own stop will), saying so in one line each.
 *   - The .etl file is capped (MaximumFileSize): the session stops
 *     writing it at the cap (hs_etw_file_full tells afterwards).
 *   - A stop is checked (ERROR_MORE_DATA also means stopped) and tried
 *     again by name; a session that does not stop is said, in one line.
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
#include <stdint.h>
#include <windows.h>
#include <evntprov.h>
#include <evntrace.h>

typedef struct hs_etw_api {
    ULONG (WINAPI *start_trace)(TRACEHANDLE *h, LPCWSTR name, EVENT_TRACE_PROPERTIES *p);
    ULONG (WINAPI *control_trace)(TRACEHANDLE h, LPCWSTR name, EVENT_TRACE_PROPERTIES *p, ULONG code);
    ULONG (WINAPI *set_information)(TRACEHANDLE h, int info_class, void *info, ULONG len);
    ULONG (WINAPI *query_information)(TRACEHANDLE h, int info_class, void *info, ULONG len, ULONG *ret);
    /* SeSystemProfilePrivilege: ERROR_SUCCESS, or why it cannot be enabled */
    DWORD (*enable_profile_privilege)(void);
    ULONG (WINAPI *query_all_traces)(EVENT_TRACE_PROPERTIES **props, ULONG count, ULONG *returned);
    ULONG (WINAPI *enable_trace_ex2)(TRACEHANDLE h, LPCGUID provider, ULONG code, UCHAR level, ULONGLONG any,
                                     ULONGLONG all, ULONG timeout, PENABLE_TRACE_PARAMETERS params);
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
    ULONG interval_in_force;     /* as read back after setting it (the kernel may round it), 0 unknown */
    int interval_foreign;        /* at the end it was not what was in force: another tool changed
                                    it during the run (it is then left as that tool set it) */
    ULONG interval_end;          /* as read at the end */
    ULONG max_file_mb;           /* the .etl file's cap */
    wchar_t name[64];
    wchar_t path[MAX_PATH * 2];  /* the .etl file */
    EVENT_TRACE_PROPERTIES *props;
} hs_etw_session;

/* The .etl file's cap in MB (the run's default). */
#define HS_ETW_MAX_FILE_MB 1024

/* Start sampling into the .etl file `path` at rate_hz (the machine's
 * sampling interval is set accordingly), the file capped at max_file_mb;
 * leftover sessions of hookscopes that are gone are stopped first.
 * Returns 0, or -1 with one line in err (nothing left changed: interval
 * restored, no session running). not_available is set when ETW cannot
 * run here at all (no such functions, not implemented, no privilege). */
int hs_etw_start(hs_etw_session *s, const hs_etw_api *api, const wchar_t *path, double rate_hz, ULONG max_file_mb,
                 int *not_available, char *err, size_t errlen);

/* Write the session's buffers to its file now (so far). 0 or a Win32 error. */
ULONG hs_etw_flush(hs_etw_session *s);

/* Put the sampling interval back, then stop the session (its file is
 * complete afterwards): by its handle, and when that fails by its name.
 * 0 when it stopped (or never ran); -1 with one line in err (NULL: not
 * said) when it did not: its file is then still being written. Safe to
 * call more than once, and after a failed start. */
int hs_etw_stop(hs_etw_session *s, char *err, size_t errlen);

/* After the stop: did the file reach its cap (the samples after it are
 * missing)? */
int hs_etw_file_full(const hs_etw_session *s);

/* .NET programs: the names of JIT-compiled code come from the runtime's
 * own events (sampler/etl/clr.c decodes them). In the session, for the
 * process pid only (an EVENT_FILTER_TYPE_PID filter, Windows 8.1+; on a
 * Windows that refuses the filter, for every process, the reader keeping
 * the target's), at level 5 (verbose: the method events with names):
 *   - the runtime provider (Microsoft-Windows-DotNETRuntime,
 *     e13c0d23-ccbc-4e12-931b-d9cc2eee27e4) with HS_ETW_CLR_RUNTIME_KEYWORDS:
 *     LoaderKeyword 0x8 (module loads: each method's assembly, NGen and
 *     ReadyToRun images), JITKeyword 0x10 (MethodLoadVerbose as each method
 *     is compiled), NGenKeyword 0x20 with OverrideAndSuppressNGenEventsKeyword
 *     0x40000 (the images' events without one event per precompiled method);
 *   - the rundown provider (Microsoft-Windows-DotNETRuntimeRundown,
 *     a669021c-c450-4609-a035-5af59af4df18) with HS_ETW_CLR_RUNDOWN_START:
 *     Loader 0x8, Jit 0x10, NGen 0x20 and StartRundownKeyword 0x40, so that a
 *     runtime already running (attach) lists the methods it compiled before
 *     (MethodDCStartVerbose).
 * Returns 0, or the first Win32 error (the samples are then unnamed in
 * JIT-compiled code; sampling goes on). */
#define HS_ETW_CLR_RUNTIME_KEYWORDS 0x40038ull
#define HS_ETW_CLR_RUNDOWN_START 0x78ull
#define HS_ETW_CLR_RUNDOWN_END 0x138ull
ULONG hs_etw_enable_clr(hs_etw_session *s, uint32_t pid);

/* Before the stop, while the process still runs: the rundown provider
 * enabled again with HS_ETW_CLR_RUNDOWN_END (EndRundownKeyword 0x100):
 * its runtime lists the methods it holds now (MethodDCEndVerbose), those
 * compiled before the session's start included. The events come from
 * the process, a moment later: the caller waits before it stops the
 * session. 0 or a Win32 error. */
ULONG hs_etw_clr_end_rundown(hs_etw_session *s, uint32_t pid);

/* Stop the sessions of hookscopes that are gone (above); returns how many
 * were stopped. hs_etw_start calls it; exposed for the tests. */
int hs_etw_clean_leftovers(const hs_etw_api *api);

/* The ETW constants the layer uses (evntrace.h names them for Windows 8+). */
#define HS_ETW_INFO_STACK_TRACING 3      /* TraceStackTracingInfo */
#define HS_ETW_INFO_PROFILE_INTERVAL 5   /* TraceSampledProfileIntervalInfo */
#define HS_ETW_CONTROL_FLUSH 3           /* EVENT_TRACE_CONTROL_FLUSH */

#endif
