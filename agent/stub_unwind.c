/*
 * agent/stub_unwind.c - unwind information for the code hookscope generates,
 * so that a stack walk or an exception that starts inside a stub or a
 * trampoline unwinds correctly: one growable function table per module's
 * arena chunk (RtlAddGrowableFunctionTable, which, unlike
 * RtlAddFunctionTable, the kernel's stack walker for ETW also reads),
 * sorted by BeginAddress, deleted at unhook.
 *
 * Per hooked function, in its arena slot:
 *   [slow, jmp)    the slow-path block, run with the stub's registers
 *                  already pushed: one allocation at offset 0
 *   [stub, done)   the stub body: push rcx, push rax (, push rdx); the
 *                  thunk calls inside it do not move rsp
 *   [tramp, end)   the relocated window and its jump back: the original
 *                  function's prologue codes for the instructions in the
 *                  window, at the trampoline offsets those instructions
 *                  moved to, and a relocated call's push of its return
 *                  address; all of it declared prologue, so that no walker
 *                  takes its jumps into the function or to a call's target
 *                  for an epilogue's tail call (a trampoline of more than
 *                  255 bytes, which a prologue cannot cover, leaves its
 *                  jump back undescribed)
 * The few instructions between done and the trampoline (the pops, and a
 * timed function's jump into the wrapper) are left undescribed: a stack
 * walker that cannot run them forward (as hookscope's unwinder does)
 * would take that jump for a tail call.
 */
#include <string.h>

#include "agent/agent.h"
#include "hook/base/bytes.h"
#include "hook/base/util.h"
#include "hook/engine/emit.h"
#include "hook/pe/pe.h"
#include "hook/pe/unwind_info.h"

typedef struct fn_entry {
    uint32_t begin, end, unwind;
} fn_entry;

/* Append an UNWIND_INFO (4-byte aligned) to buf; returns its offset from
 * `base` (the table's base address). */
static uint32_t put_unwind(uint8_t **p, uint64_t base, uint8_t prolog, const uint16_t *codes,
                           int ncodes, uint8_t frame)
{
    uint8_t *u = *p;
    u[0] = 1;                 /* version 1, no flags */
    u[1] = prolog;
    u[2] = (uint8_t)ncodes;
    u[3] = frame;
    memcpy(u + 4, codes, (size_t)ncodes * 2);
    size_t len = 4 + (size_t)((ncodes + 1) & ~1) * 2;
    if (ncodes & 1)
        memset(u + 4 + ncodes * 2, 0, 2);
    *p = u + len;
    return (uint32_t)((uint64_t)(uintptr_t)u - base);
}

static uint16_t code(uint8_t offset, uint8_t op, uint8_t info)
{
    return (uint16_t)(offset | (op | info << 4) << 8);
}

/* Where does the state after original offset `o` (an instruction end in
 * the window) begin in the trampoline? */
static int map_offset(const hs_hooked *h, uint8_t o)
{
    const hs_plan *p = &h->plan;
    for (int i = 1; i < p->n_insns; i++)
        if (p->insn_off[i] == o)
            return h->tramp_off[i];
    if (o == p->window_len && p->n_insns > 0)
        return h->tramp_off[p->n_insns - 1] + 1;   /* done by the last instruction */
    return -1;
}

/* The original function's prologue codes that the window performs,
 * remapped into the trampoline. Returns the number of code slots. */
