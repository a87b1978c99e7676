/*
 * sampler/suspend/suspend_backend_win.c - the suspend backend: samples another process's
 * threads from hookscope.exe, no privileges needed.
 *
 * One thread of ours runs rounds at the configured rate. Each round takes
 * one sample of every thread of the target but hookscope's own (the
 * injector's remote threads, the agent's workers): its CPU clock, then
 * suspend, registers, one copy of its stack, resume (grab_win.c), and only
 * then, with the thread running again, the unwind of the copy over the
 * modules' unwind data (unwind.c, codemap.c), the attribution of frames in
 * hookscope's code to the function they serve, and the stack's entry in
 * the sample set. Whether the sample is a CPU or a wait sample is decided
 * by the classifier (classify.h) once the thread's CPU clock has moved.
 *
 * Threads are listed (NtGetNextThread on the target) every ENUM_MS while
 * they come and go, backing off to ENUM_MAX_MS while they do not; a
 * thread that ended has its pending samples classified then. Modules come
 * from the hooks' session when there is one (the agent records loads and
 * unloads); else they are listed from the target's loader list at the
 * start, every MODULES_MS, and at once (rate-limited, once per page) when a
 * stack returns into code no known module covers. Under Wine 8.0 every
 * read of the target's memory is a ptrace attach by the server: the
 * sampler reads as little as it can (one stack copy per sample of a
 * thread that ran; images' headers and unwind data once, code by page).
 * The CPU clock is the thread's cycle counter where the system has one
 * (QueryThreadCycleTime works on our own thread), else its user + kernel
 * time.
 *
 * Threads that do not run are not suspended: a thread whose CPU clock did
 * not move since its last suspension has the same registers and stack,
 * so its sample reuses that stack (a wait sample where it stood at a
 * system-call return, else ready), and with --timeline takes the time
 * at which its clock was found unmoved. With a cycle counter this is exact (a
 * thread that ran less than RAN_US counts as not run); it is checked
 * again by a real suspension every REVISIT_EXACT_S. With thread times
 * that move in ticks (10 ms under Wine, whose QueryThreadCycleTime fails)
 * a thread can run up to a tick unseen: there only a thread that stood at
 * a system-call return and whose clock has not moved for ACTIVE_S is
 * passed over, and it is suspended for real every REVISIT_PERIODS sample
 * periods (at least a tick) anyway. A thread that ran less than a tick in
 * a quiet spell loses those samples: at most one tick of CPU per ACTIVE_S
 * (README, "Threads that do not run").
 *
 * A 32-bit target (i386 under WOW64) is sampled alike, in its own terms:
 * its threads' 32-bit registers (Wow64GetThreadContext: on Windows a
 * thread inside a 64-bit system call is seen where its 32-bit code made
 * the call) and stacks (their bases from the 32-bit TEBs), its 32-bit
 * modules, and the x86 walker (hook/unwind/unwind32.h) with frame data
 * from the images' call-frame information (gcc's `.eh_frame`,
 * hook/unwind/cfi32.h) and their PDBs' FPO and FrameData records (MSVC's
 * and LLVM's, hook/unwind/fpo32.h, through cfg.pdb_frames) where the
 * ebp chain does not hold. Under Wine 8 a
 * 32-bit program is a 32-bit Linux process with no 64-bit side: its
 * 64-bit context is the same registers.
 *
 * The rate, unless --sample-rate fixed it, is chosen from what the first
 * RATE_FIRST_N suspensions held their threads (median): the highest up to
 * HS_RATE_MAX Hz at which a CPU-bound thread is held at most HS_RATE_COST
 * of its time, never below HS_RATE_MIN; then every RATE_WINDOW_S from the
 * suspensions of that window, lowered at once when the cost climbs, raised
 * when it fell by a quarter.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <mmsystem.h>

#include "hook/base/bytes.h"
#include "hook/base/util.h"
#include "hook/pe/pe.h"
#include "hook/unwind/retshadow.h"
#include "hook/unwind/unwind32.h"
#include "hook/unwind/unwinder.h"
#include "sampler/codemap.h"
#include "sampler/sampler.h"
#include "sampler/suspend/classify.h"
#include "sampler/suspend/grab_win.h"
#include "sampler/suspend/modules_win.h"

#define STACK_COPY (64 * 1024)     /* bytes of a stack copied per sample, at most */
#define MAX_FRAMES 512
#define ENUM_MS 25                 /* threads are listed this often while they come and go, */
#define ENUM_MAX_MS 200            /* and up to this seldom while they do not */
#define OWN_MS 100                 /* hookscope's own code and threads are read this often */
/* A sample whose walk gives nothing but hookscope's code is held back
 * this long before it counts as lost: as the target ends, its thread is
 * in the agent's exit detour (ntdll!NtTerminateProcess) or in a probe,
 * and its memory can no longer be read to walk past it; such samples,
 * taken this close to the target's end, are the end's, not lost. */
#define END_GRACE_S 0.5
#define RATE_REACHED_MIN 0.5       /* a rate reached below this share of the one asked is the run's */
#define CLOCK_MS 4                 /* thread times (10-16 ms steps) are read at most this often */
#define MODULES_MS 5000            /* without hooks: the loader list is read this often (and
                                      MODULES_RETRY_MS after a reading that failed), */
#define MODULES_RETRY_MS 100       /* and at once (at most this often) for an address in no
                                      known module (see worth_listing) */
