/*
 * sampler/etw/etw_session_win.c - the live ETW layer (see etw_session_win.h).
 */
#include "sampler/etw/etw_session_win.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "hook/base/util.h"

/* The classic providers of the events whose stacks the kernel walks:
 * PerfInfo's SampledProfile (type 46), Thread's CSwitch (36) and
 * ReadyThread (50) ("CSwitch class", "ReadyThread class"). */
static const GUID perfinfo_guid = { 0xce1dbfb4, 0x137e, 0x4da6, { 0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc } };
static const GUID thread_guid = { 0x3d6fa8d1, 0xfe05, 0x11d0, { 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c } };
#define SAMPLED_PROFILE_TYPE 46
#define CSWITCH_TYPE 36
#define READY_THREAD_TYPE 50

typedef struct profile_interval {   /* TRACE_PROFILE_INTERVAL */
    ULONG source;                   /* 0: the timer */
    ULONG interval;                 /* 100 ns units */
} profile_interval;

typedef struct classic_event_id {   /* CLASSIC_EVENT_ID */
    GUID guid;
    UCHAR type;
    UCHAR reserved[7];
} classic_event_id;

static const char *why(ULONG rc)
{
    switch (rc) {
    case ERROR_ACCESS_DENIED: return "access denied (run hookscope elevated)";
    case ERROR_NO_SYSTEM_RESOURCES: return "no system logger slot left (8 kernel sessions run already)";
    case ERROR_CALL_NOT_IMPLEMENTED: return "not implemented by this Windows";
    case ERROR_ALREADY_EXISTS: return "a session of that name runs already";
    case ERROR_PRIVILEGE_NOT_HELD:
    case ERROR_NOT_ALL_ASSIGNED: return "SeSystemProfilePrivilege is not held (run hookscope elevated)";
    case ERROR_BAD_PATHNAME:
        return "the .etl file is in use (by a session that still runs?) or cannot be created there";
    case ERROR_PATH_NOT_FOUND: return "the .etl file cannot be created there";
    case ERROR_WMI_INSTANCE_NOT_FOUND: return "no such session";
    }
    return hs_win_error(rc);
}

/* A GUID of our own for the session (version 4 layout, from the clock,
 * the pid and a counter: unique enough for a session's lifetime). */
static GUID fresh_guid(void)
{
    static LONG counter;
    LARGE_INTEGER t;
    QueryPerformanceCounter(&t);
    uint64_t a = (uint64_t)t.QuadPart * 0x9E3779B97F4A7C15ull ^ GetCurrentProcessId();
    uint64_t b = (uint64_t)InterlockedIncrement(&counter) * 0xC2B2AE3D27D4EB4Full ^ GetTickCount64();
    GUID g;
    memcpy(&g, &a, 8);
    memcpy((char *)&g + 8, &b, 8);
    g.Data3 = (USHORT)((g.Data3 & 0x0FFF) | 0x4000);
    g.Data4[0] = (UCHAR)((g.Data4[0] & 0x3F) | 0x80);
    return g;
}

static void put_back_interval(hs_etw_session *s)
{
    if (!s->interval_changed)
        return;
    /* read back first: another tool that changed it meanwhile keeps its own */
    profile_interval now = { 0, 0 };
    ULONG ret = 0;
    if (s->interval_in_force &&
        s->api->query_information(0, HS_ETW_INFO_PROFILE_INTERVAL, &now, sizeof now, &ret) == ERROR_SUCCESS) {
        s->interval_end = now.interval;
        if (now.interval != s->interval_in_force) {
            s->interval_foreign = 1;
            s->interval_changed = 0;
            return;
        }
    }
    profile_interval pi = { 0, s->old_interval };
    s->api->set_information(0, HS_ETW_INFO_PROFILE_INTERVAL, &pi, sizeof pi);
    s->interval_changed = 0;
}

