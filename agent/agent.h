/*
 * agent/agent.h - state shared by the agent's files.
 *
 * The agent is loaded into the target by the injector. It attaches to the
 * session (session.c), finds the modules to hook (modules.c), hooks them
 * (install.c, with stubs from stubs.c, their unwind data from
 * stub_unwind.c, patched in by patch.c under a freeze) and keeps
 * per-thread counter regions (regions.c, tables.c, tls.c). The hot path
 * is machine code generated per function (stubs.c) plus hand-written
 * thunks (thunks.S) and the timing wrapper (wrapper.S); the probes' C
 * side is probes.c, entry stacks stackwalk.c; exitwatch.c sees how the
 * process ends.
 */
#ifndef HOOKSCOPE_AGENT_H
#define HOOKSCOPE_AGENT_H

#include <stdint.h>
#include <windows.h>

#include "agent/edgehash.h"
#include "hook/engine/arena_win.h"
#include "hook/engine/count32.h"
#include "hook/engine/hook.h"
#include "hook/pe/pe.h"
#include "hookscope/path.h"
#include "hookscope/session.h"

/* The agent is built twice from these sources: for x86-64, and for i686
 * (hookscope-agent32.dll, in 32-bit targets). The i686 build has the
 * counting stubs of hook/engine/count32.h, with caller edges and entry
 * stacks (the x86 walker's, with frame data), the thunks of thunks32.S
 * (agent32.c), and
 * return probes over a shadow return stack (time32.S); what needs the
 * x64 unwind data (the timing wrapper, the x64 stack walk, the stubs'
 * unwind info, tail-jump solving: wrapper.S, stackwalk.c, stub_unwind.c,
 * tailenv.c) and the x64 stubs and thunks (stubs.c, thunks.S) are built
 * for x86-64 only. */
#if defined(__i386__)
#define HS_AGENT_X86 1
#else
#define HS_AGENT_X86 0
#endif

/* One hooked function, as the agent remembers it for unhooking and for
 * moving threads. Kept in one array per module, sorted by address. */
typedef struct hs_hooked {
    uint64_t entry;            /* function entry */
    uint64_t stub;             /* entry stub in the arena */
    uint64_t tramp;            /* trampoline in the arena */
    uint32_t fidx;
    hs_plan plan;
    uint16_t tramp_off[HS_MAX_WINDOW_INSNS + 1];
    uint8_t patch[HS_MAX_PATCH];   /* the bytes written at entry + plan.patch_off */
    uint64_t desc;                 /* wrapper descriptor (timed functions), else 0 */
    uint64_t slot;                 /* start of the stub's code (its slow block) */
    uint64_t slow_jmp;             /* the slow block's last instruction: its jump into the stub */
    uint64_t done;                 /* where the stub's pops begin */
    uint8_t pushed;                /* bytes the stub pushes */
    uint32_t unwind_rva;           /* the original function's UNWIND_INFO, 0 if none */
} hs_hooked;

/* What a timed function's stub hands the wrapper (wrapper.S reads it). */
typedef struct hs_wrap_desc {
    uint64_t tramp;            /* the trampoline to call */
    uint64_t time_rel;         /* its time record, relative to a thread's counters */
    uint32_t fidx;
    uint32_t nslots;           /* argument slots to copy (home slots included) */
} hs_wrap_desc;

/* Stack argument slots the wrapper copies at most; a function reading
 * more gets an entry probe only. */
#define HS_WRAP_MAX_SLOTS 64

#define HS_MAX_CODE_RANGES 16
#define HS_MAX_RECORDED 1024   /* modules recorded without hooks */

typedef struct hs_mod_state {
    uint32_t index;            /* in the session's module table */
    uint64_t base, size;
    hs_hooked *hooks;          /* sorted by entry */
    size_t n_hooks;
    uint64_t range_lo[HS_MAX_CODE_RANGES], range_hi[HS_MAX_CODE_RANGES]; /* executable sections */
    int n_ranges;
    int hooked;                /* patches are in */
    int unloaded;              /* the module is gone: never touch its memory again */
    int retired;               /* hooked for an earlier session: its patches are out for good */
    void *unwind_table;        /* the stubs' function table (in the arena chunk), */
    void *unwind_handle;       /* registered as a growable table (RtlAddGrowableFunctionTable) */
} hs_mod_state;