#define MAX_WINDOW_S 2.0           /* a CPU/wait window closes after this without a clock move */
#define YOUNG_MS 10                /* threads are sampled from this age on */
#define RAN_US 20.0                /* cycle clock: a thread that ran less than this since its
                                      last suspension (the suspension's own tail) did not run */
#define REVISIT_EXACT_S 1.0        /* cycle clock: a thread not suspended for this long is */
#define REVISIT_PERIODS 10         /* tick clock: suspended at every this many of its samples, */
#define TICK_S 0.010               /* and no more often than a tick */
#define ACTIVE_S 0.5               /* tick clock: a thread whose clock moved is suspended at
                                      every sample for this long */
#define RATE_FIRST_N 16            /* suspensions measured before the rate is chosen */
#define RATE_WINDOW_S 1.0          /* the rate is looked at again this often, */
#define RATE_WINDOW_N 8            /* from at least this many suspensions */
#define ENV_SUSPEND_ALL "HOOKSCOPE_SUSPEND_ALL"   /* set (tests, bench): every thread is suspended
                                                     at every sample, as before this method */

typedef LONG(NTAPI *get_next_thread_fn)(HANDLE process, HANDLE thread, ACCESS_MASK access, ULONG attributes,
                                        ULONG flags, HANDLE *next);
typedef LONG(NTAPI *query_thread_fn)(HANDLE thread, int cls, void *info, ULONG len, ULONG *ret);

/* A page of code no module listing explained yet, and when to try again. */
typedef struct unknown_page {
    uint64_t page;
    double next, gap;   /* seconds */
} unknown_page;

typedef struct sthread {
    uint32_t tid;
    HANDLE h;
    uint64_t stack_base;
    bool have_prev;
    uint64_t prev[HS_GRAB_REGS]; /* its registers at its previous sample */
    uint32_t prev_stack;       /* and the stack it had then, */
    bool prev_waiting;         /* whether it stood at a system-call return, */
    bool prev_own;             /* and whether it was in hookscope's own code */
    hs_cls_thread cls;
    size_t *timed;             /* --timeline: the time index of each sample the classifier holds, */
    size_t timed_at, ntimed, timed_cap;   /* in order (HS_NO_TIME: no time kept) */
    uint64_t last_cpu;         /* CPU clock at its last sample */
    double clock_at;           /* when its thread times were read last */
    double cpu_s;              /* its CPU time (thread times), -1 unknown */
    double base_s;             /* its CPU time when sampling began, for a thread that was
                                  there before (attach): not the window's */
    uint64_t created;          /* its creation time (FILETIME), 0 unknown */
    uint32_t failed;           /* samples that failed since its last good one: lost if it
                                  lives on, part of its end if it ends */
    uint32_t failed_timeout;   /*   of which its context did not come in time */
    bool seen;                 /* listed by the last enumeration */
    bool own_checked;          /* hookscope's thread list read again since its only-hookscope
                                  sample (it was not one of them) */
    double first_at, last_at;  /* when it was sampled first and last (seconds) */
    uint64_t after_cpu;        /* its CPU clock just after its last suspension */
    double last_real;          /* when it was last suspended (seconds) */
    uint32_t since_real;       /* its samples since then */
    double active_until;       /* tick clock: suspended at every sample until then */
} sthread;

/* A sample in hookscope's code alone, for the line that says why samples
 * were lost: its leaf, its walk's first frames (leaf first) and why the
 * walk stopped (hs_uw_stop). */
typedef struct own_sample {
    uint64_t pc, frames[6];
    uint32_t n;
    int stop;
} own_sample;

#define TRUE_RETURNS 256   /* (the newest open timed calls of a 32-bit thread read) */

struct hs_sampler {
    hs_sampler_config cfg;
    int bits;                  /* the target's: 64, or 32 (WOW64: its 32-bit registers, stacks,
                                  modules; the x86 walker) */
    uint64_t walks32, frames32, scanned32;   /* 32-bit walks, their frames, of which found by a
                                                scan of the stack (a guess: -v) */
    uint64_t by_data32;                      /*   and by frame data (-v) */
    double scan_list_at, scan_list_gap;      /* when a 32-bit walk that scanned lists the modules
                                                again (seconds), and the gap it backs off to */
    hs_sampleset *out;
    HANDLE process, thread, stop_event, ready;
    hs_grabber *grab;
    hs_codemap *map;
    sthread *threads;
    size_t nthreads, cap_threads;
    uint32_t *ever;            /* every thread id sampled, for the count */
    size_t never, cap_ever;
    uint64_t agent_base;
    uint64_t lost_timeout, lost_refused, lost_own;   /* samples lost, by why (-v) */
    uint64_t own_pending;      /* in hookscope's code alone, held back (END_GRACE_S) */
    double own_pending_at;     /*   the last of them */
    uint64_t own_at_end;       /*   and those the target's end took (-v) */
    own_sample lost_own_first; /* the first sample lost in hookscope's code alone */
    own_sample pending_first;  /* the first of those held back now */
    bool cycles;
    hs_cls_shared cls;         /* what the classifier learns across threads */
    double tsc_hz;             /* rdtsc ticks per second (cycle clock) */
    double ended_cpu_s;        /* CPU time of the threads finished so far (in the window) */
    uint64_t began_ft;         /* when sampling began (FILETIME): threads created before */
    double base_cpu_s;         /* the process's CPU time then: not the window's */
    double threads_s;          /* wall time of the threads finished so far, while sampled */
    LARGE_INTEGER qpf;
    double period_s;
    bool suspend_all;          /* every thread at every sample (ENV_SUSPEND_ALL) */
    double ran_units;          /* RAN_US in cycle-clock units */
    /* the rate: chosen (cfg.rate_hz 0) or fixed */
    bool auto_rate;
    volatile double rate_live; /* read by rate_now from another thread */
    double rate, rate_since, rate_sum, rate_t0, rate_lo, rate_hi;
    unsigned rate_changes;
    float *hold_us;            /* what each suspension but a thread's first held it (a first
                                  context comes slowly under Wine): the rate's measure */
    size_t nhold, cap_hold;
    size_t adapt_from;         /* hold_us index where the rate's window began */
    double adapt_at;
    double chosen_at;          /* when the first suspensions chose the rate (HS_RATE_MAX until then) */
    char reason[240];
    uint64_t suspensions, reused;
    /* stats */
    float *stopped_us;
    size_t nstopped, cap_stopped;
    double unwind_s;
    uint64_t unwinds, ticks;
    double last_modules, last_modules_retry;
    bool modules_read;         /* the last reading of the loader list worked (else: try again soon) */
    unsigned module_lists, module_lists_failed;
    hs_owncode own;            /* the last the session said (modules too, with hooks) */
    bool own_modules;          /* the session lists the modules */
    unknown_page *unknown_pages;   /* pages of addresses a listing did not explain */
    size_t nunknown, cap_unknown;
    double t_clock, t_grab, t_enum, t_modules, t_wait;   /* seconds spent, for --verbose */
    get_next_thread_fn next_thread;
    query_thread_fn query_thread;
    /* a 32-bit target's open timed calls, read while the thread sampled
     * was stopped (true_returns_now) */
    uint32_t grabbing_tid;
    hs_true_return tr[TRUE_RETURNS];
    size_t ntr;
};

static double qpc_s(const hs_sampler *s)
{
    LARGE_INTEGER c;
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)s->qpf.QuadPart;
}

/* ---- the CPU clock --------------------------------------------------------------- */

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

static uint64_t ft64(FILETIME f) { return (uint64_t)f.dwHighDateTime << 32 | f.dwLowDateTime; }

/* Thread times in 100 ns, or -1. */
static int64_t thread_times(HANDLE h)
{
    FILETIME c, e, k, u;
    if (!GetThreadTimes(h, &c, &e, &k, &u))
        return -1;
    return (int64_t)(ft64(k) + ft64(u));
}

/* The clock pair the classifier wants: wall and thread CPU in one unit.
 * Thread times move in steps of a clock tick: between reads CLOCK_MS
 * apart, the last reading stands (the window closes a little later). */
static bool read_clock(hs_sampler *s, sthread *t, uint64_t *wall, uint64_t *cpu)
{
    if (s->cycles) {
        ULONG64 c = 0;
        *wall = rdtsc();
        if (!QueryThreadCycleTime(t->h, &c))
            return false;
        *cpu = c;
        return true;
    }
    LARGE_INTEGER q;
    QueryPerformanceCounter(&q);
    *wall = (uint64_t)((double)q.QuadPart * 1e7 / (double)s->qpf.QuadPart);
    double now = (double)q.QuadPart / (double)s->qpf.QuadPart;
    if (t->clock_at > 0 && now - t->clock_at < CLOCK_MS / 1000.0) {
        *cpu = t->last_cpu;
        return true;
    }
    t->clock_at = now;
    int64_t tt = thread_times(t->h);
    if (tt < 0)
        return false;
    *cpu = (uint64_t)tt;
    t->cpu_s = (double)tt / 1e7;
    return true;
}

static uint64_t wall_units(const hs_sampler *s, double seconds)
{
    return (uint64_t)(seconds * (s->cycles ? s->tsc_hz : 1e7));
}

/* Has the thread not run since its last suspension (so that its
 * registers and stack are what they were then)? See the file's comment. */
static bool unmoved(const hs_sampler *s, const sthread *t, uint64_t cpu, double now)
{
    if (s->suspend_all || !t->have_prev || t->prev_own || t->failed)
        return false;
    if (s->cycles)
        return now - t->last_real < REVISIT_EXACT_S && cpu <= t->after_cpu + (uint64_t)s->ran_units;
    if (t->since_real + 1 >= REVISIT_PERIODS && now - t->last_real >= TICK_S)
        return false;   /* its revisit: a sample every REVISIT_PERIODS, at most one a tick */
    return cpu == t->after_cpu && t->prev_waiting && now >= t->active_until;
}

