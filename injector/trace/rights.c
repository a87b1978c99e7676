/*
 * injector/trace/rights.c - the target's rights and who may be attached
 * to (see rights.h), over the token functions' table.
 */
#include "injector/trace/rights.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hook/base/util.h"

const char *hs_rights_name(hs_rights r)
{
    switch (r) {
    case HS_RIGHTS_USER: return "user";
    case HS_RIGHTS_USER_RESTRICTED: return "user-restricted";
    case HS_RIGHTS_ADMIN_ASKED: return "administrator";
    case HS_RIGHTS_ADMIN_ONLY: return "administrator-only";
    default: return NULL;
    }
}

/* hookscope's own token: elevated? of a split pair? */
static void own_elevation(const hs_token_api *api, HANDLE token, bool *elevated, bool *split)
{
    TOKEN_ELEVATION e = { 0 };
    TOKEN_ELEVATION_TYPE t = TokenElevationTypeDefault;
    DWORD ret = 0;
    *elevated = api->get_token_information(token, TokenElevation, &e, sizeof e, &ret) && e.TokenIsElevated;
    *split = api->get_token_information(token, TokenElevationType, &t, sizeof t, &ret) &&
             t == TokenElevationTypeFull;
}

/* Under Wine, a new process that dies in Wine's own start-up, before a
 * single instruction of the program ran (NtCreateUserProcess: the child
 * never reported its start, STATUS_INTERNAL_ERROR), fails the start with
 * ERROR_INTERNAL_ERROR; it happened once in a whole test run on a loaded
 * machine. Nothing of the target ran: starting it again is what the user
 * would do, so a start failing so is tried START_TRIES times. */
#define START_TRIES 3

static bool start_again(int tries)
{
    if (tries >= START_TRIES || GetLastError() != ERROR_INTERNAL_ERROR)
        return false;
    hs_log("the target died in the system's start-up before it ran (%s): starting it again",
           hs_win_error(ERROR_INTERNAL_ERROR));
    return true;
}

static BOOL start_as(const hs_token_api *api, HANDLE token, const wchar_t *path, wchar_t *cmdline, STARTUPINFOW *si,
                     PROCESS_INFORMATION *pi)
{
    for (int tries = 1;; tries++)
        if (api->create_process_as_user(token, path, cmdline, NULL, NULL, TRUE, CREATE_SUSPENDED, NULL, NULL, si, pi))
            return TRUE;
        else if (!start_again(tries))
            return FALSE;
}

static BOOL start_plain(const hs_token_api *api, const wchar_t *path, wchar_t *cmdline, STARTUPINFOW *si,
                        PROCESS_INFORMATION *pi)
{
    for (int tries = 1;; tries++)
        if (api->create_process(path, cmdline, NULL, NULL, TRUE, CREATE_SUSPENDED, NULL, NULL, si, pi))
            return TRUE;
        else if (!start_again(tries))
            return FALSE;
}

/* Step 1: the linked token, as a primary token. */
static DWORD start_linked(const hs_token_api *api, HANDLE own, const wchar_t *path, wchar_t *cmdline,
                          STARTUPINFOW *si, PROCESS_INFORMATION *pi)
{
    TOKEN_LINKED_TOKEN linked = { 0 };
    DWORD ret = 0, err;
    if (!api->get_token_information(own, TokenLinkedToken, &linked, sizeof linked, &ret))
        return GetLastError() ? GetLastError() : ERROR_NO_TOKEN;
    HANDLE primary = NULL;
    if (!api->duplicate_token_ex(linked.LinkedToken, MAXIMUM_ALLOWED, NULL, SecurityImpersonation, TokenPrimary,
                                 &primary)) {
        err = GetLastError() ? GetLastError() : ERROR_BAD_IMPERSONATION_LEVEL;
        api->close_handle(linked.LinkedToken);
        return err;
    }
    BOOL ok = start_as(api, primary, path, cmdline, si, pi);
    err = ok ? 0 : GetLastError() ? GetLastError() : ERROR_ACCESS_DENIED;
    api->close_handle(primary);
    api->close_handle(linked.LinkedToken);
    return err;
}

/* Step 2: a restricted copy of our own token at medium integrity. */
static DWORD start_restricted(const hs_token_api *api, HANDLE own, const wchar_t *path, wchar_t *cmdline,
                              STARTUPINFOW *si, PROCESS_INFORMATION *pi)
{
    SID_IDENTIFIER_AUTHORITY nt = SECURITY_NT_AUTHORITY, label = SECURITY_MANDATORY_LABEL_AUTHORITY;
    PSID admins = NULL, medium = NULL;
    HANDLE restricted = NULL;
    DWORD err = 0;
    if (!AllocateAndInitializeSid(&nt, 2, SECURITY_BUILTIN_DOMAIN_RID, DOMAIN_ALIAS_RID_ADMINS, 0, 0, 0, 0, 0, 0,
                                  &admins) ||
        !AllocateAndInitializeSid(&label, 1, SECURITY_MANDATORY_MEDIUM_RID, 0, 0, 0, 0, 0, 0, 0, &medium)) {
        err = GetLastError();
        goto out;
    }
    SID_AND_ATTRIBUTES deny = { admins, 0 };
    if (!api->create_restricted_token(own, DISABLE_MAX_PRIVILEGE | LUA_TOKEN, 1, &deny, 0, NULL, 0, NULL,
                                      &restricted)) {
        err = GetLastError() ? GetLastError() : ERROR_ACCESS_DENIED;
        goto out;
    }
    TOKEN_MANDATORY_LABEL tml = { { medium, SE_GROUP_INTEGRITY } };
    if (!api->set_token_information(restricted, TokenIntegrityLevel, &tml, sizeof tml + GetLengthSid(medium)) ||
        !start_as(api, restricted, path, cmdline, si, pi))
        err = GetLastError() ? GetLastError() : ERROR_ACCESS_DENIED;
out:
    if (restricted)
        api->close_handle(restricted);
    if (admins)
        FreeSid(admins);
    if (medium)
        FreeSid(medium);
    return err;
}

