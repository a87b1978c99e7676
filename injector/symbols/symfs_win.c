/*
 * injector/symbols/symfs_win.c - the host file system on Windows (see
 * symfs.h): UTF-8 paths opened with CreateFileW.
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#include "injector/symbols/symfs.h"

/* path in UTF-16 (malloc'd), or NULL (err set) */
static wchar_t *wide(const char *path, char *err, size_t errlen)
{
    int wn = MultiByteToWideChar(CP_UTF8, 0, path, -1, NULL, 0);
    wchar_t *w = wn > 0 ? malloc((size_t)wn * sizeof *w) : NULL;
    if (!w) {
        snprintf(err, errlen, wn > 0 ? "out of memory" : "bad file name %s", path);
        return NULL;
    }
    MultiByteToWideChar(CP_UTF8, 0, path, -1, w, wn);
    return w;
}

static int win_read(void *ctx, const char *path, uint8_t **data, size_t *size, char *err,
                    size_t errlen)
{
    (void)ctx;
    wchar_t *w = wide(path, err, errlen);
    if (!w)
        return -1;
    HANDLE h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    free(w);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND || e == ERROR_INVALID_NAME ||
            e == ERROR_BAD_NETPATH || e == ERROR_BAD_NET_NAME || e == ERROR_INVALID_DRIVE)
            return 1;
        snprintf(err, errlen, "cannot open %s (error %lu)", path, (unsigned long)e);
        return -1;
    }
    LARGE_INTEGER li;
    if (!GetFileSizeEx(h, &li) || li.QuadPart < 0 || (unsigned long long)li.QuadPart > SIZE_MAX / 2) {
        CloseHandle(h);
        snprintf(err, errlen, "cannot size %s", path);
        return -1;
    }
    size_t n = (size_t)li.QuadPart;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        CloseHandle(h);
        snprintf(err, errlen, "out of memory reading %s (%zu bytes)", path, n);
        return -1;
    }
    size_t off = 0;
    while (off < n) {
        DWORD want = n - off > (1u << 30) ? (1u << 30) : (DWORD)(n - off), got = 0;
        if (!ReadFile(h, buf + off, want, &got, NULL) || got == 0) {
            free(buf);
            CloseHandle(h);
            snprintf(err, errlen, "cannot read %s (error %lu)", path, (unsigned long)GetLastError());
            return -1;
        }
        off += got;
    }
    CloseHandle(h);
    *data = buf;
    *size = n;
    return 0;
}

/* 1: a file (folder: 0) or a folder (folder: 1) of that name is there */
static int win_is(const char *path, int folder)
{
    char err[64];
    wchar_t *w = wide(path, err, sizeof err);
    if (!w)
        return 0;
    DWORD a = GetFileAttributesW(w);
    free(w);
    return a != INVALID_FILE_ATTRIBUTES && !(a & FILE_ATTRIBUTE_DIRECTORY) == !folder;
}

static int win_exists(void *ctx, const char *path)
{
    (void)ctx;
    return win_is(path, 0);
}

static int win_is_folder(void *ctx, const char *path)
{
    (void)ctx;
    return win_is(path, 1);
}

static const hs_symfs host = { win_read, NULL, win_exists, win_is_folder };

const hs_symfs *hs_symfs_host(void)
{
    return &host;
}
