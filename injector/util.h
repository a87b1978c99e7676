/*
 * injector/util.h - small helpers: errors, strings, files.
 */
#ifndef HOOKSCOPE_UTIL_H
#define HOOKSCOPE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

/* Exit codes of hookscope itself (the target's code is passed on otherwise). */
#define HS_EXIT_USAGE 2      /* bad command line */
#define HS_EXIT_FAILED 125   /* hookscope could not trace */

/* Print "hookscope: <message>" on stderr. */
void hs_err(const char *fmt, ...) __attribute__((format(gnu_printf, 1, 2)));

/* --verbose: print "hookscope: [t s] <message>" on stderr. */
extern int hs_verbose;
void hs_log(const char *fmt, ...) __attribute__((format(gnu_printf, 1, 2)));

/* UTF-16 <-> UTF-8, malloc'd (never NULL: aborts on out of memory). */
char *hs_utf8(const wchar_t *w);
char *hs_utf8_n(const uint16_t *w, size_t max);
wchar_t *hs_wide(const char *s);

/* malloc that never returns NULL. */
void *hs_xmalloc(size_t n);
void *hs_xcalloc(size_t n, size_t size);
void *hs_xrealloc(void *p, size_t n);
char *hs_xstrdup(const char *s);

/* Read a whole file; returns malloc'd bytes or NULL (errno-style Win32
 * error in *err if given). */
uint8_t *hs_read_file(const wchar_t *path, size_t *size, unsigned long *err);

/* The text of a Win32 error, one line, static buffer. */
const char *hs_win_error(unsigned long err);

/* File name part of a path (either separator). */
const char *hs_basename(const char *path);

/* Directory of hookscope.exe, with a trailing backslash. */
const wchar_t *hs_self_dir(void);

/* Seconds since an arbitrary start, monotonic. */
double hs_now(void);

#endif