#ifndef ERROR_ELEVATION_REQUIRED
#define ERROR_ELEVATION_REQUIRED 740   /* (not in every mingw-w64's winerror.h) */
#endif

/* Is a start's failure one that more rights could mend? */
static bool for_want_of_rights(DWORD err)
{
    return err == ERROR_ACCESS_DENIED || err == ERROR_ELEVATION_REQUIRED || err == ERROR_PRIVILEGE_NOT_HELD;
}

int hs_rights_start(const hs_token_api *api, bool elevated_target, const wchar_t *path, wchar_t *cmdline,
                    STARTUPINFOW *si, PROCESS_INFORMATION *pi, hs_rights *how, char *why, size_t len)
{
    HANDLE own = NULL;
    bool elevated = false, split = false;
    if (api->open_process_token(GetCurrentProcess(),
                                TOKEN_QUERY | TOKEN_DUPLICATE | TOKEN_ASSIGN_PRIMARY | TOKEN_ADJUST_DEFAULT, &own))
        own_elevation(api, own, &elevated, &split);
    *how = !elevated ? HS_RIGHTS_SAME : elevated_target ? HS_RIGHTS_ADMIN_ASKED : HS_RIGHTS_ADMIN_ONLY;
    if (elevated && split && !elevated_target) {
        DWORD linked = start_linked(api, own, path, cmdline, si, pi);
        if (!linked) {
            *how = HS_RIGHTS_USER;
        } else {
            hs_log("the user's linked token cannot start the target (%s); a restricted token of hookscope's",
                   hs_win_error(linked));
            char first[160];
            snprintf(first, sizeof first, "%s", hs_win_error(linked));
            DWORD restricted = start_restricted(api, own, path, cmdline, si, pi);
            if (!restricted) {
                *how = HS_RIGHTS_USER_RESTRICTED;
            } else if (restricted == linked && !for_want_of_rights(linked)) {
                /* the program cannot start whoever starts it (a broken image) */
                snprintf(why, len, "%s", first);
                api->close_handle(own);
                return -1;
            } else {
                snprintf(why, len, "cannot start the target without administrator rights (the user's token: %s; a "
                                   "restricted one: %s); --elevated-target starts it with them", first,
                         hs_win_error(restricted));
                api->close_handle(own);
                return -1;
            }
        }
        api->close_handle(own);
        return 0;
    }
    if (own)
        api->close_handle(own);
    if (!start_plain(api, path, cmdline, si, pi)) {
        snprintf(why, len, "%s", hs_win_error(GetLastError()));
        return -1;
    }
    return 0;
}

/* The user of a process's token (its TOKEN_USER in buf), or NULL. */
static PSID user_of(const hs_token_api *api, HANDLE process, uint8_t *buf, DWORD len, DWORD *err)
{
    HANDLE token = NULL;
    DWORD ret = 0;
    PSID sid = NULL;
    if (!api->open_process_token(process, TOKEN_QUERY, &token))
        *err = GetLastError();
    else if (!api->get_token_information(token, TokenUser, buf, len, &ret))
        *err = GetLastError();
    else
        sid = ((TOKEN_USER *)buf)->User.Sid;
    if (token)
        api->close_handle(token);
    return sid;
}

int hs_rights_attach_check(const hs_token_api *api, DWORD pid, char *why, size_t len)
{
    HANDLE p = api->open_process(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
    if (!p)
        return 0;   /* (attach's own open says why) */
    int rc = 0;
    int protection = api->process_protection(p);
    uint8_t mine[256], theirs[256];
    DWORD err = 0;
    PSID me = user_of(api, GetCurrentProcess(), mine, sizeof mine, &err), them = NULL;
    if (protection > 0) {
        snprintf(why, len, "process %lu is a protected process (protection 0x%02x): Windows lets no profiler into it",
                 (unsigned long)pid, (unsigned)protection);
        rc = -1;
    } else if (me && !(them = user_of(api, p, theirs, sizeof theirs, &err)) && err == ERROR_ACCESS_DENIED) {
        snprintf(why, len, "process %lu runs as another user (its token cannot be read): attach only to processes "
                           "of your own user", (unsigned long)pid);
        rc = -1;
    } else if (me && them && !EqualSid(me, them)) {
        snprintf(why, len, "process %lu runs as another user: attach only to processes of your own user",
                 (unsigned long)pid);
        rc = -1;
    }
    api->close_handle(p);
    return rc;
}
