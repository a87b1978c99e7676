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

/* Is rva where a call, or a jump out of function f, may lead that is
 * not a known function: code of the image, not a start or inside a
 * function of exact extent? */
static int unknown_target(const hs_pe *pe, const hs_pe_func *known, size_t n, const hs_pe_func *f, uint64_t target,
                          int is_call)
{
    if (target < pe->image_base || target - pe->image_base >= pe->size_of_image)
        return 0;
    uint32_t rva = (uint32_t)(target - pe->image_base);
    if (!is_call && rva - f->rva < f->size)
        return 0;   /* a jump inside the function; one out of it is a tail call */
    return hs_pe_is_exec(pe, rva) && !known_at(known, n, rva);
}

/* Could f's code hold a direct call or jump to an unknown target: is
 * there such a branch at any byte, whether or not an instruction starts
 * there? Every real one starts at some byte, so a function without one
 * needs no decoding (most functions of an image whose symbols name every
 * target). */
static int may_branch_out(const hs_pe *pe, const hs_pe_func *known, size_t n, const hs_pe_func *f,
                          const uint8_t *code)
{
    uint64_t addr = pe->image_base + f->rva;
    for (uint32_t i = 0; i < f->size; i++) {
        const uint8_t op = code[i];
        uint64_t target;
        if ((op == 0xE8 || op == 0xE9) && i + 5 <= f->size)
            target = addr + i + 5 + (uint64_t)(int64_t)(int32_t)((uint32_t)code[i + 1] | (uint32_t)code[i + 2] << 8 |
                                                                 (uint32_t)code[i + 3] << 16 |
                                                                 (uint32_t)code[i + 4] << 24);
        else if (op == 0xEB && i + 2 <= f->size)
            target = addr + i + 2 + (uint64_t)(int64_t)(int8_t)code[i + 1];
        else
            continue;
        if (unknown_target(pe, known, n, f, target, op == 0xE8))
            return 1;
    }
    return 0;
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
        if (!code || !may_branch_out(pe, known, n, f, code))
            continue;
        size_t left = f->size;
        uint64_t addr = pe->image_base + f->rva;
        while (left && cs_disasm_iter(cs, &code, &left, &addr, ci)) {
            uint64_t target;
            if (!direct_target(ci, &target) || !unknown_target(pe, known, n, f, target, ci->bytes[0] == 0xE8))
                continue;
            uint32_t rva = (uint32_t)(target - pe->image_base);
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
