/*
 * hook/engine/filter.h - which functions to hook, by name: include and exclude
 * patterns (shell globs, * and ?), optionally qualified by module
 * ("kernel32!Create*"). A function is hooked when no exclude pattern
 * matches it and, if there are include patterns, at least one of them
 * does. Names tried: the raw symbol, its undecorated form (the caller
 * passes both), and sub_<rva> for a function without a name.
 */
#ifndef HOOKSCOPE_FILTER_H
#define HOOKSCOPE_FILTER_H

#include <stdint.h>

#define HS_FILTER_MAX 32

typedef struct hs_filter {
    int n;
    const char *pattern[HS_FILTER_MAX];   /* as given: "glob" or "module!glob" */
    int exclude[HS_FILTER_MAX];
    uint32_t matched;                     /* bit i: pattern i matched some function */
} hs_filter;

/* Shell-style glob: * any run, ? one character; case-sensitive. */
int hs_glob(const char *pattern, const char *text);

/* Does a module file name match a module pattern (case-insensitive, the
 * extension may be left out: "kernel32" matches "kernel32.dll")? */
int hs_module_matches(const char *module, const char *pattern);

/* Decide for one function of `module`; names may be NULL. Returns 1 to
 * hook it. Records which patterns matched in f->matched. */
int hs_filter_admits(hs_filter *f, const char *module, const char *raw, const char *undecorated,
                     uint32_t rva);

#endif
