/*
 * sampler/codemap.h - the target's code as a sampler needs it: the images
 * loaded in it (headers and .pdata read once from its memory), hookscope's
 * own code in it (the arenas of stubs and trampolines with their unwind
 * tables, the agent), and a cache of its memory by page. It answers the
 * unwinder's questions (what code is at an address, the bytes there) and
 * turns an unwound stack into what the profile shows: frames of the agent
 * dropped, stub and trampoline frames replaced by the hooked function
 * they serve.
 *
 * Target memory is read through a callback (ReadProcessMemory in the
 * backend, a synthetic image in the unit tests). Plain C.
 */
#ifndef HOOKSCOPE_SAMPLER_CODEMAP_H
#define HOOKSCOPE_SAMPLER_CODEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/unwind/unwinder.h"
#include "sampler/sampler.h"

/* Read len bytes of the target at addr: 0, or -1. */
typedef int (*hs_mem_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

typedef struct hs_image {
    uint64_t base;
    uint32_t size, timestamp;
    char *path;                /* UTF-8 */
    uint32_t *pdata;           /* RUNTIME_FUNCTION triples, sorted by begin */
    size_t npdata;
    bool unloaded, agent;
    bool seen;                 /* the last enumeration listed it */
} hs_image;

typedef struct hs_codemap hs_codemap;

hs_codemap *hs_codemap_new(hs_mem_read_fn read, void *ctx);
void hs_codemap_free(hs_codemap *m);

/* An image loaded at base (its headers and .pdata are read now; an image
 * already known at that base with the same size is kept). Returns it, or
 * NULL when its headers cannot be read. */
hs_image *hs_codemap_add_image(hs_codemap *m, uint64_t base, uint32_t size, const char *path, bool agent);
/* Mark every image unseen; images not marked seen again by add_image
 * before hs_codemap_sweep are unloaded (they stay, for naming, but no
 * longer match addresses). */
void hs_codemap_begin_enum(hs_codemap *m);
void hs_codemap_sweep(hs_codemap *m);
size_t hs_codemap_images(const hs_codemap *m, const hs_image **out);

/* hookscope's own code (replaces what was set before; the arenas' unwind
 * tables are read now). */
void hs_codemap_set_own(hs_codemap *m, const hs_owncode *own);
bool hs_codemap_own_thread(const hs_codemap *m, uint32_t tid);

/* Forget cached memory (code that may have changed). */
void hs_codemap_flush(hs_codemap *m);

/* The unwinder's environment over this map. */
hs_uw_env hs_codemap_env(hs_codemap *m);

/* Target memory through the page cache: 0, or -1. */
int hs_codemap_read(hs_codemap *m, uint64_t addr, void *buf, size_t len);

/* Turn unwound frames (leaf first) into the profile's: frames in the agent
 * are dropped; a frame in a stub or trampoline becomes the entry of the
 * function it serves (leaf: the entry itself; a return address: entry +
 * 1, so that it names the function); a sample stopped in the timing
 * wrapper is given the timed function (whose descriptor the wrapper keeps
 * in rsi or rbp, from `leaf`). Returns the new count. */
uint32_t hs_codemap_attribute(const hs_codemap *m, const hs_uw_regs *leaf, uint64_t *frames, uint32_t n);

/* Is addr hookscope's code (an arena or the agent)? */
bool hs_codemap_is_own(const hs_codemap *m, uint64_t addr);

#endif
