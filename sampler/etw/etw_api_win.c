/*
 * sampler/etw/etw_api_win.c - the system's ETW functions for the live layer
 * (etw_win.h), bound from advapi32 at first use: TraceSetInformation and
 * TraceQueryInformation exist from Windows 8 on, and hookscope.exe must
 * start on any Windows (it then says that ETW is not available).
 */
#include "sampler/etw/etw_session_win.h"

static hs_etw_api api;
static int bound;

static DWORD enable_profile_privilege(void)
{
    HANDLE token;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &token))
        return GetLastError();
    TOKEN_PRIVILEGES tp;
    tp.PrivilegeCount = 1;
    tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
    DWORD rc = ERROR_SUCCESS;
    if (!LookupPrivilegeValueW(NULL, L"SeSystemProfilePrivilege", &tp.Privileges[0].Luid))
        rc = GetLastError();
    else if (!AdjustTokenPrivileges(token, FALSE, &tp, sizeof tp, NULL, NULL))
        rc = GetLastError();
    else
        rc = GetLastError();   /* ERROR_NOT_ALL_ASSIGNED when the token does not hold it */
    CloseHandle(token);
    return rc;
}

const hs_etw_api *hs_etw_system_api(void)
{
    if (!bound) {
        HMODULE adv = LoadLibraryExW(L"advapi32.dll", NULL, LOAD_LIBRARY_SEARCH_SYSTEM32);
        if (adv) {
            api.start_trace = (void *)GetProcAddress(adv, "StartTraceW");
            api.control_trace = (void *)GetProcAddress(adv, "ControlTraceW");
            api.set_information = (void *)GetProcAddress(adv, "TraceSetInformation");
            api.query_information = (void *)GetProcAddress(adv, "TraceQueryInformation");
            api.query_all_traces = (void *)GetProcAddress(adv, "QueryAllTracesW");
            api.enable_trace_ex2 = (void *)GetProcAddress(adv, "EnableTraceEx2");
        }
        api.enable_profile_privilege = enable_profile_privilege;
        bound = 1;
    }
    return &api;
}
