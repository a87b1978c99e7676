/*
 * injector/symbols/symfs.h - how symbol code reads files: one function that
 * reads a whole file by its UTF-8 path. The locator and readers take it as a
 * parameter, so native tests give them an in-memory file system and the
 * real one differs per platform:
 *   symfs_win.c    Windows (UTF-8 -> UTF-16, CreateFileW): hookscope.exe
 *   symfs_posix.c  Linux, for native tests and tools, with Wine's drive
 *                  mapping: "Z:\a\b" reads /a/b (other drive letters do not
 *                  exist there), backslashes are separators
 */
#ifndef HOOKSCOPE_SYMFS_H
#define HOOKSCOPE_SYMFS_H

#include <stddef.h>
#include <stdint.h>

typedef struct hs_symfs {
    /* 0: *data (malloc'd, the caller frees it) and *size set; 1: no such
     * file; -1: it exists but cannot be read (err set, one line). */
    int (*read)(void *ctx, const char *path, uint8_t **data, size_t *size, char *err,
                size_t errlen);
    void *ctx;
    /* 1: a file of that name is there, 0: not (NULL: only read answers) */
    int (*exists)(void *ctx, const char *path);
    /* 1: a folder of that name is there, 0: not (NULL: not asked) */
    int (*is_folder)(void *ctx, const char *path);
} hs_symfs;

/* The host's file system. */
const hs_symfs *hs_symfs_host(void);

#endif