static int tramp_codes(const hs_pe *pe, const hs_hooked *h, uint16_t *out, int max, uint8_t *frame,
                       uint8_t *prolog)
{
    hs_unwind u;
    *frame = 0;
    *prolog = 0;
    if (!h->unwind_rva || hs_pe_unwind(pe, h->unwind_rva, &u) < 0 || u.version > 2)
        return 0;
    int n = 0;
    for (int i = 0; i < u.count_codes; i++) {
        uint8_t off = u.codes[i * 2], op = u.codes[i * 2 + 1] & 15, info = u.codes[i * 2 + 1] >> 4;
        int extra = op == 1 ? (info ? 2 : 1) : (op == 4 || op == 8) ? 1 : (op == 5 || op == 9) ? 2 : 0;
        if (op == 6) {   /* version 2 epilog descriptor: not needed here */
            i += 1;
            continue;
        }
        if (off <= h->plan.window_len) {
            int t = map_offset(h, off);
            if (t < 0 || t > 255 || n + 1 + extra > max)
                return 0;   /* cannot describe it: leave the trampoline undescribed */
            out[n++] = code((uint8_t)t, op, info);
            for (int k = 1; k <= extra && i + k < u.count_codes; k++)
                out[n++] = (uint16_t)(u.codes[(i + k) * 2] | u.codes[(i + k) * 2 + 1] << 8);
            if (op == 3)
                *frame = (uint8_t)(u.frame_reg | u.frame_off << 4);
            if (t > *prolog)
                *prolog = (uint8_t)t;
        }
        i += extra;
    }
    return n;
}

/* A call relocated into the trampoline (the window's last instruction):
 * "push <return address into the function>; jmp <target>", the push a
 * lea rsp, [rsp-8] then two dword stores (hs_emit_push_imm64). Returns
 * its offset in the trampoline, or -1 when the window ends otherwise. */
#define PUSH_IMM64_RSP 5   /* bytes of the push's first instruction, which moves rsp */
static int relocated_call(const hs_hooked *h)
{
    if (!h->plan.n_insns)
        return -1;
    int at = h->tramp_off[h->plan.n_insns - 1];
    const uint8_t *c = (const uint8_t *)(uintptr_t)(h->tramp + (uint64_t)at);
    uint64_t ret = h->entry + h->plan.window_len;
    static const uint8_t lea[5] = { 0x48, 0x8D, 0x64, 0x24, 0xF8 }, mov0[3] = { 0xC7, 0x04, 0x24 },
                         mov4[4] = { 0xC7, 0x44, 0x24, 0x04 };
    if (h->tramp_off[h->plan.n_insns] - at < 20 || memcmp(c, lea, 5) || memcmp(c + 5, mov0, 3) ||
        memcmp(c + 12, mov4, 4))
        return -1;
    return hs_le32(c + 8) == (uint32_t)ret && hs_le32(c + 16) == (uint32_t)(ret >> 32) ? at : -1;
}

/* Windows 8's growable tables (Wine has them too), looked up so that the
 * agent still loads on Windows 7, where RtlAddFunctionTable serves */
typedef DWORD(NTAPI *add_growable_fn)(PVOID *table, PRUNTIME_FUNCTION entries, DWORD count, DWORD max_count,
                                      ULONG_PTR range_base, ULONG_PTR range_end);
typedef VOID(NTAPI *delete_growable_fn)(PVOID table);

static FARPROC ntdll_fn(const char *name)
{
    return GetProcAddress(GetModuleHandleW(L"ntdll.dll"), name);
}

static int cmp_entry(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint32_t x = ((const fn_entry *)a)->begin, y = ((const fn_entry *)b)->begin;
    return x < y ? -1 : x > y;
}

size_t hs_unwind_space(size_t n_hooks)
{
    /* 3 entries and 3 unwind infos (the trampoline's at most 4 + 2 * 256 bytes) */
    return n_hooks * (3 * sizeof(fn_entry) + 8 + 12 + 4 + 512) + 64;
}