typedef struct hs_agent {
    HMODULE self;
    HANDLE mapping;
    void *view;                /* the session */
    hs_session_header *hdr;
    DWORD tls;                 /* TLS index whose slot points at a thread's counters */
    uint64_t *sink;            /* counters that absorb calls made by the agent itself */
    SRWLOCK layout_lock;       /* function table growth and region commits */
    CRITICAL_SECTION install_lock; /* one install or removal at a time */
    HANDLE fn_request, fn_answer;  /* the injector's function service (session.h), or NULL */
    hs_engine *engine;         /* used under install_lock */
    hs_arena arena;            /* used under install_lock */
    hs_mod_state *mods;        /* agent-side state of hooked modules */
    size_t n_mods, cap_mods;
    void *dll_cookie;          /* LdrRegisterDllNotification */
    uint64_t sink_size;
    volatile LONG in_slow;     /* threads inside the probes' C code */
    uint64_t self_size;        /* the agent DLL's SizeOfImage */
    int defer_patch;           /* hs_install_module leaves patching to its caller */
    uint64_t tl_wait_ticks;    /* --timeline-wait in rdtsc ticks, from the header at the start:
                                  what bounds every wait, whatever the target writes into the
                                  session meanwhile */
} hs_agent;

extern hs_agent g_hs;

/* session.c */
/* Serve the session whose section the injector duplicated into this
 * process as `handle`. Returns 0, or -1 when it is not a session of this
 * process. */
int hs_session_attach(uint64_t handle);
/* Say where the agent and its timing wrapper are, in the session header
 * (for a sampler: session.h, agent_base and wrap_*). */
void hs_session_describe_agent(hs_session_header *h);
/* The same from now on for a later attach reusing this agent: the
 * current session is retired, kept mapped while timed calls entered
 * under it are open. Returns 0, -1 (no such session), or -2 (as many
 * sessions retired as can be kept). */
int hs_session_switch(uint64_t handle);
uint64_t hs_retired_frames(void);      /* timed calls open in retired sessions */
void hs_retired_thread_exit(void);     /* the calling thread ends: in retired sessions too */
void hs_retired_release(void);         /* unmap the retired sessions without any */
size_t hs_retired_count(void);
/* The calling thread's counters in retired session i (and that session's
 * view), or NULL. */
void *hs_retired_counters(size_t i, void **view);
extern hs_agent_public hs_agent_public_state;
void hs_agent_fail(int err, const char *fmt, ...);
int hs_session_commit(void *p, uint64_t len);
/* Ask the injector for the functions of module record `module` (its
 * path, base, size and timestamp written): returns how many it listed in
 * the session's function list, or -1 when there is no answer (no
 * service, no usable file, no reply within a bound): find them yourself.
 * Called under install_lock. */
int32_t hs_session_request_functions(uint32_t module);

uint32_t hs_session_add_module(const wchar_t *path, uint64_t base, uint32_t size, uint32_t flags,
                               int pattern);

/* tls.c: TLS slot value of the current thread */
void *hs_tls_get(void);
void hs_tls_set(void *v);
/* Make the calling thread count into the sink while the agent works;
 * returns the previous value for hs_agent_leave. */
void *hs_agent_enter(void);
void hs_agent_leave(void *prev);

/* regions.c: the life of a thread region */
/* Reserve n function records (committed, zeroed) and commit their
 * counters in every region; *first receives the first index. */
int hs_session_add_functions(uint32_t n, uint32_t *first);
/* Commit the per-function parts for functions [0, n_functions) in every
 * live region (called with layout_lock held). */
int hs_regions_grow(uint32_t n_functions);
/* Give the calling thread a region; returns its counters, or NULL when
 * every region is taken. */
uint64_t *hs_region_acquire(void);
/* Add region k's counts to the overflow region and clear it (its thread
 * is gone; called with layout_lock held). */
void hs_region_fold(uint32_t k);
#define HS_MAX_THREADS_LIMIT 4096   /* --max-threads at most */
/* The sink: private counters with the layout of a region, for the agent's
 * own calls. */
int hs_sink_init(void);
void hs_thread_exit(void);
/* Add the agent's work on this thread since rdtsc t0 to the session's
 * thread cost `which` (HS_THREAD_*), unless the thread is hookscope's. */
