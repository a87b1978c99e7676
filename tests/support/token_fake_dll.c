/*
 * tests/support/token_fake_dll.c - token_fake.dll: a fake of the token
 * functions of injector/trace/rights.h, loaded by hookscope through
 * HOOKSCOPE_TOKEN_API (tests/test_rights.py). Wine 8 gives every process
 * an elevated token of a split pair whose linked token it lets any
 * process use; Windows hands that token out as an identification token
 * (useless for CreateProcessAsUserW) unless the caller holds
 * SeTcbPrivilege, refuses a process of another user, and protects some
 * processes. The fake plays those, scripted, and records what hookscope
 * asked for; the processes it starts are started by the real
 * CreateProcessW (the token cannot be given to them here).
 *
 * HS_FAKE_TOKEN_SCRIPT names a file of lines:
 *   self full|default|none     hookscope's token: elevated of a split pair
 *                              (the default), elevated alone, not elevated
 *   fail STEP CODE             make a step fail with a Win32 error:
 *                              linked-dup (DuplicateTokenEx of the linked
 *                              token), restricted (CreateRestrictedToken),
 *                              as-user (CreateProcessAsUserW, any token)
 *   transient CODE N           the first N starts (either function) fail
 *                              with CODE, as a process dying in Wine's
 *                              start-up does (1359, ERROR_INTERNAL_ERROR)
 *   other-user PID             process PID runs as another user
 *   hidden-user PID            ... whose token cannot even be opened
 *   protected PID LEVEL        process PID is protected (PS_PROTECTION LEVEL)
 * HS_FAKE_TOKEN_LOG names a file that gets one line per call made:
 *   linked, duplicate, restricted FLAGS DENY-SID, integrity SID,
 *   as-user linked|restricted|TOKEN, create-process, protection PID.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <sddl.h>

#include "injector/trace/rights.h"

#define FAKE_LINKED ((HANDLE)(uintptr_t)0xF00D1)
#define FAKE_LINKED_PRIMARY ((HANDLE)(uintptr_t)0xF00D2)
#define FAKE_RESTRICTED ((HANDLE)(uintptr_t)0xF00D3)
#define FAKE_OTHER ((HANDLE)(uintptr_t)0xF00D4)

static struct {
    int loaded;
    char self[16];
    DWORD fail_linked_dup, fail_restricted, fail_as_user;
    DWORD transient_code, transient_left;
    DWORD other[8], hidden[8], prot_pid[8];
    int prot_level[8];
    int nother, nhidden, nprot;
} s;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    const char *path = getenv("HS_FAKE_TOKEN_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

static void load(void)
{
    if (s.loaded)
        return;
    s.loaded = 1;
    strcpy(s.self, "full");
    const char *path = getenv("HS_FAKE_TOKEN_SCRIPT");
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    char line[256], a[64], b[64];
    unsigned long n, m;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "self %15s", s.self) == 1)
            continue;
        if (sscanf(line, "fail %63s %lu", a, &n) == 2) {
            if (!strcmp(a, "linked-dup"))
                s.fail_linked_dup = n;
            else if (!strcmp(a, "restricted"))
                s.fail_restricted = n;
            else if (!strcmp(a, "as-user"))
                s.fail_as_user = n;
        } else if (sscanf(line, "transient %lu %lu", &n, &m) == 2) {
            s.transient_code = n;
            s.transient_left = m;
        } else if (sscanf(line, "other-user %lu", &n) == 1 && s.nother < 8) {
            s.other[s.nother++] = n;
        } else if (sscanf(line, "hidden-user %lu", &n) == 1 && s.nhidden < 8) {
            s.hidden[s.nhidden++] = n;
        } else if (sscanf(line, "protected %lu %lu", &n, &m) == 2 && s.nprot < 8) {
            s.prot_pid[s.nprot] = n;
            s.prot_level[s.nprot++] = (int)m;
        }
        (void)b;
    }
    if (f)
        fclose(f);
}

static int listed(const DWORD *v, int n, DWORD pid)
{
    for (int i = 0; i < n; i++)
        if (v[i] == pid)
            return 1;
    return 0;
}

static BOOL fail(DWORD code)
{
    SetLastError(code);
    return FALSE;
}

static HANDLE WINAPI fake_open_process(DWORD access, BOOL inherit, DWORD pid)
{
    load();
    return OpenProcess(access, inherit, pid);
}

static BOOL WINAPI fake_open_process_token(HANDLE process, DWORD access, HANDLE *token)
{
    load();
    DWORD pid = GetProcessId(process);
    if (pid != GetCurrentProcessId() && listed(s.hidden, s.nhidden, pid))
        return fail(ERROR_ACCESS_DENIED);
    if (pid != GetCurrentProcessId() && listed(s.other, s.nother, pid)) {
        *token = FAKE_OTHER;
        return TRUE;
    }
    return OpenProcessToken(process, access, token);
}

static BOOL WINAPI fake_get_token_information(HANDLE token, TOKEN_INFORMATION_CLASS cls, void *info, DWORD len,
                                              DWORD *ret)
{
    load();
    if (token == FAKE_OTHER && cls == TokenUser) {
        static uint8_t buf[64];
        PSID sid = NULL;
        ConvertStringSidToSidA("S-1-5-21-1000-2000-3000-1001", &sid);
        DWORD n = GetLengthSid(sid);
        TOKEN_USER *tu = (TOKEN_USER *)buf;
        CopySid(n, buf + sizeof *tu, sid);
        LocalFree(sid);
        tu->User.Sid = buf + sizeof *tu;
        tu->User.Attributes = 0;
        if (len < sizeof *tu + n)
            return fail(ERROR_INSUFFICIENT_BUFFER);
        memcpy(info, buf, sizeof *tu + n);
        ((TOKEN_USER *)info)->User.Sid = (uint8_t *)info + sizeof *tu;
        return TRUE;
    }
    if (cls == TokenElevation && len >= sizeof(TOKEN_ELEVATION)) {
        ((TOKEN_ELEVATION *)info)->TokenIsElevated = strcmp(s.self, "none") != 0;
        return TRUE;
    }
    if (cls == TokenElevationType && len >= sizeof(TOKEN_ELEVATION_TYPE)) {
        *(TOKEN_ELEVATION_TYPE *)info = !strcmp(s.self, "full") ? TokenElevationTypeFull : TokenElevationTypeDefault;
        return TRUE;
    }
    if (cls == TokenLinkedToken && len >= sizeof(TOKEN_LINKED_TOKEN)) {
        note("linked");
        if (strcmp(s.self, "full"))
            return fail(ERROR_NO_SUCH_LOGON_SESSION);
        ((TOKEN_LINKED_TOKEN *)info)->LinkedToken = FAKE_LINKED;
        return TRUE;
    }
    return GetTokenInformation(token, cls, info, len, ret);
}

static BOOL WINAPI fake_duplicate_token_ex(HANDLE token, DWORD access, SECURITY_ATTRIBUTES *sa,
                                           SECURITY_IMPERSONATION_LEVEL level, TOKEN_TYPE type, HANDLE *out)
{
    if (token != FAKE_LINKED)
        return DuplicateTokenEx(token, access, sa, level, type, out);
    note("duplicate %s", type == TokenPrimary ? "primary" : "impersonation");
    if (s.fail_linked_dup)
        return fail(s.fail_linked_dup);
    *out = FAKE_LINKED_PRIMARY;
    return TRUE;
}

static BOOL WINAPI fake_create_restricted_token(HANDLE token, DWORD flags, DWORD ndisable, SID_AND_ATTRIBUTES *disable,
                                                DWORD ndelete, LUID_AND_ATTRIBUTES *del, DWORD nrestrict,
                                                SID_AND_ATTRIBUTES *restrict_sids, HANDLE *out)
{
    (void)token, (void)ndelete, (void)del, (void)nrestrict, (void)restrict_sids;
    char *sid = NULL;
    if (ndisable)
        ConvertSidToStringSidA(disable[0].Sid, &sid);
    note("restricted 0x%lx %s", (unsigned long)flags, sid ? sid : "-");
    LocalFree(sid);
    if (s.fail_restricted)
        return fail(s.fail_restricted);
    *out = FAKE_RESTRICTED;
    return TRUE;
}

static BOOL WINAPI fake_set_token_information(HANDLE token, TOKEN_INFORMATION_CLASS cls, void *info, DWORD len)
{
    if (token != FAKE_RESTRICTED)
        return SetTokenInformation(token, cls, info, len);
    if (cls == TokenIntegrityLevel) {
        char *sid = NULL;
        ConvertSidToStringSidA(((TOKEN_MANDATORY_LABEL *)info)->Label.Sid, &sid);
        note("integrity %s", sid ? sid : "-");
        LocalFree(sid);
    }
    return TRUE;
}

static BOOL WINAPI fake_create_process(const wchar_t *app, wchar_t *cmd, SECURITY_ATTRIBUTES *pa,
                                       SECURITY_ATTRIBUTES *ta, BOOL inherit, DWORD flags, void *env,
                                       const wchar_t *dir, STARTUPINFOW *si, PROCESS_INFORMATION *pi)
{
    note("create-process");
    if (s.transient_left) {
        s.transient_left--;
        return fail(s.transient_code);
    }
    return CreateProcessW(app, cmd, pa, ta, inherit, flags, env, dir, si, pi);
}

static BOOL WINAPI fake_create_process_as_user(HANDLE token, const wchar_t *app, wchar_t *cmd, SECURITY_ATTRIBUTES *pa,
                                               SECURITY_ATTRIBUTES *ta, BOOL inherit, DWORD flags, void *env,
                                               const wchar_t *dir, STARTUPINFOW *si, PROCESS_INFORMATION *pi)
{
    note("as-user %s", token == FAKE_LINKED_PRIMARY ? "linked" : token == FAKE_RESTRICTED ? "restricted" : "other");
    if (s.fail_as_user)
        return fail(s.fail_as_user);
    if (s.transient_left) {
        s.transient_left--;
        return fail(s.transient_code);
    }
    return CreateProcessW(app, cmd, pa, ta, inherit, flags, env, dir, si, pi);
}

static int fake_process_protection(HANDLE process)
{
    DWORD pid = GetProcessId(process);
    note("protection %lu", (unsigned long)pid);
    for (int i = 0; i < s.nprot; i++)
        if (s.prot_pid[i] == pid)
            return s.prot_level[i];
    return -1;
}

static BOOL WINAPI fake_close_handle(HANDLE h)
{
    if (h == FAKE_LINKED || h == FAKE_LINKED_PRIMARY || h == FAKE_RESTRICTED || h == FAKE_OTHER)
        return TRUE;
    return CloseHandle(h);
}

static const hs_token_api fake = {
    fake_open_process, fake_open_process_token, fake_get_token_information, fake_duplicate_token_ex,
    fake_create_restricted_token, fake_set_token_information, fake_create_process_as_user, fake_create_process,
    fake_process_protection, fake_close_handle,
};

__declspec(dllexport) const hs_token_api *hs_token_test_api(void)
{
    load();
    return &fake;
}
