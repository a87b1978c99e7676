/*
 * injector/trace/rights_api.c - the system's token functions for
 * rights.c (see rights.h), or a test's (HOOKSCOPE_TOKEN_API).
 */
#include "injector/trace/rights.h"

#include <winternl.h>

#include "hook/base/util.h"

/* ProcessProtectionInformation (Windows 8.1): the PS_PROTECTION byte. */
#define PROCESS_PROTECTION_INFORMATION 61

static int process_protection(HANDLE process)
{
    UCHAR level = 0;
    ULONG ret = 0;
    NTSTATUS st = NtQueryInformationProcess(process, (PROCESSINFOCLASS)PROCESS_PROTECTION_INFORMATION, &level,
                                            sizeof level, &ret);
    return st == 0 ? level : -1;
}

static const hs_token_api system_api = {
    OpenProcess, OpenProcessToken, GetTokenInformation, DuplicateTokenEx, CreateRestrictedToken,
    SetTokenInformation, CreateProcessAsUserW, CreateProcessW, process_protection, CloseHandle,
};

const hs_token_api *hs_token_api_get(void)
{
    static const hs_token_api *api;
    if (!api) {
        api = hs_test_table("HOOKSCOPE_TOKEN_API", "hs_token_test_api");
        if (!api)
            api = &system_api;
    }
    return api;
}