void hs_thread_cost(int which, uint64_t t0);
/* Forget the threads that owned regions (a new session starts). */
void hs_regions_reset(void);
/* Set up the first regions before any thread needs one (after
 * hs_sink_init: the session is known). */
void hs_regions_prepare(void);

/* tables.c: a region's tables */
hs_region_hdr *hs_region_of(uint64_t *counters);
hs_edge_rec *hs_edges_of(uint64_t *counters);
/* Where a region's first HS_EDGES_LISTED edge table entries are, by index
 * in the order its thread filled them: the end of the agent's part of the
 * region's header page (session.h), after the stack walk's cache. A fold
 * of a region that used no more visits those, not the whole table (16384
 * entries by default, half a MiB: hundreds of microseconds at a thread's
 * start). */
#define HS_EDGES_LISTED 120u
#define HS_EDGES_LISTED_OFF (HS_PAGE - HS_EDGES_LISTED * 4)
uint32_t *hs_edges_listed_of(uint64_t *counters);
/* Insert (site, fidx) into an edge table with `count`, or add to an
 * existing entry; -1 when the table is too full to insert. A new entry's
 * index goes into listed[] (NULL: not kept) while *used is under
 * HS_EDGES_LISTED. */
int hs_edge_add(hs_edge_rec *t, uint32_t *used, uint32_t *listed, uint64_t site, uint32_t fidx, uint64_t count);
/* Add `count` calls from site (not 0) to a function's block: to the slot
 * that has the site, else into a free one; 0 when the block has neither
 * (the edge table takes it). One writer per block at a time. */
int hs_inline_edge_add(hs_fblock *b, uint64_t site, uint64_t count);
/* Add `count` to the stack (fidx, frames) in region r's table, inserting
 * it if new; -1 when the table or the frame pool is full. */
int hs_stack_add(hs_region_hdr *r, uint32_t fidx, const uint64_t *frames, int n, int truncated,
                 uint64_t count);
/* Count a call (and its edge) in the shared overflow region. */
void hs_overflow_count(uint32_t fidx, uint64_t site, int count_call);
extern SRWLOCK hs_overflow_lock;   /* the overflow region's edge table */

/* modules.c */
int hs_modules_init(void);
void hs_modules_stop(void);
/* A new session: every module hooked so far is retired (its patches are
 * out), and none is recorded in the new session yet. */
void hs_modules_reset(void);
int hs_pattern_match(const wchar_t *path);

/* detour.c: a function of a loaded DLL (module!name) whose entry jumps to
 * fn, a function of the agent, which calls the original through *orig. */
typedef struct hs_detour {
    const wchar_t *module;
    const char *name;
    void *fn;                  /* the replacement */
    void **orig;               /* receives the trampoline */
    hs_mod_state ms;           /* for patch.c: one module state with one hook */
    hs_hooked hook;
    int ready, patched;
} hs_detour;
#define HS_DETOURS_MAX 8       /* patched together at most */
/* Prepare d (stub and trampoline in the arena; not patched yet). 0, or -1
 * when the module is not loaded or the function cannot be detoured
 * safely. */
int hs_detour_prepare(hs_detour *d);
/* Patch (install) or take out, under one freeze, every prepared detour of
 * list not so yet. 0, or -1 (then none changed). */
int hs_detours_patch(hs_detour *const *list, size_t n, int install);

/* backtrace.c: under --time, the program's own RtlCaptureStackBackTrace
 * gives what it gives untimed (no wrapper frame, no return thunk) */
void hs_backtrace_install(void);
int hs_backtrace_remove(void);        /* 0, or -1 when the detour could not be taken out */
LONG hs_backtrace_busy(void);         /* threads inside the detour */

/* exitwatch.c: detours that see how the target ends (session end_*), and
 * that end it when only hookscope's threads are left */
void hs_ending_install(void);
void hs_ending_module_loaded(void);   /* a DLL was loaded (before its hooks) */
int hs_ending_remove(void);           /* 0, or -1 when a detour could not be taken out */
LONG hs_ending_busy(void);            /* threads inside a detour's original */
extern volatile LONG hs_target_threads;
void hs_ending_thread(int attach);    /* DLL_THREAD_ATTACH (1) or DETACH (0) */

