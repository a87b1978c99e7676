/*
 * tests/unit/time32.c - the 32-bit agent's return probes, natively as
 * 32-bit code (see time32.h). The callees below are copied into
 * executable memory and hooked there with timed counting stubs (count32.h
 * with time_desc: they enter hs_time32_enter, and return through
 * hs_time32_return). Each case runs on a thread with a TEB and a region
 * (header page, counters, time records, shadow stack) of its own, as the
 * agent gives each thread; counts and time records are checked exactly.
 *
 *   time32/conventions  cdecl, stdcall, fastcall and thiscall callees (the
 *                       callee pops its arguments), 64-bit (edx:eax), x87
 *                       (ST0) and SSE (xmm0) results: each result right, each
 *                       call counted and ended once, no record left
 *   time32/registers    a timed call that changes nothing leaves every
 *                       register, DF, the x87 stack, xmm0-7 and LastError as
 *                       they were (the arithmetic flags may change, as the
 *                       x64 wrapper changes them)
 *   time32/nested       outer calls a timed callee twice: the callee's time
 *                       is exactly what outer's self time leaves out
 *   time32/recursion    a recursive function: every activation ended, its
 *                       inclusive total (outermost activations) is exactly
 *                       the sum of its self times
 *   time32/tail         a timed function tail-jumps to another: both end at
 *                       the one return, the callee's time inside the caller's
 *   time32/longjmp-entry  longjmp out of one and of two nested timed calls:
 *                       found dead at the next timed entry (its slot reused,
 *                       or one above), counted as unwind exits
 *   time32/longjmp-return  longjmp out of a timed call into code inside
 *                       another timed call, which then returns: the dead one
 *                       is found at that return
 *   time32/full         a shadow stack of 4 records under a recursion of 10:
 *                       the deeper calls run untimed, counted in time_dropped
 *   time32/orphan       a return with no record in the thread's current
 *                       region (its counters moved meanwhile, as to a later
 *                       session's): hs_time32_orphan gives the true address,
 *                       the result, the x87 stack and LastError kept around it
 *   time32/stack        the EBP-chain walk (ebpwalk.h) through a timed frame
 *                       gives the caller's true return address, not the thunk
 *   time32/threads      4 threads at once, each its own counts and times
 *   time32/ret, ret-longjmp  conventions and longjmp-return again, the
 *                       thunk going back by ret (no jump cell)
 *   time32/expansion-slot  conventions again, the thread's counters in a
 *                       TLS expansion slot (an index of 64 or more)
 *   count32/sizes       a stub for every mix of edges, entry stacks and a
 *                       return probe, through both kinds of TLS slot, fits in
 *                       hs_stub32_size_max
 *   time32/true-return  hs_ret_shadow_true on made-up records: a slot's
 *                       newest record, through tail jumps, a callee's copy
 *                       of its return address, none
 *   time32/timeline-head-carry  hs_tl_head_advance (the head after a
 *                       thread's name, regions.c) moves a ring's head over its carry,
 *                       0xFFFFFFFF to 2^32, again and again, while another
 *                       thread reads it as the injector does (8 bytes at
 *                       once): never seen half written
 */
#include "tests/unit/time32.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hook/engine/count32.h"
#include "tests/unit/ebpwalk32.h"
#include "hookscope/tl_head.h"
#include "tests/unit/tap.h"
#include "tests/unit/xrun.h"

/* ---- what the agent provides (agent/time32.S reads these) ----------------- */

extern void hs_time32_enter(void), hs_time32_return(void), hs_probe_slow(void);
uint32_t hs_time32_tls;
uint32_t hs_time32_cell, hs_time32_tail;   /* the thunk's jump cell (set by hook_all) */
uint64_t hs_tsc_ns_mult = 1ull << 31;   /* 2 ticks a nanosecond */

/* A return the thread's current region has no record of. In the agent:
 * a call entered under an earlier session (agent32.c looks in the
 * retired sessions' regions). Here only time32/orphan makes one
 * (orphan_from: the region it switched away from; the C side changes
 * what C code may: LastError, the x87 stack); anywhere else there
 * is nowhere to return to: the test program ends at once, and fails. */
static uint8_t *orphan_from;
static uint32_t orphan_esp;
static unsigned orphan_calls;

uint32_t hs_time32_orphan(uint32_t esp)
{
    if (!orphan_from) {
        fprintf(stderr, "time32: a return into the thunk with no record (esp %#x)\n", esp);
        fflush(stdout);
        _exit(3);
    }
    orphan_calls++;
    orphan_esp = esp;
    double scratch;
    __asm__ volatile("movl $0x5EED, %%fs:0x34\n\tfld1\n\tfldpi\n\tfaddp\n\tfstpl %0"
                     : "=m"(scratch) : : "memory");
    /* the newest record of the region switched away from returns */
    uint64_t top, ret;
    memcpy(&top, orphan_from + 48, 8);
    top -= 64;
    memcpy(&ret, (uint8_t *)(uintptr_t)top + 40, 8);
    memcpy(orphan_from + 48, &top, 8);
    return (uint32_t)ret;
}

/* --timeline: a thread's ring is full. In the agent hs_timeline_room
 * (probes.c) waits for the injector to take events; here (tl_room) it
 * either gives up (0: the call is dropped) or takes every event the way
 * the injector would (into tl_taken), spins TL_WAITED ticks and adds
 * them to the region's `excluded` as a wait would, and says there is room. Either
 * way it changes what C code may change and more: eax, ecx, edx,
 * xmm0-7, eight x87 registers (the thunk's caller may hold ST0 and
 * ST1: they must be marked empty around the call), LastError. (TL_DRAIN,
 * for the cost: every event taken at once, no wait counted.) */
enum { TL_NONE, TL_GIVE_UP, TL_TAKE, TL_DRAIN };
#define TL_WAITED (1ull << 20)
typedef struct t32_event {
    uint64_t t0, t1, ticks;
    uint32_t func, depth;
} t32_event;
_Static_assert(sizeof(t32_event) == 32, "hs_tl_event");
static int tl_room;
static unsigned tl_room_calls;
static t32_event tl_taken[4096];
static unsigned tl_ntaken;

int hs_timeline_room(uint8_t *r)
{
    tl_room_calls++;
    static const double one = 1.0;
    double sink;
    __asm__ volatile("fldl %1\n\tfldl %1\n\tfldl %1\n\tfldl %1\n\tfldl %1\n\tfldl %1\n\tfldl %1\n\tfldl %1\n\t"
                     "faddp\n\tfaddp\n\tfaddp\n\tfaddp\n\tfaddp\n\tfaddp\n\tfaddp\n\tfstpl %0\n\t"
                     "pcmpeqb %%xmm0, %%xmm0\n\tpcmpeqb %%xmm1, %%xmm1\n\tpcmpeqb %%xmm2, %%xmm2\n\t"
                     "pcmpeqb %%xmm3, %%xmm3\n\tpcmpeqb %%xmm4, %%xmm4\n\tpcmpeqb %%xmm5, %%xmm5\n\t"
                     "pcmpeqb %%xmm6, %%xmm6\n\tpcmpeqb %%xmm7, %%xmm7\n\tmovl $0xBAD, %%fs:0x34"
                     : "=m"(sink) : "m"(one) : "memory");
    if (sink != 8.0 || tl_room == TL_NONE)
        return 0;   /* (an x87 stack not emptied: the sum is a NaN; a wait not asked for: a drop) */
    if (tl_room == TL_GIVE_UP)
        return 0;
    if (tl_room == TL_DRAIN) {
        memcpy(r + 192, r + 104, 8);
        return 1;
    }
    uint64_t base, cap, head, tail, excluded;
    memcpy(&base, r + 88, 8);
    memcpy(&cap, r + 96, 8);
    memcpy(&head, r + 104, 8);
    memcpy(&tail, r + 192, 8);
    for (; tail < head; tail++)
        if (tl_ntaken < sizeof tl_taken / sizeof tl_taken[0])
            memcpy(&tl_taken[tl_ntaken++], (uint8_t *)(uintptr_t)base + 32 * (tail & (cap - 1)), 32);
    memcpy(r + 192, &tail, 8);
    /* the ticks waited pass on the clock, as in a real wait */
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    for (const uint64_t until = ((uint64_t)hi << 32 | lo) + TL_WAITED; ((uint64_t)hi << 32 | lo) < until;)
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    memcpy(&excluded, r + 72, 8);
    excluded += TL_WAITED;
    memcpy(r + 72, &excluded, 8);
    return 1;
}

/* ---- the callees (copied, then hooked) ------------------------------------ */

uint32_t t32_tail_to;   /* where the tail-jumping callee goes */

