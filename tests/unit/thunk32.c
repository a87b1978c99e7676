/*
 * tests/unit/thunk32.c - the 32-bit agent's thunks and stubs with edges
 * and entry stacks, natively as 32-bit code (see thunk32.h).
 *
 *   slow32/threads    threads, each with a TEB of its own (fs through a
 *                     GDT TLS entry) and no counters, call a hooked
 *                     function: each one's first call takes the slow
 *                     thunk, its count is exact
 *   edges32/threads   the same from 5 call sites: each caller counted
 *                     exactly, in the block's slots or the edge table
 *   stacks32/threads  the same from the end of a chain of frames: every
 *                     4th call's stack by the EBP chain is that chain
 */
#include "tests/unit/thunk32.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/edgehash.h"
#include "hook/engine/count32.h"
#include "hook/engine/hook.h"
#include "tests/unit/ebpwalk32.h"
#include "tests/unit/tap.h"

unsigned thunk32_slowed;
uint64_t thunk32_edged;

/* ---- the C sides, for the harness ------------------------------------------- */

extern void hs_probe_slow(void), hs_probe_edge(void), hs_probe_stack(void);

/* What the C side saw, and what it should see at the first call of a
 * variant (set by seen_tweak). */
static struct {
    unsigned calls, edge_calls, stack_calls;
    int check;                 /* the next call is a variant's first */
    uint32_t regs[4];          /* ebx ebp esi edi the variant starts with */
    char bad[200];             /* the first wrong thing seen, or "" */
} slow_seen;

/* The C sides the thunks call: the harness runs' (harness_slow,
 * harness_edge), or the threads test's (thread_slow, thread_edge). */
typedef uint64_t *c_side_fn(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs);
static c_side_fn harness_slow, harness_edge, harness_stack;
static c_side_fn *slow_side = harness_slow, *edge_side = harness_edge, *stack_side = harness_stack;

uint64_t *hs_on_slow(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    return slow_side(fidx, entry_esp, regs);
}

uint64_t *hs_on_edge(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    return edge_side(fidx, entry_esp, regs);
}

uint64_t *hs_on_stack(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    return stack_side(fidx, entry_esp, regs);
}

/* session.h's hs_edge_rec (not included here: its _Static_asserts hold for
 * Windows' alignment of 64-bit fields, not Linux i386's) */
typedef struct edge_rec {
    uint64_t site;
    uint32_t callee, reserved;
    uint64_t count, reserved2;
} edge_rec;
_Static_assert(sizeof(edge_rec) == 32, "hs_edge_rec");

/* Like the agent's C side for a new caller (probes.c, tables.c): the
 * caller at entry_esp into a free slot of the function's block in
 * `counters` (xcase.h: XC_FBLOCK, XC_INLINE), else into the edge table
 * (XC_EDGES_REL) where agent/edgehash.h puts it. The stub calls it only
 * for a caller in neither (one found there is written to bad); as the
 * agent's, it never fills the table past 3/4 (the stub's probe always
 * ends at an empty entry). */
static void edge_insert(uint8_t *counters, uint32_t fidx, uint64_t entry_esp, char *bad, size_t n)
{
    uint64_t site = *(const uint32_t *)(uintptr_t)entry_esp;
    uint64_t *slot = (uint64_t *)(counters + fidx * XC_FBLOCK + 8);
    for (uint32_t k = 0; k < XC_INLINE; k++, slot += 2) {
        if (slot[0] == site) {
            if (!bad[0])
                snprintf(bad, n, "the stub missed caller %#llx in slot %u", (unsigned long long)site, k);
            return;
        }
        if (!slot[0]) {
            slot[0] = site;
            slot[1] = 1;
            return;
        }
    }
    edge_rec *tab = (edge_rec *)(counters + XC_EDGES_REL);
    uint32_t used = 0;
    for (uint32_t i = 0; i < XC_EDGES_CAP; i++)
        used += tab[i].site != 0;
    for (uint32_t k = 0, i = hs_edge_slot(site, fidx, XC_EDGES_CAP); k < XC_EDGES_CAP; k++, i = (i + 1) % XC_EDGES_CAP) {
        if (tab[i].site == site && tab[i].callee == fidx) {
            if (!bad[0])
                snprintf(bad, n, "the stub missed caller %#llx in the table", (unsigned long long)site);
            return;
        }
        if (!tab[i].site) {
            if (used >= XC_EDGES_CAP / 4 * 3)
                break;
            tab[i].site = site;
            tab[i].callee = fidx;
            tab[i].count = 1;
            return;
        }
    }
    if (!bad[0])
        snprintf(bad, n, "the edge table is full");
}

