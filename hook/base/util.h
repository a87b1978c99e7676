/*
 * hook/base/util.h - small helpers: errors, memory, strings, files,
 * sorting, the clock. util.c is portable (also built natively for the
 * unit tests); util_win.c holds what needs the Windows API.
 */
#ifndef HOOKSCOPE_UTIL_H
#define HOOKSCOPE_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <wchar.h>

/* printf-style argument checking (mingw's printf is the GNU one here). */
#ifdef __MINGW32__
#define HS_PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#else
#define HS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#endif

/* Exit codes of hookscope itself (the target's code is passed on otherwise). */
#define HS_EXIT_USAGE 2      /* bad command line */
#define HS_EXIT_FAILED 125   /* hookscope could not trace */

/* Print "hookscope: <message>" on stderr. */
void hs_err(const char *fmt, ...) HS_PRINTF(1, 2);

/* --verbose: print "hookscope: [t s] <message>" on stderr. */
extern int hs_verbose;
void hs_log(const char *fmt, ...) HS_PRINTF(1, 2);

/* "hookscope: out of memory", and exit. */
void hs_out_of_memory(void) __attribute__((noreturn));

/* malloc that never returns NULL (prints and exits on out of memory). */
void *hs_xmalloc(size_t n);
void *hs_xcalloc(size_t n, size_t size);
void *hs_xrealloc(void *p, size_t n);
char *hs_xstrdup(const char *s);
char *hs_xstrndup(const char *s, size_t n);
char *hs_xasprintf(const char *fmt, ...) HS_PRINTF(1, 2);

/* Grow *v (of *cap elements of `size` bytes) to hold at least `need`
 * (never fails: exits on out of memory, like hs_xmalloc). */
void hs_xgrow(void *v, size_t *cap, size_t need, size_t size);

/* File name part of a path (either separator). */
const char *hs_basename(const char *path);

/* dir and name joined by the separator dir itself uses ('/' when it has
 * one and no '\\', else the platform's), so a printed path has one style;
 * no separator is added after one that ends dir, nor to an empty dir.
 * malloc'd. */
char *hs_path_join(const char *dir, const char *name);

/* Stable sort (a merge sort) with a context for the comparator: no globals.
 * Never fails: without memory for the merge it sorts in place, slowly. An
 * array already in order costs n - 1 comparisons and no copy. */
void hs_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
             void *ctx);
/* The first `top` elements of what hs_sort would give, in order, at the
 * start of base (the others after them, in no order); returns how many
 * that is (top, or n when there are fewer). */
size_t hs_sort_top(void *base, size_t n, size_t size, size_t top,
                   int (*cmp)(const void *, const void *, void *), void *ctx);

/* Read a whole file named by a UTF-8 path; malloc'd bytes (NUL-terminated,
 * not counted in *size), or NULL with a one-line reason in *why (static). */
uint8_t *hs_load_file(const char *path, size_t *size, const char **why);

/* fopen of a UTF-8 path (mode as fopen's). */
FILE *hs_fopen(const char *path, const char *mode);

/* Seek and tell with 64-bit offsets (files past 2 GiB). */
#ifdef _WIN32
#define hs_fseek _fseeki64
#define hs_ftell _ftelli64
#else
#define hs_fseek fseeko
#define hs_ftell ftello
#endif

/* Create or truncate the file at a UTF-8 path for writing (binary), never
 * through a junction, symbolic link or hard link at that name: such a
 * name is refused (NULL, *why saying so; *why also says any other error). */
FILE *hs_fopen_out(const char *path, const char **why);

/* Remove the file at a UTF-8 path; 0 if it is gone (or was never there),
 * -1 with the reason in *why (static) otherwise. */
int hs_remove_file(const char *path, const char **why);

/* UTF-16LE of at most max units (up to its NUL) as UTF-8, malloc'd (never
 * NULL); unpaired surrogates become U+FFFD. */
char *hs_utf8_n(const uint16_t *w, size_t max);

/* Seconds since an arbitrary start, monotonic. */
double hs_now(void);

/* ---- Windows only (util_win.c) ---- */

/* UTF-16 <-> UTF-8, malloc'd (never NULL). */
char *hs_utf8(const wchar_t *w);
wchar_t *hs_wide(const char *s);

/* hs_read_file's error for a directory (ERROR_DIRECTORY_NOT_SUPPORTED) */
#define HS_ERROR_IS_DIRECTORY 336ul

/* Read a whole file; malloc'd bytes or NULL (Win32 error in *err if given;
 * a directory: HS_ERROR_IS_DIRECTORY, "it is a directory"). */
uint8_t *hs_read_file(const wchar_t *path, size_t *size, unsigned long *err);

/* A file a 32-bit (WOW64) program names right in the system directory is
 * the file-system redirector's: the same name in SysWOW64, which
 * hookscope (64-bit, not redirected) must open instead. That path
 * (malloc'd), or NULL when `path` is not such a file. */
wchar_t *hs_wow64_file(const wchar_t *path);

/* The text of a Win32 error, one line, static buffer. */
const char *hs_win_error(unsigned long err);

/* Directory of hookscope.exe, with a trailing backslash. */
const wchar_t *hs_self_dir(void);

/* A test's replacement for a table of system functions (the ETW calls,
 * the token calls), which Wine lacks or cannot show: the table that the
 * export `name` of the DLL named by environment variable `env` returns.
 * NULL when env is not set; NULL after one line when the DLL is not under
 * the folder that holds hookscope's own folder (an elevated hookscope
 * loads no DLL that a variable points to elsewhere) or has no `name`. */
void *hs_test_table(const char *env, const char *name);

/* A kernel's name of a file ("\Device\HarddiskVolume2\x\y.dll", as ETW
 * traces record them; "\SystemRoot\..."; "\??\C:\...") as a path of
 * this machine ("C:\x\y.dll"), malloc'd; NULL when no drive of this
 * machine is that device (a trace from elsewhere). */
char *hs_nt_path_local(const char *nt);

#endif