/* install.c: hook a module in steps: open its PE and file, add it and
 * its functions to the session, analyze each function, solve the
 * tail-jump slots and size the stubs, emit stubs, trampolines and
 * descriptors into the arena, build the module state and register the
 * stubs' unwind info, patch (at once unless g_hs.defer_patch; then
 * hs_install_mark after patching them). Returns 0, or -1. */
int hs_install_module(HMODULE base, const wchar_t *path, uint32_t flags, int pattern);
/* Record in the session how patching module ms went (hs_patch_* result). */
void hs_install_mark(hs_mod_state *ms, int patched);

/* patch.c: write (install) or restore (remove) every patch of the given
 * modules under one freeze of the other threads. Returns 0, or -1 (a
 * freeze that could not be made changes nothing; the session's error text
 * says why). */
int hs_patch_modules(hs_mod_state *const *mods, size_t n, int install);
int hs_patch_module(hs_mod_state *m, int install);
/* Wait until no thread runs in the arena or in the agent's probe code
 * (after every module was unhooked). Returns 0, or -1 on timeout. */
int hs_quiesce(DWORD timeout_ms);
/* Is addr hookscope's code (a stub, a trampoline, a wrapper, the agent)? */
int hs_own_code(uint64_t addr);

/* unwind.c: unwind info for stubs and trampolines */
size_t hs_unwind_space(size_t n_hooks);
int hs_unwind_register(hs_mod_state *m, const hs_pe *pe, uint8_t *space, size_t size,
                       uint64_t base);
void hs_unwind_unregister(hs_mod_state *m);

/* tailenv.c: hs_tail_solve for the functions of the module at `base`,
 * following their tail jumps into any loaded image (under install_lock).
 * 0, or -1 without memory. */
int hs_tail_solve_module(hs_tail *t, uint64_t base);

/* stubs.c */
size_t hs_stub_size_max(const hs_plan *plan);
/* Emit the entry stub for function `fidx` followed by its trampoline, at
 * buf (which runs at `addr`); `window`: the plan's instructions as
 * analyzed (hs_analyze_window), or NULL. Returns bytes written or 0 (*why
 * set). */
size_t hs_stub_emit(uint8_t *buf, uint64_t addr, size_t cap, uint32_t fidx,
                    const hs_func_input *fn, const hs_plan *plan, const hs_insn *window, hs_hooked *out,
                    hs_skip_reason *why);

/* time32.S (32-bit agent): a timed call's entry, which its stub calls
 * with its descriptor pushed, and the return thunk whose address takes
 * the place of the caller's return address; hs_time32_tls: the TLS index
 * whose slot holds the thread's counters, read by both. agent32.c:
 * hs_time32_orphan, the true return address of a return the thread's
 * region has no record of (0: none anywhere); hs_time32_shadow, the
 * calling thread's shadow return stack (counters: its). */
#if HS_AGENT_X86
extern void hs_time32_enter(void), hs_time32_return(void);
extern uint32_t hs_time32_tls;
/* the thread's cell the return thunk jumps through (an fs offset, 0: none,
 * then it returns by ret) and the code `jmp dword ptr fs:[cell]` */
extern uint32_t hs_time32_cell, hs_time32_tail;
uint32_t hs_time32_orphan(uint32_t esp);
struct hs_ret_shadow;
void hs_time32_shadow(uint64_t *counters, struct hs_ret_shadow *out);
#endif

/* thunks.S: thunks from the stubs into C (all registers saved); the
 * 32-bit agent's are thunks32.S */
extern void hs_probe_slow(void);
extern void hs_probe_edge(void);
extern void hs_probe_stack(void);
/* wrapper.S: the timing wrapper frame */
extern void hs_wrapper(void);
extern void hs_wrapper_ret(void);   /* the wrapper's return address for timed calls */
/* where in the wrapper a sampler finds the timed function's descriptor
 * (session.h: wrap_*) */
extern void hs_wrapper_desc_rsi(void), hs_wrapper_desc_gone(void), hs_wrapper_end(void);

/* probes.c: read by wrapper.S */
extern uint64_t hs_tsc_ns_mult;
extern volatile int64_t hs_untimed_frames;
/* The calling thread is one hookscope.exe or the agent started. */
int hs_hookscope_thread(void);
/* --timeline: wait for room in region r's full ring (probes.c); 1: room */
int hs_timeline_room(hs_region_hdr *r);
/* Wrapper frames still live on some thread's stack (timed + untimed). */
uint64_t hs_live_wrapper_frames(void);