/* ---- classification into the set --------------------------------------------------- */

/* A sample's kind, as the classifier decides it: counted for its stack,
 * and told to its time (the classifier decides a thread's samples in the
 * order they came). */
typedef struct emit_to {
    hs_sampleset *out;
    sthread *t;
} emit_to;

static void emit(void *ctx, uint32_t stack, uint8_t kind)
{
    emit_to *e = ctx;
    hs_sampleset_count(e->out, stack, kind, 1);
    sthread *t = e->t;
    if (t->timed_at < t->ntimed) {
        hs_sampleset_time_kind(e->out, t->timed[t->timed_at++], kind);
        if (t->timed_at == t->ntimed)
            t->timed_at = t->ntimed = 0;
    }
}

/* A sample to the classifier, with its time index (HS_NO_TIME: none). */
static void classify(hs_sampler *s, sthread *t, uint64_t wall, uint64_t cpu, bool moved, bool waiting,
                     uint32_t stack, size_t time)
{
    hs_xgrow(&t->timed, &t->timed_cap, t->ntimed + 1, sizeof *t->timed);
    t->timed[t->ntimed++] = time;
    emit_to e = { s->out, t };
    hs_cls_sample(&t->cls, wall, cpu, moved, waiting, stack, wall_units(s, MAX_WINDOW_S), emit, &e);
}

/* What a thread's entry holds, given back. */
static void thread_release(sthread *t)
{
    hs_cls_free(&t->cls);
    free(t->timed);
    CloseHandle(t->h);
}

static void thread_done(hs_sampler *s, sthread *t)
{
    uint64_t wall, cpu;
    t->clock_at = 0;
    bool known = read_clock(s, t, &wall, &cpu) && cpu >= t->last_cpu && cpu > 0;
    emit_to e = { s->out, t };
    hs_cls_finish(&t->cls, wall, cpu, known, emit, &e);
    if (!s->cycles && !known)
        t->cpu_s = (double)t->last_cpu / 1e7;   /* its last reading: Wine forgets ended threads' times */
    if (s->cycles) {
        int64_t tt = thread_times(t->h);
        t->cpu_s = tt > 0 ? (double)tt / 1e7 : t->cpu_s;
    }
    if (t->cpu_s >= 0)
        t->cpu_s = t->cpu_s > t->base_s ? t->cpu_s - t->base_s : 0;
    hs_sampleset_thread(s->out, t->tid, t->cpu_s);
    if (t->cpu_s > 0)
        s->ended_cpu_s += t->cpu_s;
    if (t->first_at > 0)
        s->threads_s += t->last_at - t->first_at + s->period_s;
    thread_release(t);
}

/* A thread no longer sampled: ended (thread_done), or one that is
 * hookscope's (found so after it was listed: let go, recorded nowhere;
 * what it did is not the program's). */
static void thread_end(hs_sampler *s, sthread *t)
{
    if (hs_codemap_own_thread(s->map, t->tid))
        thread_release(t);
    else
        thread_done(s, t);
}

/* ---- threads ------------------------------------------------------------------------- */

static void refresh_own(hs_sampler *s);

static sthread *find_thread(hs_sampler *s, uint32_t tid)
{
    for (size_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].tid == tid)
            return &s->threads[i];
    return NULL;
}

#define TEB64_WOW_TEB_OFFSET 0x180C   /* TEB.WowTebOffset (x64) */
#define TEB32_DEFAULT_OFFSET 0x2000

/* The base of a thread's stack, from its TEB (a 32-bit thread's: its
 * 32-bit TEB's); 0 unknown. */
static uint64_t stack_base_of(hs_sampler *s, HANDLE h)
{
    struct {
        LONG status;
        void *teb;
        void *pid, *tid;
        ULONG_PTR affinity;
        LONG priority, base_priority;
    } tbi;
    ULONG len = 0;
    if (!s->query_thread || s->query_thread(h, 0, &tbi, sizeof tbi, &len) != 0 || !tbi.teb)
        return 0;
    uint64_t base = 0;
    SIZE_T got = 0;
    if (s->bits == 32) {
        /* the 32-bit TEB: WowTebOffset from the 64-bit one (Windows 10 on,
         * Wine), else 0x2000 past it, where earlier Windows put it; its
         * NT_TIB's StackBase at +4 */
        LONG off = 0;
        if (!ReadProcessMemory(s->process, (char *)tbi.teb + TEB64_WOW_TEB_OFFSET, &off, 4, &got) || !off)
            off = TEB32_DEFAULT_OFFSET;
        uint32_t base32 = 0;
        if (!ReadProcessMemory(s->process, (char *)tbi.teb + off + 4, &base32, 4, &got))
            return 0;
        return base32;
    }
    if (!ReadProcessMemory(s->process, (char *)tbi.teb + 8, &base, 8, &got))
        return 0;
    return base;
}

static void note_ever(hs_sampler *s, uint32_t tid)
{
    for (size_t i = 0; i < s->never; i++)
        if (s->ever[i] == tid)
            return;
    hs_xgrow(&s->ever, &s->cap_ever, s->never + 1, sizeof *s->ever);
    s->ever[s->never++] = tid;
}

/* List the target's threads: new ones are added, ended ones finished.
 * Returns whether the list changed. */
static bool enumerate_threads(hs_sampler *s)
{
    bool changed = false;
    const ACCESS_MASK access = THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_QUERY_INFORMATION;
    for (size_t i = 0; i < s->nthreads; i++)
        s->threads[i].seen = false;
    HANDLE cur = NULL;
    bool keep_cur = false, own_read = false;
    for (int guard = 0; guard < 100000; guard++) {
        HANDLE next = NULL;
        if (s->next_thread(s->process, cur, access, 0, 0, &next) != 0)
            break;
        if (cur && !keep_cur)
            CloseHandle(cur);
        cur = next;
        keep_cur = false;
        DWORD tid = GetThreadId(next);
        if (!tid || hs_codemap_own_thread(s->map, tid))
            continue;
        sthread *t = find_thread(s, tid);
        if (t) {
            t->seen = true;
            continue;
        }
        if (WaitForSingleObject(next, 0) == WAIT_OBJECT_0)
            continue;   /* ended, not yet gone */
        /* a new thread may be one hookscope just started (its id is in the
         * session before it runs; the list read every OWN_MS may be older) */
        if (!own_read) {
            refresh_own(s);
            own_read = true;
            if (hs_codemap_own_thread(s->map, tid))
                continue;
        }
        hs_xgrow(&s->threads, &s->cap_threads, s->nthreads + 1, sizeof *s->threads);
        t = &s->threads[s->nthreads++];
        memset(t, 0, sizeof *t);
        t->tid = tid;
        t->h = next;
        t->seen = true;
        t->cpu_s = -1;
        t->stack_base = stack_base_of(s, next);
        FILETIME c, e, k, u;
        if (GetThreadTimes(next, &c, &e, &k, &u)) {
            t->created = ft64(c);
            if (t->created < s->began_ft)
                t->base_s = (double)(ft64(k) + ft64(u)) / 1e7;
        }
        hs_cls_init(&t->cls, &s->cls);
        keep_cur = true;
        changed = true;
    }
    if (cur && !keep_cur)
        CloseHandle(cur);
    /* threads no longer listed, or now hookscope's own */
    for (size_t i = 0; i < s->nthreads;) {
        sthread *t = &s->threads[i];
        if (t->seen && !hs_codemap_own_thread(s->map, t->tid)) {
            i++;
            continue;
        }
        thread_end(s, t);
        s->threads[i] = s->threads[--s->nthreads];
        changed = true;
    }
    return changed;
}

