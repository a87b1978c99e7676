/*
 * agent/agent32.c - what the 32-bit (i686) agent has in place of the
 * x64-only files (agent.h: HS_AGENT_X86): the counting entry stubs of
 * hook/engine/count32.h (with caller edges when asked), entered from the
 * patched function and calling hs_probe_slow (thunks32.S) when the thread
 * has no counters yet, hs_probe_edge for a caller not yet counted,
 * hs_probe_stack every Nth call (the entry stack by the sampler's x86
 * walker, with the frame data the injector sent for the hooked modules), and
 * with --time entering the return probe of time32.S (a shadow return
 * stack in the thread's region; its design and why are there; with
 * --timeline it writes the thread's ring too); the true return addresses
 * of timed calls for the entry stacks and caller edges; no unwind info
 * to register for the stubs (x86 code has no table-driven unwinding: a
 * walker follows the EBP chain through the stubs, which leave ebp alone).
 */
#include <stddef.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/walkplans.h"
#include "hook/unwind/fpo32.h"
#include "hook/unwind/unwind32.h"

static void time32_tail_init(void);

size_t hs_stub_size_max(const hs_plan *plan)
{
    const uint32_t o = g_hs.hdr->options;
    return hs_stub32_size_max(plan, (o & HS_OPT_EDGES) != 0, (o & HS_OPT_STACKS) != 0, (o & HS_OPT_TIME) != 0);
}

size_t hs_stub_emit(uint8_t *buf, uint64_t addr, size_t cap, uint32_t fidx,
                    const hs_func_input *fn, const hs_plan *plan, const hs_insn *window, hs_hooked *out,
                    hs_skip_reason *why)
{
    const hs_session_header *h = g_hs.hdr;
    const int edges = (h->options & HS_OPT_EDGES) != 0, stacks = (h->options & HS_OPT_STACKS) != 0;
    const hs_count32 c = {
        .tls = g_hs.tls,
        .count_off = fidx * h->region_fblock,
        .fidx = fidx,
        .slow = (uint32_t)(uintptr_t)hs_probe_slow,
        .inline_edges = HS_INLINE_EDGES,
        .edges_cap = edges ? h->region_edges_cap : 0,
        .edges_rel = (uint32_t)(h->region_edges_off - h->region_counters_off),
        .edge_mix = hs_edge_mix(fidx),
        .edge_mult = HS_EDGE_MULT,
        .edge_slow = (uint32_t)(uintptr_t)hs_probe_edge,
        .stack_every = stacks ? (h->stack_every ? h->stack_every : 1) : 0,
        .countdown_rel = (uint32_t)(h->region_countdown_off - h->region_counters_off) + 4 * fidx,
        .stack_slow = (uint32_t)(uintptr_t)hs_probe_stack,
        .time_desc = (uint32_t)out->desc,   /* (install.c: the descriptor of a timed function) */
        .time_enter = (uint32_t)(uintptr_t)hs_time32_enter,
    };
    hs_time32_tls = g_hs.tls;
    if (h->options & HS_OPT_TIME)
        time32_tail_init();
    hs_stub32 st;
    size_t len = hs_stub32_emit(g_hs.engine, fn, plan, window, &c, (uint32_t)addr, buf, cap, &st, why);
    if (!len)
        return 0;
    out->entry = fn->addr;
    out->slot = addr;
    out->stub = addr + st.entry;
    out->tramp = addr + st.tramp;
    memcpy(out->tramp_off, st.tramp_off, sizeof out->tramp_off);
    out->fidx = fidx;
    out->plan = *plan;
    return len;
}

/* ---- the shadow return stack (time32.S) ----------------------------------- */

uint32_t hs_time32_tls;
uint32_t hs_time32_cell, hs_time32_tail;

/* The return thunk's jump cell: a TLS index of its own (whose TEB slot
 * each thread's thunk writes before it jumps) and the tail `jmp dword
 * ptr fs:[slot]` in executable memory. Once per process (under
 * install_lock); without them the thunk returns by ret. */