/* EVENT_TRACE_PROPERTIES with room for a name and a file name. */
static EVENT_TRACE_PROPERTIES *props_new(const wchar_t *name, const wchar_t *path)
{
    size_t name_bytes = (wcslen(name) + 1) * sizeof(wchar_t), path_bytes = (wcslen(path) + 1) * sizeof(wchar_t);
    size_t size = sizeof(EVENT_TRACE_PROPERTIES) + name_bytes + path_bytes;
    EVENT_TRACE_PROPERTIES *p = calloc(1, size);
    if (!p)
        return NULL;
    p->Wnode.BufferSize = (ULONG)size;
    p->LoggerNameOffset = sizeof(EVENT_TRACE_PROPERTIES);
    p->LogFileNameOffset = (ULONG)(sizeof(EVENT_TRACE_PROPERTIES) + name_bytes);
    memcpy((char *)p + p->LoggerNameOffset, name, name_bytes);
    memcpy((char *)p + p->LogFileNameOffset, path, path_bytes);
    return p;
}

/* A session of hookscope's: "hookscope-<pid>-<n>[-i<interval>]". */
static int parse_name(const wchar_t *name, unsigned long *pid, unsigned long *interval)
{
    unsigned long n = 0;
    wchar_t tail[8] = L"";
    *interval = 0;
    if (swscanf(name, L"hookscope-%lu-%lu-i%lu", pid, &n, interval) == 3)
        return 1;
    return swscanf(name, L"hookscope-%lu-%lu%1ls", pid, &n, tail) == 2;
}

/* Is process pid a running hookscope? (A pid of a process that is gone
 * may have been given to another program since.) */
static int hookscope_alive(unsigned long pid)
{
    if (pid == GetCurrentProcessId())
        return 1;
    HANDLE p = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    if (!p)
        return GetLastError() == ERROR_ACCESS_DENIED;   /* (someone's we cannot look at: left alone) */
    wchar_t path[MAX_PATH * 2];
    DWORD len = MAX_PATH * 2;
    const wchar_t *base = NULL;
    if (WaitForSingleObject(p, 0) == WAIT_TIMEOUT && QueryFullProcessImageNameW(p, 0, path, &len))
        base = wcsrchr(path, L'\\') ? wcsrchr(path, L'\\') + 1 : path;
    int alive = base && !_wcsicmp(base, L"hookscope.exe");
    CloseHandle(p);
    return alive;
}

#define MAX_SESSIONS 64

int hs_etw_clean_leftovers(const hs_etw_api *api)
{
    if (!api->query_all_traces)
        return 0;
    EVENT_TRACE_PROPERTIES *props[MAX_SESSIONS];
    const size_t one = sizeof(EVENT_TRACE_PROPERTIES) + 2 * 1024 * sizeof(wchar_t);
    uint8_t *buf = calloc(MAX_SESSIONS, one);
    if (!buf)
        return 0;
    for (int i = 0; i < MAX_SESSIONS; i++) {
        props[i] = (EVENT_TRACE_PROPERTIES *)(buf + i * one);
        props[i]->Wnode.BufferSize = (ULONG)one;
        props[i]->LoggerNameOffset = sizeof(EVENT_TRACE_PROPERTIES);
        props[i]->LogFileNameOffset = sizeof(EVENT_TRACE_PROPERTIES) + 1024 * sizeof(wchar_t);
    }
    ULONG n = 0, rc = api->query_all_traces(props, MAX_SESSIONS, &n);
    int stopped = 0, live = 0;
    unsigned long restore = 0;
    for (ULONG i = 0; (rc == ERROR_SUCCESS || rc == ERROR_MORE_DATA) && i < n && i < MAX_SESSIONS; i++) {
        const wchar_t *name = (const wchar_t *)((const uint8_t *)props[i] + props[i]->LoggerNameOffset);
        wchar_t nm[1024];
        wcsncpy(nm, name, 1023);
        nm[1023] = 0;
        unsigned long pid = 0, interval = 0;
        if (!parse_name(nm, &pid, &interval))
            continue;
        if (hookscope_alive(pid)) {
            live += pid != GetCurrentProcessId();
            continue;
        }
        EVENT_TRACE_PROPERTIES *p = props_new(nm, L"");
        ULONG st = p ? api->control_trace(0, nm, p, EVENT_TRACE_CONTROL_STOP) : ERROR_NOT_ENOUGH_MEMORY;
        free(p);
        char *n8 = hs_utf8(nm);
        if (st == ERROR_SUCCESS || st == ERROR_MORE_DATA) {
            stopped++;
            if (interval)
                restore = interval;   /* (the newest: sessions are listed oldest first) */
            hs_err("stopped ETW session %s, left running by a hookscope that ended (process %lu)", n8, pid);
        } else {
            hs_err("cannot stop ETW session %s, left running by a hookscope that ended (process %lu): %s", n8, pid,
                   why(st));
        }
        free(n8);
    }
    free(buf);
    if (restore && !live) {
        profile_interval pi = { 0, (ULONG)restore };
        if (api->set_information(0, HS_ETW_INFO_PROFILE_INTERVAL, &pi, sizeof pi) == ERROR_SUCCESS)
            hs_err("the machine's sampling interval is back at %lu (x 100 ns) as that hookscope found it", restore);
    }
    return stopped;
}