__asm__(".pushsection .rodata\n"
        ".intel_syntax noprefix\n"
        /* int c_add(int a, int b) (cdecl) */
        "t32_c_add: mov eax, [esp+4]\n add eax, [esp+8]\n ret\n t32_c_add_end:\n"
        /* int __stdcall s_add(int a, int b) */
        "t32_s_add: mov eax, [esp+4]\n add eax, [esp+8]\n ret 8\n t32_s_add_end:\n"
        /* int __fastcall f_add(int a, int b, int c) */
        "t32_f_add: lea eax, [ecx+edx]\n add eax, [esp+4]\n ret 4\n t32_f_add_end:\n"
        /* int __thiscall t_get(const int *this, int k): *this + k */
        "t32_t_get: mov eax, [ecx]\n add eax, [esp+4]\n ret 4\n t32_t_get_end:\n"
        /* double d_twice(double x) (ST0) */
        "t32_d_twice: fld qword ptr [esp+4]\n fadd st(0), st(0)\n ret\n t32_d_twice_end:\n"
        /* uint64_t q_inc(uint64_t x) (edx:eax) */
        "t32_q_inc: mov eax, [esp+4]\n mov edx, [esp+8]\n add eax, 1\n adc edx, 0\n ret\n t32_q_inc_end:\n"
        /* x_twice(double x): 2x in xmm0 (a vectorcall-like result) */
        "t32_x_twice: movsd xmm0, qword ptr [esp+4]\n addsd xmm0, xmm0\n ret\n t32_x_twice_end:\n"
        /* int outer(s_fn fn, int a, int b): fn(a, fn(a, b)) */
        "t32_outer: push ebp\n mov ebp, esp\n push dword ptr [ebp+16]\n push dword ptr [ebp+12]\n"
        "  call dword ptr [ebp+8]\n push eax\n push dword ptr [ebp+12]\n call dword ptr [ebp+8]\n"
        "  pop ebp\n ret\n t32_outer_end:\n"
        /* int rec(int n, rec_fn self): n ? 1 + self(n - 1, self) : 0 */
        "t32_rec: push ebp\n mov ebp, esp\n mov eax, [ebp+8]\n test eax, eax\n jz 1f\n dec eax\n"
        "  push dword ptr [ebp+12]\n push eax\n call dword ptr [ebp+12]\n add esp, 8\n inc eax\n"
        "1: pop ebp\n ret\n t32_rec_end:\n"
        /* void noop(void): changes nothing */
        "t32_noop: mov eax, eax\n mov eax, eax\n mov eax, eax\n ret\n t32_noop_end:\n"
        /* int __stdcall tailer(int a, int b): jumps to t32_tail_to with its arguments */
        "t32_tailer: mov eax, [esp+4]\n mov edx, [esp+8]\n jmp dword ptr [t32_tail_to]\n t32_tailer_end:\n"
        /* int jumper(int (*fn)(int), int x): fn(x) */
        "t32_jumper: push ebp\n mov ebp, esp\n mov eax, [ebp+8]\n push dword ptr [ebp+12]\n call eax\n"
        "  add esp, 4\n pop ebp\n ret\n t32_jumper_end:\n"
        /* int framed(int (*fn)(void)): fn(), with a frame pointer */
        "t32_framed: push ebp\n mov ebp, esp\n mov eax, [ebp+8]\n call eax\n pop ebp\n ret\n t32_framed_end:\n"
        ".att_syntax prefix\n"
        ".popsection\n");

#define CALLEE(n) extern const uint8_t t32_##n[], t32_##n##_end[];
CALLEE(c_add) CALLEE(s_add) CALLEE(f_add) CALLEE(t_get) CALLEE(d_twice) CALLEE(q_inc) CALLEE(x_twice)
CALLEE(outer) CALLEE(rec) CALLEE(noop) CALLEE(tailer) CALLEE(jumper) CALLEE(framed)

enum { F_C_ADD, F_S_ADD, F_F_ADD, F_T_GET, F_D_TWICE, F_Q_INC, F_X_TWICE, F_OUTER, F_REC, F_NOOP, F_TAILER,
       F_JUMPER, F_FRAMED, F_COUNT_ONLY, F__N };

static const struct {
    const char *name;
    const uint8_t *begin, *end;
} callees[F__N] = {
    { "c_add", t32_c_add, t32_c_add_end },       { "s_add", t32_s_add, t32_s_add_end },
    { "f_add", t32_f_add, t32_f_add_end },       { "t_get", t32_t_get, t32_t_get_end },
    { "d_twice", t32_d_twice, t32_d_twice_end }, { "q_inc", t32_q_inc, t32_q_inc_end },
    { "x_twice", t32_x_twice, t32_x_twice_end }, { "outer", t32_outer, t32_outer_end },
    { "rec", t32_rec, t32_rec_end },             { "noop", t32_noop, t32_noop_end },
    { "tailer", t32_tailer, t32_tailer_end },    { "jumper", t32_jumper, t32_jumper_end },
    { "framed", t32_framed, t32_framed_end },
    { "c_add (count only)", t32_c_add, t32_c_add_end },
};

typedef int (*c_fn)(int, int);
typedef int(__attribute__((stdcall)) * s_fn)(int, int);
typedef int(__attribute__((fastcall)) * f_fn)(int, int, int);
typedef int(__attribute__((thiscall)) * t_fn)(const int *, int);
typedef double (*d_fn)(double);
typedef uint64_t (*q_fn)(uint64_t);
typedef double (*x_fn)(double);   /* (its result is read from xmm0 by hand) */
typedef int (*outer_fn)(s_fn, int, int);
typedef int (*rec_fn)(int, void *);
typedef int (*jumper_fn)(int (*)(int), int);
typedef int (*framed_fn)(int (*)(void));

static uint8_t *code;              /* the hooked copies (and their stubs) */
static uintptr_t hooked[F__N];     /* each callee's entry, patched */
static uintptr_t plain_c_add;      /* an unhooked copy, for the cost */

/* ---- a thread's region (session.h's layout, relative to the counters) ----- */

#define T32_TLS 7u             /* a slot of the TEB's TlsSlots */
#define T32_TLS_EXPANSION 70u  /* one of the expansion slots, through the TEB's pointer */
#define T32_CELL_TLS 9u        /* the return thunk's jump cell: another TLS slot */
#define T32_TIME_REL 0x1000u        /* the time records, from the counters */
#define T32_REGION (4096u + T32_TIME_REL + 16384u)
#define T32_SHADOW_CAP 256u

/* session.h's hs_time_rec and hs_wrap_desc (agent.h), as time32.S reads them */
typedef struct t32_time {
    uint64_t exits, total, self, min, max, unwinds, pending, active, sum, hist[40];
} t32_time;
_Static_assert(sizeof(t32_time) == 392, "hs_time_rec");
typedef struct t32_desc {
    uint64_t tramp, time_rel;
    uint32_t fidx, nslots;
} t32_desc;
static t32_desc descs[F__N];

typedef struct t32_thread {
    int index;
    uint8_t *teb, *region, *shadow;
    uint32_t *expansion;       /* the TLS expansion slots */
    uint32_t shadow_cap;
    void (*body)(struct t32_thread *);
    char bad[300];
} t32_thread;

static uint8_t *counters_of(t32_thread *t) { return t->region + 4096; }

static uint64_t hdr(t32_thread *t, int off)
{
    uint64_t v;
    memcpy(&v, t->region + off, 8);
    return v;
}

static void set_hdr(t32_thread *t, int off, uint64_t v) { memcpy(t->region + off, &v, 8); }

enum { H_SHADOW_BASE = 40, H_SHADOW_TOP = 48, H_SHADOW_LIMIT = 56, H_TIME_DROPPED = 64, H_EXCLUDED = 72,
       H_TL_BASE = 88, H_TL_CAP = 96, H_TL_HEAD = 104, H_TL_DROPPED = 112, H_TL_DROP_FIRST = 120,
       H_TL_DROP_LAST = 128, H_TL_MIN_TICKS = 136, H_TL_DEPTHS = 144, H_TL_FILTERED = 152,
       H_TL_WAIT_LIMIT = 160, H_TL_TAIL = 192 };

static t32_time *time_of(t32_thread *t, int f) { return (t32_time *)(counters_of(t) + T32_TIME_REL) + f; }

static uint64_t count_of(t32_thread *t, int f)
{
    uint64_t n;
    memcpy(&n, counters_of(t) + 8 * f, 8);
    return n;
}

/* open calls on the thread's shadow stack */
static unsigned depth(t32_thread *t)
{
    return (unsigned)((hdr(t, H_SHADOW_TOP) - hdr(t, H_SHADOW_BASE)) / 64);
}

