/*
 * sampler/etw/etw_session_win.c - the live ETW layer (see etw_win.h).
 */
#include "sampler/etw/etw_session_win.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

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
    case ERROR_PATH_NOT_FOUND: return "the .etl file cannot be created there";
    }
    static char buf[32];
    snprintf(buf, sizeof buf, "error %lu", (unsigned long)rc);
    return buf;
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
    profile_interval pi = { 0, s->old_interval };
    s->api->set_information(0, HS_ETW_INFO_PROFILE_INTERVAL, &pi, sizeof pi);
    s->interval_changed = 0;
}

int hs_etw_start(hs_etw_session *s, const hs_etw_api *api, const wchar_t *path, double rate_hz,
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
    pi.interval = s->interval;
    rc = api->set_information(0, HS_ETW_INFO_PROFILE_INTERVAL, &pi, sizeof pi);
    if (rc != ERROR_SUCCESS) {
        *not_available = rc == ERROR_CALL_NOT_IMPLEMENTED || rc == ERROR_NOT_SUPPORTED;
        snprintf(err, errlen, "ETW sampling is not available here (setting the sampling interval: %s)", why(rc));
        return -1;
    }
    s->interval_changed = 1;

    static LONG sessions;
    swprintf(s->name, sizeof s->name / sizeof *s->name, L"hookscope-%lu-%ld", (unsigned long)GetCurrentProcessId(),
             (long)InterlockedIncrement(&sessions));
    wcsncpy(s->path, path, sizeof s->path / sizeof *s->path - 1);
    size_t name_bytes = (wcslen(s->name) + 1) * sizeof(wchar_t), path_bytes = (wcslen(s->path) + 1) * sizeof(wchar_t);
    size_t size = sizeof(EVENT_TRACE_PROPERTIES) + name_bytes + path_bytes;
    s->props = calloc(1, size);
    if (!s->props) {
        put_back_interval(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    EVENT_TRACE_PROPERTIES *p = s->props;
    p->Wnode.BufferSize = (ULONG)size;
    p->Wnode.Guid = fresh_guid();
    p->Wnode.ClientContext = 1;                        /* QueryPerformanceCounter timestamps */
    p->Wnode.Flags = WNODE_FLAG_TRACED_GUID;
    p->BufferSize = 1024;                              /* KB */
    p->MinimumBuffers = 16;
    p->MaximumBuffers = 256;
    p->LogFileMode = EVENT_TRACE_SYSTEM_LOGGER_MODE | EVENT_TRACE_FILE_MODE_SEQUENTIAL;
    /* context switches and readies: each thread's time running, ready and
     * waiting (sampler/etl_samples.h) */
    p->EnableFlags = EVENT_TRACE_FLAG_PROCESS | EVENT_TRACE_FLAG_THREAD | EVENT_TRACE_FLAG_IMAGE_LOAD |
                     EVENT_TRACE_FLAG_PROFILE | EVENT_TRACE_FLAG_CSWITCH | EVENT_TRACE_FLAG_DISPATCHER;
    p->LoggerNameOffset = sizeof(EVENT_TRACE_PROPERTIES);
    p->LogFileNameOffset = (ULONG)(sizeof(EVENT_TRACE_PROPERTIES) + name_bytes);
    memcpy((char *)p + p->LoggerNameOffset, s->name, name_bytes);
    memcpy((char *)p + p->LogFileNameOffset, s->path, path_bytes);
    rc = api->start_trace(&s->handle, s->name, p);
    if (rc != ERROR_SUCCESS) {
        put_back_interval(s);
        free(s->props);
        s->props = NULL;
        *not_available = rc == ERROR_ACCESS_DENIED || rc == ERROR_CALL_NOT_IMPLEMENTED;
        snprintf(err, errlen, "cannot start an ETW session: %s", why(rc));
        return -1;
    }
    s->started = 1;
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
        hs_etw_stop(s);
        snprintf(err, errlen, "cannot ask ETW for the stacks of samples and context switches: %s", why(rc));
        return -1;
    }
    return 0;
}

void hs_etw_stop(hs_etw_session *s)
{
    if (s->started) {
        s->api->control_trace(s->handle, NULL, s->props, EVENT_TRACE_CONTROL_STOP);
        s->started = 0;
    }
    if (s->api)
        put_back_interval(s);
    free(s->props);
    s->props = NULL;
}
