/*
 * hook/engine/calls.c - functions an image's code calls (see calls.h).
 */
#include "hook/engine/calls.h"

#include <capstone/capstone.h>
#include <stdlib.h>

#include "hook/base/search.h"
#include "hook/base/vec.h"

enum { EXACT = HS_SRC_PDATA | HS_SRC_DEBUG | HS_SRC_EHFRAME };

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Is rva a function's start, or inside a function of exact extent? */
static int known_at(const hs_pe_func *f, size_t n, uint32_t rva)
{
    size_t a = HS_UPPER_BOUND_U32(f, n, rva, rva);
    if (a > 0 && f[a - 1].rva == rva)
        return 1;
    /* the functions before it that are of exact extent (nested ones are rare) */
    for (size_t k = a; k-- > 0 && k + 8 > a;)
        if ((f[k].src & EXACT) && rva - f[k].rva < f[k].size)
            return 1;
    return 0;
}

/* A call or jmp to a rel8/rel32 target (E8, E9, EB, without prefixes):
 * *target its address. */
static int direct_target(const cs_insn *ci, uint64_t *target)
{
    const uint8_t op = ci->bytes[0];
    int64_t rel;
    if ((op == 0xE8 || op == 0xE9) && ci->size == 5)
        rel = (int32_t)((uint32_t)ci->bytes[1] | (uint32_t)ci->bytes[2] << 8 | (uint32_t)ci->bytes[3] << 16 |
                        (uint32_t)ci->bytes[4] << 24);
    else if (op == 0xEB && ci->size == 2)
        rel = (int8_t)ci->bytes[1];
    else
        return 0;
    *target = ci->address + ci->size + (uint64_t)rel;
    return 1;
}

int hs_call_targets(const hs_pe *pe, const hs_pe_func *known, size_t n, uint32_t **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    csh cs;
    if (cs_open(CS_ARCH_X86, pe->bits == 32 ? CS_MODE_32 : CS_MODE_64, &cs) != CS_ERR_OK)
        return -1;
    /* (no detail: the branch's target is read from its bytes, which is
     * three times faster than capstone filling in the operands) */
    cs_insn *ci = cs_malloc(cs);
    uint32_t *v = NULL;
    size_t nv = 0, cap = 0;
    int rc = ci ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const hs_pe_func *f = &known[i];
        if (!(f->src & EXACT) || (f->src & HS_SRC_FRAGMENT))
            continue;
        const uint8_t *code = hs_pe_ptr(pe, f->rva, f->size);
        if (!code)
            continue;
        size_t left = f->size;
        uint64_t addr = pe->image_base + f->rva;
        while (left && cs_disasm_iter(cs, &code, &left, &addr, ci)) {
            uint64_t target;
            if (!direct_target(ci, &target))
                continue;
            if (target < pe->image_base || target - pe->image_base >= pe->size_of_image)
                continue;
            uint32_t rva = (uint32_t)(target - pe->image_base);
            if (ci->bytes[0] != 0xE8 && rva - f->rva < f->size)
                continue;   /* a jump inside the function; one out of it is a tail call */
            if (!hs_pe_is_exec(pe, rva) || known_at(known, n, rva))
                continue;
            if (hs_grow(&v, &cap, nv, sizeof *v) < 0) {
                rc = -1;
                break;
            }
            v[nv++] = rva;
        }
    }
    if (ci)
        cs_free(ci, 1);
    cs_close(&cs);
    if (rc < 0) {
        free(v);
        return -1;
    }
    if (nv) {
        qsort(v, nv, sizeof *v, cmp_u32);
        size_t w = 0;
        for (size_t i = 0; i < nv; i++)
            if (w == 0 || v[w - 1] != v[i])
                v[w++] = v[i];
        nv = w;
    }
    *out = v;
    *count = nv;
    return 0;
}