/* ---- modules and hookscope's code ----------------------------------------------------------- */

static void refresh_modules(hs_sampler *s, double now);

static void refresh_own(hs_sampler *s)
{
    if (!s->cfg.own)
        return;
    hs_owncode own;
    memset(&own, 0, sizeof own);
    if (s->cfg.own(s->cfg.own_ctx, &own) > 0) {
        hs_codemap_set_own(s->map, &own);
        s->agent_base = own.agent_base;
        hs_owncode_free(&s->own);
        s->own = own;
        s->own_modules = own.nmodules > 0;
        refresh_modules(s, s->last_modules);   /* the session's list: no reads of the target */
    } else {
        hs_owncode_free(&own);
    }
}

/* The modules: from the session when the hooks keep it (the agent records
 * every load and unload), else from the target's loader list (each entry
 * a read of the target's memory). */
static void refresh_modules(hs_sampler *s, double now)
{
    s->last_modules = now;
    if (!s->own_modules) {
        /* fails while the target's loader has not set its list up yet
         * (and under Wine while the server cannot stop the process) */
        s->modules_read = hs_target_modules(s->process, s->bits, s->map, s->agent_base) > 0;
        s->module_lists++;
        s->module_lists_failed += !s->modules_read;
        return;
    }
    s->modules_read = true;
    hs_codemap_begin_enum(s->map);
    for (size_t i = 0; i < s->own.nmodules; i++) {
        const hs_own_module *m = &s->own.modules[i];
        if (!m->unloaded)
            hs_target_module_add(s->map, s->bits, m->base, m->size, m->path, m->agent);
    }
    hs_codemap_sweep(s->map);
}

/* Is a listing worth trying for this unknown address now? Not for a page
 * an earlier listing did not explain until its back-off has passed (it
 * doubles each time, from MODULES_RETRY_MS to MODULES_MS): code outside
 * every module (Wine's own, JIT code) costs a few listings, not one per
 * sample, while a page listed too early (the loader was still at work,
 * the list was partial or unreadable) is tried again soon. */
static unknown_page *find_unknown(hs_sampler *s, uint64_t pc)
{
    for (size_t i = 0; i < s->nunknown; i++)
        if (s->unknown_pages[i].page == pc >> 12)
            return &s->unknown_pages[i];
    return NULL;
}

static bool worth_listing(hs_sampler *s, uint64_t pc, double now)
{
    const unknown_page *u = find_unknown(s, pc);
    return !u || now >= u->next;
}

/* Is this address in code the target has mapped: an image, or executable
 * memory of its own (hookscope's arena: the agent lists it)? Then a
 * listing now explains it (a DLL loaded, an arena grown since the last
 * one), where the rate limit of listings would leave its first samples of
 * up to MODULES_RETRY_MS one frame deep. One query, no listing. */
static bool in_code(hs_sampler *s, uint64_t pc)
{
    MEMORY_BASIC_INFORMATION mbi;
    if (VirtualQueryEx(s->process, (const void *)(uintptr_t)pc, &mbi, sizeof mbi) != sizeof mbi ||
        mbi.State != MEM_COMMIT)
        return false;
    return mbi.Type == MEM_IMAGE || (mbi.Protect & (PAGE_EXECUTE | PAGE_EXECUTE_READ | PAGE_EXECUTE_READWRITE |
                                                     PAGE_EXECUTE_WRITECOPY));
}

/* A listing at `now` did not explain this address: back off. */
static void still_unexplained(hs_sampler *s, uint64_t pc, double now)
{
    unknown_page *u = find_unknown(s, pc);
    if (!u) {
        if (s->nunknown >= 4096)
            return;
        hs_xgrow(&s->unknown_pages, &s->cap_unknown, s->nunknown + 1, sizeof *s->unknown_pages);
        u = &s->unknown_pages[s->nunknown++];
        u->page = pc >> 12;
        u->gap = MODULES_RETRY_MS / 1000.0;
    } else if (u->gap < MODULES_MS / 1000.0) {
        u->gap *= 2;
    }
    u->next = now + u->gap;
}

/* ---- one sample -------------------------------------------------------------------------------- */

static int read_target(void *ctx, uint64_t addr, void *buf, size_t len)
{
    hs_sampler *s = ctx;
    SIZE_T got = 0;
    return ReadProcessMemory(s->process, (const void *)(uintptr_t)addr, buf, len, &got) && got == len ? 0 : -1;
}

static void regs_of(const hs_grab *g, hs_uw_regs *r)
{
    memcpy(r->r, g->regs, sizeof r->r);
    r->rip = g->regs[HS_GRAB_PC];
}

/* (hs_grab_while_stopped: the shadow records as they were when the stack
 * was copied) */
static void true_returns_now(void *ctx)
{
    hs_sampler *s = ctx;
    s->ntr = s->cfg.true_returns(s->cfg.own_ctx, s->grabbing_tid, s->tr, TRUE_RETURNS);
}

/* A 32-bit target timed by the 32-bit agent: each open timed call's
 * return address on the stack is the agent's return thunk (agent/time32.S:
 * the true one is on the thread's shadow stack), where the walk would stop
 * in hookscope's code. Put the true ones back in the copy, as the agent's
 * own walk reads them (hs_ret_shadow_true: at each open call's slot, and
 * at a copy of it a callee made), so the walk follows the program's
 * frames. */
static void put_true_returns(hs_sampler *s, hs_grab *g)
{
    if (s->bits != 32 || !s->ntr || g->stack_len < 4)
        return;
    uint8_t *copy = (uint8_t *)g->stack;   /* (the grabber's buffer, ours until the next grab) */
    const uint64_t end = g->stack_lo + g->stack_len - 4;
    /* the thunk: what an open call's slot holds, in the agent */
    uint32_t thunk = 0;
    for (size_t i = 0; i < s->ntr && !thunk; i++) {
        const uint64_t slot = s->tr[i].slot;
        if (slot >= g->stack_lo && slot <= end && hs_codemap_in_agent(s->map, hs_le32(copy + (slot - g->stack_lo))))
            thunk = hs_le32(copy + (slot - g->stack_lo));
    }
    if (!thunk)
        return;
    const hs_ret_shadow sh = { thunk, (const uint8_t *)s->tr, (uint32_t)s->ntr, sizeof *s->tr,
                               offsetof(hs_true_return, slot), offsetof(hs_true_return, ret) };
    /* (up to the outermost open call's slot: no thunk above it has a record) */
    const uint64_t top = s->tr[0].slot < end ? s->tr[0].slot : end;
    for (uint64_t a = (g->stack_lo + 3) & ~3ull; a <= top; a += 4) {
        uint8_t *p = copy + (a - g->stack_lo);
        if (hs_le32(p) != thunk)
            continue;
        const uint32_t ret = hs_ret_shadow_true(&sh, (uint32_t)a, thunk);
        for (int b = 0; b < 4; b++)
            p[b] = (uint8_t)(ret >> (8 * b));
    }
}

/* Walk a sample's stack copy from its registers: the x64 unwinder, or
 * for a 32-bit target the x86 walker (*scanned: its frames found by a
 * scan, also counted for -v). */
