/*
 * injector/trace/rights.h - the rights the target runs with, and the
 * processes hookscope may attach to.
 *
 * ETW sampling needs an administrator, so hookscope often runs elevated;
 * a profile run must not hand the program those rights. When hookscope's
 * token is an elevated one of a split pair (UAC: TokenElevationTypeFull),
 * `run` starts the target with the user's unelevated token:
 *
 *   1. the linked token (TokenLinkedToken) as a primary token, through
 *      CreateProcessAsUserW (Windows hands it out as an identification
 *      token unless the caller holds SeTcbPrivilege: then step 2);
 *   2. else a restricted copy of hookscope's own token: the
 *      Administrators group deny-only, every privilege but
 *      SeChangeNotifyPrivilege removed (LUA_TOKEN), medium integrity;
 *   3. else it does not start the target, and says why in one line.
 *
 * --elevated-target starts it as before, elevated. The report says which.
 * An elevated token that is not of a pair (UAC off, the built-in
 * Administrator) has no unelevated user to give: the target then runs
 * with it, and the report says so too.
 *
 * attach refuses, in one line, a process of another user and a protected
 * process (Windows lets no profiler into one).
 *
 * Every system call goes through a table of function pointers
 * (hs_token_api), so that a test can run this logic against a fake:
 * HOOKSCOPE_TOKEN_API names a DLL whose hs_token_test_api() returns one
 * (tests/support/token_fake_dll.c; hook/base/util.h, hs_test_table).
 */
#ifndef HOOKSCOPE_RIGHTS_H
#define HOOKSCOPE_RIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <windows.h>

typedef struct hs_token_api {
    HANDLE (WINAPI *open_process)(DWORD access, BOOL inherit, DWORD pid);
    BOOL (WINAPI *open_process_token)(HANDLE process, DWORD access, HANDLE *token);
    BOOL (WINAPI *get_token_information)(HANDLE token, TOKEN_INFORMATION_CLASS cls, void *info, DWORD len,
                                         DWORD *ret);
    BOOL (WINAPI *duplicate_token_ex)(HANDLE token, DWORD access, SECURITY_ATTRIBUTES *sa,
                                      SECURITY_IMPERSONATION_LEVEL level, TOKEN_TYPE type, HANDLE *out);
    BOOL (WINAPI *create_restricted_token)(HANDLE token, DWORD flags, DWORD ndisable, SID_AND_ATTRIBUTES *disable,
                                           DWORD ndelete, LUID_AND_ATTRIBUTES *del, DWORD nrestrict,
                                           SID_AND_ATTRIBUTES *restrict_sids, HANDLE *out);
    BOOL (WINAPI *set_token_information)(HANDLE token, TOKEN_INFORMATION_CLASS cls, void *info, DWORD len);
    BOOL (WINAPI *create_process_as_user)(HANDLE token, const wchar_t *app, wchar_t *cmd, SECURITY_ATTRIBUTES *pa,
                                          SECURITY_ATTRIBUTES *ta, BOOL inherit, DWORD flags, void *env,
                                          const wchar_t *dir, STARTUPINFOW *si, PROCESS_INFORMATION *pi);
    BOOL (WINAPI *create_process)(const wchar_t *app, wchar_t *cmd, SECURITY_ATTRIBUTES *pa,
                                  SECURITY_ATTRIBUTES *ta, BOOL inherit, DWORD flags, void *env,
                                  const wchar_t *dir, STARTUPINFOW *si, PROCESS_INFORMATION *pi);
    /* the process's protection (its PS_PROTECTION byte, 0: none), or -1
     * when this Windows cannot say (before 8.1; Wine) */
    int (*process_protection)(HANDLE process);
    BOOL (WINAPI *close_handle)(HANDLE h);
} hs_token_api;

/* The system's functions (hookscope's own, or a test's: HOOKSCOPE_TOKEN_API). */
const hs_token_api *hs_token_api_get(void);

/* With what rights the target was started. */
typedef enum hs_rights {
    HS_RIGHTS_SAME = 0,          /* hookscope is not elevated: the target has its rights */
    HS_RIGHTS_USER,              /* the user's linked unelevated token */
    HS_RIGHTS_USER_RESTRICTED,   /* a restricted, medium-integrity copy of hookscope's token */
    HS_RIGHTS_ADMIN_ASKED,       /* elevated, as hookscope: --elevated-target */
    HS_RIGHTS_ADMIN_ONLY,        /* elevated, as hookscope: no unelevated token exists (no split) */
} hs_rights;

/* report.json's name of it ("user", ...), NULL for HS_RIGHTS_SAME. */
const char *hs_rights_name(hs_rights r);

/* CreateProcessW(path, cmdline, inherit handles, CREATE_SUSPENDED, si)
 * with the rights above; *how says which. Returns 0, or -1 with one line
 * in why (GetLastError's text included). */
int hs_rights_start(const hs_token_api *api, bool elevated_target, const wchar_t *path, wchar_t *cmdline,
                    STARTUPINFOW *si, PROCESS_INFORMATION *pi, hs_rights *how, char *why, size_t len);

/* May hookscope attach to process pid? 0, or -1 with one line in why (a
 * protected process; a process of another user). A process that cannot
 * be looked at is left to attach's own open, which says why. */
int hs_rights_attach_check(const hs_token_api *api, DWORD pid, char *why, size_t len);

#endif
