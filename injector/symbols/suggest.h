/*
 * injector/symbols/suggest.h - "did you mean": the function names nearest
 * to a filter pattern that matched nothing. A name that contains the
 * pattern's literal text (its * and ? removed, case ignored) is nearest
 * (shorter first); then names within a small edit distance of it.
 */
#ifndef HOOKSCOPE_SUGGEST_H
#define HOOKSCOPE_SUGGEST_H

#include <stddef.h>

/* Up to max of names[0..n) into out, best first; returns how many. */
size_t hs_suggest(const char *pattern, const char *const *names, size_t n, const char **out, size_t max);

#endif
