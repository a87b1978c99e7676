/*
 * hook/engine/count32.c - the counting entry stub of a hooked 32-bit function
 * (see count32.h).
 *
 *   carry:  mov ecx,[eax+count+4]; lea ecx,[ecx+1]; mov [eax+count+4],ecx
 *           jmp counted
 *   slow:   mov eax,fidx; call c->slow        ; ecx = counters or 0
 *           jecxz none                         ; not counted
 *           jmp count
 *   none:   jmp done                           (with edges: rel32)
 *   entry:  push ecx; push eax
 *           mov ecx,fs:[TlsSlots+4*tls]        ; (tls >= 64: through the
 *           jecxz slow                         ;  expansion slots' pointer)
 *   count:  mov eax,[ecx+count]; lea eax,[eax+1]; mov [ecx+count],eax
 *           xchg eax,ecx                       ; ecx = the new low half
 *           jecxz carry                        ; it wrapped to 0
 *   counted:                                   ; eax = the counters
 *   (edges: push edx; mov edx,[esp+12]  ; the caller
 *           mov ecx,edx; jecxz none            ; none: a thread's start
 *           mov ecx,[eax+block+8+16k]; not ecx; lea ecx,[ecx+edx+1]
 *           jecxz hit_k                        ; (k < inline_edges)
 *           jmp table
 *   none:   jmp out
 *   hit_k:  mov/lea/mov of the slot's count's low half; jecxz carry_k; jmp out
 *   carry_k: the same of its high half; jmp out
 *   table:  pushfd; mov ecx,eax                ; the flags change from here
 *           mov eax,edx; xor eax,mix; mov edx,mult; mul edx
 *           shr edx,32-bits; shl edx,5         ; the table slot's offset
 *   probe:  mov eax,[esp+16]; cmp eax,[ecx+edx+edges]; jne miss
 *           cmp dword [ecx+edx+edges+8],fidx; jne next
 *           add/adc [ecx+edx+edges+16],1; jmp edge_done
 *   miss:   cmp dword [ecx+edx+edges],0; je edge_slow
 *   next:   add edx,32; and edx,cap*32-1; jmp probe
 *   edge_slow: mov eax,fidx; call c->edge_slow
 *   edge_done: popfd
 *   out:    pop edx)
 *   done:   pop eax; pop ecx
 *   (timed: push desc; call time_enter)       ; returns with ret 4
 *   tramp:  relocated window; jmp back
 *
 * The 64-bit count is two halves: the low one is incremented with lea
 * (no flags), and jecxz, which reads no flags either, finds the carry. The
 * rarely taken blocks come first so that every jecxz reaches with rel8.
 * A caller in one of the block's slots is found and counted the same way,
 * flag-free (not and lea make site - slot, jecxz tests it); only the
 * table's hash (mul) needs the flags saved.
 * A site is a 32-bit address: its slot's high half is 0, and the low
 * halves alone are compared.
 */
#include "hook/engine/count32.h"

#include <string.h>

#include "hook/engine/emit.h"

#define STUB32_MAX 80   /* the stub before the trampoline, at most (62 bytes; 70
                           through the expansion slots; 75 with edges or stacks) */
#define EDGES32_MAX 320 /* what edges add (302 bytes with 3 caller slots) */
#define STACKS32_MAX 64 /* what entry stacks add (50 bytes; 58 through the expansion slots,
                           each with the jump over them) */
#define TIME32_MAX 10   /* what a return probe adds: push imm32, call rel32 */