/* What the harness's C sides check and change (as C code may). */
static void harness_c_side(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    uint32_t fl;
    __asm__ volatile("pushfl; popl %0" : "=r"(fl));
    if (!slow_seen.bad[0] && (fl & 0x400))
        snprintf(slow_seen.bad, sizeof slow_seen.bad, "the C side runs with DF set");
    if (!slow_seen.bad[0] && fidx != XC_FIDX)
        snprintf(slow_seen.bad, sizeof slow_seen.bad, "fidx %u, expected %u", fidx, XC_FIDX);
    if (slow_seen.check && !slow_seen.bad[0]) {
        if (entry_esp != XR_ENTRY_SP)
            snprintf(slow_seen.bad, sizeof slow_seen.bad, "entry esp %#llx, expected %#llx",
                     (unsigned long long)entry_esp, (unsigned long long)XR_ENTRY_SP);
        else if (memcmp(regs, slow_seen.regs, sizeof slow_seen.regs))
            snprintf(slow_seen.bad, sizeof slow_seen.bad, "regs ebx %#x ebp %#x esi %#x edi %#x, expected "
                     "%#x %#x %#x %#x", regs[0], regs[1], regs[2], regs[3], slow_seen.regs[0],
                     slow_seen.regs[1], slow_seen.regs[2], slow_seen.regs[3]);
    }
    slow_seen.check = 0;
    double sum;
    /* what C code may change: LastError (any Win32 call), the x87 stack
     * and control word, xmm0-7 and MXCSR, edx and the flags */
    __asm__ volatile("movl $0x5EED, %%fs:0x34\n\t"
                     "fld1\n\tfldpi\n\tfaddp\n\tfstpl %0\n\t"
                     "pushl $0x0B7F\n\tfldcw (%%esp)\n\taddl $4, %%esp\n\t"
                     "pcmpeqd %%xmm0, %%xmm0\n\tpcmpeqd %%xmm1, %%xmm1\n\tpcmpeqd %%xmm2, %%xmm2\n\t"
                     "pcmpeqd %%xmm3, %%xmm3\n\tpcmpeqd %%xmm4, %%xmm4\n\tpcmpeqd %%xmm5, %%xmm5\n\t"
                     "pcmpeqd %%xmm6, %%xmm6\n\tpcmpeqd %%xmm7, %%xmm7\n\t"
                     "pushl $0x7F80\n\tldmxcsr (%%esp)\n\taddl $4, %%esp\n\t"
                     "movl $0xBAD0BAD0, %%edx\n\tcmpl $1, %%edx"
                     : "=m"(sum) : : "edx", "cc", "memory");
    if (!slow_seen.bad[0] && !(sum > 4.14 && sum < 4.15))   /* 1 + pi */
        snprintf(slow_seen.bad, sizeof slow_seen.bad, "the C side's x87 arithmetic failed (%g): its stack was "
                 "not empty", sum);
}

/* In the harness runs the thread gets XC_COUNTERS; its slot stays empty
 * (the TEB compares as it was). */
static uint64_t *harness_slow(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    slow_seen.calls++;
    harness_c_side(fidx, entry_esp, regs);
    return (uint64_t *)(uintptr_t)XC_COUNTERS;
}

/* The entry stack at a harness run's entry: XR_A, then the return
 * address at esp (ebp points into scratch: the walk ends there). */
static uint64_t *harness_stack(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    slow_seen.stack_calls++;
    harness_c_side(fidx, entry_esp, regs);
    uint64_t frames[8];
    int truncated;
    int nf = hs_ebp_walk((uint32_t)XR_A, (uint32_t)entry_esp, regs[1], (uint32_t)XR_STACK,
                         (uint32_t)(XR_STACK + XR_STACK_SZ), NULL, NULL, NULL, frames, 8, &truncated);
    if (!slow_seen.bad[0] && (nf < 2 || frames[0] != XR_A || frames[1] != XR_RETPAD))
        snprintf(slow_seen.bad, sizeof slow_seen.bad, "entry stack of %d frames: %#llx %#llx", nf,
                 (unsigned long long)frames[0], nf > 1 ? (unsigned long long)frames[1] : 0ull);
    return (uint64_t *)(uintptr_t)XC_COUNTERS;
}