static hs_uw_result walk_stack(hs_sampler *s, const hs_uw_stack *st, const hs_uw_regs *regs, uint64_t *frames,
                               uint32_t *scanned)
{
    *scanned = 0;
    if (s->bits != 32) {
        hs_uw_env env = hs_codemap_env(s->map);
        return hs_unwind_walk(&env, st, regs, frames, MAX_FRAMES);
    }
    hs_uw32_env env = hs_codemap_env32(s->map);
    hs_uw32_regs r32 = { (uint32_t)regs->rip, (uint32_t)regs->r[HS_RSP], (uint32_t)regs->r[HS_RBP] };
    uint32_t f32[MAX_FRAMES];
    uint8_t how[MAX_FRAMES];
    hs_uw_result res = hs_unwind32_walk(&env, st, &r32, f32, how, MAX_FRAMES);
    s->walks32++;
    s->frames32 += res.n;
    for (uint32_t i = 0; i < res.n; i++) {
        frames[i] = f32[i];
        *scanned += how[i] == HS_UW32_SCAN;
        s->by_data32 += how[i] == HS_UW32_FRAME_DATA;
    }
    s->scanned32 += *scanned;
    return res;
}

/* Returns false when the thread is gone, or found to be hookscope's. */
static bool sample_thread(hs_sampler *s, sthread *t, double now)
{
    if (!t->have_prev && t->created) {
        /* a thread created a moment ago may not have started: under Wine
         * its context would not come while it is suspended */
        FILETIME f;
        GetSystemTimeAsFileTime(&f);
        if (ft64(f) < t->created + YOUNG_MS * 10000ull)
            return true;
    }
    uint64_t wall = 0, cpu = 0;
    double c0 = qpc_s(s);
    bool clock_ok = read_clock(s, t, &wall, &cpu);
    double c1 = qpc_s(s);
    if (clock_ok && t->have_prev && !s->cycles && cpu != t->after_cpu)
        t->active_until = now + ACTIVE_S;   /* it ran a tick since its last suspension */
    if (clock_ok && unmoved(s, t, cpu, now)) {
        /* it has not run: its last stack again, no suspension */
        s->t_clock += c1 - c0;
        s->reused++;
        t->since_real++;
        hs_sampleset_taken_add(s->out, 1);
        LARGE_INTEGER at;
        QueryPerformanceCounter(&at);
        size_t time = hs_sampleset_time(s->out, t->prev_stack, at.QuadPart);   /* (where it still stands) */
        t->last_at = now;
        classify(s, t, wall, cpu, false, t->prev_waiting, t->prev_stack, time);
        if (cpu > t->last_cpu)
            t->last_cpu = cpu;
        return true;
    }
    hs_grab g;
    s->grabbing_tid = t->tid;
    s->ntr = 0;
    int rc = hs_grab_thread(s->grab, s->process, t->h, t->stack_base, t->have_prev ? t->prev : NULL, &g);
    s->t_clock += c1 - c0;
    s->t_grab += qpc_s(s) - c1;
    if (rc == HS_GRAB_GONE)
        return false;
    if (rc == HS_GRAB_HELD) {
        /* held suspended by someone else: waiting where it was last seen */
        if (t->have_prev)
            hs_sampleset_taken_add(s->out, 1);
        if (t->have_prev && clock_ok)
            classify(s, t, wall, cpu, false, true, t->prev_stack, HS_NO_TIME);
        else if (t->have_prev)
            hs_sampleset_count(s->out, t->prev_stack, HS_SAMPLE_WAIT, 1);
        return true;
    }
    if (rc != HS_GRAB_OK) {
        /* a thread that never gave a context has not started: nothing lost */
        if (t->have_prev) {
            t->failed++;
            t->failed_timeout += rc == HS_GRAB_TIMEOUT;
        }
        return true;
    }
    if (t->failed) {
        hs_sampleset_lost(s->out, t->failed);
        s->lost_timeout += t->failed_timeout;
        s->lost_refused += t->failed - t->failed_timeout;
        t->failed = t->failed_timeout = 0;
    }
    hs_xgrow(&s->stopped_us, &s->cap_stopped, s->nstopped + 1, sizeof *s->stopped_us);
    s->stopped_us[s->nstopped++] = (float)((double)g.stopped_qpc * 1e6 / (double)s->qpf.QuadPart);
    s->suspensions++;
    if (t->have_prev) {
        hs_xgrow(&s->hold_us, &s->cap_hold, s->nhold + 1, sizeof *s->hold_us);
        s->hold_us[s->nhold++] = s->stopped_us[s->nstopped - 1];
    }
    t->last_real = now;
    t->since_real = 0;
    /* the clock after the suspension: what it cost the thread is not its running */
    t->after_cpu = cpu;
    if (s->cycles) {
        ULONG64 c = 0;
        if (QueryThreadCycleTime(t->h, &c))
            t->after_cpu = c;
    }

    bool moved = false;
    uint32_t id;
    if (g.same) {
        id = t->prev_stack;   /* it has not run: the same stack */
    } else {
        t->prev_waiting = hs_codemap_at_syscall(s->map, g.regs[HS_GRAB_PC]);
        double u0 = qpc_s(s);
        moved = t->have_prev;
        if (moved && !s->cycles && !t->prev_waiting)
            t->active_until = now + ACTIVE_S;   /* caught running: its clock may not show it yet */
        hs_uw_regs regs;
        regs_of(&g, &regs);
        memcpy(t->prev, g.regs, sizeof t->prev);
        put_true_returns(s, &g);
        hs_uw_stack st = { g.stack_lo, g.stack, g.stack_len, g.complete };
        uint64_t frames[MAX_FRAMES];
        uint32_t scanned;
        hs_uw_result res = walk_stack(s, &st, &regs, frames, &scanned);
        /* an address in no known module: perhaps one loaded since the last
         * listing, or one an early listing could not read (under Wine it is
         * often Wine's own code: worth_listing backs off for those) */
        bool unknown = res.stop == HS_UW_UNKNOWN_PC && res.n > 0 && worth_listing(s, res.unknown_pc, now) &&
                       (now - s->last_modules_retry >= MODULES_RETRY_MS / 1000.0 || in_code(s, res.unknown_pc));
        /* a 32-bit walk that had to scan: its ebp chain or a return address
         * may lead into a module not listed yet (the x86 walker passes over
         * a value outside known code where the x64 unwinder stops at it):
         * listed again, less and less often while that explains nothing */
        bool guessed = scanned && !s->own_modules && now >= s->scan_list_at;
        if (unknown || guessed) {
            /* its time is the module listing's, not the unwind's */
            s->last_modules_retry = now;
            double m0 = qpc_s(s);
            if (s->own_modules)
                refresh_own(s);   /* the session's list, as the agent keeps it now */
            else
                refresh_modules(s, now);
            double m1 = qpc_s(s);
            s->t_modules += m1 - m0;
            u0 += m1 - m0;
            uint64_t was = res.unknown_pc;
            t->prev_waiting = hs_codemap_at_syscall(s->map, g.regs[HS_GRAB_PC]);   /* known now, perhaps */
            res = walk_stack(s, &st, &regs, frames, &scanned);
            if (unknown && res.stop == HS_UW_UNKNOWN_PC && res.unknown_pc == was && s->modules_read)
                still_unexplained(s, was, now);
            if (guessed) {
                s->scan_list_gap = !scanned ? MODULES_RETRY_MS / 1000.0
                                 : s->scan_list_gap * 2 < MODULES_MS / 1000.0 ? s->scan_list_gap * 2 : MODULES_MS / 1000.0;
                s->scan_list_at = now + s->scan_list_gap;
            }
        }
        int attr;
        uint32_t n = hs_codemap_attribute(s->map, &regs, frames, res.n, &attr);
        uint64_t raw[6];
        uint32_t raw_n = 0;
        if (!n && s->cfg.own) {
            /* only hookscope's code, serving no function it knows: perhaps
             * a stub whose slot and unwind data came with hooks put in since
             * the list was read (every OWN_MS): read it again (nothing is
             * read past its signature when it did not change) and walk once
             * more, keeping the walk's first frames for the lost line (a
             * walk that still gives nothing is most often one at the
             * target's end: END_GRACE_S) */
            refresh_own(s);
            res = walk_stack(s, &st, &regs, frames, &scanned);
            raw_n = res.n < 6 ? res.n : 6;
            memcpy(raw, frames, raw_n * sizeof *raw);
            n = hs_codemap_attribute(s->map, &regs, frames, res.n, &attr);
        }
        s->unwind_s += qpc_s(s) - u0;
        s->unwinds++;
        if (!n) {
            /* only hookscope's code, serving no function: one of its
             * threads started since its list was read (read again just
             * above; not sampled from now on), else a sample lost */
            if (!t->own_checked) {
                t->own_checked = true;   /* once: hookscope's ids are written before its threads run */
                if (hs_codemap_own_thread(s->map, t->tid))
                    return false;
            }
            t->have_prev = false;
            if (!s->own_pending++) {
                own_sample *d = &s->pending_first;
                d->pc = g.regs[HS_GRAB_PC];
                memcpy(d->frames, raw, raw_n * sizeof *raw);
                d->n = raw_n;
                d->stop = res.stop;
            }
            s->own_pending_at = now;
            return true;
        }
        id = hs_sampleset_stack(s->out, t->tid, res.stop == HS_UW_TRUNCATED, frames, n);
        t->have_prev = true;
        t->prev_stack = id;
        t->prev_own = attr == HS_ATTR_HOOKSCOPE;
    }
    note_ever(s, t->tid);
    hs_sampleset_taken_add(s->out, 1);
    size_t time = hs_sampleset_time(s->out, id, g.at_qpc);
    if (t->first_at <= 0)
        t->first_at = now;
    t->last_at = now;
    if (t->prev_own) {
        /* in hookscope's own code: its cost, running or not */
        hs_sampleset_count(s->out, id, HS_SAMPLE_HOOKSCOPE, 1);
        hs_sampleset_time_kind(s->out, time, HS_SAMPLE_HOOKSCOPE);
        return true;
    }
    if (!clock_ok) {
        /* no clock: the registers alone say whether it ran */
        uint8_t kind = t->prev_waiting ? HS_SAMPLE_WAIT : moved ? HS_SAMPLE_CPU : HS_SAMPLE_READY;
        hs_sampleset_count(s->out, id, kind, 1);
        hs_sampleset_time_kind(s->out, time, kind);
        return true;
    }
    classify(s, t, wall, cpu, moved, t->prev_waiting, id, time);
    if (cpu > t->last_cpu)
        t->last_cpu = cpu;
    return true;
}