int hs_etw_start(hs_etw_session *s, const hs_etw_api *api, const wchar_t *path, double rate_hz, ULONG max_file_mb,
                 int *not_available, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->api = api;
    *not_available = 0;
    if (!api->start_trace || !api->control_trace || !api->set_information || !api->query_information) {
        *not_available = 1;
        snprintf(err, errlen, "ETW sampling is not available here (no TraceSetInformation: Windows 8 or later "
                              "is needed)");
        return -1;
    }
    DWORD priv = api->enable_profile_privilege();
    if (priv != ERROR_SUCCESS) {
        *not_available = 1;
        snprintf(err, errlen, "ETW sampling needs SeSystemProfilePrivilege: %s", why(priv));
        return -1;
    }
    hs_etw_clean_leftovers(api);
    profile_interval pi = { 0, 0 };
    ULONG ret = 0;
    ULONG rc = api->query_information(0, HS_ETW_INFO_PROFILE_INTERVAL, &pi, sizeof pi, &ret);
    if (rc != ERROR_SUCCESS) {
        *not_available = rc == ERROR_CALL_NOT_IMPLEMENTED || rc == ERROR_NOT_SUPPORTED;
        snprintf(err, errlen, "ETW sampling is not available here (reading the sampling interval: %s)", why(rc));
        return -1;
    }
    s->old_interval = pi.interval;
    double units = rate_hz > 0 ? 1e7 / rate_hz : 10000;
    s->interval = units < 1221 ? 1221 : units > 1e7 ? 10000000 : (ULONG)(units + 0.5);   /* 8 kHz .. 1 Hz */
    s->max_file_mb = max_file_mb ? max_file_mb : HS_ETW_MAX_FILE_MB;

    /* the session first, named with the interval to put back: from the
     * moment the interval is changed, a session says what it was */
    static LONG sessions;
    swprintf(s->name, sizeof s->name / sizeof *s->name, L"hookscope-%lu-%ld-i%lu", (unsigned long)GetCurrentProcessId(),
             (long)InterlockedIncrement(&sessions), (unsigned long)s->old_interval);
    wcsncpy(s->path, path, sizeof s->path / sizeof *s->path - 1);
    s->props = props_new(s->name, s->path);
    if (!s->props) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    EVENT_TRACE_PROPERTIES *p = s->props;
    p->Wnode.Guid = fresh_guid();
    p->Wnode.ClientContext = 1;                        /* QueryPerformanceCounter timestamps */
    p->Wnode.Flags = WNODE_FLAG_TRACED_GUID;
    p->BufferSize = 1024;                              /* KB */
    p->MinimumBuffers = 16;
    p->MaximumBuffers = 256;
    p->MaximumFileSize = s->max_file_mb;               /* MB: writing stops there */
    p->LogFileMode = EVENT_TRACE_SYSTEM_LOGGER_MODE | EVENT_TRACE_FILE_MODE_SEQUENTIAL;
    /* context switches and readies: each thread's time running, ready and
     * waiting (sampler/etl_samples.h) */
    p->EnableFlags = EVENT_TRACE_FLAG_PROCESS | EVENT_TRACE_FLAG_THREAD | EVENT_TRACE_FLAG_IMAGE_LOAD |
                     EVENT_TRACE_FLAG_PROFILE | EVENT_TRACE_FLAG_CSWITCH | EVENT_TRACE_FLAG_DISPATCHER;
    rc = api->start_trace(&s->handle, s->name, p);
    if (rc != ERROR_SUCCESS) {
        free(s->props);
        s->props = NULL;
        *not_available = rc == ERROR_ACCESS_DENIED || rc == ERROR_CALL_NOT_IMPLEMENTED;
        snprintf(err, errlen, "cannot start an ETW session: %s", why(rc));
        return -1;
    }
    s->started = 1;
    pi.interval = s->interval;
    rc = api->set_information(0, HS_ETW_INFO_PROFILE_INTERVAL, &pi, sizeof pi);
    if (rc != ERROR_SUCCESS) {
        hs_etw_stop(s, NULL, 0);
        *not_available = rc == ERROR_CALL_NOT_IMPLEMENTED || rc == ERROR_NOT_SUPPORTED;
        snprintf(err, errlen, "ETW sampling is not available here (setting the sampling interval: %s)", why(rc));
        return -1;
    }
    s->interval_changed = 1;
    /* read back: the interval in force (the kernel rounds it to what its timer can do) */
    profile_interval back = { 0, 0 };
    if (api->query_information(0, HS_ETW_INFO_PROFILE_INTERVAL, &back, sizeof back, &ret) == ERROR_SUCCESS &&
        back.interval)
        s->interval_in_force = back.interval;
    /* one list: it replaces any earlier one */
    classic_event_id ids[3];
    memset(ids, 0, sizeof ids);
    ids[0].guid = perfinfo_guid;
    ids[0].type = SAMPLED_PROFILE_TYPE;
    ids[1].guid = thread_guid;
    ids[1].type = CSWITCH_TYPE;
    ids[2].guid = thread_guid;
    ids[2].type = READY_THREAD_TYPE;
    rc = api->set_information(s->handle, HS_ETW_INFO_STACK_TRACING, ids, sizeof ids);
    if (rc != ERROR_SUCCESS) {
        hs_etw_stop(s, NULL, 0);
        snprintf(err, errlen, "cannot ask ETW for the stacks of samples and context switches: %s", why(rc));
        return -1;
    }
    return 0;
}

