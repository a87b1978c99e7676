/*
 * hook/engine/arena_win.c - trampoline memory near a module (see arena_win.h).
 *
 * Free address ranges are found with VirtualQuery, walking down from the
 * image and then up from it, at allocation granularity, as MinHook does;
 * the block is then reserved and committed with one VirtualAlloc.
 */
#include "hook/engine/arena_win.h"

#include <stdlib.h>
#include <windows.h>

#define REACH 0x7FF00000ull   /* 2 GB minus a margin */
#define BLOCK_MIN (1u << 20)   /* blocks of at least 1 MB */

static int block_in_reach(uint64_t lo, uint64_t hi, uint64_t image_lo, uint64_t image_hi)
{
    /* every byte of [lo,hi) within REACH of every byte of [image_lo,image_hi) */
    return hi <= image_lo + REACH && lo + REACH >= image_hi;
}

static uint8_t *try_alloc_at(uint64_t addr, size_t size)
{
    return VirtualAlloc((void *)(uintptr_t)addr, size, MEM_RESERVE | MEM_COMMIT,
                        PAGE_EXECUTE_READWRITE);
}

/* Look at the region at p: if [p, p+size) is free, allocate it (*got).
 * Returns -1 when p cannot be queried. */
static int claim(uint64_t p, size_t size, MEMORY_BASIC_INFORMATION *mbi, uint8_t **got)
{
    *got = NULL;
    if (!VirtualQuery((void *)(uintptr_t)p, mbi, sizeof *mbi))
        return -1;
    uint64_t rbase = (uint64_t)(uintptr_t)mbi->BaseAddress;
    if (mbi->State == MEM_FREE && rbase + mbi->RegionSize >= p + size)
        *got = try_alloc_at(p, size);
    return 0;
}

static uint8_t *find_and_alloc(uint64_t image_lo, uint64_t image_hi, size_t size)
{
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    uint64_t gran = si.dwAllocationGranularity;
    uint64_t min_app = (uint64_t)(uintptr_t)si.lpMinimumApplicationAddress;
    uint64_t max_app = (uint64_t)(uintptr_t)si.lpMaximumApplicationAddress;

    uint64_t lo_bound = image_hi > REACH ? image_hi - REACH : 0;
    if (lo_bound < min_app)
        lo_bound = min_app;
    uint64_t hi_bound = image_lo + REACH;
    if (hi_bound > max_app)
        hi_bound = max_app;

    /* walk down from just below the image, then up from its end */
    uint64_t p = (image_lo - size) & ~(gran - 1);
    while (p >= lo_bound && p < image_lo) {
        MEMORY_BASIC_INFORMATION mbi;
        uint8_t *r;
        if (claim(p, size, &mbi, &r) < 0)
            break;
        if (r)
            return r;
        /* continue below this region */
        uint64_t region_start = mbi.State == MEM_FREE ? (uint64_t)(uintptr_t)mbi.BaseAddress
                                                       : (uint64_t)(uintptr_t)mbi.AllocationBase;
        if (region_start < size + gran)
            break;
        uint64_t np = (region_start - size) & ~(gran - 1);
        p = np < p ? np : p - gran;
    }
    p = (image_hi + gran - 1) & ~(gran - 1);
    while (p + size <= hi_bound) {
        MEMORY_BASIC_INFORMATION mbi;
        uint8_t *r;
        if (claim(p, size, &mbi, &r) < 0)
            break;
        if (r)
            return r;
        uint64_t np = ((uint64_t)(uintptr_t)mbi.BaseAddress + mbi.RegionSize + gran - 1) & ~(gran - 1);
        p = np > p ? np : p + gran;
    }
    return NULL;
}

uint8_t *hs_arena_alloc(hs_arena *a, uint64_t image_lo, uint64_t image_hi, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    for (hs_arena_block *b = a->blocks; b; b = b->next) {
        uint64_t lo = (uint64_t)(uintptr_t)b->base;
        if (b->size - b->used >= size && block_in_reach(lo, lo + b->size, image_lo, image_hi)) {
            uint8_t *r = b->base + b->used;
            b->used += size;
            return r;
        }
    }
    size_t bsize = size;
    if (bsize < BLOCK_MIN)
        bsize = BLOCK_MIN;
    bsize = (bsize + 0xFFFF) & ~(size_t)0xFFFF;
    uint8_t *mem = find_and_alloc(image_lo, image_hi, bsize);
    if (!mem)
        return NULL;
    /* the header is on the heap: the block itself is made read-only */
    hs_arena_block *b = malloc(sizeof *b);
    if (!b) {
        VirtualFree(mem, 0, MEM_RELEASE);
        return NULL;
    }
    b->base = mem;
    b->size = bsize;
    b->used = 0;
    b->next = a->blocks;
    a->blocks = b;
    uint8_t *r = b->base + b->used;
    b->used += size;
    return r;
}

void hs_arena_protect(hs_arena *a, int writable)
{
    for (hs_arena_block *b = a->blocks; b; b = b->next) {
        DWORD old;
        VirtualProtect(b->base, b->size, writable ? PAGE_EXECUTE_READWRITE : PAGE_EXECUTE_READ, &old);
    }
}

int hs_arena_contains(const hs_arena *a, uint64_t p)
{
    for (const hs_arena_block *b = a->blocks; b; b = b->next) {
        uint64_t lo = (uint64_t)(uintptr_t)b->base;
        if (p >= lo && p < lo + b->size)
            return 1;
    }
    return 0;
}

void hs_arena_free(hs_arena *a)
{
    hs_arena_block *b = a->blocks;
    while (b) {
        hs_arena_block *next = b->next;
        VirtualFree(b->base, 0, MEM_RELEASE);
        free(b);
        b = next;
    }
    a->blocks = NULL;
}