/* ---- the rate ---------------------------------------------------------------------------------------- */

static int cmp_float(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static void set_rate(hs_sampler *s, double rate, double now)
{
    s->rate_sum += s->rate * (now - s->rate_since);
    s->rate_since = now;
    s->rate = rate;
    s->rate_live = rate;
    s->period_s = 1.0 / rate;
    if (rate < s->rate_lo || !s->rate_lo)
        s->rate_lo = rate;
    if (rate > s->rate_hi)
        s->rate_hi = rate;
}

/* What a suspension costs its thread, as a multiple of its median hold:
 * measured, spin.exe sampled at 300 Hz with a median hold of 165 us ran
 * 1.105x its untraced time, 350 us a suspension (bench/run.py sample,
 * Wine 8): the longer holds of the tail, and the thread's own handling of
 * each (Wine's signal, its context saved and restored, caches gone cold)
 * come on top of the median. With 2x, a quiet machine measured 1.056x at
 * the 237 Hz it chose (104 us held, 236 us a suspension): 2.3x. */
#define SUSPEND_COST_PER_HOLD 2.5

/* The rate that the suspensions since adapt_from allow: rate x their
 * cost (SUSPEND_COST_PER_HOLD x the median hold) within HS_RATE_COST of
 * one CPU. */
static double allowed_rate(hs_sampler *s, double *hold_us, double *raw)
{
    size_t n = s->nhold - s->adapt_from;
    float *v = hs_xcalloc(n, sizeof *v);
    memcpy(v, s->hold_us + s->adapt_from, n * sizeof *v);
    hs_sort(v, n, sizeof *v, cmp_float, NULL);
    *hold_us = v[n / 2] > 1 ? v[n / 2] : 1;
    free(v);
    *raw = HS_RATE_COST / (SUSPEND_COST_PER_HOLD * *hold_us * 1e-6);
    double r = *raw < HS_RATE_MIN ? HS_RATE_MIN : *raw > HS_RATE_MAX ? HS_RATE_MAX : *raw;
    return (double)(long)r;
}

static void adapt_rate(hs_sampler *s, double now)
{
    if (!s->auto_rate)
        return;
    size_t n = s->nhold - s->adapt_from;
    bool first = !s->reason[0];
    if (first ? n < RATE_FIRST_N : now - s->adapt_at < RATE_WINDOW_S || n < RATE_WINDOW_N)
        return;
    double hold, raw, r = allowed_rate(s, &hold, &raw);
    if (first) {
        snprintf(s->reason, sizeof s->reason, "chosen: a suspension held a thread %.0f us (median of the first %zu) "
                 "and costs it about %.0f us; %.0f%% of one CPU allows %.0f Hz%s", hold, n,
                 SUSPEND_COST_PER_HOLD * hold, HS_RATE_COST * 100, raw,
                 raw > HS_RATE_MAX ? " (at most 1000 Hz)" : raw < HS_RATE_MIN ? " (never below 50 Hz)" : "");
        set_rate(s, r, now);
        s->rate_lo = s->rate_hi = r;   /* the range of the chosen rates */
        s->chosen_at = now;
        hs_log("sampling rate %s", s->reason);
    } else if (r < s->rate || r > s->rate * 1.25) {
        hs_log("sampling rate %.0f -> %.0f Hz: a suspension held a thread %.0f us (median of %zu over %.1f s)",
               s->rate, r, hold, n, now - s->adapt_at);
        s->rate_changes++;
        set_rate(s, r, now);
    }
    s->adapt_from = s->nhold;
    s->adapt_at = now;
}

static double suspend_rate_now(const hs_sampler *s)
{
    return s->rate_live;
}

/* ---- the sampling thread ------------------------------------------------------------------------- */

/* ntdll's system calls that never block, by their rvas in the target's
 * ntdll, read from its file (the system directory's; a 32-bit target's,
 * SysWOW64's): a thread at their return is not waiting. NtContinue is
 * where a thread stands before it first runs (Wine's signal_start_thread)
 * and after an exception or APC. */
static void set_quick_calls(hs_codemap *m, int bits)
{
    static const char *const names[] = { "NtContinue", "NtYieldExecution", "NtTestAlert" };
    uint32_t rvas[3];
    size_t n = 0, size = 0;
    wchar_t path[MAX_PATH + 16];
    UINT len = bits == 32 ? GetSystemWow64DirectoryW(path, MAX_PATH) : GetSystemDirectoryW(path, MAX_PATH);
    uint8_t *data = NULL;
    if (len && len < MAX_PATH) {
        wcscat(path, L"\\ntdll.dll");
        data = hs_read_file(path, &size, NULL);
    }
    hs_pe pe;
    if (data && hs_pe_load_file(&pe, data, size) == HS_PE_OK) {
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            if ((rvas[n] = hs_pe_export_rva(&pe, names[i])) != 0)
                n++;
        hs_pe_close(&pe);
    }
    free(data);
    hs_codemap_set_quick(m, rvas, n);
}

/* The samples in hookscope's code alone held back (END_GRACE_S): lost,
 * or, when the target has ended, the end's. */
static void own_pending_settle(hs_sampler *s, bool target_ended)
{
    if (target_ended) {
        s->own_at_end += s->own_pending;
    } else {
        hs_sampleset_lost(s->out, s->own_pending);
        if (!s->lost_own)
            s->lost_own_first = s->pending_first;
        s->lost_own += s->own_pending;
    }
    s->own_pending = 0;
}

static DWORD WINAPI sampler_main(void *arg)
{
    hs_sampler *s = arg;
    SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_HIGHEST);
    timeBeginPeriod(1);   /* waits of a millisecond, not a clock tick */
    if (s->cycles) {
        /* the rdtsc rate, against the performance counter */
        double q0 = qpc_s(s);
        uint64_t t0 = rdtsc();
        Sleep(20);
        double q1 = qpc_s(s);
        s->tsc_hz = q1 > q0 ? (double)(rdtsc() - t0) / (q1 - q0) : 1e9;
        s->ran_units = RAN_US * 1e-6 * s->tsc_hz;
    }
    /* the window: CPU spent before it (an attached process's) is not the
     * window's */
    FILETIME now_ft, c, e, k, u;
    GetSystemTimeAsFileTime(&now_ft);
    s->began_ft = ft64(now_ft);
    if (GetProcessTimes(s->process, &c, &e, &k, &u))
        s->base_cpu_s = (double)(ft64(k) + ft64(u)) / 1e7;
    double now = qpc_s(s);
    refresh_own(s);
    refresh_modules(s, now);
    enumerate_threads(s);
    s->rate_since = s->rate_t0 = s->adapt_at = qpc_s(s);
    SetEvent(s->ready);
    double next = now, next_enum = now + ENUM_MS / 1000.0, next_own = now + OWN_MS / 1000.0;
    double enum_gap = ENUM_MS / 1000.0;
    for (;;) {
        now = qpc_s(s);
        if (now >= next_enum) {
            if (WaitForSingleObject(s->process, 0) == WAIT_OBJECT_0)
                break;
            if (now >= next_own) {
                refresh_own(s);
                next_own = now + OWN_MS / 1000.0;
            }
            /* often while threads come and go, seldom while they do not */
            if (enumerate_threads(s))
                enum_gap = ENUM_MS / 1000.0;
            else if (enum_gap < ENUM_MAX_MS / 1000.0)
                enum_gap *= 2;
            next_enum = now + enum_gap;
            s->t_enum += qpc_s(s) - now;
        }
        if (!s->own_modules && now - s->last_modules >= (s->modules_read ? MODULES_MS : MODULES_RETRY_MS) / 1000.0) {
            double m0 = qpc_s(s);
            refresh_modules(s, now);
            s->t_modules += qpc_s(s) - m0;
        }
        if (s->own_pending && now - s->own_pending_at > END_GRACE_S)
            own_pending_settle(s, false);
        bool gone = false;
        for (size_t i = 0; i < s->nthreads;) {
            if (!sample_thread(s, &s->threads[i], now)) {
                thread_end(s, &s->threads[i]);
                s->threads[i] = s->threads[--s->nthreads];
                gone = true;
                continue;
            }
            i++;
        }
        if (gone && WaitForSingleObject(s->process, 0) == WAIT_OBJECT_0)
            break;
        s->ticks++;
        adapt_rate(s, now);
        next += s->period_s;
        now = qpc_s(s);
        if (next < now)
            next = now;   /* behind: no catching up */
        /* waits have a granularity of a millisecond, and on a busy machine
         * last longer: wait only for whole milliseconds ahead (a yield
         * instead would hand a busy target's core over for a time slice) */
        DWORD ms = (DWORD)((next - now) * 1000.0);
        if (ms) {
            double w0 = now;
            if (WaitForSingleObject(s->stop_event, ms) == WAIT_OBJECT_0)
                break;
            s->t_wait += qpc_s(s) - w0;
        } else if (WaitForSingleObject(s->stop_event, 0) == WAIT_OBJECT_0) {
            break;
        }
    }
    if (s->own_pending)
        own_pending_settle(s, WaitForSingleObject(s->process, 0) == WAIT_OBJECT_0);
    timeEndPeriod(1);
    return 0;
}