static void bad(t32_thread *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(t32_thread *t, const char *fmt, ...)
{
    if (t->bad[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->bad, sizeof t->bad, fmt, ap);
    va_end(ap);
}

/* Function f's count, exits and unwinds are as expected, no activation
 * left open, its histogram holds every exit. */
static void expect(t32_thread *t, int f, uint64_t calls, uint64_t exits, uint64_t unwinds)
{
    const t32_time *r = time_of(t, f);
    uint64_t in_hist = 0;
    for (int b = 0; b < 40; b++)
        in_hist += r->hist[b];
    if (count_of(t, f) != calls || r->exits != exits || r->unwinds != unwinds || r->active != 0 ||
        in_hist != exits || (exits && r->min > r->max) || r->sum < r->max)
        bad(t, "%s: %llu calls, %llu exits, %llu unwinds, %llu open, %llu in the histogram, min %llu max %llu; "
            "expected %llu calls, %llu exits, %llu unwinds", callees[f].name, (unsigned long long)count_of(t, f),
            (unsigned long long)r->exits, (unsigned long long)r->unwinds, (unsigned long long)r->active,
            (unsigned long long)in_hist, (unsigned long long)r->min, (unsigned long long)r->max,
            (unsigned long long)calls, (unsigned long long)exits, (unsigned long long)unwinds);
}

/* Clear the thread's counts and times (between cases). */
static void reset(t32_thread *t)
{
    memset(counters_of(t), 0, T32_TIME_REL + F__N * sizeof(t32_time));
    set_hdr(t, H_SHADOW_TOP, hdr(t, H_SHADOW_BASE));
    set_hdr(t, H_TIME_DROPPED, 0);
}

static void *thread_main(void *arg)
{
    t32_thread *t = arg;
    if (!xr_fs_segment((uint32_t)(uintptr_t)t->teb, XR_TEB_SZ)) {
        bad(t, "no fs segment for the thread's TEB");
        return NULL;
    }
    t->body(t);
    return NULL;
}

/* Run body on `n` threads at once, each with a TEB and a region of its
 * own; 0, or -1 (t[i].bad says why). */
static int run_on_threads(t32_thread *t, int n, uint32_t shadow_cap, void (*body)(t32_thread *))
{
    pthread_t tid[8];
    int started = 0;
    for (int i = 0; i < n; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].index = i;
        t[i].body = body;
        t[i].shadow_cap = shadow_cap;
        t[i].teb = aligned_alloc(4096, XR_TEB_SZ);
        t[i].region = aligned_alloc(4096, T32_REGION);
        t[i].shadow = aligned_alloc(64, T32_SHADOW_CAP * 64);
        if (!t[i].teb || !t[i].region || !t[i].shadow)
            break;
        memset(t[i].teb, 0, XR_TEB_SZ);
        memset(t[i].region, 0, T32_REGION);
        uint32_t c = (uint32_t)(uintptr_t)counters_of(&t[i]);
        t[i].expansion = calloc(1024, 4);
        if (!t[i].expansion)
            break;
        uint32_t exp = (uint32_t)(uintptr_t)t[i].expansion;
        memcpy(t[i].teb + HS_TEB32_TLS_EXPANSION, &exp, 4);
        if (hs_time32_tls < 64)
            memcpy(t[i].teb + HS_TEB32_TLS_SLOTS + 4 * hs_time32_tls, &c, 4);
        else
            t[i].expansion[hs_time32_tls - 64] = c;
        set_hdr(&t[i], H_SHADOW_BASE, (uintptr_t)t[i].shadow);
        set_hdr(&t[i], H_SHADOW_TOP, (uintptr_t)t[i].shadow);
        set_hdr(&t[i], H_SHADOW_LIMIT, (uintptr_t)t[i].shadow + 64u * shadow_cap);
        if (pthread_create(&tid[i], NULL, thread_main, &t[i]) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    int rc = started == n ? 0 : -1;
    if (rc < 0)
        snprintf(t[0].bad, sizeof t[0].bad, "started %d threads of %d", started, n);
    for (int i = 0; i < n; i++) {
        if (t[i].bad[0])
            rc = -1;
        free(t[i].teb);
        free(t[i].region);
        free(t[i].shadow);
        free(t[i].expansion);
    }
    return rc;
}

/* Run one case on one thread, as a tap result. */
static void one_case(const char *name, uint32_t shadow_cap, void (*body)(t32_thread *))
{
    t32_thread t;
    int rc = run_on_threads(&t, 1, shadow_cap, body);
    tap_check(rc == 0, name, "%s", t.bad);
}

/* ---- the cases -------------------------------------------------------------- */

#define K 1000

static double x_twice(double x)
{
    double r;
    ((x_fn)hooked[F_X_TWICE])(x);
    __asm__ volatile("movsd %%xmm0, %0" : "=m"(r));
    return r;
}

static void conventions(t32_thread *t)
{
    static const int obj = 1000;
    for (int i = 0; i < K; i++) {
        int a = i, b = 3 * i + 1;
        if (((c_fn)hooked[F_C_ADD])(a, b) != a + b || ((s_fn)hooked[F_S_ADD])(a, b) != a + b ||
            ((f_fn)hooked[F_F_ADD])(a, b, 7) != a + b + 7 || ((t_fn)hooked[F_T_GET])(&obj, a) != obj + a ||
            ((d_fn)hooked[F_D_TWICE])(a + 0.25) != 2 * (a + 0.25) ||
            ((q_fn)hooked[F_Q_INC])(0xFFFFFFFFull * (uint64_t)a) != 0xFFFFFFFFull * (uint64_t)a + 1 ||
            x_twice(a + 0.5) != 2 * (a + 0.5)) {
            bad(t, "call %d: a wrong result", i);
            return;
        }
    }
    for (int f = F_C_ADD; f <= F_X_TWICE; f++)
        expect(t, f, K, K, 0);
    if (depth(t))
        bad(t, "%u records left on the shadow stack", depth(t));
}

/* every register, the flags, two x87 values, xmm0-7 and LastError, set
 * before a call and read after it (t32_regs_call) */
typedef struct t32_regs {
    uint32_t eax, ecx, edx, ebx, esi, edi, ebp, flags;
    double st0, st1;
    uint8_t xmm[8][16];
    uint32_t last_error;
} t32_regs;
_Static_assert(__builtin_offsetof(t32_regs, xmm) == 48 && __builtin_offsetof(t32_regs, last_error) == 176,
               "t32_regs");
uint32_t t32_rc_out, t32_rc_fn;
void t32_regs_call(const t32_regs *in, t32_regs *out, uintptr_t fn);
__asm__(".text\n"
        ".intel_syntax noprefix\n"
        "t32_regs_call:\n"
        "  push ebp\n push ebx\n push esi\n push edi\n"
        "  mov eax, [esp+20]\n"
        "  mov ecx, [esp+24]\n mov [t32_rc_out], ecx\n"
        "  mov ecx, [esp+28]\n mov [t32_rc_fn], ecx\n"
        "  fld qword ptr [eax+40]\n fld qword ptr [eax+32]\n"
        "  movdqu xmm0, [eax+48]\n movdqu xmm1, [eax+64]\n movdqu xmm2, [eax+80]\n movdqu xmm3, [eax+96]\n"
        "  movdqu xmm4, [eax+112]\n movdqu xmm5, [eax+128]\n movdqu xmm6, [eax+144]\n movdqu xmm7, [eax+160]\n"
        "  mov ecx, [eax+176]\n mov fs:[0x34], ecx\n"
        "  push dword ptr [eax+28]\n popfd\n"
        "  mov ecx, [eax+4]\n mov edx, [eax+8]\n mov ebx, [eax+12]\n mov esi, [eax+16]\n"
        "  mov edi, [eax+20]\n mov ebp, [eax+24]\n mov eax, [eax]\n"
        "  call dword ptr [t32_rc_fn]\n"
        "  pushfd\n push eax\n mov eax, [t32_rc_out]\n pop dword ptr [eax]\n pop dword ptr [eax+28]\n"
        "  mov [eax+4], ecx\n mov [eax+8], edx\n mov [eax+12], ebx\n mov [eax+16], esi\n"
        "  mov [eax+20], edi\n mov [eax+24], ebp\n"
        "  fstp qword ptr [eax+32]\n fstp qword ptr [eax+40]\n"
        "  movdqu [eax+48], xmm0\n movdqu [eax+64], xmm1\n movdqu [eax+80], xmm2\n movdqu [eax+96], xmm3\n"
        "  movdqu [eax+112], xmm4\n movdqu [eax+128], xmm5\n movdqu [eax+144], xmm6\n movdqu [eax+160], xmm7\n"
        "  mov ecx, fs:[0x34]\n mov [eax+176], ecx\n"
        "  pop edi\n pop esi\n pop ebx\n pop ebp\n ret\n"
        ".att_syntax prefix\n");

static void registers(t32_thread *t)
{
    static const uint32_t flag_sets[2] = { 0x8D7, 0x002 };   /* CF PF AF ZF SF OF, then none (DF clear) */
    for (int v = 0; v < 2; v++) {
        t32_regs in, out;
        memset(&out, 0, sizeof out);
        in = (t32_regs){ 0x11111111, 0x22222222, 0x33333333, 0x44444444, 0x55555555, 0x66666666, 0x77777777,
                         flag_sets[v], 1.25, -3.5, { { 0 } }, 0xE0E0E0E0 };
        for (int r = 0; r < 8; r++)
            for (int k = 0; k < 16; k++)
                in.xmm[r][k] = (uint8_t)(16 * r + k + v);
        t32_regs_call(&in, &out, hooked[F_NOOP]);
        out.flags &= 0x402;   /* (DF and the reserved bit) */
        in.flags &= 0x402;
        if (memcmp(&in, &out, sizeof in)) {
            bad(t, "variant %d: eax %#x ecx %#x edx %#x ebx %#x esi %#x edi %#x ebp %#x flags %#x st0 %g st1 %g "
                "LastError %#x after the call%s", v, out.eax, out.ecx, out.edx, out.ebx, out.esi, out.edi,
                out.ebp, out.flags, out.st0, out.st1, out.last_error,
                memcmp(in.xmm, out.xmm, sizeof in.xmm) ? ", xmm registers changed" : "");
            return;
        }
    }
    expect(t, F_NOOP, 2, 2, 0);
}

static void nested(t32_thread *t)
{
    for (int i = 0; i < K; i++)
        if (((outer_fn)hooked[F_OUTER])((s_fn)hooked[F_S_ADD], i, 5) != 2 * i + 5) {
            bad(t, "call %d: a wrong result", i);
            return;
        }
    expect(t, F_OUTER, K, K, 0);
    expect(t, F_S_ADD, 2 * K, 2 * K, 0);
    const t32_time *o = time_of(t, F_OUTER), *s = time_of(t, F_S_ADD);
    if (o->sum - o->self != s->sum || o->total != o->sum || s->self != s->sum || s->sum == 0)
        bad(t, "outer: sum %llu self %llu total %llu; its callee: sum %llu self %llu (the callee's time must be "
            "outer's sum less its self)", (unsigned long long)o->sum, (unsigned long long)o->self,
            (unsigned long long)o->total, (unsigned long long)s->sum, (unsigned long long)s->self);
}

/* K times rec(n): 0, or -1 after a wrong result */
static int recurse(t32_thread *t, int n)
{
    for (int i = 0; i < K; i++)
        if (((rec_fn)hooked[F_REC])(n, (void *)hooked[F_REC]) != n) {
            bad(t, "call %d: a wrong result", i);
            return -1;
        }
    return 0;
}

static void recursion(t32_thread *t)
{
    if (recurse(t, 5) < 0)
        return;
    expect(t, F_REC, 6 * K, 6 * K, 0);
    const t32_time *r = time_of(t, F_REC);
    if (r->self != r->total || r->total >= r->sum)
        bad(t, "sum %llu self %llu total %llu: the self times of a recursion add up to its outermost calls' "
            "time", (unsigned long long)r->sum, (unsigned long long)r->self, (unsigned long long)r->total);
}

static void full(t32_thread *t)
{
    if (recurse(t, 9) < 0)
        return;
    expect(t, F_REC, 10 * K, 4 * K, 0);
    if (hdr(t, H_TIME_DROPPED) != 6 * K)
        bad(t, "%llu calls counted untimed, expected %d", (unsigned long long)hdr(t, H_TIME_DROPPED), 6 * K);
}

static void tail(t32_thread *t)
{
    t32_tail_to = (uint32_t)hooked[F_S_ADD];
    for (int i = 0; i < K; i++)
        if (((s_fn)hooked[F_TAILER])(i, 9) != i + 9) {
            bad(t, "call %d: a wrong result", i);
            return;
        }
    expect(t, F_TAILER, K, K, 0);
    expect(t, F_S_ADD, K, K, 0);
    const t32_time *a = time_of(t, F_TAILER), *s = time_of(t, F_S_ADD);
    if (a->sum - a->self != s->sum)
        bad(t, "tailer: sum %llu self %llu; its tail callee: sum %llu", (unsigned long long)a->sum,
            (unsigned long long)a->self, (unsigned long long)s->sum);
}

static jmp_buf t32_jb;

static __attribute__((noinline)) int do_longjmp(int x)
{
    longjmp(t32_jb, x + 1);
}

/* the timed jumper again, from C: two timed calls for one longjmp */
static __attribute__((noinline)) int call_jumper(int x)
{
    return ((jumper_fn)hooked[F_JUMPER])(do_longjmp, x) + 1;
}

/* K times: longjmp out of a timed call (chain: out of two nested ones)
 * made at the same call site, back here */
static __attribute__((noinline)) int longjmp_loop(int chain)
{
    volatile int landed = 0;
    for (volatile int i = 0; i < K; i++) {
        if (setjmp(t32_jb) == 0)
            ((jumper_fn)hooked[F_JUMPER])(chain ? call_jumper : do_longjmp, i);
        else
            landed++;
    }
    return landed;
}

static void longjmp_entry(t32_thread *t)
{
    for (int chain = 0; chain < 2 && !t->bad[0]; chain++) {
        reset(t);
        const unsigned per = chain ? 2 : 1;   /* timed calls a longjmp leaves */
        if (longjmp_loop(chain) != K) {
            bad(t, "the longjmps did not all land");
            return;
        }
        /* each entry found the records of the loop's previous round dead:
         * the last round's are still open */
        const t32_time *j = time_of(t, F_JUMPER);
        if (depth(t) != per || j->unwinds != per * (K - 1) || j->exits != per * (K - 1))
            bad(t, "%s: after the loop %u records open, %llu exits, %llu unwinds; expected %u, %u, %u",
                chain ? "two nested" : "one", depth(t), (unsigned long long)j->exits,
                (unsigned long long)j->unwinds, per, per * (K - 1), per * (K - 1));
        /* an entry from here (above the loop's frame) ends them */
        if (((c_fn)hooked[F_C_ADD])(1, 2) != 3)
            bad(t, "a wrong result");
        expect(t, F_JUMPER, per * K, per * K, per * K);
        expect(t, F_C_ADD, 1, 1, 0);
        if (depth(t))
            bad(t, "%u records left on the shadow stack", depth(t));
    }
}

/* called by the timed jumper: longjmp out of another timed jumper, back
 * here, then return into the first */
static __attribute__((noinline)) int land_inside(int x)
{
    volatile int r = 0;
    if (setjmp(t32_jb) == 0)
        ((jumper_fn)hooked[F_JUMPER])(do_longjmp, x);
    else
        r = x;
    return r;
}

static void longjmp_return(t32_thread *t)
{
    for (int i = 0; i < K; i++)
        if (((jumper_fn)hooked[F_JUMPER])(land_inside, i) != i) {
            bad(t, "call %d: a wrong result", i);
            return;
        }
    expect(t, F_JUMPER, 2 * K, 2 * K, K);
    if (depth(t))
        bad(t, "%u records left on the shadow stack", depth(t));
}

/* called by the timed jumper: the thread's counters move to another
 * region (as a later session's TLS index would hold them), empty */
static uint8_t *orphan_region;
static __attribute__((noinline)) int switch_region(int x)
{
    hs_time32_tls = T32_CELL_TLS + 1;
    uint32_t c = (uint32_t)(uintptr_t)(orphan_region + 4096);
    __asm__ volatile("movl %0, %%fs:%c1" : : "r"(c), "i"(HS_TEB32_TLS_SLOTS + 4 * (T32_CELL_TLS + 1)) : "memory");
    return x * 3;
}

/* The jumper returns through the thunk with no record in the thread's
 * current region: hs_time32_orphan gives the address (from the region
 * the thread left), called once; the result (eax), the value the caller
 * holds in ST0 and LastError are as they were. */
static void orphan(t32_thread *t)
{
    orphan_region = aligned_alloc(4096, T32_REGION);
    if (!orphan_region) {
        bad(t, "no memory");
        return;
    }
    memset(orphan_region, 0, T32_REGION);
    orphan_from = t->region;
    orphan_calls = 0;
    double before = 2.5, held;
    uint32_t le, esp_after;
    int r;
    __asm__ volatile("movl $0xE1E1, %%fs:0x34" : : : "memory");
    __asm__ volatile("fldl %[b]\n\t"
                     "pushl %[x]\n\tpushl %[fn]\n\tcall *%[jumper]\n\tmovl %%esp, %[e]\n\taddl $8, %%esp\n\t"
                     "fstpl %[h]"
                     : "=a"(r), [h] "=m"(held), [e] "=&D"(esp_after)
                     : [b] "m"(before), [x] "r"(14), [fn] "r"(switch_region), [jumper] "r"(hooked[F_JUMPER])
                     : "ecx", "edx", "memory", "cc");
    __asm__ volatile("movl %%fs:0x34, %0" : "=r"(le));
    hs_time32_tls = T32_TLS;
    orphan_from = NULL;
    if (r != 42 || held != 2.5 || le != 0xE1E1 || orphan_calls != 1 || orphan_esp != esp_after || depth(t) != 0)
        bad(t, "result %d (42), ST0 held %g (2.5), LastError %#x (0xe1e1), hs_time32_orphan called %u times (1) "
            "with esp %#x (%#x), %u records left", r, held, le, orphan_calls, orphan_esp, esp_after, depth(t));
    free(orphan_region);
}

#define FRAMED __attribute__((noinline, optimize("no-omit-frame-pointer")))
static volatile int t32_zero;
static uint64_t walked[2][4];   /* with and without the shadow stack */
static int walked_n[2];
static t32_thread *walker;

/* the stack from here: this function, framed (through its timed slot),
 * then stack_caller */
static FRAMED int capture(void)
{
    uint32_t fp = (uint32_t)(uintptr_t)__builtin_frame_address(0);
    hs_ret_shadow sh = { (uint32_t)(uintptr_t)hs_time32_return,
                         (const uint8_t *)(uintptr_t)hdr(walker, H_SHADOW_BASE), depth(walker), 64, 24, 40 };
    for (int k = 0; k < 2; k++) {
        int truncated;
        walked_n[k] = hs_ebp_walk((uint32_t)(uintptr_t)capture, fp + 4, *(const uint32_t *)(uintptr_t)fp, fp,
                                  fp + 0x10000, k ? NULL : &sh, NULL, NULL, walked[k], 3, &truncated);
    }
    return t32_zero;
}

static FRAMED int stack_caller(void)
{
    return ((framed_fn)hooked[F_FRAMED])(capture) + t32_zero;
}

static void stack(t32_thread *t)
{
    walker = t;
    stack_caller();
    const uint64_t in_caller = walked[0][2];
    if (walked_n[0] != 3 || in_caller <= (uintptr_t)stack_caller || in_caller >= (uintptr_t)stack_caller + 64)
        bad(t, "the walk gave %d frames, the third %#llx; expected a return into stack_caller (%p)", walked_n[0],
            (unsigned long long)in_caller, (void *)stack_caller);
    else if (walked[1][2] != (uintptr_t)hs_time32_return)
        bad(t, "without the shadow stack the walk gave %#llx, not the thunk", (unsigned long long)walked[1][2]);
    expect(t, F_FRAMED, 1, 1, 0);
}

/* ---- --timeline ------------------------------------------------------------ */

static t32_event tl_ring[1024] __attribute__((aligned(64)));

/* The thread's ring: cap events (a power of two), the filters (min
 * ticks, depths) and whether a full ring is waited for; empty. */
static void tl_setup(t32_thread *t, uint64_t cap, uint64_t min_ticks, uint64_t depths, uint64_t wait)
{
    reset(t);
    memset(tl_ring, 0, sizeof tl_ring);
    static const int fields[] = { H_TL_HEAD, H_TL_DROPPED, H_TL_DROP_FIRST, H_TL_DROP_LAST, H_TL_FILTERED,
                                  H_TL_TAIL, H_EXCLUDED };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        set_hdr(t, fields[i], 0);
    set_hdr(t, H_TL_BASE, (uintptr_t)tl_ring);
    set_hdr(t, H_TL_CAP, cap);
    set_hdr(t, H_TL_MIN_TICKS, min_ticks);
    set_hdr(t, H_TL_DEPTHS, depths);
    set_hdr(t, H_TL_WAIT_LIMIT, wait);
    tl_room = TL_NONE;
    tl_room_calls = 0;
    tl_ntaken = 0;
}

/* The events taken (tl_taken) and those in the ring, in order. */
static unsigned tl_events(t32_thread *t, t32_event *out, unsigned max)
{
    unsigned n = 0;
    for (unsigned i = 0; i < tl_ntaken && n < max; i++)
        out[n++] = tl_taken[i];
    const uint64_t cap = hdr(t, H_TL_CAP);
    for (uint64_t k = hdr(t, H_TL_TAIL); k < hdr(t, H_TL_HEAD) && n < max; k++)
        out[n++] = tl_ring[k & (cap - 1)];
    return n;
}

static void tl_off(t32_thread *t)
{
    set_hdr(t, H_TL_BASE, 0);
    tl_room = TL_NONE;
}

/* Events e[0..n) are the calls (func, depth) of want[], in that order;
 * each with ticks = t1 - t0 (nothing excluded meanwhile) and every one
 * inside the call enclosing it (the next one of lower depth: it ends
 * later). */
static int tl_expect(t32_thread *t, const char *what, const t32_event *e, unsigned n, const uint32_t (*want)[2],
                     unsigned nwant)
{
    if (n != nwant) {
        bad(t, "%s: %u events, expected %u", what, n, nwant);
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        if (e[i].func != want[i][0] || e[i].depth != want[i][1] || e[i].t1 <= e[i].t0 ||
            e[i].ticks != e[i].t1 - e[i].t0) {
            bad(t, "%s: event %u: function %u depth %u, t0 %llu t1 %llu ticks %llu; expected function %u depth %u",
                what, i, e[i].func, e[i].depth, (unsigned long long)e[i].t0, (unsigned long long)e[i].t1,
                (unsigned long long)e[i].ticks, want[i][0], want[i][1]);
            return -1;
        }
        for (unsigned j = i + 1; j < n; j++)
            if (e[j].depth < e[i].depth) {
                if (e[j].depth != e[i].depth - 1 || e[j].t0 > e[i].t0 || e[j].t1 < e[i].t1) {
                    bad(t, "%s: event %u (%llu-%llu, depth %u) is not inside event %u (%llu-%llu, depth %u)", what,
                        i, (unsigned long long)e[i].t0, (unsigned long long)e[i].t1, e[i].depth, j,
                        (unsigned long long)e[j].t0, (unsigned long long)e[j].t1, e[j].depth);
                    return -1;
                }
                break;
            }
    }
    return 0;
}

/* Every timed call is an event at its exit, exactly: nested calls, a
 * recursion, both calls of a tail jump (one return), two calls ended
 * by one longjmp (found dead at a return: the unwind exit, ended when
 * found, as x64's unwind handler writes it), each ticks the same as
 * --time's sum. */
static void timeline(t32_thread *t)
{
    static t32_event e[256];
    static uint32_t want[256][2];
    unsigned nw = 0;
    tl_setup(t, 1024, 0, UINT64_MAX, 0);
    for (int i = 0; i < 3; i++) {
        if (((outer_fn)hooked[F_OUTER])((s_fn)hooked[F_S_ADD], i, 5) != 2 * i + 5)
            bad(t, "outer: a wrong result");
        for (int k = 0; k < 2; k++) {
            want[nw][0] = F_S_ADD, want[nw++][1] = 1;
        }
        want[nw][0] = F_OUTER, want[nw++][1] = 0;
    }
    if (((rec_fn)hooked[F_REC])(3, (void *)hooked[F_REC]) != 3)
        bad(t, "rec: a wrong result");
    for (uint32_t d = 4; d-- > 0;)
        want[nw][0] = F_REC, want[nw++][1] = d;
    t32_tail_to = (uint32_t)hooked[F_S_ADD];
    if (((s_fn)hooked[F_TAILER])(4, 9) != 13)
        bad(t, "tailer: a wrong result");
    want[nw][0] = F_S_ADD, want[nw++][1] = 1;
    want[nw][0] = F_TAILER, want[nw++][1] = 0;
    if (((jumper_fn)hooked[F_JUMPER])(land_inside, 6) != 6)
        bad(t, "jumper: a wrong result");
    want[nw][0] = F_JUMPER, want[nw++][1] = 1;   /* left by the longjmp */
    want[nw][0] = F_JUMPER, want[nw++][1] = 0;
    unsigned n = tl_events(t, e, 256);
    if (!t->bad[0] && tl_expect(t, "calls", e, n, (const uint32_t(*)[2])want, nw) == 0) {
        if (e[n - 2].t1 != e[n - 1].t1)
            bad(t, "the call left by longjmp ended at %llu, not when its caller returned (%llu)",
                (unsigned long long)e[n - 2].t1, (unsigned long long)e[n - 1].t1);
        uint64_t sum[F__N] = { 0 };
        for (unsigned i = 0; i < n; i++)
            sum[e[i].func] += e[i].ticks;
        for (int f = 0; f < F__N; f++)
            if (sum[f] != time_of(t, f)->sum)
                bad(t, "%s: the events' ticks add up to %llu, --time's sum is %llu", callees[f].name,
                    (unsigned long long)sum[f], (unsigned long long)time_of(t, f)->sum);
    }
    expect(t, F_JUMPER, 2, 2, 1);
    if (hdr(t, H_TL_DROPPED) || hdr(t, H_TL_FILTERED) || tl_room_calls || depth(t))
        bad(t, "%llu dropped, %llu filtered, %u waits, %u records left", (unsigned long long)hdr(t, H_TL_DROPPED),
            (unsigned long long)hdr(t, H_TL_FILTERED), tl_room_calls, depth(t));
    tl_off(t);
}

/* called by the timed jumper: its call (and every call open around it)
 * lasts 2^40 ticks more than it took: deterministically long */
static __attribute__((noinline)) int stretch(int x)
{
    set_hdr(walker, H_EXCLUDED, hdr(walker, H_EXCLUDED) - (1ull << 40));
    return x;
}

static __attribute__((noinline)) int nested_stretch(int x)
{
    return ((jumper_fn)hooked[F_JUMPER])(stretch, x);
}

static __attribute__((noinline)) int identity(int x)
{
    return x;
}

/* --timeline-min-duration and --timeline-depth, decided at the exit:
 * with a minimum of 2^39 ticks only the stretched calls are kept (and
 * their stretched callers; the 64-bit comparison), the others counted
 * as filtered; a depth of 1 keeps only the outermost calls; a depth
 * beyond 2^32 keeps every one */
static void timeline_filters(t32_thread *t)
{
    static t32_event e[64];
    walker = t;
    tl_setup(t, 1024, 1ull << 39, UINT64_MAX, 0);
    ((jumper_fn)hooked[F_JUMPER])(identity, 1);         /* short: filtered */
    ((jumper_fn)hooked[F_JUMPER])(stretch, 2);          /* kept */
    ((jumper_fn)hooked[F_JUMPER])(nested_stretch, 3);   /* both kept */
    ((c_fn)hooked[F_C_ADD])(1, 2);                      /* filtered */
    static const uint32_t long_ones[][2] = { { F_JUMPER, 0 }, { F_JUMPER, 1 }, { F_JUMPER, 0 } };
    unsigned n = tl_events(t, e, 64);
    if (n == 3)   /* (their ticks include the stretch: compared with the clock's below) */
        for (unsigned i = 0; i < n; i++)
            e[i].ticks -= 1ull << 40;
    if (tl_expect(t, "minimum duration", e, n, long_ones, 3) == 0 && hdr(t, H_TL_FILTERED) != 2)
        bad(t, "minimum duration: %llu filtered, expected 2", (unsigned long long)hdr(t, H_TL_FILTERED));

    tl_setup(t, 1024, 0, 1, 0);
    for (int i = 0; i < 5; i++)
        ((outer_fn)hooked[F_OUTER])((s_fn)hooked[F_S_ADD], i, 5);
    static const uint32_t outers[][2] = { { F_OUTER, 0 }, { F_OUTER, 0 }, { F_OUTER, 0 }, { F_OUTER, 0 },
                                          { F_OUTER, 0 } };
    n = tl_expect(t, "depth 1", e, tl_events(t, e, 64), outers, 5);
    if (n == 0 && hdr(t, H_TL_FILTERED) != 10)
        bad(t, "depth 1: %llu filtered, expected 10", (unsigned long long)hdr(t, H_TL_FILTERED));

    tl_setup(t, 1024, 0, 1ull << 32, 0);   /* (the high half: no depth is that deep) */
    ((outer_fn)hooked[F_OUTER])((s_fn)hooked[F_S_ADD], 1, 5);
    static const uint32_t all[][2] = { { F_S_ADD, 1 }, { F_S_ADD, 1 }, { F_OUTER, 0 } };
    if (tl_expect(t, "depth 2^32", e, tl_events(t, e, 64), all, 3) == 0 && hdr(t, H_TL_FILTERED))
        bad(t, "depth 2^32: %llu filtered", (unsigned long long)hdr(t, H_TL_FILTERED));
    tl_off(t);
}

static uint64_t rdtsc64(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

/* A full ring: without a wait the calls beyond it are dropped, counted,
 * with the range of their times (the first dropped call's start, the
 * last one's end), and hs_timeline_room is not asked; with a wait that
 * gives up, it is asked once a call and they are dropped alike; with a
 * wait that finds room (the events taken, TL_WAITED ticks waited) none is
 * dropped, and a call ended after the wait at the same moment (the outer
 * call of a longjmp, found dead with the inner one) is stretched by the
 * wait in its end but not in its ticks. */
static void timeline_full(t32_thread *t)
{
    static t32_event e[64];
    for (int wait = 0; wait < 2 && !t->bad[0]; wait++) {
        tl_setup(t, 4, 0, UINT64_MAX, wait);
        tl_room = wait ? TL_GIVE_UP : TL_NONE;
        for (int i = 0; i < 4; i++)
            ((c_fn)hooked[F_C_ADD])(i, 1);
        const uint64_t before = rdtsc64();
        for (int i = 0; i < 6; i++)
            ((c_fn)hooked[F_C_ADD])(i, 1);
        const uint64_t after = rdtsc64();
        unsigned n = tl_events(t, e, 64);
        const uint64_t first = hdr(t, H_TL_DROP_FIRST), last = hdr(t, H_TL_DROP_LAST);
        if (n != 4 || hdr(t, H_TL_DROPPED) != 6 || tl_room_calls != (wait ? 6u : 0u) || first < before ||
            first < e[3].t1 || last > after || last <= first)
            bad(t, "wait %d: %u events (4), %llu dropped (6), %u waits (%u), drops from %llu to %llu (within %llu "
                "to %llu, after %llu)", wait, n, (unsigned long long)hdr(t, H_TL_DROPPED), tl_room_calls,
                wait ? 6u : 0u, (unsigned long long)first, (unsigned long long)last, (unsigned long long)before,
                (unsigned long long)after, n ? (unsigned long long)e[n - 1].t1 : 0ull);
        expect(t, F_C_ADD, 10, 10, 0);
    }
    if (t->bad[0])
        return;
    /* a ring of one, full after c_add: the inner call found dead waits
     * (and takes c_add's event), the outer one ends after that wait */
    tl_setup(t, 1, 0, UINT64_MAX, 1);
    tl_room = TL_TAKE;
    ((c_fn)hooked[F_C_ADD])(1, 1);
    if (((jumper_fn)hooked[F_JUMPER])(land_inside, 6) != 6)
        bad(t, "jumper: a wrong result");
    unsigned n = tl_events(t, e, 64);
    if (n != 3 || e[0].func != F_C_ADD || e[1].func != F_JUMPER || e[2].func != F_JUMPER || e[1].depth != 1 ||
        e[2].depth != 0 || hdr(t, H_TL_DROPPED) || tl_room_calls != 2 || e[2].t1 != e[1].t1 + TL_WAITED ||
        e[2].ticks != e[2].t1 - e[2].t0 - TL_WAITED || e[1].ticks != e[1].t1 - e[1].t0)
        bad(t, "waited for: %u events (c_add, jumper, jumper), functions %u %u, %llu dropped, %u waits (2), the "
            "outer call's end %llu (the inner one's %llu + TL_WAITED), ticks %llu (its end - start - TL_WAITED)", n,
            n > 2 ? e[1].func : 99u, n > 2 ? e[2].func : 99u, (unsigned long long)hdr(t, H_TL_DROPPED),
            tl_room_calls, n > 2 ? (unsigned long long)e[2].t1 : 0ull, n > 2 ? (unsigned long long)e[1].t1 : 0ull,
            n > 2 ? (unsigned long long)(e[2].t1 - e[2].t0 - e[2].ticks) : 0ull);
    expect(t, F_JUMPER, 2, 2, 1);
    tl_off(t);
}

/* Calls left by longjmp found dead at the next timed entry, with a ring
 * of one that is full at each of them: the wait for room happens in the
 * entry (hs_time32_enter) before the new call starts, so the new call
 * starts after it (its start the dead call's end + TL_WAITED) and leaves the
 * wait out (ticks = end - start for every call); every result right. */
static void timeline_entry_wait(t32_thread *t)
{
    static t32_event e[16];
    tl_setup(t, 1, 0, UINT64_MAX, 1);
    tl_room = TL_TAKE;
    ((c_fn)hooked[F_C_ADD])(1, 1);   /* (the ring full from here on) */
    for (volatile int i = 0; i < 4; i++)
        if (setjmp(t32_jb) == 0)
            ((jumper_fn)hooked[F_JUMPER])(do_longjmp, i);
    if (((f_fn)hooked[F_F_ADD])(1, 2, 3) != 6)   /* (fastcall: ecx and edx kept through the wait) */
        bad(t, "f_add: a wrong result");
    unsigned n = tl_events(t, e, 16);
    int ok = n == 6 && tl_room_calls == 5 && !hdr(t, H_TL_DROPPED);
    for (unsigned i = 0; ok && i < n; i++)
        ok = e[i].func == (i == 0 ? F_C_ADD : i < 5 ? F_JUMPER : F_F_ADD) && e[i].depth == 0 &&
             e[i].ticks == e[i].t1 - e[i].t0 && (i < 2 || e[i].t0 == e[i - 1].t1 + TL_WAITED);
    if (!ok)
        bad(t, "%u events (c_add, 4 jumper, f_add), %u waits (5), %llu dropped; each jumper after the first and "
            "f_add starting TL_WAITED after the one before ended, ticks = end - start", n, tl_room_calls,
            (unsigned long long)hdr(t, H_TL_DROPPED));
    expect(t, F_JUMPER, 4, 4, 4);
    tl_off(t);
}

/* The registers of time32/registers, through a return that finds the
 * ring full and waits for room (and then writes its event), and through
 * one whose wait gives up (dropped) */
static void timeline_registers(t32_thread *t)
{
    for (int v = 0; v < 2 && !t->bad[0]; v++) {
        tl_setup(t, 1, 0, UINT64_MAX, 1);
        set_hdr(t, H_TL_HEAD, 1);   /* full */
        tl_room = v ? TL_GIVE_UP : TL_TAKE;
        registers(t);
        if (!t->bad[0] && (tl_room_calls != 2 || hdr(t, H_TL_DROPPED) != (v ? 2u : 0u) ||
                           hdr(t, H_TL_HEAD) != (v ? 1u : 3u)))
            bad(t, "%s: %u waits (2), %llu dropped, head %llu", v ? "giving up" : "waited for", tl_room_calls,
                (unsigned long long)hdr(t, H_TL_DROPPED), (unsigned long long)hdr(t, H_TL_HEAD));
        /* (after a wait that found room the next call finds it full again) */
    }
    tl_off(t);
}

#define TH_N 4
#define TH_K 20000

static void threads_body(t32_thread *t)
{
    static const int obj = 7;
    for (int i = 0; i < TH_K; i++) {
        if (((c_fn)hooked[F_C_ADD])(i, t->index) != i + t->index || ((f_fn)hooked[F_F_ADD])(i, 1, 2) != i + 3 ||
            ((t_fn)hooked[F_T_GET])(&obj, i) != 7 + i || ((q_fn)hooked[F_Q_INC])((uint64_t)i << 32) != ((uint64_t)i << 32) + 1 ||
            ((outer_fn)hooked[F_OUTER])((s_fn)hooked[F_S_ADD], i, 1) != 2 * i + 1) {
            bad(t, "call %d: a wrong result", i);
            return;
        }
    }
    expect(t, F_C_ADD, TH_K, TH_K, 0);
    expect(t, F_F_ADD, TH_K, TH_K, 0);
    expect(t, F_T_GET, TH_K, TH_K, 0);
    expect(t, F_Q_INC, TH_K, TH_K, 0);
    expect(t, F_OUTER, TH_K, TH_K, 0);
    expect(t, F_S_ADD, 2 * TH_K, 2 * TH_K, 0);
    const t32_time *o = time_of(t, F_OUTER), *s = time_of(t, F_S_ADD);
    if (o->sum - o->self != s->sum)
        bad(t, "outer: sum %llu self %llu, its callee's sum %llu", (unsigned long long)o->sum,
            (unsigned long long)o->self, (unsigned long long)s->sum);
    if (depth(t))
        bad(t, "%u records left on the shadow stack", depth(t));
}

static void threads(void)
{
    t32_thread t[TH_N];
    int rc = run_on_threads(t, TH_N, T32_SHADOW_CAP, threads_body);
    char why[400] = "";
    for (int i = 0; i < TH_N && !why[0]; i++)
        if (t[i].bad[0])
            snprintf(why, sizeof why, "thread %d: %s", i, t[i].bad);
    tap_check(rc == 0, "time32/threads", "%s", why[0] ? why : t[0].bad);
}

/* Records of (slot, true return) as hs_shadow_rec keeps them (at 24 and
 * 40 of 64 bytes), oldest first: the true return address of a slot that
 * holds the thunk is its newest record's, that record's parent's when it
 * is the thunk too (a tail jump); a copy of the thunk below a slot (a
 * callee that pushed its return address again) is the innermost open
 * call's above it; the thunk when no record lies at or above the slot,
 * and any other value is its own. */
static void true_return(void)
{
    enum { THUNK = 0x7000, N = 5 };
    static const uint32_t recs[N][2] = {
        { 0x9000, 0x1111 }, { 0x8F00, 0x2222 }, { 0x8E00, 0x3333 },
        { 0x8E00, THUNK },   /* tail-jumped from the call at 0x8E00, same slot */
        { 0x8DFC, THUNK },   /* tail-jumped again, one argument more */
    };
    uint8_t mem[N][64];
    memset(mem, 0, sizeof mem);
    for (int i = 0; i < N; i++) {
        memcpy(mem[i] + 24, &recs[i][0], 4);
        memcpy(mem[i] + 40, &recs[i][1], 4);
    }
    const hs_ret_shadow sh = { THUNK, mem[0], N, 64, 24, 40 };
    static const uint32_t probe[][3] = {   /* slot, value, expected */
        { 0x9000, THUNK, 0x1111 }, { 0x8F00, THUNK, 0x2222 }, { 0x8E00, THUNK, 0x3333 },
        { 0x8DFC, THUNK, 0x3333 }, { 0x9100, THUNK, THUNK },  { 0x8F00, 0x4444, 0x4444 },
        { 0x8EF0, THUNK, 0x2222 }, { 0x8D00, THUNK, 0x3333 },   /* copies below 0x8F00 and 0x8DFC */
    };
    char why[200] = "";
    for (size_t k = 0; k < sizeof probe / sizeof probe[0] && !why[0]; k++) {
        uint32_t got = hs_ret_shadow_true(&sh, probe[k][0], probe[k][1]);
        if (got != probe[k][2])
            snprintf(why, sizeof why, "slot %#x holding %#x: %#x, expected %#x", probe[k][0], probe[k][1], got,
                     probe[k][2]);
    }
    if (!why[0] && hs_ret_shadow_true(NULL, 0x9000, THUNK) != THUNK)
        snprintf(why, sizeof why, "without a shadow stack the value is not its own");
    tap_check(!why[0], "time32/true-return", "%s", why);
}

/* three frames between the loop and the call (each returning after it):
 * a `ret` out of the thunk would cost each of them a mispredicted return */
static __attribute__((noinline)) int depth1(c_fn f, int i)
{
    int r = f(i, 1);
    __asm__ volatile("");
    return r;
}

static __attribute__((noinline)) int depth2(c_fn f, int i)
{
    int r = depth1(f, i);
    __asm__ volatile("");
    return r + 1;
}

static __attribute__((noinline)) int depth3(c_fn f, int i)
{
    int r = depth2(f, i);
    __asm__ volatile("");
    return r + 1;
}

/* ns per call of c_add (untraced, counted, timed) made three frames below
 * a loop */
static double per_call_ns(uintptr_t fn)
{
    enum { N = 2000000 };
    struct timespec a, b;
    int acc = 0;
    c_fn f = (c_fn)fn;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < N; i++)
        acc += depth3(f, i);
    clock_gettime(CLOCK_MONOTONIC, &b);
    t32_zero += acc == 1;   /* (the calls are used) */
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / N;
}

static double cost[4];

static void tl_setup(t32_thread *t, uint64_t cap, uint64_t min_ticks, uint64_t depths, uint64_t wait);
static void tl_off(t32_thread *t);

/* (the last: with --timeline, a ring of 1024 events emptied whenever it
 * is full: the cost of writing the event, and of the C call to wait
 * amortized over 1024 calls) */
static void cost_body(t32_thread *t)
{
    for (int round = 0; round < 3; round++) {   /* the best of three */
        double c[4] = { per_call_ns(plain_c_add), per_call_ns(hooked[F_COUNT_ONLY]), per_call_ns(hooked[F_C_ADD]), 0 };
        tl_setup(t, 1024, 0, UINT64_MAX, 1);
        tl_room = TL_DRAIN;
        c[3] = per_call_ns(hooked[F_C_ADD]);
        tl_off(t);
        for (int k = 0; k < 4; k++)
            if (round == 0 || c[k] < cost[k])
                cost[k] = c[k];
    }
}

/* ---- hooking the copies ------------------------------------------------------- */

#define CODE_SZ 0x10000u
#define SLOT 0x100u           /* a callee's copy */
#define STUB_AT 0x4000u       /* the stubs, each in STUB_SZ */
#define STUB_SZ 0x200u
#define PLAIN_AT 0x3000u
#define TAIL_AT 0x3800u       /* jmp dword ptr fs:[cell] */

/* Hook the callees with stubs that find the thread's counters in TLS
 * slot `tls` (the return probes too: hs_time32_tls). */
static int hook_all(hs_engine *e, uint32_t tls, char *why, size_t n)
{
    if (!code)
        code = mmap(NULL, CODE_SZ, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        code = NULL;
        snprintf(why, n, "no memory for the code");
        return -1;
    }
    memset(code, 0xCC, CODE_SZ);
    const uint32_t base = (uint32_t)(uintptr_t)code;
    size_t plain_len = (size_t)(t32_c_add_end - t32_c_add);
    memcpy(code + PLAIN_AT, t32_c_add, plain_len);
    plain_c_add = base + PLAIN_AT;
    const uint32_t cell = HS_TEB32_TLS_SLOTS + 4 * T32_CELL_TLS;
    const uint8_t tail[7] = { 0x64, 0xFF, 0x25, (uint8_t)cell, (uint8_t)(cell >> 8), 0, 0 };
    memcpy(code + TAIL_AT, tail, sizeof tail);
    hs_time32_tail = base + TAIL_AT;
    hs_time32_cell = cell;
    hs_time32_tls = tls;
    for (int f = 0; f < F__N; f++) {
        uint32_t len = (uint32_t)(callees[f].end - callees[f].begin), at = base + SLOT * (uint32_t)f;
        memcpy(code + SLOT * f, callees[f].begin, len);
        hs_func_input fn = { .code = code + SLOT * f, .addr = at, .size = len, .gap_after = SLOT - len,
                             .image_lo = base, .image_hi = base + CODE_SZ };
        descs[f] = (t32_desc){ 0, T32_TIME_REL + (uint64_t)f * sizeof(t32_time), (uint32_t)f, 0 };
        hs_count32 c = { .tls = tls, .count_off = 8u * (uint32_t)f, .fidx = (uint32_t)f,
                         .slow = (uint32_t)(uintptr_t)hs_probe_slow };
        if (f != F_COUNT_ONLY) {
            c.time_desc = (uint32_t)(uintptr_t)&descs[f];
            c.time_enter = (uint32_t)(uintptr_t)hs_time32_enter;
        }
        hs_plan plan;
        hs_stub32 st;
        hs_skip_reason sw = HS_OK;
        uint8_t patch[HS_MAX_PATCH];
        uint32_t stub = base + STUB_AT + STUB_SZ * (uint32_t)f;
        if (hs_analyze(e, &fn, 0, &plan) != HS_OK || hs_stub32_size_max(&plan, 0, 0, 1) > STUB_SZ ||
            !hs_stub32_emit(e, &fn, &plan, hs_analyze_window(e), &c, stub, code + STUB_AT + STUB_SZ * f, STUB_SZ,
                            &st, &sw) ||
            hs_emit_patch(&fn, &plan, stub + st.entry, patch) < 0) {
            snprintf(why, n, "%s not hooked: %s", callees[f].name,
                     hs_skip_reason_name(plan.reason != HS_OK ? plan.reason : sw));
            return -1;
        }
        memcpy(code + SLOT * f + plan.patch_off, patch, plan.patch_len);
        hooked[f] = at;
    }
    return 0;
}

/* hs_stub32_emit makes a stub for every mix of parts (caller edges, entry
 * stacks, a return probe) through a TLS slot of the TEB and through an
 * expansion slot, each within hs_stub32_size_max. */
static void stub_sizes(hs_engine *e)
{
    const uint32_t at = (uint32_t)(uintptr_t)code;
    hs_func_input fn = { .code = code, .addr = at, .size = (uint32_t)(t32_rec_end - t32_rec),
                         .gap_after = SLOT - (uint32_t)(t32_rec_end - t32_rec), .image_lo = at, .image_hi = at + CODE_SZ };
    memcpy(code, t32_rec, (size_t)(t32_rec_end - t32_rec));
    hs_plan plan;
    char why[200] = "";
    if (hs_analyze(e, &fn, 0, &plan) != HS_OK)
        snprintf(why, sizeof why, "rec not analyzed: %s", hs_skip_reason_name(plan.reason));
    for (int m = 0; m < 16 && !why[0]; m++) {
        const int edges = m & 1, stacks = m >> 1 & 1, timed = m >> 2 & 1;
        hs_count32 c = { .tls = (m >> 3) ? 70 : 5, .count_off = 64 * 3, .fidx = 3, .slow = at + 0x100 };
        if (edges) {
            c.inline_edges = 3;
            c.edges_cap = 16384;
            c.edges_rel = 0x100000;
            c.edge_mix = 1;
            c.edge_mult = 3;
            c.edge_slow = at + 0x110;
        }
        if (stacks) {
            c.stack_every = 4;
            c.countdown_rel = 0x80000;
            c.stack_slow = at + 0x120;
        }
        if (timed) {
            c.time_desc = (uint32_t)(uintptr_t)&descs[0];
            c.time_enter = (uint32_t)(uintptr_t)hs_time32_enter;
        }
        uint8_t buf[1024];
        hs_stub32 st;
        hs_skip_reason sw = HS_OK;
        size_t max = hs_stub32_size_max(&plan, edges, stacks, timed);
        size_t len = max <= sizeof buf ? hs_stub32_emit(e, &fn, &plan, hs_analyze_window(e), &c, at + 0x4000, buf,
                                                         max, &st, &sw) : 0;
        if (!len || len > max)
            snprintf(why, sizeof why, "edges %d, stacks %d, return probe %d, TLS index %u: %zu bytes of %zu (%s)",
                     edges, stacks, timed, c.tls, len, max, hs_skip_reason_name(sw));
    }
    tap_check(!why[0], "count32/sizes", "%s", why);
}

/* ---- the head of a ring at its carry ---------------------------------------- */

static uint64_t carry_head __attribute__((aligned(64)));   /* (as tl_head in a region: 8-aligned) */
static volatile int carry_reading, carry_done;
static volatile uint64_t carry_reads, carry_torn, carry_seen;

/* The injector's side: the head read in one 8-byte load, again and again. */
static void *carry_reader(void *arg)
{
    (void)arg;
    carry_reading = 1;
    while (!carry_done) {
        const uint64_t h = __atomic_load_n(&carry_head, __ATOMIC_ACQUIRE);
        carry_reads++;
        if (h != 0xFFFFFFFFull && h != 0x100000000ull && !carry_torn++)
            carry_seen = h;
    }
    return NULL;
}

static void head_carry(void)
{
    pthread_t reader;
    carry_done = carry_reading = 0;
    carry_reads = carry_torn = 0;
    __atomic_store_n(&carry_head, 0xFFFFFFFFull, __ATOMIC_RELEASE);
    if (pthread_create(&reader, NULL, carry_reader, NULL) != 0) {
        tap_fail("time32/timeline-head-carry", "no reader thread");
        return;
    }
    while (!carry_reading)
        ;
    /* (until the reader read a million times, both running: at least
     * 100,000 carries, at most 10 s) */
    uint64_t carries = 0;
    const time_t end = time(NULL) + 10;
    while ((carry_reads < 1000000 || carries < 100000) && time(NULL) < end)
        for (int i = 0; i < 1000; i++, carries++) {
            __atomic_store_n(&carry_head, 0xFFFFFFFFull, __ATOMIC_RELEASE);
            hs_tl_head_advance(&carry_head);
        }
    carry_done = 1;
    pthread_join(reader, NULL);
    tap_check(carry_torn == 0 && carry_reads >= 1000000 && carries >= 100000, "time32/timeline-head-carry",
              "%llu of %llu reads over %llu carries saw a head half written (first %#llx)",
              (unsigned long long)carry_torn, (unsigned long long)carry_reads, (unsigned long long)carries,
              (unsigned long long)carry_seen);
}

void time32_run(hs_engine *e)
{
    char why[200];
    if (hook_all(e, T32_TLS, why, sizeof why) < 0) {
        tap_fail("time32/hook", "%s", why);
        return;
    }
    stub_sizes(e);   /* (over the first callee's copy: hooked again) */
    if (hook_all(e, T32_TLS, why, sizeof why) < 0) {
        tap_fail("time32/hook", "%s", why);
        return;
    }
    one_case("time32/conventions", T32_SHADOW_CAP, conventions);
    one_case("time32/registers", T32_SHADOW_CAP, registers);
    one_case("time32/nested", T32_SHADOW_CAP, nested);
    one_case("time32/recursion", T32_SHADOW_CAP, recursion);
    one_case("time32/tail", T32_SHADOW_CAP, tail);
    one_case("time32/longjmp-entry", T32_SHADOW_CAP, longjmp_entry);
    one_case("time32/longjmp-return", T32_SHADOW_CAP, longjmp_return);
    one_case("time32/full", 4, full);
    one_case("time32/orphan", T32_SHADOW_CAP, orphan);
    one_case("time32/stack", T32_SHADOW_CAP, stack);
    one_case("time32/timeline", T32_SHADOW_CAP, timeline);
    one_case("time32/timeline-filters", T32_SHADOW_CAP, timeline_filters);
    one_case("time32/timeline-full", T32_SHADOW_CAP, timeline_full);
    one_case("time32/timeline-registers", T32_SHADOW_CAP, timeline_registers);
    one_case("time32/timeline-entry-wait", T32_SHADOW_CAP, timeline_entry_wait);
    threads();
    true_return();
    head_carry();
    t32_thread t;
    if (run_on_threads(&t, 1, T32_SHADOW_CAP, cost_body) == 0)
        tap_diag("32-bit timed call of a two-argument function, three frames below a loop: %.1f ns untraced, "
                 "%.1f ns counted, %.1f ns counted and timed, %.1f ns with --timeline (best of 3 loops of 2M calls)",
                 cost[0], cost[1], cost[2], cost[3]);
    /* without a jump cell the thunk returns by ret */
    hs_time32_cell = 0;
    one_case("time32/ret", T32_SHADOW_CAP, conventions);
    one_case("time32/ret-longjmp", T32_SHADOW_CAP, longjmp_return);
    if (run_on_threads(&t, 1, T32_SHADOW_CAP, cost_body) == 0)
        tap_diag("the same returning by ret: %.1f ns untraced, %.1f ns counted, %.1f ns counted and timed, %.1f ns "
                 "with --timeline", cost[0], cost[1], cost[2], cost[3]);
    /* the same through an expansion slot of TLS (an index of 64 or more) */
    if (hook_all(e, T32_TLS_EXPANSION, why, sizeof why) < 0)
        tap_fail("time32/expansion-slot", "%s", why);
    else
        one_case("time32/expansion-slot", T32_SHADOW_CAP, conventions);
    munmap(code, CODE_SZ);
    code = NULL;
}