static uint64_t *harness_edge(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    slow_seen.edge_calls++;
    harness_c_side(fidx, entry_esp, regs);
    edge_insert((uint8_t *)(uintptr_t)XC_COUNTERS, fidx, entry_esp, slow_seen.bad, sizeof slow_seen.bad);
    return (uint64_t *)(uintptr_t)XC_COUNTERS;
}

/* The case's own tweak (xc_opts), and its context */
static void (*case_tweak)(xr_input *in, int variant, void *ctx);

/* The case's tweak, then what its C side must see at the entry. */
static void seen_tweak(xr_input *in, int v, void *ctx)
{
    if (case_tweak)
        case_tweak(in, v, ctx);
    const int at[4] = { 3, 5, 6, 7 };   /* ebx ebp esi edi */
    for (int k = 0; k < 4; k++)
        slow_seen.regs[k] = (uint32_t)in->gpr[at[k]];
    slow_seen.check = 1;
}

/* Run the case again through the slow thunk (its variants that find the
 * slot empty: v % 3 == 2, xcase.h): it must run alike, the C side called
 * once per entry, and the ticks added to the region's `excluded`. */
static int through_thunk(hs_engine *e, unsigned exp_count, const xc_func *f, xc_opts o, xc_count count,
                         char *why, size_t n)
{
    count.tls = 5;
    count.slow = (uint32_t)(uintptr_t)hs_probe_slow;
    o.count = &count;
    o.tweak = seen_tweak;
    slow_seen.calls = 0;
    slow_seen.bad[0] = 0;
    xc_out out;
    int r = xc_diff(e, f, &o, &out, why, n);
    int nv = o.nvariants ? o.nvariants : 3;
    unsigned want = (unsigned)((nv + 1) / 3) * exp_count;
    if (r == XC_SAME && slow_seen.bad[0])
        snprintf(why, n, "through the slow thunk: %s", slow_seen.bad);
    else if (r == XC_SAME && slow_seen.calls != want)
        snprintf(why, n, "through the slow thunk: the C side called %u times, expected %u", slow_seen.calls, want);
    else if (r == XC_SAME && want && out.excluded == 0)
        snprintf(why, n, "through the slow thunk: no ticks added to the region's excluded");
    else if (r != XC_SAME)
        snprintf(why + strlen(why), n - strlen(why), " (through the slow thunk)");
    else {
        thunk32_slowed += want;
        return XC_SAME;
    }
    return XC_DIFFERENT;
}

/* Run the case once more with caller edges and entry stacks
 * (xc_count.edge_slow, stack_slow), through the three thunks: it must run
 * alike, every call counted with its caller, the edge thunk's C side
 * called at least once in each variant that starts with empty caller slots
 * (v % 3 == 2), never for the caller a slot has; the stack thunk's at each
 * entry where the countdown is 0 (a single entry: variants v % 3 == 0;
 * v % 3 == 2 has no counters in its TLS slot, v % 3 == 1 a countdown of
 * 1), the stack it walks the entry and its caller. */
static int through_edges(hs_engine *e, unsigned exp_count, const xc_func *f, xc_opts o, xc_count count,
                         char *why, size_t n)
{
    count.tls = 5;
    count.slow = (uint32_t)(uintptr_t)hs_probe_slow;
    count.edge_slow = (uint32_t)(uintptr_t)hs_probe_edge;
    count.stack_slow = (uint32_t)(uintptr_t)hs_probe_stack;
    o.count = &count;
    o.tweak = seen_tweak;
    slow_seen.calls = slow_seen.edge_calls = slow_seen.stack_calls = 0;
    slow_seen.bad[0] = 0;
    xc_out out;
    int r = xc_diff(e, f, &o, &out, why, n);
    unsigned nv = (unsigned)(o.nvariants ? o.nvariants : 3);
    if (r == XC_SAME && slow_seen.bad[0])
        snprintf(why, n, "with edges: %s", slow_seen.bad);
    else if (r == XC_SAME && slow_seen.edge_calls < (nv + 1) / 3)
        snprintf(why, n, "with edges: the edge thunk's C side called %u times in %u variants", slow_seen.edge_calls,
                 nv);
    else if (r == XC_SAME && (exp_count == 1 ? slow_seen.stack_calls != (nv + 2) / 3
                                                : slow_seen.stack_calls < (nv + 2) / 3))
        snprintf(why, n, "with edges: the stack thunk's C side called %u times in %u variants",
                 slow_seen.stack_calls, nv);
    else if (r != XC_SAME)
        snprintf(why + strlen(why), n - strlen(why), " (with edges)");
    else {
        thunk32_edged += out.edges;
        return XC_SAME;
    }
    return XC_DIFFERENT;
}

