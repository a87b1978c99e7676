/*
 * hook/base/vec.h - room for one more element in a malloc'd array.
 */
#ifndef HOOKSCOPE_GROW_H
#define HOOKSCOPE_GROW_H

#include <stdlib.h>

/* If *array (of *cap elements of `elem` bytes) has no room for element n,
 * double it (256 at first). Returns 0, or -1 with the array unchanged. */
static inline int hs_grow(void *array, size_t *cap, size_t n, size_t elem)
{
    void **p = (void **)array;
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 256;
    void *np = realloc(*p, nc * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

#endif
