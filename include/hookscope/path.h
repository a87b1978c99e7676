/*
 * include/hookscope/path.h - Windows path helpers shared by the injector
 * and the agent.
 */
#ifndef HOOKSCOPE_PATH_H
#define HOOKSCOPE_PATH_H

#include <wchar.h>

/* The part of a path after its last \ or / (the whole path if none). */
static inline const wchar_t *hs_file_name(const wchar_t *path)
{
    const wchar_t *b = path;
    for (const wchar_t *p = path; *p; p++)
        if (*p == L'\\' || *p == L'/')
            b = p + 1;
    return b;
}

#endif