/* Callee-saved registers at a hooked function's entry, as the thunks pass
 * them to C (for the entry stack walk). */
#if HS_AGENT_X86
typedef struct hs_saved_regs {
    uint32_t ebx, ebp, esi, edi;
} hs_saved_regs;
#else
typedef struct hs_saved_regs {
    uint64_t rbx, rbp, rsi, rdi, r12, r13, r14, r15;
} hs_saved_regs;
#endif

/* stackwalk.c: the stack from a hooked function's entry (rsp: where its
 * return address is) into frames[0..max): frame 0 is the entry, then one
 * return address per caller, hookscope's wrapper frames left out;
 * *truncated when there were more. `counters`: the calling thread's (its
 * region holds the walk's cache). Returns the number of frames. */
int hs_stackwalk(uint64_t *counters, uint64_t entry, uint64_t rsp, const hs_saved_regs *r, uint64_t *frames,
                 int max, int *truncated);
/* The module at base is gone (0: any may be): forget what the walk kept
 * of it (every cached lookup). */
void hs_stackwalk_forget(uint64_t base);
#if HS_AGENT_X86
/* agent32.c: keep the frame data the function service sent with the
 * function list of the module at base (size bytes; session.h,
 * hs_frame32_entry) for the entry stacks. Under install_lock. */
void hs_frames32_keep(uint64_t base, uint32_t size);
#endif

/* TEB fields used directly: no API call on the hot or slow path. */
#if HS_AGENT_X86
#define HS_TEB_TLS_SLOTS HS_TEB32_TLS_SLOTS
#define HS_TEB_TLS_EXPANSION HS_TEB32_TLS_EXPANSION
#define HS_TEB_LAST_ERROR 0x34
#define HS_TEB_THREAD_ID 0x24
#define HS_TEB_PEB 0x30
#define HS_TEB_STACK_BASE 0x04
#define HS_TEB_STACK_LIMIT 0x08
#define HS_PEB_LOADER_LOCK 0xA0    /* PEB.LoaderLock: the loader's RTL_CRITICAL_SECTION */
#else
#define HS_TEB_TLS_SLOTS 0x1480
#define HS_TEB_TLS_EXPANSION 0x1780
#define HS_TEB_LAST_ERROR 0x68
#define HS_TEB_THREAD_ID 0x48
#define HS_TEB_PEB 0x60
#define HS_TEB_STACK_BASE 0x08
#define HS_TEB_STACK_LIMIT 0x10
#define HS_PEB_LOADER_LOCK 0x110   /* PEB.LoaderLock: the loader's RTL_CRITICAL_SECTION */
#endif

/* A copy that calls nothing, for the stack walks' reads of code: they run
 * inside the target's calls, and the C runtime's memcpy may be one of the
 * functions hooked (a hooked function called from a probe costs a stub's
 * round trip each time). */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
static inline void hs_copy_bytes(uint8_t *dst, const uint8_t *src, size_t n)
{
    for (; n >= 8; n -= 8, dst += 8, src += 8)
        *(uint64_t *)(void *)dst = *(const uint64_t *)(const void *)src;
    while (n--)
        *dst++ = *src++;
}

/* TEB access through its segment (gs; fs in 32-bit code), a pointer-sized
 * field (the intrinsics trip a gcc 12 -Warray-bounds bug) */
static inline uint64_t hs_teb_read(uint32_t off)
{
    uintptr_t v;
#if HS_AGENT_X86
    __asm__ volatile("movl %%fs:(%1), %0" : "=r"(v) : "r"(off));
#else
    __asm__ volatile("movq %%gs:(%1), %0" : "=r"(v) : "r"((uint64_t)off));
#endif
    return v;
}

static inline void hs_teb_write(uint32_t off, uint64_t v)
{
#if HS_AGENT_X86
    __asm__ volatile("movl %0, %%fs:(%1)" : : "r"((uintptr_t)v), "r"(off) : "memory");
#else
    __asm__ volatile("movq %0, %%gs:(%1)" : : "r"(v), "r"((uint64_t)off) : "memory");
#endif
}

static inline uint64_t hs_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

#endif
