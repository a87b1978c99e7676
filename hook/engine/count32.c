/*
 * hook/engine/count32.c - the counting entry stub of a hooked 32-bit function
 * (see count32.h).
 *
 *   carry:  mov ecx,[eax+count+4]; lea ecx,[ecx+1]; mov [eax+count+4],ecx
 *           jmp done
 *   slow:   mov eax,fidx; call c->slow        ; ecx = counters or 0
 *           jecxz done                         ; not counted
 *           jmp count
 *   entry:  push ecx; push eax
 *           mov ecx,fs:[TlsSlots+4*tls]        ; (tls >= 64: through the
 *           jecxz slow                         ;  expansion slots' pointer)
 *   count:  mov eax,[ecx+count]; lea eax,[eax+1]; mov [ecx+count],eax
 *           xchg eax,ecx                       ; ecx = the new low half
 *           jecxz carry                        ; it wrapped to 0
 *   done:   pop eax; pop ecx
 *   tramp:  relocated window; jmp back
 *
 * The 64-bit count is two halves: the low one is incremented with lea
 * (no flags), and jecxz, which reads no flags either, finds the carry. The
 * rarely taken blocks come first so that every jecxz reaches with rel8.
 */
#include "hook/engine/count32.h"

#include "hook/engine/emit.h"

#define STUB32_MAX 72   /* the stub before the trampoline, at most (62 bytes; 70
                           through the expansion slots) */

size_t hs_stub32_size_max(const hs_plan *plan)
{
    return STUB32_MAX + plan->tramp_max;
}

/* An 8-bit branch whose displacement is set later (fix_rel8). */
static size_t branch8(hs_emit *em, uint8_t opcode)
{
    hs_emit_u8(em, opcode);
    hs_emit_u8(em, 0);
    return em->len - 1;
}

/* Point the rel8 at `at` to buffer offset `to`; -1 if it does not reach. */
static int fix_rel8(hs_emit *em, size_t at, size_t to)
{
    long d = (long)to - (long)(at + 1);
    if (em->overflow || d < -128 || d > 127)
        return -1;
    em->buf[at] = (uint8_t)(int8_t)d;
    return 0;
}

/* op ModRM(mod=10, reg, rm) disp32: mov/lea/mov of [rm + disp32] */
static void op_disp32(hs_emit *em, uint8_t opcode, int reg, int rm, uint32_t disp)
{
    hs_emit_u8(em, opcode);
    hs_emit_u8(em, (uint8_t)(0x80 | reg << 3 | rm));
    hs_emit_u32(em, disp);
}

enum { EAX = 0, ECX = 1 };

size_t hs_stub32_emit(hs_engine *e, const hs_func_input *fn, const hs_plan *plan, const hs_insn *window,
                      const hs_count32 *c, uint32_t addr, uint8_t *buf, size_t cap, hs_stub32 *out,
                      hs_skip_reason *why)
{
    hs_skip_reason dummy;
    if (!why)
        why = &dummy;
    *why = HS_SKIP_NO_ARENA;
    if (plan->bits != 32 || cap < STUB32_MAX) {
        if (plan->bits != 32)
            *why = HS_SKIP_UNRELOCATABLE;
        return 0;
    }
    hs_emit em;
    hs_emit_init32(&em, buf, STUB32_MAX, addr);

    size_t carry = em.len;
    op_disp32(&em, 0x8B, ECX, EAX, c->count_off + 4);   /* mov ecx,[eax+count+4] */
    hs_emit_u8(&em, 0x8D);                              /* lea ecx,[ecx+1] */
    hs_emit_u8(&em, 0x49);
    hs_emit_u8(&em, 0x01);
    op_disp32(&em, 0x89, ECX, EAX, c->count_off + 4);   /* mov [eax+count+4],ecx */
    size_t carry_done = branch8(&em, 0xEB);

    size_t slow = em.len;
    hs_emit_u8(&em, 0xB8);                              /* mov eax,fidx */
    hs_emit_u32(&em, c->fidx);
    hs_emit_u8(&em, 0xE8);                              /* call slow */
    hs_emit_u32(&em, (uint32_t)(c->slow - (addr + em.len + 4)));
    size_t slow_done = branch8(&em, 0xE3);              /* jecxz done */
    size_t slow_count = branch8(&em, 0xEB);             /* jmp count */

    size_t entry = em.len;
    hs_emit_u8(&em, 0x51);                              /* push ecx */
    hs_emit_u8(&em, 0x50);                              /* push eax */
    static const uint8_t mov_ecx_fs[3] = { 0x64, 0x8B, 0x0D };   /* mov ecx,fs:[abs32] */
    size_t to_slow[2], n_slow = 0;
    hs_emit_bytes(&em, mov_ecx_fs, sizeof mov_ecx_fs);
    if (c->tls < 64) {
        hs_emit_u32(&em, HS_TEB32_TLS_SLOTS + 4 * c->tls);
    } else {
        hs_emit_u32(&em, HS_TEB32_TLS_EXPANSION);
        to_slow[n_slow++] = branch8(&em, 0xE3);         /* jecxz slow */
        op_disp32(&em, 0x8B, ECX, ECX, 4 * (c->tls - 64));   /* mov ecx,[ecx+4*(tls-64)] */
    }
    to_slow[n_slow++] = branch8(&em, 0xE3);             /* jecxz slow */

    size_t count = em.len;
    op_disp32(&em, 0x8B, EAX, ECX, c->count_off);       /* mov eax,[ecx+count] */
    hs_emit_u8(&em, 0x8D);                              /* lea eax,[eax+1] */
    hs_emit_u8(&em, 0x40);
    hs_emit_u8(&em, 0x01);
    op_disp32(&em, 0x89, EAX, ECX, c->count_off);       /* mov [ecx+count],eax */
    hs_emit_u8(&em, 0x91);                              /* xchg eax,ecx */
    size_t to_carry = branch8(&em, 0xE3);               /* jecxz carry */

    size_t done = em.len;
    hs_emit_u8(&em, 0x58);                              /* pop eax */
    hs_emit_u8(&em, 0x59);                              /* pop ecx */

    int bad = fix_rel8(&em, carry_done, done) | fix_rel8(&em, slow_done, done) |
              fix_rel8(&em, slow_count, count) | fix_rel8(&em, to_carry, carry);
    for (size_t k = 0; k < n_slow; k++)
        bad |= fix_rel8(&em, to_slow[k], slow);
    if (bad)
        return 0;

    size_t tramp = em.len;
    size_t tl = hs_emit_trampoline(e, fn, plan, window, addr + tramp, buf + tramp, cap - tramp, out->tramp_off, why);
    if (tl == 0)
        return 0;
    out->entry = (uint16_t)entry;
    out->tramp = (uint16_t)tramp;
    out->len = (uint16_t)(tramp + tl);
    return out->len;
}
