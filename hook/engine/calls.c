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

int hs_call_targets(const hs_pe *pe, const hs_pe_func *known, size_t n, uint32_t **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    csh cs;
    if (cs_open(CS_ARCH_X86, pe->bits == 32 ? CS_MODE_32 : CS_MODE_64, &cs) != CS_ERR_OK)
        return -1;
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
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
            if ((ci->id != X86_INS_CALL && ci->id != X86_INS_JMP) || ci->detail->x86.op_count != 1 ||
                ci->detail->x86.operands[0].type != X86_OP_IMM)
                continue;
            uint64_t target = (uint64_t)ci->detail->x86.operands[0].imm;
            if (target < pe->image_base || target - pe->image_base >= pe->size_of_image)
                continue;
            uint32_t rva = (uint32_t)(target - pe->image_base);
            if (ci->id == X86_INS_JMP && rva - f->rva < f->size)
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
