/*
 * hook/unwind/cfi32.c - x86 frame data from `.eh_frame` (see cfi32.h): the
 * FDEs kept sorted by rva, and at a query the CIE's initial instructions
 * and the FDE's run up to the row that holds at the rva (DWARF 4, 6.4.2).
 */
#include "hook/unwind/cfi32.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/search.h"
#include "hook/base/util.h"
#include "hook/pe/eh_frame.h"

/* DWARF register numbers of i386 (the SVR4 numbering gcc's tables use) */
#define REG_ESP 4
#define REG_EBP 5
#define REMEMBER_DEPTH 8

typedef struct fde {
    uint32_t rva, size;
    uint32_t code_align;
    int32_t data_align;
    uint32_t cie_at, cie_len;   /* the CIE's initial instructions in the pool */
    uint32_t at, len;           /* the FDE's */
} fde;

struct hs_cfi32 {
    fde *fdes;                  /* sorted by rva */
    size_t n, cap;
    uint8_t *pool;
    size_t npool, cap_pool;
};

/* The rule set of one row: the CFA as a register plus an offset, and
 * where ebp is saved (an offset from the CFA). */
typedef struct row {
    int cfa_reg;                /* -1: not a register plus an offset (an expression) */
    int64_t cfa_off;
    bool ebp_saved;
    int64_t ebp_off;
} row;

static uint32_t keep(hs_cfi32 *t, const uint8_t *p, size_t len)
{
    hs_xgrow(&t->pool, &t->cap_pool, t->npool + len, 1);
    memcpy(t->pool + t->npool, p, len);
    t->npool += len;
    return (uint32_t)(t->npool - len);
}

static int add_fde(void *ctx, const hs_eh_fde *f)
{
    hs_cfi32 *t = ctx;
    if (!f->insns || f->cie.code_align > UINT32_MAX || f->cie.data_align < INT32_MIN ||
        f->cie.data_align > INT32_MAX || f->cie.ra_reg != 8)
        return 0;   /* (8: eip, the return address's column on i386) */
    hs_xgrow(&t->fdes, &t->cap, t->n + 1, sizeof *t->fdes);
    fde *e = &t->fdes[t->n++];
    e->rva = f->rva;
    e->size = f->size;
    e->code_align = (uint32_t)f->cie.code_align;
    e->data_align = (int32_t)f->cie.data_align;
    e->cie_len = (uint32_t)f->cie.ninsns;
    e->cie_at = keep(t, f->cie.insns, f->cie.ninsns);
    e->len = (uint32_t)f->ninsns;
    e->at = keep(t, f->insns, f->ninsns);
    return 0;
}

static int cmp_fde(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint32_t x = ((const fde *)a)->rva, y = ((const fde *)b)->rva;
    return x < y ? -1 : x > y;
}

hs_cfi32 *hs_cfi32_from_pe(const hs_pe *pe)
{
    if (pe->bits != 32)
        return NULL;
    hs_cfi32 *t = hs_xcalloc(1, sizeof *t);
    if (hs_pe_eh_frame_fdes(pe, add_fde, t) < 0 || !t->n) {
        hs_cfi32_free(t);
        return NULL;
    }
    hs_sort(t->fdes, t->n, sizeof *t->fdes, cmp_fde, NULL);
    return t;
}

void hs_cfi32_free(hs_cfi32 *t)
{
    if (!t)
        return;
    free(t->fdes);
    free(t->pool);
    free(t);
}

size_t hs_cfi32_count(const hs_cfi32 *t)
{
    return t ? t->n : 0;
}

/* Called with each row run() passes: [loc, next) under the rules r. */
typedef void (*row_fn)(void *ctx, uint64_t loc, uint64_t next, const row *r);

/* Run call-frame instructions from location *loc (rva) on *r until the
 * row that holds at `rva` is reached: 1 there (*next: where the row after
 * it starts), 0 at their end, -1 for an instruction not read here. init:
 * the CIE's (its rules are the ones DW_CFA_restore goes back to).
 * on_row (NULL: none) is called with each row before that one. */