static hs_sampler *suspend_start(const hs_sampler_config *c, hs_sampleset *out, hs_sampler_refusal *why)
{
    hs_sampler *s = hs_xcalloc(1, sizeof *s);
    s->cfg = *c;
    s->out = out;
    QueryPerformanceFrequency(&s->qpf);
    s->auto_rate = !(c->rate_hz > 0);
    s->rate = s->rate_live = s->auto_rate ? HS_RATE_MAX : c->rate_hz;   /* until the first suspensions tell */
    s->rate_lo = s->rate_hi = s->rate;
    s->period_s = 1.0 / s->rate;
    wchar_t every[8] = L"";
    GetEnvironmentVariableW(L"" ENV_SUSPEND_ALL, every, 8);
    s->suspend_all = every[0] && wcscmp(every, L"0") != 0;
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    s->next_thread = (get_next_thread_fn)(void (*)(void))GetProcAddress(ntdll, "NtGetNextThread");
    s->query_thread = (query_thread_fn)(void (*)(void))GetProcAddress(ntdll, "NtQueryInformationThread");
    ULONG64 cyc = 0;
    s->cycles = QueryThreadCycleTime(GetCurrentThread(), &cyc) && cyc != 0;
    s->process = OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ | SYNCHRONIZE, FALSE, c->pid);
    if (!s->next_thread || !s->process) {
        snprintf(why->text, sizeof why->text, "cannot sample process %u: %s", c->pid,
                 s->process ? "NtGetNextThread is missing" : hs_win_error(GetLastError()));
        goto fail;
    }
    s->bits = c->bits == 32 ? 32 : 64;
    s->scan_list_gap = MODULES_RETRY_MS / 1000.0;
    s->grab = hs_grabber_new(STACK_COPY, s->bits);
    if (!s->grab) {
        snprintf(why->text, sizeof why->text, "cannot start the sampler: %s", hs_win_error(GetLastError()));
        goto fail;
    }
    if (s->bits == 32 && s->cfg.true_returns)
        hs_grab_while_stopped(s->grab, true_returns_now, s);
    s->map = hs_codemap_new(read_target, s);
    hs_codemap_set_bits(s->map, s->bits);
    set_quick_calls(s->map, s->bits);
    hs_codemap_set_pdb_frames(s->map, s->cfg.pdb_frames, s->cfg.pdb_frames_ctx);
    s->stop_event = CreateEventW(NULL, TRUE, FALSE, NULL);
    s->ready = CreateEventW(NULL, TRUE, FALSE, NULL);
    s->thread = CreateThread(NULL, 0, sampler_main, s, 0, NULL);
    if (!s->thread) {
        snprintf(why->text, sizeof why->text, "cannot start the sampler: %s", hs_win_error(GetLastError()));
        goto fail;
    }
    /* the first round of listings is done before the target goes on */
    WaitForSingleObject(s->ready, 10000);
    return s;