int hs_unwind_register(hs_mod_state *m, const hs_pe *pe, uint8_t *space, size_t size, uint64_t base)
{
    if (!m->n_hooks)
        return 0;
    fn_entry *table = (fn_entry *)(((uintptr_t)space + 7) & ~(uintptr_t)7);
    uint8_t *p = (uint8_t *)(table + 3 * m->n_hooks);
    const uint8_t *limit = space + size;
    size_t n = 0;
    for (size_t i = 0; i < m->n_hooks; i++) {
        const hs_hooked *h = &m->hooks[i];
        if (p + 8 + 12 + 4 + 512 > limit)
            break;
        /* slow block: the stub's pushes are done (its last instruction,
         * the jump into the stub body, is left undescribed: a jump out of
         * the range reads as an epilogue's tail call) */
        uint16_t c = code(0, 2, (uint8_t)(h->pushed / 8 - 1));      /* UWOP_ALLOC_SMALL */
        table[n].begin = (uint32_t)(h->slot - base);
        table[n].end = (uint32_t)(h->slow_jmp - base);
        table[n].unwind = put_unwind(&p, base, 0, &c, 1, 0);
        n++;
        /* stub body: push rcx @1, push rax @2, push rdx @3 */
        uint16_t sc[3];
        int k = 0;
        if (h->pushed == 24)
            sc[k++] = code(3, 0, HS_RDX);
        sc[k++] = code(2, 0, HS_RAX);
        sc[k++] = code(1, 0, HS_RCX);
        table[n].begin = (uint32_t)(h->stub - base);
        table[n].end = (uint32_t)(h->done - base);
        table[n].unwind = put_unwind(&p, base, (uint8_t)(h->pushed / 8), sc, k, 0);
        n++;
        /* trampoline: the original prologue, as far as the window goes */
        uint16_t tc[256];
        uint8_t frame, prolog;
        int nt = tramp_codes(pe, h, tc + 1, 255, &frame, &prolog);
        size_t len = h->tramp_off[h->plan.n_insns];
        if (len <= 255) {
            /* all of it a prologue: no walker reads an epilogue into its
             * jumps out (into the function, to a relocated call's
             * target), and each code counts from its instruction on; a
             * relocated call pushes its return address first */
            int call = relocated_call(h);
            int first = 1;
            if (call >= 0)
                tc[first = 0] = code((uint8_t)(call + PUSH_IMM64_RSP), 2, 0);   /* UWOP_ALLOC_SMALL 8 */
            table[n].begin = (uint32_t)(h->tramp - base);
            table[n].end = (uint32_t)(h->tramp + len - base);
            table[n].unwind = put_unwind(&p, base, (uint8_t)len, tc + first, nt + 1 - first, frame);
        } else {
            /* without the jump back, which is no epilogue of this frame:
             * the unwinder runs it forward into the function, already in
             * the state this table describes */
            size_t body = hs_tramp_body_len((const uint8_t *)(uintptr_t)h->tramp, h->tramp, len,
                                            h->entry + h->plan.window_len);
            table[n].begin = (uint32_t)(h->tramp - base);
            table[n].end = (uint32_t)(h->tramp + body - base);
            table[n].unwind = put_unwind(&p, base, prolog, tc + 1, nt, frame);
        }
        n++;
    }
    /* sorted by BeginAddress, as a growable table must be */
    hs_sort(table, n, sizeof *table, cmp_entry, NULL);
    /* a growable table reaches the kernel (NtSetInformationProcess), whose
     * stack walker (ETW's) reads no table added by RtlAddFunctionTable */
    void *handle = NULL;
    add_growable_fn add = (add_growable_fn)(void (*)(void))ntdll_fn("RtlAddGrowableFunctionTable");
    if (add) {
        if (add(&handle, (PRUNTIME_FUNCTION)table, (DWORD)n, (DWORD)n, (ULONG_PTR)base,
                (ULONG_PTR)limit) != 0)   /* the chunk: its stubs and this table */
            return -1;
    } else if (!RtlAddFunctionTable((PRUNTIME_FUNCTION)table, (DWORD)n, base)) {
        return -1;
    }
    m->unwind_table = table;
    m->unwind_handle = handle;
    /* for a sampler reading it from outside */
    hs_module_rec *rec = hs_session_module(g_hs.view, m->index);
    rec->unwind_table = (uint64_t)(uintptr_t)table;
    rec->unwind_count = (uint32_t)n;
    return 0;
}

void hs_unwind_unregister(hs_mod_state *m)
{
    if (m->unwind_handle) {
        delete_growable_fn del = (delete_growable_fn)(void (*)(void))ntdll_fn("RtlDeleteGrowableFunctionTable");
        if (del)
            del(m->unwind_handle);
    } else if (m->unwind_table) {
        RtlDeleteFunctionTable((PRUNTIME_FUNCTION)m->unwind_table);
    }
    m->unwind_handle = NULL;
    m->unwind_table = NULL;
}