int thunk32_diff(hs_engine *e, const xc_func *f, xc_opts o, xc_count count, unsigned exp_count, int edges,
                 char *why, size_t n)
{
    case_tweak = o.tweak;
    return edges ? through_edges(e, exp_count, f, o, count, why, n) : through_thunk(e, exp_count, f, o, count, why, n);
}

/* ---- slow32/threads, edges32/threads, stacks32/threads ------------------------ */

#define TH_THREADS 8
#define TH_CALLS 200000
#define TH_FIDX 5u
#define TH_TLS 9u
/* a region: the header page, the counters (with edges, the function's
 * block and the edge table as in xcase.h) */
#define TH_REGION (4096u + XC_EDGES_REL + 32u * XC_EDGES_CAP)
#define TH_SITES 5                                            /* call sites: three slots, two in the table */

/* A thread of the test: a TEB and a region (a header page, then the
 * counters, then the edge table) of its own, as the agent gives each
 * thread of the target. */
typedef struct th_state {
    uint32_t index;
    uint8_t *teb, *region;
    uint32_t stack_hi;         /* (stacks) above the thread's outermost frame of the chain */
    unsigned slow_calls, edge_calls, stack_calls;
    char bad[160];
} th_state;

static __thread th_state *th_self;   /* (glibc's TLS: gs, untouched by the test) */
static atomic_uint th_uncounted;

/* Like the agent's hs_on_slow: a thread's first slow call gets no
 * counters (as when every region is taken: the call is counted
 * elsewhere), its second gets its region, put in its TLS slot. */
static uint64_t *thread_slow(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    (void)regs;
    th_state *t = th_self;
    if (fidx != TH_FIDX && !t->bad[0])
        snprintf(t->bad, sizeof t->bad, "fidx %u, expected %u", fidx, TH_FIDX);
    if (entry_esp >> 32 && !t->bad[0])
        snprintf(t->bad, sizeof t->bad, "entry esp %#llx", (unsigned long long)entry_esp);
    __asm__ volatile("movl $0x5EED, %%fs:0x34" : : : "memory");   /* a Win32 call's LastError */
    if (t->slow_calls++ == 0) {
        atomic_fetch_add(&th_uncounted, 1);
        return NULL;
    }
    uint64_t *c = (uint64_t *)(t->region + 4096);
    memcpy(t->teb + HS_TEB32_TLS_SLOTS + 4 * TH_TLS, &(uint32_t){ (uint32_t)(uintptr_t)c }, 4);
    return c;
}

/* The threads' C side for a new caller: into the thread's region. */
static uint64_t *thread_edge(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    (void)regs;
    th_state *t = th_self;
    t->edge_calls++;
    __asm__ volatile("movl $0x5EED, %%fs:0x34" : : : "memory");   /* a Win32 call's LastError */
    edge_insert(t->region + 4096, fidx, entry_esp, t->bad, sizeof t->bad);
    return (uint64_t *)(t->region + 4096);
}

typedef int (*th_fn)(int);
static th_fn th_hooked;   /* the hooked function, patched to enter its counting stub */
static atomic_int th_go;   /* set once every thread started: they call it at the same time */
enum { TH_COUNT, TH_EDGES, TH_STACKS };
static int th_mode;        /* TH_EDGES: the threads call it from TH_SITES call sites; TH_STACKS:
                              from the end of a chain of frames (th_chain_a, b, c) */
#define TH_CHAIN_CALLS 1000
#define TH_STACK_EVERY 4
#define FRAMED __attribute__((noinline, optimize("no-omit-frame-pointer")))

/* a -> b -> c -> the hooked function, each keeping a frame pointer (and
 * doing something after its call: no tail call); returns the calls whose
 * result was wrong */
