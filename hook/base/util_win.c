/*
 * hook/base/util_win.c - the helpers of util.h that need the Windows
 * API: UTF-16 conversions, files by wide path, Win32 error text.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"

char *hs_utf8(const wchar_t *w)
{
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
    char *s = hs_xmalloc(n > 0 ? (size_t)n : 1);
    if (n <= 0 || !WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL))
        s[0] = 0;
    return s;
}

wchar_t *hs_wide(const char *s)
{
    int n = MultiByteToWideChar(CP_UTF8, 0, s, -1, NULL, 0);
    wchar_t *w = hs_xmalloc((n > 0 ? (size_t)n : 1) * sizeof(wchar_t));
    if (n <= 0 || !MultiByteToWideChar(CP_UTF8, 0, s, -1, w, n))
        w[0] = 0;
    return w;
}

uint8_t *hs_read_file(const wchar_t *path, size_t *size, unsigned long *err)
{
    DWORD attr = GetFileAttributesW(path);
    if (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY)) {
        if (err)
            *err = HS_ERROR_IS_DIRECTORY;
        return NULL;
    }
    HANDLE f = CreateFileW(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, 0, NULL);
    if (f == INVALID_HANDLE_VALUE) {
        if (err)
            *err = GetLastError();
        return NULL;
    }
    LARGE_INTEGER sz;
    if (!GetFileSizeEx(f, &sz) || sz.QuadPart > (1LL << 31)) {
        if (err)
            *err = GetLastError();
        CloseHandle(f);
        return NULL;
    }
    uint8_t *buf = hs_xmalloc((size_t)sz.QuadPart + 1);
    size_t got = 0;
    while (got < (size_t)sz.QuadPart) {
        DWORD chunk = 0, want = (DWORD)((size_t)sz.QuadPart - got > (1u << 30) ? (1u << 30) : (size_t)sz.QuadPart - got);
        if (!ReadFile(f, buf + got, want, &chunk, NULL) || chunk == 0)
            break;
        got += chunk;
    }
    CloseHandle(f);
    if (got != (size_t)sz.QuadPart) {
        if (err)
            *err = ERROR_READ_FAULT;
        free(buf);
        return NULL;
    }
    buf[got] = 0;
    *size = got;
    return buf;
}

const char *hs_win_error(unsigned long err)
{
    static char buf[256];
    if (err == HS_ERROR_IS_DIRECTORY)
        return "it is a directory";
    DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, err,
                             0, buf, sizeof buf, NULL);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == '.' || buf[n - 1] == ' '))
        buf[--n] = 0;
    if (n == 0)
        snprintf(buf, sizeof buf, "error %lu", err);
    return buf;
}

const wchar_t *hs_self_dir(void)
{
    static wchar_t dir[MAX_PATH];
    if (!dir[0]) {
        DWORD n = GetModuleFileNameW(NULL, dir, MAX_PATH);
        while (n > 0 && dir[n - 1] != L'\\' && dir[n - 1] != L'/')
            n--;
        dir[n] = 0;
    }
    return dir;
}

char *hs_nt_path_local(const char *nt)
{
    if (!strncmp(nt, "\\??\\", 4) && nt[4] && nt[5] == ':')
        return hs_xstrdup(nt + 4);
    if (!_strnicmp(nt, "\\SystemRoot\\", 12)) {
        wchar_t win[MAX_PATH];
        UINT n = GetWindowsDirectoryW(win, MAX_PATH);
        if (!n || n >= MAX_PATH)
            return NULL;
        char *w = hs_utf8(win), *out = hs_xasprintf("%s%s", w, nt + 11);
        free(w);
        return out;
    }
    wchar_t drive[3] = L"A:", device[MAX_PATH];
    for (wchar_t d = L'A'; d <= L'Z'; d++) {
        drive[0] = d;
        if (!QueryDosDeviceW(drive, device, MAX_PATH))
            continue;
        char *dev = hs_utf8(device);
        size_t n = strlen(dev);
        bool match = n && !_strnicmp(nt, dev, n) && (nt[n] == '\\' || !nt[n]);
        free(dev);
        if (match)
            return hs_xasprintf("%c:%s", (char)d, nt + n);
    }
    return NULL;
}

void *hs_test_table(const char *env, const char *name)
{
    const char *dll = getenv(env);
    if (!dll || !*dll)
        return NULL;
    /* the DLL's full path must lie under the folder that holds hookscope's
     * own folder (a build tree, an install folder), never anywhere a
     * variable of the environment points */
    wchar_t *w = hs_wide(dll), full[MAX_PATH * 2], root[MAX_PATH];
    DWORD n = GetFullPathNameW(w, MAX_PATH * 2, full, NULL);
    free(w);
    wcsncpy(root, hs_self_dir(), MAX_PATH - 1);
    root[MAX_PATH - 1] = 0;
    size_t r = wcslen(root);
    if (r && (root[r - 1] == L'\\' || root[r - 1] == L'/'))
        root[--r] = 0;
    while (r && root[r - 1] != L'\\' && root[r - 1] != L'/')
        root[--r] = 0;
    if (!n || n >= MAX_PATH * 2 || !r || _wcsnicmp(full, root, r) != 0 || wcsstr(full + r, L"..")) {
        hs_err("%s=%s is not under hookscope's own folder tree: not loaded", env, dll);
        return NULL;
    }
    HMODULE m = LoadLibraryExW(full, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
    void *(*get)(void) = m ? (void *(*)(void))(void (*)(void))GetProcAddress(m, name) : NULL;
    if (!get) {
        hs_err("%s=%s has no %s: not used", env, dll, name);
        return NULL;
    }
    return get();
}

wchar_t *hs_wow64_file(const wchar_t *path)
{
    wchar_t sys[MAX_PATH], wow[MAX_PATH];
    UINT ns = GetSystemDirectoryW(sys, MAX_PATH), nw = GetSystemWow64DirectoryW(wow, MAX_PATH);
    if (!ns || ns >= MAX_PATH || !nw || nw >= MAX_PATH)
        return NULL;
    if (_wcsnicmp(path, sys, ns) != 0 || path[ns] != L'\\' || wcschr(path + ns + 1, L'\\'))
        return NULL;   /* not a file right in the system directory (its subfolders are not redirected alike) */
    size_t rest = wcslen(path + ns);
    wchar_t *out = hs_xmalloc((nw + rest + 1) * sizeof *out);
    wmemcpy(out, wow, nw);
    wmemcpy(out + nw, path + ns, rest + 1);
    return out;
}