static const GUID clr_runtime = { 0xe13c0d23, 0xccbc, 0x4e12, { 0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4 } };
static const GUID clr_rundown = { 0xa669021c, 0xc450, 0x4609, { 0xa0, 0x35, 0x5a, 0xf5, 0x9a, 0xf4, 0xdf, 0x18 } };
#define FILTER_TYPE_PID 0x80000004u   /* EVENT_FILTER_TYPE_PID */
#define LEVEL_VERBOSE 5

/* Enable provider for pid only, or for every process where this Windows
 * has no process filter. */
static ULONG enable_for(hs_etw_session *s, const GUID *provider, ULONGLONG keywords, uint32_t pid)
{
    if (!s->started)
        return ERROR_INVALID_HANDLE;
    if (!s->api->enable_trace_ex2)
        return ERROR_CALL_NOT_IMPLEMENTED;
    ULONG one = pid;
    EVENT_FILTER_DESCRIPTOR fd;
    memset(&fd, 0, sizeof fd);
    fd.Ptr = (ULONGLONG)(uintptr_t)&one;
    fd.Size = sizeof one;
    fd.Type = FILTER_TYPE_PID;
    ENABLE_TRACE_PARAMETERS ep;
    memset(&ep, 0, sizeof ep);
    ep.Version = ENABLE_TRACE_PARAMETERS_VERSION_2;
    ep.EnableFilterDesc = &fd;
    ep.FilterDescCount = 1;
    ULONG rc = s->api->enable_trace_ex2(s->handle, provider, EVENT_CONTROL_CODE_ENABLE_PROVIDER, LEVEL_VERBOSE,
                                        keywords, 0, 0, pid ? &ep : NULL);
    if (pid && (rc == ERROR_NOT_SUPPORTED || rc == ERROR_INVALID_PARAMETER))
        rc = s->api->enable_trace_ex2(s->handle, provider, EVENT_CONTROL_CODE_ENABLE_PROVIDER, LEVEL_VERBOSE,
                                      keywords, 0, 0, NULL);
    return rc;
}

