/*
 * injector/trace/target.h - find the program to trace and check that hookscope
 * can trace it; build its command line.
 */
#ifndef HOOKSCOPE_TARGET_H
#define HOOKSCOPE_TARGET_H

#include <wchar.h>

/* Resolve TARGET the way CreateProcess would (a path, or a name searched
 * in the usual places, ".exe" implied). Returns a malloc'd full path or
 * NULL. */
wchar_t *hs_target_resolve(const wchar_t *name);

/* Check that `path` is a Windows program (x64, or i386 for WOW64), and
 * give its bits (64 or 32); prints a one-line error naming `shown` and
 * returns -1 if not. */
int hs_target_check(const wchar_t *path, const char *shown, int *bits);

/* A command line that gives argv back through CommandLineToArgvW / the C
 * runtime's parser. malloc'd. */
wchar_t *hs_build_cmdline(wchar_t **argv, int argc);

#endif