size_t hs_stub32_size_max(const hs_plan *plan, int edges, int stacks, int timed)
{
    return STUB32_MAX + (edges ? EDGES32_MAX : 0) + (stacks ? STACKS32_MAX : 0) + (timed ? TIME32_MAX : 0) +
           plan->tramp_max;
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

/* A 32-bit jump (E9) or jcc (0F 8x) whose displacement is set later
 * (fix_rel32). */
static size_t branch32(hs_emit *em, int cc)
{
    if (cc < 0) {
        hs_emit_u8(em, 0xE9);
    } else {
        hs_emit_u8(em, 0x0F);
        hs_emit_u8(em, (uint8_t)(0x80 | cc));
    }
    hs_emit_u32(em, 0);
    return em->len - 4;
}

static void fix_rel32(hs_emit *em, size_t at, size_t to)
{
    if (!em->overflow) {
        uint32_t d = (uint32_t)((long)to - (long)(at + 4));
        memcpy(em->buf + at, &d, 4);
    }
}

/* op ModRM(mod=10, reg, rm) disp32: mov/lea/mov of [rm + disp32] */
static void op_disp32(hs_emit *em, uint8_t opcode, int reg, int rm, uint32_t disp)
{
    hs_emit_u8(em, opcode);
    hs_emit_u8(em, (uint8_t)(0x80 | reg << 3 | rm));
    hs_emit_u32(em, disp);
}

enum { EAX = 0, ECX = 1, EDX = 2 };
enum { CC_E = 0x4, CC_NE = 0x5, JMP = -1 };

/* op ModRM(mod=10, reg, SIB) SIB(ecx + edx) disp32: [ecx + edx + disp32] */
static void op_table(hs_emit *em, uint8_t opcode, int reg, uint32_t disp)
{
    hs_emit_u8(em, opcode);
    hs_emit_u8(em, (uint8_t)(0x84 | reg << 3));
    hs_emit_u8(em, 0x11);
    hs_emit_u32(em, disp);
}

/* add dword [at],1; adc dword [at+4],0 of a 64-bit count at
 * [ecx+edx+disp] */
static void add64_table(hs_emit *em, uint32_t disp)
{
    for (int half = 0; half < 2; half++) {
        op_table(em, 0x83, half ? 2 : 0, disp + 4u * (uint32_t)half);   /* /0 add, /2 adc */
        hs_emit_u8(em, half ? 0 : 1);
    }
}

/* mov ecx,fs:[the thread's TLS slot] (through the expansion slots' pointer
 * for tls >= 64: then jecxz to *to_none, which the caller fixes) */
static void load_slot(hs_emit *em, uint32_t tls, size_t *to_none, size_t *n_none)
{
    static const uint8_t mov_ecx_fs[3] = { 0x64, 0x8B, 0x0D };   /* mov ecx,fs:[abs32] */
    hs_emit_bytes(em, mov_ecx_fs, sizeof mov_ecx_fs);
    if (tls < 64) {
        hs_emit_u32(em, HS_TEB32_TLS_SLOTS + 4 * tls);
    } else {
        hs_emit_u32(em, HS_TEB32_TLS_EXPANSION);
        to_none[(*n_none)++] = branch8(em, 0xE3);       /* jecxz none */
        op_disp32(em, 0x8B, ECX, ECX, 4 * (tls - 64));  /* mov ecx,[ecx+4*(tls-64)] */
    }
}

/* The entry stack part: the thread's counters again from its TLS slot
 * (the edge part may have used eax; none there: no capture), the
 * function's countdown, at 0 set to stack_every - 1 and capture, else
 * one less. Flag-free. 0, or -1 when a branch does not reach. */
static int emit_stacks(hs_emit *em, const hs_count32 *c)
{
    size_t to_skip[3], n_skip = 0;
    load_slot(em, c->tls, to_skip, &n_skip);
    to_skip[n_skip++] = branch8(em, 0xE3);              /* jecxz skip: no counters */
    hs_emit_u8(em, 0x89);                               /* mov eax,ecx */
    hs_emit_u8(em, 0xC8);
    op_disp32(em, 0x8B, ECX, EAX, c->countdown_rel);    /* mov ecx,[eax+countdown] */
    size_t to_capture = branch8(em, 0xE3);              /* jecxz capture */
    static const uint8_t dec_ecx[3] = { 0x8D, 0x49, 0xFF };   /* lea ecx,[ecx-1] */
    hs_emit_bytes(em, dec_ecx, 3);
    op_disp32(em, 0x89, ECX, EAX, c->countdown_rel);    /* mov [eax+countdown],ecx */
    to_skip[n_skip++] = branch8(em, 0xEB);              /* jmp skip */
    int bad = fix_rel8(em, to_capture, em->len);
    op_disp32(em, 0xC7, 0, EAX, c->countdown_rel);      /* capture: mov dword [eax+countdown],every-1 */
    hs_emit_u32(em, c->stack_every - 1);
    hs_emit_u8(em, 0xB8);                               /* mov eax,fidx */
    hs_emit_u32(em, c->fidx);
    hs_emit_u8(em, 0xE8);                               /* call stack_slow */
    hs_emit_u32(em, (uint32_t)(c->stack_slow - ((uint32_t)hs_emit_pc(em) + 4)));
    for (size_t k = 0; k < n_skip; k++)
        bad |= fix_rel8(em, to_skip[k], em->len);
    return bad ? -1 : 0;
}

/* The edge part (see above), from `counted` with eax = the counters, up to
 * and with edge_done. 0, or -1 when the edge table's size is no power of
 * two. */
static int emit_edges(hs_emit *em, const hs_count32 *c)
{
    uint32_t bits = 0;
    while (bits < 32 && (1u << bits) < c->edges_cap)
        bits++;
    if (bits > 27 || (1u << bits) != c->edges_cap || c->inline_edges > HS_COUNT32_INLINE_MAX)
        return -1;
    size_t to_out[2 * HS_COUNT32_INLINE_MAX + 1], n_out = 0, to_done[3], n_done = 0;
    size_t to_hit[HS_COUNT32_INLINE_MAX];
    hs_emit_u8(em, 0x52);                               /* push edx */
    static const uint8_t site_edx[4] = { 0x8B, 0x54, 0x24, 0x0C };   /* mov edx,[esp+12] */
    static const uint8_t site_eax[4] = { 0x8B, 0x44, 0x24, 0x10 };   /* mov eax,[esp+16] */
    hs_emit_bytes(em, site_edx, 4);
    hs_emit_u8(em, 0x89);                               /* mov ecx,edx */
    hs_emit_u8(em, 0xD1);
    size_t to_none = branch8(em, 0xE3);                 /* jecxz none: no caller */
    for (uint32_t k = 0; k < c->inline_edges; k++) {
        op_disp32(em, 0x8B, ECX, EAX, c->count_off + 8 + 16 * k);   /* mov ecx,[eax+site_k] */
        static const uint8_t diff[6] = { 0xF7, 0xD1, 0x8D, 0x4C, 0x11, 0x01 };   /* not ecx; lea ecx,[ecx+edx+1] */
        hs_emit_bytes(em, diff, sizeof diff);
        to_hit[k] = branch8(em, 0xE3);                  /* jecxz hit_k: site - site_k is 0 */
    }
    size_t to_table = branch32(em, JMP);
    int bad = fix_rel8(em, to_none, em->len);
    to_out[n_out++] = branch32(em, JMP);                /* none: jmp out */
    for (uint32_t k = 0; k < c->inline_edges; k++) {
        /* hit_k: the slot's count + 1, flag-free as the call's count */
        const uint32_t cnt = c->count_off + 16 + 16 * k;
        bad |= fix_rel8(em, to_hit[k], em->len);
        op_disp32(em, 0x8B, ECX, EAX, cnt);             /* mov ecx,[eax+cnt_k] */
        static const uint8_t inc_ecx[3] = { 0x8D, 0x49, 0x01 };   /* lea ecx,[ecx+1] */
        hs_emit_bytes(em, inc_ecx, 3);
        op_disp32(em, 0x89, ECX, EAX, cnt);             /* mov [eax+cnt_k],ecx */
        size_t to_carry = branch8(em, 0xE3);            /* jecxz carry_k */
        to_out[n_out++] = branch32(em, JMP);
        bad |= fix_rel8(em, to_carry, em->len);
        op_disp32(em, 0x8B, ECX, EAX, cnt + 4);         /* carry_k: the high half + 1 */
        hs_emit_bytes(em, inc_ecx, 3);
        op_disp32(em, 0x89, ECX, EAX, cnt + 4);
        to_out[n_out++] = branch32(em, JMP);
    }
    if (bad)
        return -1;
    /* table: a caller in no slot (flags saved from here) */
    fix_rel32(em, to_table, em->len);
    hs_emit_u8(em, 0x9C);                               /* pushfd */
    hs_emit_u8(em, 0x89);                               /* mov ecx,eax */
    hs_emit_u8(em, 0xC1);
    hs_emit_u8(em, 0x89);                               /* mov eax,edx */
    hs_emit_u8(em, 0xD0);
    hs_emit_u8(em, 0x35);                               /* xor eax,mix */
    hs_emit_u32(em, c->edge_mix);
    hs_emit_u8(em, 0xBA);                               /* mov edx,mult */
    hs_emit_u32(em, c->edge_mult);
    hs_emit_u8(em, 0xF7);                               /* mul edx: edx = the high half */
    hs_emit_u8(em, 0xE2);
    if (bits == 0) {
        hs_emit_u8(em, 0x31);                           /* xor edx,edx */
        hs_emit_u8(em, 0xD2);
    } else if (bits < 32) {
        hs_emit_u8(em, 0xC1);                           /* shr edx,32-bits */
        hs_emit_u8(em, 0xEA);
        hs_emit_u8(em, (uint8_t)(32 - bits));
    }
    static const uint8_t shl5[3] = { 0xC1, 0xE2, 0x05 };   /* shl edx,5: 32-byte records */
    hs_emit_bytes(em, shl5, 3);
    size_t probe = em->len;
    hs_emit_bytes(em, site_eax, 4);
    op_table(em, 0x3B, EAX, c->edges_rel);              /* cmp eax,[ecx+edx+edges] */
    size_t to_miss = branch32(em, CC_NE);
    op_table(em, 0x81, 7, c->edges_rel + 8);            /* cmp dword [..+8],fidx */
    hs_emit_u32(em, c->fidx);
    size_t to_next = branch32(em, CC_NE);
    add64_table(em, c->edges_rel + 16);
    to_done[n_done++] = branch32(em, JMP);
    fix_rel32(em, to_miss, em->len);
    op_table(em, 0x83, 7, c->edges_rel);                /* cmp dword [..],0 */
    hs_emit_u8(em, 0);
    size_t to_slow = branch32(em, CC_E);
    fix_rel32(em, to_next, em->len);
    static const uint8_t next32[3] = { 0x83, 0xC2, 0x20 };   /* add edx,32 */
    hs_emit_bytes(em, next32, 3);
    hs_emit_u8(em, 0x81);                               /* and edx,cap*32-1 */
    hs_emit_u8(em, 0xE2);
    hs_emit_u32(em, c->edges_cap * 32u - 1u);
    fix_rel32(em, branch32(em, JMP), probe);
    fix_rel32(em, to_slow, em->len);
    hs_emit_u8(em, 0xB8);                               /* mov eax,fidx */
    hs_emit_u32(em, c->fidx);
    hs_emit_u8(em, 0xE8);                               /* call edge_slow */
    hs_emit_u32(em, (uint32_t)(c->edge_slow - ((uint32_t)hs_emit_pc(em) + 4)));
    for (size_t k = 0; k < n_done; k++)
        fix_rel32(em, to_done[k], em->len);
    hs_emit_u8(em, 0x9D);                               /* popfd */
    for (size_t k = 0; k < n_out; k++)
        fix_rel32(em, to_out[k], em->len);
    hs_emit_u8(em, 0x5A);                               /* out: pop edx */
    return 0;
}

size_t hs_stub32_emit(hs_engine *e, const hs_func_input *fn, const hs_plan *plan, const hs_insn *window,
                      const hs_count32 *c, uint32_t addr, uint8_t *buf, size_t cap, hs_stub32 *out,
                      hs_skip_reason *why)
{
    hs_skip_reason dummy;
    if (!why)
        why = &dummy;
    *why = HS_SKIP_NO_ARENA;
    if (plan->bits != 32) {
        *why = HS_SKIP_UNRELOCATABLE;
        return 0;
    }
    const int edges = c->edges_cap != 0, stacks = c->stack_every != 0;
    const int more = edges || stacks;   /* a part after the count */
    const size_t stub_max = STUB32_MAX + (edges ? EDGES32_MAX : 0) + (stacks ? STACKS32_MAX : 0) +
                            (c->time_desc ? TIME32_MAX : 0);
    if (cap < stub_max)
        return 0;
    hs_emit em;
    hs_emit_init32(&em, buf, stub_max, addr);

    size_t carry = em.len;
    op_disp32(&em, 0x8B, ECX, EAX, c->count_off + 4);   /* mov ecx,[eax+count+4] */
    hs_emit_u8(&em, 0x8D);                              /* lea ecx,[ecx+1] */
    hs_emit_u8(&em, 0x49);
    hs_emit_u8(&em, 0x01);
    op_disp32(&em, 0x89, ECX, EAX, c->count_off + 4);   /* mov [eax+count+4],ecx */
    size_t carry_counted = branch8(&em, 0xEB);

    size_t slow = em.len;
    hs_emit_u8(&em, 0xB8);                              /* mov eax,fidx */
    hs_emit_u32(&em, c->fidx);
    hs_emit_u8(&em, 0xE8);                              /* call slow */
    hs_emit_u32(&em, (uint32_t)(c->slow - (addr + em.len + 4)));
    size_t slow_none = branch8(&em, 0xE3);              /* jecxz none */
    size_t slow_count = branch8(&em, 0xEB);             /* jmp count */
    size_t none = em.len, none_done = 0;
    if (more)
        none_done = branch32(&em, JMP);                 /* jmp done */

    size_t entry = em.len;
    hs_emit_u8(&em, 0x51);                              /* push ecx */
    hs_emit_u8(&em, 0x50);                              /* push eax */
    size_t to_slow[2], n_slow = 0;
    load_slot(&em, c->tls, to_slow, &n_slow);           /* mov ecx,fs:[TLS slot] */
    to_slow[n_slow++] = branch8(&em, 0xE3);             /* jecxz slow */

    size_t count = em.len;
    op_disp32(&em, 0x8B, EAX, ECX, c->count_off);       /* mov eax,[ecx+count] */
    hs_emit_u8(&em, 0x8D);                              /* lea eax,[eax+1] */
    hs_emit_u8(&em, 0x40);
    hs_emit_u8(&em, 0x01);
    op_disp32(&em, 0x89, EAX, ECX, c->count_off);       /* mov [ecx+count],eax */
    hs_emit_u8(&em, 0x91);                              /* xchg eax,ecx */
    size_t to_carry = branch8(&em, 0xE3);               /* jecxz carry */

    size_t counted = em.len;
    if ((edges && emit_edges(&em, c) < 0) || (stacks && emit_stacks(&em, c) < 0))
        return 0;
    size_t done = em.len;
    hs_emit_u8(&em, 0x58);                              /* pop eax */
    hs_emit_u8(&em, 0x59);                              /* pop ecx */
    if (c->time_desc) {
        hs_emit_u8(&em, 0x68);                          /* push desc */
        hs_emit_u32(&em, c->time_desc);
        hs_emit_u8(&em, 0xE8);                          /* call time_enter */
        hs_emit_u32(&em, (uint32_t)(c->time_enter - ((uint32_t)hs_emit_pc(&em) + 4)));
    }

    if (more)
        fix_rel32(&em, none_done, done);
    int bad = fix_rel8(&em, carry_counted, counted) | fix_rel8(&em, slow_none, more ? none : done) |
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