ULONG hs_etw_enable_clr(hs_etw_session *s, uint32_t pid)
{
    ULONG rc = enable_for(s, &clr_runtime, HS_ETW_CLR_RUNTIME_KEYWORDS, pid);
    ULONG rd = enable_for(s, &clr_rundown, HS_ETW_CLR_RUNDOWN_START, pid);
    return rc ? rc : rd;
}

ULONG hs_etw_clr_end_rundown(hs_etw_session *s, uint32_t pid)
{
    /* a provider enabled again with other keywords: its runtimes are told
     * the new ones, and an end rundown starts */
    return enable_for(s, &clr_rundown, HS_ETW_CLR_RUNDOWN_END, pid);
}

ULONG hs_etw_flush(hs_etw_session *s)
{
    if (!s->started)
        return ERROR_INVALID_HANDLE;
    return s->api->control_trace(s->handle, NULL, s->props, HS_ETW_CONTROL_FLUSH);
}

static int stopped(ULONG rc)
{
    return rc == ERROR_SUCCESS || rc == ERROR_MORE_DATA;   /* (MORE_DATA: stopped, the properties did not fit) */
}

int hs_etw_stop(hs_etw_session *s, char *err, size_t errlen)
{
    int rc = 0;
    if (s->api)
        put_back_interval(s);
    if (s->started) {
        ULONG first = s->api->control_trace(s->handle, NULL, s->props, EVENT_TRACE_CONTROL_STOP);
        if (!stopped(first)) {
            /* by its name (a handle can go stale); not found: it is gone */
            ULONG again = s->api->control_trace(0, s->name, s->props, EVENT_TRACE_CONTROL_STOP);
            if (!stopped(again) && again != ERROR_WMI_INSTANCE_NOT_FOUND) {
                if (err) {
                    char *n8 = hs_utf8(s->name);
                    snprintf(err, errlen, "the ETW session %s did not stop (%s; by name: %s): its trace is still "
                                          "being written; `logman stop %s -ets` stops it", n8, why(first), why(again),
                             n8);
                    free(n8);
                }
                rc = -1;
            }
        }
        s->started = 0;
    }
    free(s->props);
    s->props = NULL;
    return rc;
}

int hs_etw_file_full(const hs_etw_session *s)
{
    WIN32_FILE_ATTRIBUTE_DATA a;
    if (!s->max_file_mb || !GetFileAttributesExW(s->path, GetFileExInfoStandard, &a))
        return 0;
    uint64_t size = (uint64_t)a.nFileSizeHigh << 32 | a.nFileSizeLow;
    /* within two buffers of the cap: the next one did not fit */
    return size + 2 * 1024 * 1024 >= (uint64_t)s->max_file_mb << 20;
}