fail:
    if (s->grab)
        hs_grabber_free(s->grab);
    if (s->map)
        hs_codemap_free(s->map);
    if (s->process)
        CloseHandle(s->process);
    free(s);
    return NULL;
}

static void suspend_stop(hs_sampler *s, hs_sampler_stats *st)
{
    SetEvent(s->stop_event);
    memset(st, 0, sizeof *st);
    /* a round takes milliseconds; a thread stuck in a context the watchdog
     * gave up on (the sampled thread was resumed) does not come back, nor
     * one inside VirtualQueryEx when the target ended (under Wine a system
     * APC of the target's, waited for with no limit: hook/base/remote_win.h;
     * a query per sample through remote_win's thread would cost too much) */
    int waited_gone = 0;
    while (WaitForSingleObject(s->thread, 1000) != WAIT_OBJECT_0) {
        bool gone = WaitForSingleObject(s->process, 0) == WAIT_OBJECT_0;
        if (hs_grabber_stuck(s->grab) || (gone && ++waited_gone >= 5)) {
            TerminateThread(s->thread, 0);
            st->stalled = !gone;
            break;
        }
    }
    CloseHandle(s->thread);
    for (size_t i = 0; i < s->nthreads; i++)
        thread_end(s, &s->threads[i]);
    s->nthreads = 0;
    /* the process's CPU time in the window: GetProcessTimes, unless its
     * threads' times add up to more (Wine does not keep the times of
     * threads that ended) */
    FILETIME c, e, k, u;
    st->cpu_s = s->ended_cpu_s > 0 ? s->ended_cpu_s : -1;
    if (GetProcessTimes(s->process, &c, &e, &k, &u) && (double)(ft64(k) + ft64(u)) / 1e7 - s->base_cpu_s > st->cpu_s)
        st->cpu_s = (double)(ft64(k) + ft64(u)) / 1e7 - s->base_cpu_s;
    const hs_image *ims;
    size_t nim = hs_codemap_images(s->map, &ims);
    for (size_t i = 0; i < nim; i++)
        hs_sampleset_module(s->out, ims[i].path, ims[i].base, ims[i].size, ims[i].timestamp, ims[i].unloaded,
                            ims[i].agent);
    st->threads = (uint32_t)s->never;
    st->ticks = s->ticks;
    st->cycle_clock = s->cycles;
    st->suspensions = (int64_t)s->suspensions;
    st->reused = (int64_t)s->reused;
    double end = qpc_s(s);
    set_rate(s, s->rate, end);
    st->rate_hz = end > s->rate_t0 ? s->rate_sum / (end - s->rate_t0) : s->rate;
    if (!s->auto_rate) {
        snprintf(st->rate_reason, sizeof st->rate_reason, "--sample-rate");
    } else if (!s->reason[0]) {
        snprintf(st->rate_reason, sizeof st->rate_reason, "the highest (%.0f Hz): too few suspensions (%zu) to "
                 "measure their cost", HS_RATE_MAX, s->nhold);
    } else {
        /* the mean over the run (rate_hz) takes in the first suspensions'
         * HS_RATE_MAX: say so, or the two figures would contradict */
        char then[96] = "";
        if (s->rate_lo != s->rate_hi)
            snprintf(then, sizeof then, "; then %.0f to %.0f Hz as the cost changed (%u change%s, %.0f Hz at the end)",
                     s->rate_lo, s->rate_hi, s->rate_changes, s->rate_changes == 1 ? "" : "s", s->rate);
        snprintf(st->rate_reason, sizeof st->rate_reason, "%s; %.0f Hz in the first %.3f s, while measuring%s",
                 s->reason, HS_RATE_MAX, s->chosen_at - s->rate_t0, then);
    }
    /* a rate asked that its rounds could not keep (each round takes longer
     * than the period: many threads, slow suspensions, a loaded machine;
     * a chosen rate is the mean of what ran, and stays so): the rate
     * the samples came at is the one that weighs them (pprof's period,
     * speedscope's weights), and the reason says so */
    double reached = end > s->rate_t0 ? (double)s->ticks / (end - s->rate_t0) : 0;
    if (!s->auto_rate && reached > 0 && reached < st->rate_hz * RATE_REACHED_MIN) {
        size_t n = strlen(st->rate_reason);
        snprintf(st->rate_reason + n, sizeof st->rate_reason - n, "; asked %.0f Hz, reached %.0f Hz (its rounds "
                 "took longer than the period)", st->rate_hz, reached);
        st->rate_hz = reached;
    }
    if (s->nstopped) {
        hs_sort(s->stopped_us, s->nstopped, sizeof *s->stopped_us, cmp_float, NULL);
        st->suspended_us_p50 = s->stopped_us[s->nstopped / 2];
        st->suspended_us_p99 = s->stopped_us[(s->nstopped * 99) / 100];
    }
    st->unwind_us_avg = s->unwinds ? s->unwind_s * 1e6 / (double)s->unwinds : 0;
    double held = 0;
    for (size_t i = 0; i < s->nstopped; i++)
        held += s->stopped_us[i];
    st->held_s = held / 1e6;
    st->threads_s = s->threads_s;
    hs_log("sampler: %llu suspensions, %llu samples reused a stack of a thread that did not run, %llu in "
           "hookscope's code alone as the target ended (not walked past it: left out)",
           (unsigned long long)s->suspensions, (unsigned long long)s->reused, (unsigned long long)s->own_at_end);
    if (s->lost_timeout + s->lost_refused + s->lost_own) {
        const own_sample *d = &s->lost_own_first;
        char frames[6 * 20 + 1] = "";
        for (uint32_t i = 0, at = 0; i < d->n && at < sizeof frames; i++)
            at += (uint32_t)snprintf(frames + at, sizeof frames - at, " 0x%llx", (unsigned long long)d->frames[i]);
        snprintf(st->lost_why, sizeof st->lost_why, "%llu of threads whose context did not come in time, %llu "
                 "whose context was refused, %llu in hookscope's code alone (the first at 0x%llx; its walk:%s, "
                 "stopped: %d)", (unsigned long long)s->lost_timeout, (unsigned long long)s->lost_refused,
                 (unsigned long long)s->lost_own, (unsigned long long)d->pc, frames, d->stop);
    }
    if (s->walks32)
        hs_log("sampler: %llu walks of 32-bit stacks, %llu frames, %llu of them found by frame data, %llu by a "
               "scan of the stack (a guess: no frame pointer or frame data led there)",
               (unsigned long long)s->walks32, (unsigned long long)s->frames32, (unsigned long long)s->by_data32,
               (unsigned long long)s->scanned32);
    hs_log("sampler: %llu rounds; seconds in clocks %.3f, suspend/copy/resume %.3f, unwind %.3f, thread "
           "lists %.3f, module lists %.3f (%u, %u of them unreadable), waiting %.3f", (unsigned long long)s->ticks,
           s->t_clock, s->t_grab, s->unwind_s, s->t_enum, s->t_modules, s->module_lists, s->module_lists_failed,
           s->t_wait);
    hs_grabber_free(s->grab);
    hs_codemap_free(s->map);
    CloseHandle(s->process);
    CloseHandle(s->stop_event);
    CloseHandle(s->ready);
    free(s->threads);
    free(s->ever);
    free(s->unknown_pages);
    hs_owncode_free(&s->own);
    free(s->stopped_us);
    free(s->hold_us);
    free(s);
}

const hs_sampler_backend hs_sampler_suspend = {
    "suspend", "suspends each thread in turn (no privileges)", suspend_start, suspend_stop, suspend_rate_now, true,
};
