/*
 * agent/tailenv.c - what the tail-jump rule (hook/tail.c) may learn about
 * code outside the module being hooked: a function in any loaded image,
 * found by RtlLookupFunctionEntry, with its bytes as they were before
 * hookscope patched them, and the import slots of the images seen.
 *
 * Called under install_lock: a module is unloaded only after the agent's
 * DLL notification (which takes that lock) has returned, so no image read
 * here goes away underneath. No loader lock is taken (a thread holding it
 * may be waiting for install_lock in that notification).
 */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "hook/base/search.h"
#include "hook/pe/unwind_info.h"

#define MAX_IMAGES 64

typedef struct tail_ctx {
    uint8_t *buf;                  /* the function's bytes, unpatched */
    size_t cap;
    struct image {
        uint64_t base;
        uint32_t size;
        hs_pe pe;
    } img[MAX_IMAGES];
    int n_img;
} tail_ctx;

/* An image seen so far (the module being hooked, or one a function was
 * found in), opened for its headers; NULL if it is not a PE image. */
static struct image *image_at(tail_ctx *c, uint64_t base)
{
    for (int i = 0; i < c->n_img; i++)
        if (c->img[i].base == base)
            return &c->img[i];
    if (c->n_img == MAX_IMAGES)
        return NULL;
    uint32_t size = hs_pe_mapped_size((const void *)(uintptr_t)base, NULL);
    struct image *m = &c->img[c->n_img];
    if (!size || hs_pe_open_mapped(&m->pe, (const void *)(uintptr_t)base, size) != HS_PE_OK)
        return NULL;
    m->base = base;
    m->size = size;
    c->n_img++;
    return m;
}

typedef struct hook_below {
    const hs_mod_state *m;
    uint64_t addr;
} hook_below;

static bool entry_below(const void *ctx, size_t i)
{
    const hook_below *k = ctx;
    return k->m->hooks[i].entry < k->addr;
}

/* Put back the original bytes of every patch that overlaps [addr, addr+n). */
static void unpatch(uint64_t addr, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < g_hs.n_mods; i++) {
        const hs_mod_state *m = &g_hs.mods[i];
        if (!m->hooked || m->unloaded || addr + n <= m->base || addr >= m->base + m->size)
            continue;
        /* the first hook whose patch can reach addr: entry >= addr - HS_MAX_PATCH */
        hook_below k = { m, addr > HS_MAX_PATCH ? addr - HS_MAX_PATCH : 0 };
        size_t lo = hs_partition_point(m->n_hooks, &k, entry_below);
        for (size_t k = lo; k < m->n_hooks && m->hooks[k].entry < addr + n + HS_MAX_PATCH; k++) {
            const hs_hooked *h = &m->hooks[k];
            uint64_t p = h->entry + (uint64_t)(int64_t)h->plan.patch_off;
            for (int b = 0; b < h->plan.patch_len; b++)
                if (p + (uint64_t)b >= addr && p + (uint64_t)b < addr + n)
                    out[p + (uint64_t)b - addr] = h->plan.orig[b];
        }
    }
}

/* hs_func_input.read for an image: its sections, unpatched. */
static int read_unpatched(void *ctx, uint64_t addr, void *out, size_t n)
{
    const struct image *m = ctx;
    hs_image_view v = { &m->pe, m->base };
    if (hs_image_read(&v, addr, out, n) < 0)
        return -1;
    unpatch(addr, out, n);
    return 0;
}

/* hs_func_input.part_at: the .pdata entry containing addr. */
static int part_at(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
    (void)ctx;
    DWORD64 ib = 0;
    PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(addr, &ib, NULL);
    if (!rf)
        return -1;
    *lo = ib + rf->BeginAddress;
    *hi = ib + rf->EndAddress;
    return 0;
}

/* Is addr inside a loaded image's mapping (not hookscope's arena or a heap)? */
static int image_of(uint64_t addr)
{
    MEMORY_BASIC_INFORMATION mbi;
    return VirtualQuery((const void *)(uintptr_t)addr, &mbi, sizeof mbi) == sizeof mbi && mbi.Type == MEM_IMAGE &&
           (mbi.Protect & (PAGE_EXECUTE | PAGE_EXECUTE_READ | PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY));
}

static int func_at(void *ctx, uint64_t addr, hs_func_input *fn, int *flags)
{
    tail_ctx *c = ctx;
    *flags = 0;
    DWORD64 ib = 0;
    PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(addr, &ib, NULL);
    if (!rf)   /* no unwind data: leaf code, or not in an image at all */
        return ib || image_of(addr) ? -2 : -1;
    if (ib + rf->BeginAddress != addr || rf->EndAddress <= rf->BeginAddress)
        return -1;
    struct image *m = image_at(c, ib);   /* not an image: hookscope's own stubs */
    if (!m || rf->EndAddress > m->size)
        return -1;
    /* a chained entry, or code entered with its frame set up, is no
     * function a jump hands its caller's stack to */
    hs_unwind u;
    if (hs_pe_unwind(&m->pe, rf->UnwindData, &u) == 0 &&
        ((u.flags & HS_UNW_CHAININFO) || hs_unwind_entered_with_frame(&u)))
        return -1;
    size_t size = rf->EndAddress - rf->BeginAddress;
    if (size > c->cap) {
        uint8_t *b = realloc(c->buf, size);
        if (!b)
            return -1;
        c->buf = b;
        c->cap = size;
    }
    if (read_unpatched(m, addr, c->buf, size) < 0)
        return -1;
    memset(fn, 0, sizeof *fn);
    fn->code = c->buf;
    fn->addr = addr;
    fn->size = (uint32_t)size;
    fn->image_lo = ib;
    fn->image_hi = ib + m->size;
    fn->read = read_unpatched;
    fn->read_ctx = m;
    fn->part_at = part_at;
    return 0;
}

static int import_at(void *ctx, uint64_t slot, uint64_t *target)
{
    tail_ctx *c = ctx;
    for (int i = 0; i < c->n_img; i++) {
        const struct image *m = &c->img[i];
        if (slot >= m->base && slot - m->base < m->size) {
            if (!hs_pe_is_iat(&m->pe, (uint32_t)(slot - m->base)))
                return -1;
            *target = *(const uint64_t *)(uintptr_t)slot;
            return 0;
        }
    }
    return -1;
}

int hs_tail_solve_module(hs_tail *t, uint64_t base)
{
    tail_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    image_at(c, base);
    hs_tail_env env = { func_at, import_at, c };
    hs_tail_solve(t, g_hs.engine, &env, 4096);
    for (int i = 0; i < c->n_img; i++)
        hs_pe_close(&c->img[i].pe);
    free(c->buf);
    free(c);
    return 0;
}