static FRAMED int th_chain_c(void)
{
    int wrong = 0;
    for (int i = 0; i < TH_CHAIN_CALLS; i++)
        wrong += th_hooked(i) != i + 1;
    return wrong;
}
static volatile int th_zero;   /* read after a call: it stays a call */
static FRAMED int th_chain_b(void)
{
    return th_chain_c() + th_zero;
}
static FRAMED int th_chain_a(void)
{
    return th_chain_b() + th_zero;
}

/* Is address x inside function f (the chain's are short)? */
static int th_in(uint64_t x, int (*f)(void))
{
    return x > (uintptr_t)f && x < (uintptr_t)f + 256;
}

/* The stacks threads' C side: the entry stack by the EBP chain must be
 * the hooked function, then c, b and a. */
static uint64_t *thread_stack(uint32_t fidx, uint64_t entry_esp, const uint32_t *regs)
{
    th_state *t = th_self;
    t->stack_calls++;
    uint64_t frames[16];
    int truncated;
    int n = hs_ebp_walk((uint32_t)(uintptr_t)th_hooked, (uint32_t)entry_esp, regs[1], (uint32_t)entry_esp,
                        t->stack_hi, NULL, NULL, NULL, frames, 16, &truncated);
    if (!t->bad[0] && (fidx != TH_FIDX || n < 4 || frames[0] != (uintptr_t)th_hooked ||
                       !th_in(frames[1], th_chain_c) || !th_in(frames[2], th_chain_b) ||
                       !th_in(frames[3], th_chain_a)))
        snprintf(t->bad, sizeof t->bad, "entry stack of %d frames: %#llx %#llx %#llx %#llx (c %p b %p a %p)", n,
                 (unsigned long long)frames[0], n > 1 ? (unsigned long long)frames[1] : 0ull,
                 n > 2 ? (unsigned long long)frames[2] : 0ull, n > 3 ? (unsigned long long)frames[3] : 0ull,
                 (void *)th_chain_c, (void *)th_chain_b, (void *)th_chain_a);
    return (uint64_t *)(t->region + 4096);
}

/* TH_SITES functions, each calling the hooked one from one call site
 * (-O2 does not unroll): site k, (k + 1) * TH_CALLS / 16 times; returns
 * the calls whose result was wrong */
#define TH_SITE(k)                                                      \
    static __attribute__((noinline)) int th_site##k(void)               \
    {                                                                   \
        int wrong = 0;                                                  \
        for (int i = 0; i < ((k) + 1) * TH_CALLS / 16; i++)             \
            wrong += th_hooked(i) != i + 1;                             \
        return wrong;                                                   \
    }
TH_SITE(0) TH_SITE(1) TH_SITE(2) TH_SITE(3) TH_SITE(4)
static int (*const th_sites[TH_SITES])(void) = { th_site0, th_site1, th_site2, th_site3, th_site4 };

static void *th_main(void *arg)
{
    th_state *t = arg;
    th_self = t;
    if (!xr_fs_segment((uint32_t)(uintptr_t)t->teb, XR_TEB_SZ)) {
        snprintf(t->bad, sizeof t->bad, "no fs segment for the thread's TEB");
        return NULL;
    }
    while (!atomic_load(&th_go))
        sched_yield();
    const uint32_t last_error = 0xE000u + t->index;
    __asm__ volatile("movl %0, %%fs:0x34" : : "r"(last_error) : "memory");
    for (int i = 0; i < TH_CALLS && th_mode == TH_COUNT && !t->bad[0]; i++) {
        int r = th_hooked(i);
        if (r != i + 1)
            snprintf(t->bad, sizeof t->bad, "call %d returned %d", i, r);
    }
    for (int k = 0; k < TH_SITES && th_mode == TH_EDGES && !t->bad[0]; k++) {
        int wrong = th_sites[k]();
        if (wrong)
            snprintf(t->bad, sizeof t->bad, "%d calls from site %d returned a wrong result", wrong, k);
    }
    if (th_mode == TH_STACKS) {
        t->stack_hi = (uint32_t)(uintptr_t)__builtin_frame_address(0) + 8;
        int wrong = th_chain_a();
        if (wrong && !t->bad[0])
            snprintf(t->bad, sizeof t->bad, "%d calls from the chain returned a wrong result", wrong);
    }
    uint32_t le;
    __asm__ volatile("movl %%fs:0x34, %0" : "=r"(le));
    if (le != last_error && !t->bad[0])
        snprintf(t->bad, sizeof t->bad, "LastError %#x after the calls, was %#x", le, last_error);
    return NULL;
}