static int run(const uint8_t *p, size_t len, const fde *f, uint32_t rva, uint64_t *loc, uint64_t *next, row *r,
               const row *init, row_fn on_row, void *ctx)
{
    hs_cur c = hs_cur_of(p, len);
    row saved[REMEMBER_DEPTH];
    int depth = 0;
    while (hs_cur_left(&c) && !c.bad) {
        uint8_t op = hs_cur_u8(&c);
        uint64_t advance = 0;
        bool advances = true;
        int reg = -1;
        switch (op >> 6) {
        case 1:                                   /* DW_CFA_advance_loc */
            advance = (uint64_t)(op & 0x3f) * f->code_align;
            break;
        case 2:                                   /* DW_CFA_offset */
            reg = op & 0x3f;
            if (reg == REG_EBP) {
                r->ebp_saved = true;
                r->ebp_off = (int64_t)hs_cur_uleb(&c) * f->data_align;
            } else {
                hs_cur_uleb(&c);
            }
            continue;
        case 3:                                   /* DW_CFA_restore */
            if ((op & 0x3f) == REG_EBP && init) {
                r->ebp_saved = init->ebp_saved;
                r->ebp_off = init->ebp_off;
            }
            continue;
        default:
            advances = false;
        }
        if (!advances) {
            switch (op) {
            case 0x00:                            /* DW_CFA_nop */
                continue;
            case 0x02:                            /* DW_CFA_advance_loc1, 2, 4 */
                advance = (uint64_t)hs_cur_u8(&c) * f->code_align;
                break;
            case 0x03:
                advance = (uint64_t)hs_cur_u16(&c) * f->code_align;
                break;
            case 0x04:
                advance = (uint64_t)hs_cur_u32(&c) * f->code_align;
                break;
            case 0x05:                            /* DW_CFA_offset_extended */
            case 0x11:                            /* DW_CFA_offset_extended_sf */
                reg = (int)hs_cur_uleb(&c);
                {
                    int64_t off = op == 0x05 ? (int64_t)hs_cur_uleb(&c) : hs_cur_sleb(&c);
                    if (reg == REG_EBP) {
                        r->ebp_saved = true;
                        r->ebp_off = off * f->data_align;
                    }
                }
                continue;
            case 0x06:                            /* DW_CFA_restore_extended */
                if (hs_cur_uleb(&c) == REG_EBP && init) {
                    r->ebp_saved = init->ebp_saved;
                    r->ebp_off = init->ebp_off;
                }
                continue;
            case 0x07:                            /* DW_CFA_undefined, same_value: ebp is the caller's */
            case 0x08:
                if (hs_cur_uleb(&c) == REG_EBP)
                    r->ebp_saved = false;
                continue;
            case 0x09:                            /* DW_CFA_register: ebp kept in another register */
                reg = (int)hs_cur_uleb(&c);
                hs_cur_uleb(&c);
                if (reg == REG_EBP)
                    return -1;
                continue;
            case 0x0a:                            /* DW_CFA_remember_state */
                if (depth == REMEMBER_DEPTH)
                    return -1;
                saved[depth++] = *r;
                continue;
            case 0x0b:                            /* DW_CFA_restore_state */
                if (!depth)
                    return -1;
                *r = saved[--depth];
                continue;
            case 0x0c:                            /* DW_CFA_def_cfa */
                r->cfa_reg = (int)hs_cur_uleb(&c);
                r->cfa_off = (int64_t)hs_cur_uleb(&c);
                continue;
            case 0x12:                            /* DW_CFA_def_cfa_sf */
                r->cfa_reg = (int)hs_cur_uleb(&c);
                r->cfa_off = hs_cur_sleb(&c) * f->data_align;
                continue;
            case 0x0d:                            /* DW_CFA_def_cfa_register */
                r->cfa_reg = (int)hs_cur_uleb(&c);
                continue;
            case 0x0e:                            /* DW_CFA_def_cfa_offset */
                r->cfa_off = (int64_t)hs_cur_uleb(&c);
                continue;
            case 0x13:                            /* DW_CFA_def_cfa_offset_sf */
                r->cfa_off = hs_cur_sleb(&c) * f->data_align;
                continue;
            case 0x0f:                            /* DW_CFA_def_cfa_expression */
                r->cfa_reg = -1;
                hs_cur_skip(&c, (size_t)hs_cur_uleb(&c));
                continue;
            case 0x10:                            /* DW_CFA_expression, val_expression */
            case 0x16:
                reg = (int)hs_cur_uleb(&c);
                hs_cur_skip(&c, (size_t)hs_cur_uleb(&c));
                if (reg == REG_EBP)
                    return -1;
                continue;
            case 0x14:                            /* DW_CFA_val_offset, val_offset_sf */
            case 0x15:
                reg = (int)hs_cur_uleb(&c);
                if (op == 0x14)
                    hs_cur_uleb(&c);
                else
                    hs_cur_sleb(&c);
                if (reg == REG_EBP)
                    return -1;
                continue;
            case 0x2e:                            /* DW_CFA_GNU_args_size: for landing pads */
                hs_cur_uleb(&c);
                continue;
            default:                              /* DW_CFA_set_loc, vendor extensions */
                return -1;
            }
        }
        if (*loc + advance > rva) {
            *next = *loc + advance;
            return 1;
        }
        if (on_row)
            on_row(ctx, *loc, *loc + advance, r);
        *loc += advance;
    }
    return c.bad ? -1 : 0;
}