static void time32_tail_init(void)
{
    static int tried;
    if (tried)
        return;
    tried = 1;
    DWORD k = TlsAlloc();
    if (k == TLS_OUT_OF_INDEXES)
        return;
    if (k >= 64) {   /* (an expansion slot has no fixed fs offset) */
        TlsFree(k);
        return;
    }
    uint8_t *code = VirtualAlloc(NULL, HS_PAGE, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    DWORD old;
    if (!code)
        return;
    const uint32_t cell = HS_TEB32_TLS_SLOTS + 4 * k;
    code[0] = 0x64;   /* jmp dword ptr fs:[cell] */
    code[1] = 0xFF;
    code[2] = 0x25;
    memcpy(code + 3, &cell, 4);
    if (!VirtualProtect(code, HS_PAGE, PAGE_EXECUTE_READ, &old)) {
        VirtualFree(code, 0, MEM_RELEASE);
        return;
    }
    FlushInstructionCache(GetCurrentProcess(), code, 7);
    hs_time32_tail = (uint32_t)(uintptr_t)code;
    hs_time32_cell = cell;
}

static void shadow_of(const hs_region_hdr *r, hs_ret_shadow *out)
{
    memset(out, 0, sizeof *out);
    out->thunk = (uint32_t)(uintptr_t)hs_time32_return;
    out->size = sizeof(hs_shadow_rec);
    out->slot_off = offsetof(hs_shadow_rec, frame);
    out->ret_off = offsetof(hs_shadow_rec, ret);
    if (r && r->shadow_limit && r->shadow_top > r->shadow_base) {
        out->recs = (const uint8_t *)(uintptr_t)r->shadow_base;
        out->n = (uint32_t)((r->shadow_top - r->shadow_base) / sizeof(hs_shadow_rec));
    }
}

void hs_time32_shadow(uint64_t *counters, hs_ret_shadow *out)
{
    shadow_of(counters && counters != g_hs.sink ? hs_region_of(counters) : NULL, out);
}

/* A return into the thunk that the thread's current region has no
 * record of: a call entered under an earlier session of this agent (a
 * later attach took a new TLS index; the old one still points at that
 * session's region). Its newest record is the one returning (those of a
 * retired session are not counted any more: popped only). */
uint32_t hs_time32_orphan(uint32_t esp)
{
    (void)esp;
    for (size_t i = hs_retired_count(); i-- > 0;) {
        void *view;
        uint64_t *oc = hs_retired_counters(i, &view);
        if (!oc)
            continue;
        hs_region_hdr *r = (hs_region_hdr *)((char *)oc - ((hs_session_header *)view)->region_counters_off);
        if (!r->shadow_limit || r->shadow_top <= r->shadow_base)
            continue;
        hs_shadow_rec *s = (hs_shadow_rec *)(uintptr_t)r->shadow_top - 1;
        r->shadow_top = (uint64_t)(uintptr_t)s;
        return (uint32_t)s->ret;
    }
    return 0;
}

/* ---- no unwind info for x86 stubs, no x64 stack walk or tail solving ---- */

size_t hs_unwind_space(size_t n_hooks)
{
    (void)n_hooks;
    return 0;
}

int hs_unwind_register(hs_mod_state *m, const hs_pe *pe, uint8_t *space, size_t size, uint64_t base)
{
    (void)m, (void)pe, (void)space, (void)size, (void)base;
    return 0;
}

void hs_unwind_unregister(hs_mod_state *m)
{
    (void)m;
}

/* Whether addr lies in committed executable memory (VirtualQuery: no
 * fault on an address that is not mapped). A VirtualQuery is a system
 * call (~140 ns under Wine), once per frame of every captured stack: the
 * executable regions found are kept, each as one 64-bit word (its first
 * and end page: read and written whole, so threads need no lock), the
 * few a program's stacks run through. The walk reads code there (the
 * call before a return address): a module unloaded empties the cache
 * (hs_stackwalk_forget), so that its pages are not read once unmapped. */
#define EXEC_CACHE 16
static volatile uint64_t exec_regions[EXEC_CACHE];
static volatile LONG exec_next;

/* The executable region holding addr, as its first and end page (end
 * page << 32 | first page), or 0 when addr is not executable. */
static uint64_t exec_region(uint32_t addr)
{
    const uint32_t page = addr >> 12;
    for (int i = 0; i < EXEC_CACHE; i++) {
        const uint64_t r = __atomic_load_n(&exec_regions[i], __ATOMIC_RELAXED);
        if (page >= (uint32_t)r && page < (uint32_t)(r >> 32))
            return r;
    }
    MEMORY_BASIC_INFORMATION mbi;
    const DWORD exec = PAGE_EXECUTE | PAGE_EXECUTE_READ | PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY;
    if (VirtualQuery((const void *)(uintptr_t)addr, &mbi, sizeof mbi) != sizeof mbi || mbi.State != MEM_COMMIT ||
        !(mbi.Protect & exec))
        return 0;
    const uint64_t lo = (uint32_t)(uintptr_t)mbi.BaseAddress >> 12;
    const uint64_t hi = lo + ((uint64_t)mbi.RegionSize >> 12);
    __atomic_store_n(&exec_regions[(uint32_t)InterlockedIncrement(&exec_next) % EXEC_CACHE], hi << 32 | lo,
                     __ATOMIC_RELAXED);
    return hi << 32 | lo;
}

/* ---- frame data of the hooked modules ---------------------------------------- */

/* What the function service sent with each hooked module's list
 * (session.h, hs_frame32_entry): its PDB's records and its .eh_frame's
 * rows, each an hs_fpo32 table (hook/unwind/fpo32.h) looked up by rva as
 * the sampler's code map looks up the same two (PDB first). The walk
 * reads them with no lock: a module's entry is written whole before the
 * count that publishes it, and a module unloaded only has its range
 * cleared (its tables stay: a walk may be reading them; a module loaded
 * again takes a new entry, FRAME_MODS at most). */
#define FRAME_MODS 64
typedef struct frame_mod {
    volatile uint32_t lo, hi;  /* the image's range; hi 0: gone */
    hs_fpo32 *pdb, *cfi;
} frame_mod;
static frame_mod frame_mods[FRAME_MODS];
static volatile LONG n_frame_mods;

/* One part of the frame data sent, as a table (NULL: none or no memory). */
static hs_fpo32 *frame_table(const hs_frame32_entry *e, int32_t n)
{
    hs_fpo32 *t = n > 0 ? hs_fpo32_new() : NULL;
    for (int32_t i = 0; t && i < n; i++) {
        const hs_uw32_frame_data fd = { e[i].rva, e[i].prolog, e[i].locals, e[i].saved_regs, e[i].params,
                                        e[i].ebp_saved_at, (e[i].flags & HS_FRAME32_USES_EBP) != 0 };
        if (hs_fpo32_add(t, &fd, e[i].end) < 0) {
            hs_fpo32_free(t);
            return NULL;
        }
    }
    hs_fpo32_finish(t);
    return t;
}

static void forget_frames(uint64_t base)
{
    for (LONG i = 0; i < n_frame_mods; i++)
        if (!base || frame_mods[i].lo == base)
            __atomic_store_n(&frame_mods[i].hi, 0, __ATOMIC_RELEASE);
}

void hs_frames32_keep(uint64_t base, uint32_t size)
{
    const hs_session_header *h = g_hs.hdr;
    const int32_t npdb = h->fn_frames_pdb, ncfi = h->fn_frames_cfi;
    forget_frames(base);
    if ((npdb <= 0 && ncfi <= 0) || (uint64_t)npdb + (uint64_t)ncfi > h->fn_frames_cap || n_frame_mods == FRAME_MODS)
        return;
    const hs_frame32_entry *e = hs_session_fn_frames(g_hs.view);
    frame_mod *m = &frame_mods[n_frame_mods];
    m->pdb = frame_table(e, npdb);
    m->cfi = frame_table(e + (npdb > 0 ? npdb : 0), ncfi);
    m->lo = (uint32_t)base;
    m->hi = (uint32_t)(base + size);
    __atomic_store_n(&n_frame_mods, n_frame_mods + 1, __ATOMIC_RELEASE);
}

/* ---- the entry stack --------------------------------------------------------- */

/* The walk's environment (hook/unwind/unwind32.h) over this process's own
 * memory: code is what lies in executable memory (not the thread's stack,
 * not the lowest 64 KiB, which Windows never maps: values a walk's scan
 * meets often, answered without a system call). A walk asks about a few
 * addresses per frame, nearly all in one module's code: the region last
 * found is asked first. */
#define LOWEST_CODE 0x10000u   /* Windows maps nothing below 64 KiB */

typedef struct live {
    uint32_t stack_lo, stack_hi;
    uint64_t region;           /* the executable region last found (exec_region) */
    LONG gen;                  /* the plans' generation (walkplans.h) */
} live;

static bool live_executable(live *l, uint32_t addr)
{
    const uint32_t page = addr >> 12;
    if (page >= (uint32_t)l->region && page < (uint32_t)(l->region >> 32))
        return true;
    const uint64_t r = exec_region(addr);
    if (r)
        l->region = r;
    return r != 0;
}

static bool live_is_code(void *ctx, uint32_t addr)
{
    live *l = ctx;
    return addr >= LOWEST_CODE && (addr < l->stack_lo || addr >= l->stack_hi) && live_executable(l, addr);
}

static int live_read(void *ctx, uint32_t addr, void *buf, size_t len)
{
    /* (both ends in executable memory: the at most 64 bytes read span no
     * page between them) */
    if (!len || len > 64 || !live_executable(ctx, addr) || !live_executable(ctx, addr + (uint32_t)len - 1))
        return -1;
    hs_copy_bytes(buf, (const uint8_t *)(uintptr_t)addr, len);
    return 0;
}

static int live_plan_get(void *ctx, uint32_t ret, uint32_t callee_params, hs_uw32_plan *plan)
{
    const live *l = ctx;
    hs_walk_plan p;
    if (!hs_walk_plan_get(ret, l->gen, &p) || p.x86.callee_params != callee_params)
        return 0;
    *plan = p.x86;
    return 1;
}

static void live_plan_put(void *ctx, uint32_t ret, const hs_uw32_plan *plan)
{
    const live *l = ctx;
    hs_walk_plan p = { .x86 = *plan };
    hs_walk_plan_put(ret, l->gen, &p);
}

static int live_frame_data(void *ctx, uint32_t pc, hs_uw32_frame_data *fd)
{
    (void)ctx;
    const LONG n = __atomic_load_n(&n_frame_mods, __ATOMIC_ACQUIRE);
    for (LONG i = 0; i < n; i++) {
        const frame_mod *m = &frame_mods[i];
        const uint32_t lo = m->lo, hi = __atomic_load_n(&m->hi, __ATOMIC_ACQUIRE);
        if (pc >= lo && pc < hi)
            return hs_fpo32_frame_data(m->pdb, pc - lo, lo, fd) || hs_fpo32_frame_data(m->cfi, pc - lo, lo, fd);
    }
    return 0;
}

/* The entry stack by the sampler's x86 walker (hook/unwind/unwind32.h)
 * over the thread's live stack, with the frame data of the hooked modules
 * (a caller without a frame pointer is stepped out of by its frame data;
 * code without any by the ebp chain, else the walker's scan), and the true
 * return addresses of the timed calls open on the thread. A step made
 * from frame data is kept as a plan (walkplans.h): a return address seen
 * before costs a probe of the table and two loads from the stack, about
 * what a step of the bare ebp chain cost. */
int hs_stackwalk(uint64_t *counters, uint64_t entry, uint64_t rsp, const hs_saved_regs *r, uint64_t *frames,
                 int max, int *truncated)
{
    *truncated = 0;
    if (max < 1)
        return 0;
    hs_ret_shadow shadow;
    hs_time32_shadow(counters, &shadow);
    live l = { (uint32_t)hs_teb_read(HS_TEB_STACK_LIMIT), (uint32_t)hs_teb_read(HS_TEB_STACK_BASE), 0,
               hs_walk_plans_gen() };
    const uint32_t esp = (uint32_t)rsp;
    frames[0] = entry;
    if (esp < l.stack_lo || esp >= l.stack_hi)
        return 1;
    const hs_uw_stack st = { esp, (const uint8_t *)(uintptr_t)esp, l.stack_hi - esp, true };
    const hs_uw32_env env = { &l, live_is_code, live_read, live_frame_data, &shadow, live_plan_get, live_plan_put };
    const hs_uw32_regs regs = { (uint32_t)entry, esp, r->ebp };
    uint32_t f32[256];
    hs_uw_result res = hs_unwind32_walk_entry(&env, &st, &regs, f32, NULL, max < 256 ? (uint32_t)max : 256);
    for (uint32_t i = 0; i < res.n; i++)
        frames[i] = f32[i];
    *truncated = res.stop == HS_UW_TRUNCATED;
    return (int)res.n;
}

void hs_stackwalk_forget(uint64_t base)
{
    forget_frames(base);
    hs_walk_plans_forget();
    for (int i = 0; i < EXEC_CACHE; i++)
        __atomic_store_n(&exec_regions[i], 0, __ATOMIC_RELAXED);
}

int hs_tail_solve_module(hs_tail *t, uint64_t base)
{
    (void)t, (void)base;
    return 0;   /* only the x64 wrapper's copy of the arguments needs it */
}