/* int f(int x) { return x + 1; }, cdecl */
static const uint8_t th_code[] = { 0x8B, 0x44, 0x24, 0x04, 0x8D, 0x40, 0x01, 0xC3 };

/* The edges thread t's region holds against what th_main made: TH_SITES
 * callers, each counted as often as it called (the first call of site 0
 * went uncounted: no counters yet), each new to the stub once. 0, or -1
 * with bad. */
static int check_edges(const th_state *t, char *bad, size_t n)
{
    const uint8_t *counters = t->region + 4096;
    uint64_t site[XC_INLINE + XC_EDGES_CAP], count[XC_INLINE + XC_EDGES_CAP];
    unsigned ns = 0;
    for (uint32_t k = 0; k < XC_INLINE; k++) {
        memcpy(&site[ns], counters + TH_FIDX * XC_FBLOCK + 8 + 16 * k, 8);
        memcpy(&count[ns], counters + TH_FIDX * XC_FBLOCK + 16 + 16 * k, 8);
        ns += site[ns] != 0;
    }
    const edge_rec *tab = (const edge_rec *)(counters + XC_EDGES_REL);
    for (uint32_t i = 0; i < XC_EDGES_CAP; i++) {
        if (tab[i].site && tab[i].callee == TH_FIDX) {
            site[ns] = tab[i].site;
            count[ns++] = tab[i].count;
        }
    }
    if (ns != TH_SITES || t->edge_calls != TH_SITES) {
        snprintf(bad, n, "thread %u: %u callers counted, the C side called %u times, expected %d", t->index, ns,
                 t->edge_calls, TH_SITES);
        return -1;
    }
    int seen[TH_SITES] = { 0 };
    for (unsigned j = 0; j < ns; j++) {
        int k = -1;   /* the site function the call is in: the nearest one below it */
        for (int f = 0; f < TH_SITES; f++)
            if ((uintptr_t)th_sites[f] <= site[j] &&
                (k < 0 || (uintptr_t)th_sites[f] > (uintptr_t)th_sites[k]))
                k = f;
        uint64_t want = (uint64_t)((k + 1) * TH_CALLS / 16) - (k == 0);
        if (k < 0 || seen[k]++ || count[j] != want) {
            snprintf(bad, n, "thread %u: caller %#llx (site %d) counted %llu times, expected %llu", t->index,
                     (unsigned long long)site[j], k, (unsigned long long)count[j], (unsigned long long)want);
            return -1;
        }
    }
    return 0;
}

/* Hook th_code with a counting stub whose slow routine is the thunk (and,
 * `edges`, that counts callers, calling the edge thunk for a new one),
 * then call it from threads that start without counters: every call
 * returns its result, each thread's LastError stays, the C side is called
 * twice per thread (no counters the first time, its region the second),
 * and the counts are exact: all calls but one in each region, one
 * uncounted call per thread; with edges, TH_SITES callers, each counted
 * exactly (check_edges). */
