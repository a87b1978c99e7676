/*
 * injector/symbols/symfs_win.c - the host file system on Windows (see
 * symfs.h): UTF-8 paths opened with CreateFileW.
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#include "injector/symbols/symfs.h"

static int win_read(void *ctx, const char *path, uint8_t **data, size_t *size, char *err,
                    size_t errlen)
{
    (void)ctx;
    int wn = MultiByteToWideChar(CP_UTF8, 0, path, -1, NULL, 0);
    if (wn <= 0) {
        snprintf(err, errlen, "bad file name %s", path);
        return -1;
    }
    wchar_t *w = malloc((size_t)wn * sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    MultiByteToWideChar(CP_UTF8, 0, path, -1, w, wn);
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

static const hs_symfs host = { win_read, NULL };

const hs_symfs *hs_symfs_host(void)
{
    return &host;
}
