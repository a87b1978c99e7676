/*
 * hook/engine/engine.c - the capstone handle, decoding and classifying one
 * instruction, and recognising padding.
 *
 * Everything the engine learns about an instruction comes from capstone's
 * detail (operands, encoding offsets, ModRM); the engine never computes an
 * instruction length itself. Capstone 4.0.2 reports a wrong disp_size for
 * some instructions (`cmp word [rip], bx`, `palignr xmm, [rip], imm8`: 2
 * instead of 4), so a RIP-relative displacement is checked against the
 * bytes: it is always a disp32 right after a ModRM byte with mod=00 rm=101.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/engine/engine_int.h"

hs_engine *hs_engine_new(void)
{
    return hs_engine_new_bits(64);
}

hs_engine *hs_engine_new_bits(int bits)
{
    if (bits != 64 && bits != 32)
        return NULL;
    hs_engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->bits = bits;
    if (cs_open(CS_ARCH_X86, bits == 32 ? CS_MODE_32 : CS_MODE_64, &e->cs) != CS_ERR_OK) {
        free(e);
        return NULL;
    }
    cs_option(e->cs, CS_OPT_DETAIL, CS_OPT_ON);
    e->ci = cs_malloc(e->cs);
    if (!e->ci) {
        cs_close(&e->cs);
        free(e);
        return NULL;
    }
    return e;
}

void hs_engine_free(hs_engine *e)
{
    if (!e)
        return;
    cs_free(e->ci, 1);
    cs_close(&e->cs);
    free(e->sw);
    free(e->tgt);
    free(e->frame_scratch);
    free(e->exits);
    free(e->map);
    free(e->work);
    free(e->weak);
    free(e->data);
    free(e->keys);
    free(e->sw2);
    free(e);
}

static int is_trap_id(unsigned id)
{
    switch (id) {
    case X86_INS_INT3: case X86_INS_INT1: case X86_INS_INT: case X86_INS_INTO:
    case X86_INS_UD2: case X86_INS_UD2B: case X86_INS_UD0: case X86_INS_HLT:
        return 1;
    }
    return 0;
}

/* Fill `in` from capstone's view of e->ci. */
static void classify(const cs_insn *ci, hs_insn *in)
{
    const cs_x86 *x = &ci->detail->x86;
    const uint8_t *b = ci->bytes;
    uint8_t op0 = x->opcode[0], op1 = x->opcode[1];
    int modrm_reg = (x->modrm >> 3) & 7;

    in->kind = HS_I_PLAIN;
    in->id = (uint16_t)ci->id;
    in->modrm_off = x->encoding.modrm_offset;

    /* a memory operand relative to rip (or eip) */
    int rip = 0, eip = 0;
    for (int k = 0; k < x->op_count; k++) {
        const cs_x86_op *o = &x->operands[k];
        if ((o->type == X86_OP_REG && (o->reg == X86_REG_RSP || o->reg == X86_REG_ESP)) ||
            (o->type == X86_OP_MEM && (o->mem.base == X86_REG_RSP || o->mem.base == X86_REG_ESP ||
                                       o->mem.index == X86_REG_RSP)))
            in->rsp_mem = 1;
        if (x->operands[k].type != X86_OP_MEM)
            continue;
        if (x->operands[k].mem.base == X86_REG_RIP)
            rip = 1;
        else if (x->operands[k].mem.base == X86_REG_EIP)
            eip = 1;
    }
    if (eip) {
        in->kind = HS_I_BAD;
        return;
    }
    if (rip) {
        unsigned mo = x->encoding.modrm_offset, d = x->encoding.disp_offset;
        if (mo == 0 || d != mo + 1 || (b[mo] & 0xC7) != 0x05 || d + 4u > ci->size ||
            (int32_t)hs_le32(b + d) != (int32_t)x->disp) {
            in->kind = HS_I_BAD;   /* capstone and the bytes disagree: do not guess */
            return;
        }
        in->riprel = 1;
        in->disp_off = (uint8_t)d;
        in->target = ci->address + ci->size + (int64_t)(int32_t)hs_le32(b + d);
    } else if (x->encoding.modrm_offset && (b[x->encoding.modrm_offset] & 0xC7) == 0x05 &&
               x->addr_size == 8 && x->op_count > 0) {
        /* mod=00 rm=101 means [rip+disp32] in 64-bit mode; if capstone did
         * not report such an operand, it decoded something we cannot trust */
        int has_mem = 0;
        for (int k = 0; k < x->op_count; k++)
            has_mem |= x->operands[k].type == X86_OP_MEM;
        if (has_mem) {
            in->kind = HS_I_BAD;
            return;
        }
    }

    int rel_branch = 0;
    if (op0 == 0xEB || op0 == 0xE9) {
        in->kind = HS_I_JMP;
        rel_branch = 1;
    } else if (op0 >= 0x70 && op0 <= 0x7F && x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
        in->kind = HS_I_JCC;
        in->cc = op0 & 15;
        rel_branch = 1;
    } else if (op0 == 0x0F && op1 >= 0x80 && op1 <= 0x8F && x->op_count == 1 &&
               x->operands[0].type == X86_OP_IMM) {
        in->kind = HS_I_JCC;
        in->cc = op1 & 15;
        rel_branch = 1;
    } else if (op0 >= 0xE0 && op0 <= 0xE3 && x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
        in->kind = HS_I_JCXZ_LOOP;
        rel_branch = 1;
    } else if (op0 == 0xE8) {
        in->kind = HS_I_CALL;
        rel_branch = 1;
    } else if (op0 == 0xFF && x->encoding.modrm_offset && (ci->id == X86_INS_CALL || ci->id == X86_INS_JMP)) {
        if (modrm_reg == 2)
            in->kind = HS_I_CALL_IND;
        else if (modrm_reg == 4)
            in->kind = HS_I_JMP_IND;
        else
            in->kind = HS_I_BAD;
    } else if (ci->id == X86_INS_RET) {
        in->kind = HS_I_RET;
    } else if (is_trap_id(ci->id)) {
        in->kind = HS_I_TRAP;
    } else if (ci->id == X86_INS_XBEGIN || ci->id == X86_INS_LJMP || ci->id == X86_INS_LCALL ||
               ci->id == X86_INS_RETF || ci->id == X86_INS_RETFQ || ci->id == X86_INS_IRET ||
               ci->id == X86_INS_IRETD || ci->id == X86_INS_IRETQ) {
        in->kind = HS_I_BAD;
    } else if (rip) {
        in->kind = HS_I_RIPREL;
    }

    if (rel_branch) {
        /* a 66 prefix makes a near branch rel16 on some CPUs: never emitted
         * by compilers, and not relocatable exactly */
        if (x->prefix[2] == 0x66 || x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
            in->kind = HS_I_BAD;
        else
            in->target = (uint64_t)x->operands[0].imm;
    }
}

int hs__decode(hs_engine *e, const hs_func_input *fn, int32_t off, int32_t limit,
               hs_insn *out, hs_sinsn *ops)
{
    if (limit <= off)
        return -1;
    const uint8_t *p = fn->code + off;
    size_t n = (size_t)(limit - off);
    if (n > 15)
        n = 15;
    uint64_t addr = fn->addr + (uint64_t)(int64_t)off;
    uint8_t outside[15];
    if (off < -(int64_t)fn->gap_before || (int64_t)off + (int64_t)n > (int64_t)fn->size + fn->gap_after) {
        /* code elsewhere in the image (a .cold part): through fn->read */
        while (n > 0 && hs__read(fn, addr, outside, n) < 0)
            n--;
        if (n == 0)
            return -1;
        p = outside;
    }
    if (!cs_disasm_iter(e->cs, &p, &n, &addr, e->ci))
        return -1;
    memset(out, 0, sizeof *out);
    out->off = (uint32_t)off;
    out->len = (uint8_t)e->ci->size;
    classify(e->ci, out);
    if (e->bits == 32 && out->kind >= HS_I_JMP && out->kind <= HS_I_CALL)
        out->target &= 0xFFFFFFFFu;   /* the instruction pointer wraps at 4 GB */
    if (ops) {
        const cs_x86 *x = &e->ci->detail->x86;
        ops->i = *out;
        ops->nops = x->op_count > 4 ? 4 : x->op_count;
        for (int k = 0; k < ops->nops; k++) {
            const cs_x86_op *o = &x->operands[k];
            hs_op *d = &ops->op[k];
            d->type = (uint8_t)o->type;
            d->size = o->size;
            d->access = o->access;
            d->index = 0;
            d->scale = 0;
            if (o->type == X86_OP_REG) {
                d->reg = (uint16_t)o->reg;
                d->val = 0;
            } else if (o->type == X86_OP_IMM) {
                d->reg = 0;
                d->val = o->imm;
            } else {
                d->reg = (uint16_t)o->mem.base;
                d->index = (uint16_t)o->mem.index;
                d->scale = (uint8_t)o->mem.scale;
                d->val = o->mem.disp;
            }
        }
    }
    return 0;
}

/* A no-op that i686 gcc and gas pad 32-bit code with: lea r32,[r32+0]
 * (the base the destination, no index, a zero displacement: gas's 3-, 4-,
 * 6- and 7-byte fillers, a segment prefix before some) and mov r32,r32 of
 * one register. Not in 64-bit code, where a 32-bit write clears the upper
 * half (gcc pads it with the long nops). */
static int is_pad32(const hs_insn *in, const uint8_t *b)
{
    if (!in->modrm_off || in->modrm_off + 1 > in->len)
        return 0;
    const uint8_t *m = b + in->modrm_off, mod = m[0] >> 6, reg = (m[0] >> 3) & 7, rm = m[0] & 7;
    const uint8_t opcode = m[-1];
    if (in->id == X86_INS_MOV)
        return (opcode == 0x89 || opcode == 0x8B) && mod == 3 && reg == rm && in->len == in->modrm_off + 1;
    if (in->id != X86_INS_LEA || opcode != 0x8D || mod == 3)
        return 0;
    uint8_t base = rm;
    int at = 1;
    if (rm == 4) {
        if (((m[1] >> 3) & 7) != 4)   /* an index register */
            return 0;
        base = m[1] & 7;
        at = 2;
    }
    if (mod == 0 && base == 5)        /* [disp32]: no base */
        return 0;
    const int disp = mod == 1 ? 1 : mod == 2 ? 4 : 0;
    if (in->modrm_off + at + disp != in->len)
        return 0;
    for (int i = 0; i < disp; i++)
        if (m[at + i])
            return 0;
    return base == reg;
}

/* One padding instruction? int3, nop (any length), xchg ax,ax; in 32-bit
 * code also gcc's no-op lea and mov forms. */
static int is_pad_insn(const hs_engine *e, const hs_insn *in, const uint8_t *bytes)
{
    if (in->id == X86_INS_NOP || in->id == X86_INS_INT3)
        return 1;
    if (in->len == 2 && bytes[0] == 0x66 && bytes[1] == 0x90)
        return 1;
    return e->bits == 32 && is_pad32(in, bytes);
}

int hs__padding_run(hs_engine *e, const hs_func_input *fn, int32_t from, int32_t need_to,
                    int32_t limit)
{
    if (need_to <= from)
        return 1;
    if (need_to > limit)
        return 0;
    /* single-byte fillers: any split is an instruction boundary */
    int simple = 1;
    for (int32_t i = from; i < need_to; i++)
        if (fn->code[i] != 0xCC && fn->code[i] != 0x90) {
            simple = 0;
            break;
        }
    if (simple)
        return 1;
    int32_t pos = from;
    while (pos < need_to) {
        hs_insn in;
        if (hs__decode(e, fn, pos, limit, &in, NULL) < 0 || !is_pad_insn(e, &in, fn->code + pos))
            return 0;
        pos += in.len;
    }
    return 1;
}

int hs__is_padding(hs_engine *e, const hs_func_input *fn, int32_t off, int32_t n)
{
    return hs__padding_run(e, fn, off, off + n, off + n);
}