/* The frame data at rva (base: the image's) under the rules r: 1, or 0
 * when they are not ones the walker can use. */
static int frame_of(const row *r, uint32_t rva, uint32_t base, hs_uw32_frame_data *fd)
{
    memset(fd, 0, sizeof *fd);
    fd->begin = base + rva;
    if (r->cfa_reg == REG_EBP) {
        fd->uses_ebp = true;
        return 1;
    }
    /* the return address at CFA - 4; ebp, where saved, below it */
    if (r->cfa_reg != REG_ESP || r->cfa_off < 4 || r->cfa_off > 0x1000000 ||
        (r->ebp_saved && (r->ebp_off > -8 || -r->ebp_off > r->cfa_off)))
        return 0;
    fd->locals = (uint32_t)(r->cfa_off - 4);
    fd->ebp_saved_at = r->ebp_saved ? (uint32_t)(-r->ebp_off - 4) : 0;
    return 1;
}

/* The rules of FDE f's first row (its CIE's initial instructions run) into
 * *r and *init: 0, or -1 for instructions not read here. */
static int first_row(const hs_cfi32 *t, const fde *f, row *r, row *init)
{
    uint64_t loc = f->rva, next;
    *r = (row){ -1, 0, false, 0 };
    if (run(t->pool + f->cie_at, f->cie_len, f, UINT32_MAX, &loc, &next, r, NULL, NULL, NULL) != 0)
        return -1;
    *init = *r;
    return 0;
}

int hs_cfi32_frame_data(const hs_cfi32 *t, uint32_t rva, uint32_t base, hs_uw32_frame_data *fd)
{
    if (!t)
        return 0;
    size_t lo = HS_UPPER_BOUND_U32(t->fdes, t->n, rva, rva);
    if (!lo || rva - t->fdes[lo - 1].rva >= t->fdes[lo - 1].size)
        return 0;
    const fde *f = &t->fdes[lo - 1];
    row r, init;
    uint64_t loc = f->rva, next;
    if (first_row(t, f, &r, &init) < 0 || run(t->pool + f->at, f->len, f, rva, &loc, &next, &r, &init, NULL, NULL) < 0)
        return 0;
    return frame_of(&r, rva, base, fd);
}

/* hs_cfi32_each_row's rows of one FDE, runs of alike ones made one. */
typedef struct merge {
    hs_cfi32_row_fn fn;
    void *ctx;
    uint64_t end;              /* the FDE's */
    hs_uw32_frame_data held;   /* the run of rows not given yet */
    uint64_t held_end;         /* 0: none */
} merge;

static void give_held(merge *m)
{
    if (m->held_end)
        m->fn(m->ctx, m->held.begin, (uint32_t)m->held_end, &m->held);
    m->held_end = 0;
}

static void merge_row(void *ctx, uint64_t loc, uint64_t next, const row *r)
{
    merge *m = ctx;
    if (next > m->end)
        next = m->end;
    if (loc >= next)
        return;
    hs_uw32_frame_data fd;
    int got = frame_of(r, (uint32_t)loc, 0, &fd);
    if (!got || m->held_end != loc || m->held.locals != fd.locals || m->held.ebp_saved_at != fd.ebp_saved_at ||
        m->held.uses_ebp != fd.uses_ebp)
        give_held(m);
    if (got && !m->held_end)
        m->held = fd;
    if (got)
        m->held_end = next;
}

void hs_cfi32_each_row(const hs_cfi32 *t, hs_cfi32_row_fn fn, void *ctx)
{
    for (size_t i = 0; t && i < t->n; i++) {
        const fde *f = &t->fdes[i];
        merge m = { fn, ctx, (uint64_t)f->rva + f->size, { 0 }, 0 };
        row r, init;
        uint64_t loc = f->rva, next;
        if (first_row(t, f, &r, &init) < 0)
            continue;
        /* (each row as the instructions pass it, then the last to the
         * FDE's end; none past an instruction not read here) */
        if (run(t->pool + f->at, f->len, f, UINT32_MAX, &loc, &next, &r, &init, merge_row, &m) == 0)
            merge_row(&m, loc, m.end, &r);
        give_held(&m);
    }
}
