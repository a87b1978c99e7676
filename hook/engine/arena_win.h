/*
 * hook/engine/arena_win.h - executable memory for stubs and trampolines, placed
 * so that every byte of it is within rel32 reach of every byte of a module
 * image: a 5-byte jmp from any function reaches its stub, and a RIP-relative
 * operand relocated into a trampoline still reaches its target in the image.
 */
#ifndef HOOKSCOPE_ARENA_WIN_H
#define HOOKSCOPE_ARENA_WIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct hs_arena_block {
    struct hs_arena_block *next;
    uint8_t *base;
    size_t size, used;
} hs_arena_block;

typedef struct hs_arena {
    hs_arena_block *blocks;
} hs_arena;

/* Reserve and commit at least `size` bytes of RWX memory whose whole
 * extent is within +-2 GB (minus a margin) of [image_lo, image_hi).
 * Existing blocks are reused when they are in reach and have room.
 * Returns NULL when no such memory can be found. */
uint8_t *hs_arena_alloc(hs_arena *a, uint64_t image_lo, uint64_t image_hi, size_t size);

/* Make every block read+execute only (after stubs are written), or
 * writable again (before they are changed). */
void hs_arena_protect(hs_arena *a, int writable);

/* Release every block. */
void hs_arena_free(hs_arena *a);

/* Does [p, p+n) lie in one of the arena's blocks? */
int hs_arena_contains(const hs_arena *a, uint64_t p);

#endif
