/*
 * injector/output/outdir_win.c - see outdir.h. The lock is a file
 * ".hookscope.lock" in the directory, opened for writing with no write
 * sharing and deleted on close: a second run cannot open it for writing
 * while the first runs, and reads the first one's pid from it.
 *
 * An elevated hookscope cleans and writes this directory, which others
 * may be able to write into: a junction or symbolic link planted as the
 * directory or in it would redirect those deletes and writes. So the
 * directory is refused when it is one or holds one; it is held open
 * without delete sharing for the whole run (it cannot be renamed and
 * replaced meanwhile); and every file is written through an open that
 * does not follow a link at its name (hs_fopen_out). Under Wine a Unix
 * symbolic link to a directory shows as a reparse point, one to a file
 * does not.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#include "hook/base/util.h"
#include "injector/output/outdir.h"

#define LOCK_NAME L".hookscope.lock"

/* The locks this process holds. Closed at exit, not left to the process's
 * end: Wine's server deletes a delete-on-close file when it notices the
 * process has gone, which can be after whoever waited for hookscope
 * lists the directory. */
#define MAX_LOCKS 8
static HANDLE locks[MAX_LOCKS];
static int nlocks;

static void close_locks(void)
{
    while (nlocks > 0)
        CloseHandle(locks[--nlocks]);
}

static void hold(HANDLE h)
{
    if (nlocks < MAX_LOCKS) {
        if (nlocks == 0)
            atexit(close_locks);
        locks[nlocks++] = h;
    }
}

static bool is_reparse(DWORD attr)
{
    return attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_REPARSE_POINT);
}

/* The directory w: not a junction or link itself, none in it; held open.
 * 0, or -1 after one line. */
static int guard(const char *dir, const wchar_t *w)
{
    const char *refused = "hookscope never cleans or writes through one";
    HANDLE d = CreateFileW(w, FILE_LIST_DIRECTORY, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    BY_HANDLE_FILE_INFORMATION fi;
    if (is_reparse(GetFileAttributesW(w)) ||
        (d != INVALID_HANDLE_VALUE && GetFileInformationByHandle(d, &fi) && is_reparse(fi.dwFileAttributes))) {
        hs_err("output directory %s is a junction or symbolic link: refused (%s)", dir, refused);
        if (d != INVALID_HANDLE_VALUE)
            CloseHandle(d);
        return -1;
    }
    if (d == INVALID_HANDLE_VALUE) {
        hs_err("cannot open output directory %s: %s", dir, hs_win_error(GetLastError()));
        return -1;
    }
    size_t n = wcslen(w) + 3;
    wchar_t *pattern = hs_xmalloc(n * sizeof(wchar_t));
    swprintf(pattern, n, L"%ls\\*", w);
    WIN32_FIND_DATAW fd;
    HANDLE find = FindFirstFileW(pattern, &fd);
    free(pattern);
    int rc = 0;
    for (BOOL more = find != INVALID_HANDLE_VALUE; more && rc == 0; more = FindNextFileW(find, &fd)) {
        if (is_reparse(fd.dwFileAttributes)) {
            char *name = hs_utf8(fd.cFileName);
            hs_err("output directory %s holds a junction or symbolic link, %s: refused (%s)", dir, name, refused);
            free(name);
            rc = -1;
        }
    }
    if (find != INVALID_HANDLE_VALUE)
        FindClose(find);
    if (rc < 0)
        CloseHandle(d);
    else
        hold(d);   /* (no delete sharing: it stays this directory until hookscope exits) */
    return rc;
}

/* Why dir could not be made a directory: the first existing part of the
 * path that is not a directory, or the error of creating it. */
static const char *why_not_dir(wchar_t *w, DWORD create_err)
{
    DWORD attr = GetFileAttributesW(w);
    if (attr != INVALID_FILE_ATTRIBUTES && !(attr & FILE_ATTRIBUTE_DIRECTORY))
        return "a file of that name exists";
    size_t n = wcslen(w);
    for (size_t i = 1; i < n; i++) {
        if (w[i] != L'\\' && w[i] != L'/')
            continue;
        wchar_t c = w[i];
        w[i] = 0;
        attr = GetFileAttributesW(w);
        w[i] = c;
        if (attr != INVALID_FILE_ATTRIBUTES && !(attr & FILE_ATTRIBUTE_DIRECTORY))
            return "a part of the path is a file";
    }
    return hs_win_error(create_err);
}

int hs_outdir_open(const char *dir)
{
    wchar_t *w = hs_wide(dir);
    size_t n = wcslen(w);
    DWORD create_err = 0;
    for (size_t i = 1; i <= n; i++) {
        if (i == n || w[i] == L'\\' || w[i] == L'/') {
            wchar_t c = w[i];
            w[i] = 0;
            if (!(i == 2 && w[1] == L':') && !CreateDirectoryW(w, NULL) &&
                GetLastError() != ERROR_ALREADY_EXISTS)
                create_err = GetLastError();
            w[i] = c;
        }
    }
    DWORD attr = GetFileAttributesW(w);
    if (attr == INVALID_FILE_ATTRIBUTES || !(attr & FILE_ATTRIBUTE_DIRECTORY)) {
        hs_err("cannot create output directory %s: %s", dir, why_not_dir(w, create_err));
        free(w);
        return -1;
    }
    if (guard(dir, w) < 0) {
        free(w);
        return -1;
    }
    size_t ln = n + 2 + wcslen(LOCK_NAME);
    wchar_t *lock = hs_xmalloc(ln * sizeof(wchar_t));
    swprintf(lock, ln, L"%ls\\%ls", w, LOCK_NAME);
    free(w);
    HANDLE h = CreateFileW(lock, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL, OPEN_ALWAYS,
                           FILE_ATTRIBUTE_HIDDEN | FILE_FLAG_DELETE_ON_CLOSE | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD err = GetLastError();
        char holder[32] = "";
        HANDLE r = CreateFileW(lock, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                               OPEN_EXISTING, 0, NULL);
        if (r != INVALID_HANDLE_VALUE) {
            DWORD got = 0;
            if (!ReadFile(r, holder, sizeof holder - 1, &got, NULL))
                got = 0;
            holder[got] = 0;
            CloseHandle(r);
        }
        free(lock);
        if (err == ERROR_SHARING_VIOLATION)
            hs_err("output directory %s is in use by another hookscope run%s%s%s; choose another with -o",
                   dir, holder[0] ? " (pid " : "", holder, holder[0] ? ")" : "");
        else
            hs_err("cannot lock output directory %s: %s", dir, hs_win_error(err));
        return -1;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%lu", (unsigned long)GetCurrentProcessId());
    DWORD wrote = 0;
    WriteFile(h, pid, (DWORD)len, &wrote, NULL);
    free(lock);
    /* held until hookscope exits */
    hold(h);
    return 0;
}
