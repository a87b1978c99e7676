/*
 * injector/symbols/symfs_posix.c - the host file system on Linux (native
 * tests and tools; see symfs.h): Wine's "Z:" drive is /, backslashes are
 * separators.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "injector/symbols/symfs.h"

/* The Linux path of a Windows-style one (malloc'd), or NULL: on another
 * drive, or out of memory (*oom set). */
static char *host_path(const char *path, int *oom)
{
    *oom = 0;
    const char *src = path;
    if ((path[0] == 'Z' || path[0] == 'z') && path[1] == ':')
        src = path + 2;
    else if (((path[0] | 0x20) >= 'a' && (path[0] | 0x20) <= 'z') && path[1] == ':')
        return NULL;                       /* another drive: not here */
    char *p = malloc(strlen(src) + 1);
    if (!p) {
        *oom = 1;
        return NULL;
    }
    size_t k = 0;
    for (; *src; src++)
        p[k++] = *src == '\\' ? '/' : *src;
    p[k] = 0;
    return p;
}

static int posix_read(void *ctx, const char *path, uint8_t **data, size_t *size, char *err,
                      size_t errlen)
{
    (void)ctx;
    int oom;
    char *p = host_path(path, &oom);
    if (!p) {
        if (oom)
            snprintf(err, errlen, "out of memory");
        return oom ? -1 : 1;
    }
    FILE *f = fopen(p, "rb");
    if (!f) {
        int e = errno;
        free(p);
        if (e == ENOENT || e == ENOTDIR || e == EISDIR)
            return 1;
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
        return -1;
    }
    free(p);
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 1 << 16;
            uint8_t *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "out of memory reading %s", path);
                return -1;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        snprintf(err, errlen, "cannot read %s", path);
        return -1;
    }
    *data = buf;
    *size = len;
    return 0;
}

/* 1: a file (folder: 0) or a folder (folder: 1) of that name is there */
static int posix_is(const char *path, int folder)
{
    int oom;
    char *p = host_path(path, &oom);
    struct stat st;
    int there = p && stat(p, &st) == 0 && (folder ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
    free(p);
    return there;
}

static int posix_exists(void *ctx, const char *path)
{
    (void)ctx;
    return posix_is(path, 0);
}

static int posix_is_folder(void *ctx, const char *path)
{
    (void)ctx;
    return posix_is(path, 1);
}

static const hs_symfs host = { posix_read, NULL, posix_exists, posix_is_folder };

const hs_symfs *hs_symfs_host(void)
{
    return &host;
}