static void run_threads(hs_engine *e, int mode)
{
    static const char *const names[] = { "slow32/threads", "edges32/threads", "stacks32/threads" };
    const char *name = names[mode];
    const int edges = mode == TH_EDGES;
    const int calls = mode == TH_EDGES ? 15 * (TH_CALLS / 16) : mode == TH_STACKS ? TH_CHAIN_CALLS : TH_CALLS;
    uint8_t *mem = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        tap_fail(name, "no memory for the code");
        return;
    }
    memset(mem, 0xCC, 0x2000);
    memcpy(mem, th_code, sizeof th_code);
    const uint32_t at = (uint32_t)(uintptr_t)mem;
    hs_func_input fn = { .code = mem, .addr = at, .size = sizeof th_code, .image_lo = at, .image_hi = at + 0x2000 };
    hs_plan plan;
    hs_count32 c = { .tls = TH_TLS, .count_off = (edges ? XC_FBLOCK : 8) * TH_FIDX, .fidx = TH_FIDX,
                     .slow = (uint32_t)(uintptr_t)hs_probe_slow };
    if (edges) {
        c.inline_edges = XC_INLINE;
        c.edges_cap = XC_EDGES_CAP;
        c.edges_rel = XC_EDGES_REL;
        c.edge_mix = hs_edge_mix(TH_FIDX);
        c.edge_mult = HS_EDGE_MULT;
        c.edge_slow = (uint32_t)(uintptr_t)hs_probe_edge;
    }
    if (mode == TH_STACKS) {
        c.stack_every = TH_STACK_EVERY;
        c.countdown_rel = XC_COUNTDOWN_REL + 4 * TH_FIDX;
        c.stack_slow = (uint32_t)(uintptr_t)hs_probe_stack;
    }
    hs_stub32 st;
    hs_skip_reason why = HS_OK;
    uint8_t patch[HS_MAX_PATCH];
    if (hs_analyze(e, &fn, 0, &plan) != HS_OK ||
        !hs_stub32_emit(e, &fn, &plan, hs_analyze_window(e), &c, at + 0x1000, mem + 0x1000, 0x1000, &st, &why) ||
        hs_emit_patch(&fn, &plan, at + 0x1000 + st.entry, patch) < 0) {
        tap_fail(name, "not hooked: %s", hs_skip_reason_name(plan.reason != HS_OK ? plan.reason : why));
        munmap(mem, 0x2000);
        return;
    }
    memcpy(mem + plan.patch_off, patch, plan.patch_len);
    th_hooked = (th_fn)(uintptr_t)at;

    th_state t[TH_THREADS];
    pthread_t tid[TH_THREADS];
    int started = 0;
    memset(t, 0, sizeof t);
    atomic_store(&th_uncounted, 0);
    slow_side = thread_slow;
    edge_side = thread_edge;
    stack_side = thread_stack;
    atomic_store(&th_go, 0);
    th_mode = mode;
    for (int i = 0; i < TH_THREADS; i++) {
        t[i].index = (uint32_t)i;
        t[i].teb = aligned_alloc(4096, XR_TEB_SZ);
        t[i].region = aligned_alloc(4096, TH_REGION);
        if (!t[i].teb || !t[i].region)
            break;
        memset(t[i].teb, 0, XR_TEB_SZ);
        memset(t[i].region, 0, TH_REGION);
        if (pthread_create(&tid[i], NULL, th_main, &t[i]) != 0)
            break;
        started++;
    }
    atomic_store(&th_go, 1);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    slow_side = harness_slow;
    edge_side = harness_edge;
    stack_side = harness_stack;

    char bad[300] = "";
    uint64_t counted = 0;
    if (started < TH_THREADS)
        snprintf(bad, sizeof bad, "started %d threads of %d", started, TH_THREADS);
    for (int i = 0; i < started && !bad[0]; i++) {
        uint64_t n;
        memcpy(&n, t[i].region + 4096 + c.count_off, 8);
        counted += n;
        if (t[i].bad[0])
            snprintf(bad, sizeof bad, "thread %d: %s", i, t[i].bad);
        else if (t[i].slow_calls != 2)
            snprintf(bad, sizeof bad, "thread %d: the C side called %u times, expected 2", i, t[i].slow_calls);
        else if (n != (uint64_t)calls - 1)
            snprintf(bad, sizeof bad, "thread %d: counted %llu calls, expected %d", i, (unsigned long long)n,
                     calls - 1);
        else if (edges)
            check_edges(&t[i], bad, sizeof bad);
        else if (mode == TH_STACKS && t[i].stack_calls != (unsigned)(calls - 2) / TH_STACK_EVERY + 1)
            /* (calls 2, 2 + every, ...: the first had no counters) */
            snprintf(bad, sizeof bad, "thread %d: %u entry stacks, expected %d", i, t[i].stack_calls,
                     (calls - 2) / TH_STACK_EVERY + 1);
    }
    if (!bad[0] && atomic_load(&th_uncounted) != (unsigned)started)
        snprintf(bad, sizeof bad, "%u calls without counters, expected %d", atomic_load(&th_uncounted), started);
    tap_check(!bad[0], name, "%s", bad);
    if (!bad[0])
        tap_diag("32-bit: %d threads, %llu calls counted through the stub%s, each thread's first through the "
                 "slow thunk", started, (unsigned long long)counted,
                 edges ? " with their callers" : mode == TH_STACKS ? ", every 4th with its entry stack" : "");
    for (int i = 0; i < TH_THREADS; i++) {
        free(t[i].teb);
        free(t[i].region);
    }
    munmap(mem, 0x2000);
}

void thunk32_threads(hs_engine *e)
{
    run_threads(e, TH_COUNT);
    run_threads(e, TH_EDGES);
    run_threads(e, TH_STACKS);
}
