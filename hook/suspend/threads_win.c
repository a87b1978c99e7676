/*
 * hook/suspend/threads_win.c - suspend threads and read their contexts with
 * bounded waits (see threads_win.h for the contract).
 *
 * What Wine 8 does (dlls/ntdll/unix/thread.c, server/thread.c): a
 * suspended thread is stopped by a signal and stops only once it handles
 * it; GetThreadContext on it gets "pending" from the server and then
 * waits, with no timeout, until the thread has stopped and sent its
 * registers. A thread whose creator is suspended inside CreateThread
 * (right after the server has made the new thread, before the Unix thread
 * exists) cannot send anything until its creator runs again, so that wait
 * can last for ever. A thread that ends while being waited for ends the
 * wait with an error.
 *
 * So GetThreadContext runs on worker threads. A request hands a worker a
 * duplicate of the thread handle (the worker closes it); the worker writes
 * into its own buffer only; the caller waits for the answer with a
 * timeout and copies the registers out. A caller that gives up marks the
 * request abandoned: the worker drops the late answer and becomes free
 * again when its call finally returns, and a late answer can never land in
 * memory that is in use for something else. Workers are added (up to
 * MAX_WORKERS) only when nothing is held.
 *
 * hs_suspend_all suspends everything, then reads every context; when one
 * does not come within the round's wait, it resumes everything and tries
 * again after a pause, with longer waits each round (a loaded machine can
 * take long to schedule a thread that has to stop), until its budget is
 * spent.
 *
 * Everything held is registered (single threads in a slot table, sets in
 * a set table) and every resume goes through an atomic exchange, so a
 * thread is resumed exactly once, by the normal path or by
 * hs_suspend_release_all, whichever comes first.
 */
#include "hook/suspend/threads_win.h"

#include <string.h>
#include <winternl.h>

#define START_WORKERS 4
#define MAX_WORKERS 16
#define HELD_SLOTS 64
#define SET_SLOTS 8

#define THREAD_ACCESS (THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_SET_CONTEXT | \
                       THREAD_QUERY_LIMITED_INFORMATION | SYNCHRONIZE)

const char *hs_suspend_status_name(hs_suspend_status s)
{
    switch (s) {
    case HS_SUSPEND_OK: return "ok";
    case HS_SUSPEND_GONE: return "gone";
    case HS_SUSPEND_TIMEOUT: return "timeout";
    case HS_SUSPEND_NO_WORKER: return "no-worker";
    case HS_SUSPEND_DENIED: return "denied";
    case HS_SUSPEND_HELD: return "held";
    }
    return "?";
}

/* ---- context workers ---------------------------------------------------------- */

enum { W_IDLE, W_BUSY, W_REPLIED, W_ABANDONED };

typedef struct ctx_worker {
    CONTEXT ctx;               /* the worker's own buffer (first: aligned) */
    HANDLE thread, go, done;
    DWORD tid;
    volatile LONG ready;       /* its loop runs */
    volatile LONG state;       /* W_* */
    HANDLE target;             /* the request: a duplicate, closed by the worker */
    int wow64;                 /*   and whether its 32-bit registers are asked (HS_SUSPEND_WOW64) */
    BOOL ok;                   /* the reply */
    DWORD err;                 /*   and GetLastError when it failed */
} ctx_worker;

static ctx_worker workers[MAX_WORKERS];
static volatile LONG n_workers;
static volatile LONG stopping;
static void (*worker_start_hook)(void);
static SRWLOCK grow_lock = SRWLOCK_INIT;

/* hs_suspend_one's watchdog (see "one thread" below) */
static HANDLE watchdog, watchdog_wake;
static LARGE_INTEGER qpf;
static void stop_watchdog(void);

static void (*volatile idle_fn)(void);
static volatile DWORD idle_ms;

void hs_suspend_on_idle(void (*fn)(void), DWORD every_ms)
{
    idle_ms = every_ms;
    idle_fn = fn;
    if (n_workers)
        SetEvent(workers[0].go);   /* start waiting with the timeout */
}

/* A stopped thread's registers: its own (GetThreadContext), or with
 * HS_SUSPEND_WOW64 its 32-bit ones as a WOW64_CONTEXT at the start of
 * the buffer (Wow64GetThreadContext: see threads_win.h). */
static BOOL read_context(HANDLE thread, CONTEXT *ctx, int wow64)
{
    if (!wow64)
        return GetThreadContext(thread, ctx);
    WOW64_CONTEXT *c32 = (WOW64_CONTEXT *)ctx;
    DWORD want = ctx->ContextFlags;
    memset(c32, 0, sizeof *c32);
    c32->ContextFlags = want;
    return Wow64GetThreadContext(thread, c32);
}

static DWORD WINAPI worker_main(void *arg)
{
    ctx_worker *w = arg;
    if (worker_start_hook)
        worker_start_hook();
    InterlockedExchange(&w->ready, 1);
    for (;;) {
        void (*fn)(void) = w == &workers[0] ? idle_fn : NULL;
        if (WaitForSingleObject(w->go, fn ? idle_ms : INFINITE) == WAIT_TIMEOUT) {
            if (!stopping)
                fn();
            continue;
        }
        if (stopping)
            return 0;
        if (w->state != W_BUSY && w->state != W_ABANDONED)
            continue;
        BOOL ok = read_context(w->target, &w->ctx, w->wow64);
        w->err = ok ? 0 : GetLastError();
        CloseHandle(w->target);
        w->target = NULL;
        w->ok = ok;
        MemoryBarrier();
        if (InterlockedCompareExchange(&w->state, W_REPLIED, W_BUSY) == W_BUSY)
            SetEvent(w->done);
        else
            InterlockedExchange(&w->state, W_IDLE);   /* abandoned: the answer is dropped */
    }
}

/* Start one more worker (nothing may be held by the caller). Returns 0 or -1. */
static int add_worker(void)
{
    int rc = -1;
    AcquireSRWLockExclusive(&grow_lock);
    LONG i = n_workers;
    if (i < MAX_WORKERS) {
        ctx_worker *w = &workers[i];
        w->go = CreateEventW(NULL, FALSE, FALSE, NULL);
        w->done = CreateEventW(NULL, FALSE, FALSE, NULL);
        w->state = W_IDLE;
        if (w->go && w->done)
            w->thread = CreateThread(NULL, 64 * 1024, worker_main, w, STACK_SIZE_PARAM_IS_A_RESERVATION,
                                     &w->tid);
        if (w->thread) {
            MemoryBarrier();
            InterlockedExchange(&n_workers, i + 1);
            rc = 0;
        } else {
            if (w->go)
                CloseHandle(w->go);
            if (w->done)
                CloseHandle(w->done);
            memset(w, 0, sizeof *w);
        }
    }
    ReleaseSRWLockExclusive(&grow_lock);
    return rc;
}

int hs_suspend_init(void (*on_worker_start)(void))
{
    QueryPerformanceFrequency(&qpf);
    if (n_workers >= START_WORKERS)
        return 0;
    stopping = 0;
    worker_start_hook = on_worker_start;
    while (n_workers < START_WORKERS)
        if (add_worker() < 0)
            return -1;
    /* wait until they run, so the first calls find them ready */
    for (LONG i = 0; i < n_workers; i++) {
        DWORD t0 = GetTickCount();
        while (!workers[i].ready) {
            if (GetTickCount() - t0 > 10000) {
                SetLastError(ERROR_TIMEOUT);
                return -1;
            }
            Sleep(1);
        }
    }
    return 0;
}

int hs_suspend_shutdown(DWORD timeout_ms)
{
    int rc = 0;
    stopping = 1;
    MemoryBarrier();
    stop_watchdog();
    DWORD t0 = GetTickCount();
    for (LONG i = 0; i < n_workers; i++) {
        ctx_worker *w = &workers[i];
        if (!w->thread)
            continue;
        SetEvent(w->go);
        DWORD spent = GetTickCount() - t0;
        if (WaitForSingleObject(w->thread, spent < timeout_ms ? timeout_ms - spent : 0) != WAIT_OBJECT_0) {
            /* still waiting in GetThreadContext for a thread that never
             * stopped: it holds nothing but that wait */
            TerminateThread(w->thread, 0);
            if (WaitForSingleObject(w->thread, 1000) != WAIT_OBJECT_0) {
                rc = -1;
                continue;
            }
        }
        CloseHandle(w->thread);
        CloseHandle(w->go);
        CloseHandle(w->done);
        memset(w, 0, sizeof *w);
    }
    if (rc == 0)
        n_workers = 0;
    return rc;
}

int hs_suspend_is_worker(DWORD tid)
{
    for (LONG i = 0; i < n_workers; i++)
        if (workers[i].tid == tid)
            return 1;
    return 0;
}

/* A free, running worker, marked busy; NULL when there is none. */
static ctx_worker *claim_worker(void)
{
    for (LONG i = 0; i < n_workers; i++) {
        ctx_worker *w = &workers[i];
        if (w->ready && InterlockedCompareExchange(&w->state, W_BUSY, W_IDLE) == W_IDLE)
            return w;
    }
    return NULL;
}

static void unclaim_worker(ctx_worker *w)
{
    InterlockedExchange(&w->state, W_IDLE);
}

/* Has the thread ended? (1: yes; a handle without SYNCHRONIZE cannot say) */
static int thread_gone(HANDLE thread)
{
    return WaitForSingleObject(thread, 0) == WAIT_OBJECT_0;
}

/* Have claimed worker `w` read the context of `thread` into *out within
 * `timeout_ms`. The worker is free again (or abandoned) on return. */
static DWORD fetch_error;   /* why the last fetch failed (HS_SUSPEND_DENIED) */

static hs_suspend_status fetch(ctx_worker *w, HANDLE thread, CONTEXT *out, DWORD flags, int wow64,
                               DWORD timeout_ms)
{
    HANDLE dup;
    if (!DuplicateHandle(GetCurrentProcess(), thread, GetCurrentProcess(), &dup, 0, FALSE,
                         DUPLICATE_SAME_ACCESS)) {
        fetch_error = GetLastError();
        unclaim_worker(w);
        return thread_gone(thread) ? HS_SUSPEND_GONE : HS_SUSPEND_DENIED;
    }
    w->target = dup;
    w->wow64 = wow64;
    memset(&w->ctx, 0, sizeof w->ctx);
    w->ctx.ContextFlags = flags;
    ResetEvent(w->done);
    MemoryBarrier();
    SetEvent(w->go);
    DWORD t0 = GetTickCount();
    for (;;) {
        DWORD spent = GetTickCount() - t0;
        WaitForSingleObject(w->done, spent < timeout_ms ? timeout_ms - spent : 0);
        if (w->state == W_REPLIED)
            break;
        if (GetTickCount() - t0 >= timeout_ms) {
            LONG was = InterlockedCompareExchange(&w->state, W_ABANDONED, W_BUSY);
            if (was == W_REPLIED)
                break;   /* it came just now */
            /* abandoned; or, were the worker ever found in another state,
             * left to it rather than waited for without end */
            return HS_SUSPEND_TIMEOUT;
        }
    }
    MemoryBarrier();
    hs_suspend_status st = HS_SUSPEND_OK;
    if (w->ok) {
        memcpy(out, &w->ctx, sizeof *out);
    } else {
        fetch_error = w->err;
        st = thread_gone(thread) ? HS_SUSPEND_GONE : HS_SUSPEND_DENIED;
    }
    unclaim_worker(w);
    return st;
}

/* A worker for a caller that holds nothing: one more is started when all
 * are busy (it may take a moment to run: then NULL this time). */
static ctx_worker *worker_for_new_request(void)
{
    ctx_worker *w = claim_worker();
    if (!w && n_workers < MAX_WORKERS && add_worker() == 0)
        w = claim_worker();
    return w;
}

/* ---- the registry of what is held ------------------------------------------------ */

#define SLOT_RESERVED ((HANDLE)(intptr_t)-2)

static HANDLE volatile held_one[HELD_SLOTS];
static hs_suspend_set *volatile held_sets[SET_SLOTS];
static SRWLOCK sets_lock = SRWLOCK_INIT;

/* Resume the thread in slot i if it is still there (exactly once). */
static int release_slot(int i)
{
    HANDLE h = held_one[i];
    if (!h || h == SLOT_RESERVED)
        return 0;
    if (InterlockedCompareExchangePointer((void *volatile *)&held_one[i], NULL, h) != h)
        return 0;
    ResumeThread(h);
    return 1;
}

static volatile LONG64 held_deadline[HELD_SLOTS];   /* hs_suspend_one's, in performance-counter
                                                       ticks; 0: none */

/* Resume set entry i if the set still holds it (exactly once). */
static int release_entry(hs_suspended *e)
{
    if (!InterlockedExchange(&e->held, 0))
        return 0;
    ResumeThread(e->handle);
    return 1;
}

int hs_suspend_release_all(void)
{
    int n = 0;
    for (int i = 0; i < HELD_SLOTS; i++)
        n += release_slot(i);
    /* best effort on the lock: this may run from a crash handler */
    int locked = 0;
    for (int i = 0; i < 100 && !(locked = TryAcquireSRWLockShared(&sets_lock)); i++)
        Sleep(1);
    for (int k = 0; k < SET_SLOTS; k++) {
        hs_suspend_set *s = held_sets[k];
        if (!s)
            continue;
        for (size_t i = 0; i < s->n; i++)
            n += release_entry(&s->t[i]);
    }
    if (locked)
        ReleaseSRWLockShared(&sets_lock);
    return n;
}

/* ---- one thread ------------------------------------------------------------------- */

/* A single thread's context is read on the caller's own thread: no
 * hand-over to a worker, which on a busy machine waits for a time slice
 * each time, while the thread stays stopped. The wait is bounded by the
 * watchdog instead: each call publishes a deadline in its slot, and the
 * watchdog resumes a thread whose deadline passed (the caller then reports
 * a timeout). Whoever takes the deadline first, with an atomic exchange,
 * owns the thread: the caller (the thread is then held) or the watchdog. */
#define WATCH_MS 20
#define DEADLINE_TAKEN (-1)

static volatile LONG in_context[HELD_SLOTS];       /* the caller is inside GetThreadContext */
static SRWLOCK watchdog_lock = SRWLOCK_INIT;

static LONG64 qpc_now(void)
{
    LARGE_INTEGER c;
    QueryPerformanceCounter(&c);
    return c.QuadPart;
}

static DWORD WINAPI watchdog_main(void *arg)
{
    (void)arg;
    while (!stopping) {
        WaitForSingleObject(watchdog_wake, WATCH_MS);
        LONG64 now = qpc_now();
        for (int i = 0; i < HELD_SLOTS; i++) {
            LONG64 dl = held_deadline[i];
            if (dl > 0 && now > dl &&
                InterlockedCompareExchange64(&held_deadline[i], DEADLINE_TAKEN, dl) == dl)
                release_slot(i);
        }
    }
    return 0;
}

static int start_watchdog(void)
{
    if (watchdog)
        return 0;
    AcquireSRWLockExclusive(&watchdog_lock);
    if (!watchdog) {
        QueryPerformanceFrequency(&qpf);
        stopping = 0;
        if (!watchdog_wake)
            watchdog_wake = CreateEventW(NULL, FALSE, FALSE, NULL);
        HANDLE t = watchdog_wake ? CreateThread(NULL, 64 * 1024, watchdog_main, NULL,
                                                STACK_SIZE_PARAM_IS_A_RESERVATION, NULL) : NULL;
        if (t)
            SetThreadPriority(t, THREAD_PRIORITY_HIGHEST);
        MemoryBarrier();
        watchdog = t;
    }
    ReleaseSRWLockExclusive(&watchdog_lock);
    return watchdog ? 0 : -1;
}

static void stop_watchdog(void)
{
    if (!watchdog)
        return;
    SetEvent(watchdog_wake);
    WaitForSingleObject(watchdog, INFINITE);
    CloseHandle(watchdog);
    watchdog = NULL;
}

int hs_suspend_one_stuck(void)
{
    for (int i = 0; i < HELD_SLOTS; i++)
        if (in_context[i] && held_deadline[i] == DEADLINE_TAKEN)
            return 1;
    return 0;
}

hs_suspend_status hs_suspend_one(HANDLE thread, CONTEXT *ctx, DWORD timeout_ms, unsigned flags)
{
    int on_worker = (flags & HS_SUSPEND_NEW) != 0;
    if ((on_worker && !n_workers) || ((!on_worker || (flags & HS_SUSPEND_WATCH_HELD)) && start_watchdog() < 0))
        return HS_SUSPEND_DENIED;
    int slot = -1;
    for (int i = 0; i < HELD_SLOTS && slot < 0; i++)
        if (!in_context[i] &&
            InterlockedCompareExchangePointer((void *volatile *)&held_one[i], SLOT_RESERVED, NULL) == NULL)
            slot = i;
    if (slot < 0)
        return HS_SUSPEND_DENIED;
    held_deadline[slot] = 0;    /* the slot's last call may have left its deadline taken */
    ctx_worker *w = NULL;
    if (on_worker && !(w = worker_for_new_request())) {
        held_one[slot] = NULL;
        return HS_SUSPEND_NO_WORKER;
    }
    DWORD count = SuspendThread(thread);
    if (count == (DWORD)-1 || (count > 0 && (flags & HS_SUSPEND_NOT_IF_HELD))) {
        if (count != (DWORD)-1)
            ResumeThread(thread);   /* suspended already (created suspended, a freeze): not
                                       running, and under Wine a thread that never ran gives
                                       no context */
        if (w)
            unclaim_worker(w);
        held_one[slot] = NULL;
        if (count != (DWORD)-1)
            return HS_SUSPEND_HELD;
        return thread_gone(thread) ? HS_SUSPEND_GONE : HS_SUSPEND_DENIED;
    }
    LONG64 dl = qpc_now() + qpf.QuadPart * (LONG64)timeout_ms / 1000;
    int wow64 = (flags & HS_SUSPEND_WOW64) != 0;
    DWORD want = ctx->ContextFlags ? ctx->ContextFlags : wow64 ? WOW64_CONTEXT_CONTROL : CONTEXT_CONTROL;
    if (w) {
        /* a thread that may be under creation: its context is read by a
         * worker, and the caller waits for it with a timeout */
        MemoryBarrier();
        held_one[slot] = thread;
        hs_suspend_status st = fetch(w, thread, ctx, want, wow64, timeout_ms);
        if (st != HS_SUSPEND_OK) {
            release_slot(slot);
            return st;
        }
        if (flags & HS_SUSPEND_WATCH_HELD)
            held_deadline[slot] = dl;
        return HS_SUSPEND_OK;
    }
    held_deadline[slot] = dl;
    in_context[slot] = 1;
    MemoryBarrier();
    held_one[slot] = thread;
    ctx->ContextFlags = want;
    BOOL ok = read_context(thread, ctx, wow64);
    DWORD err = ok ? 0 : GetLastError();
    /* ours, unless the watchdog took it meanwhile (then it resumed it);
     * watched while held: the deadline stays for hs_resume_one to take */
    int ours = ok && (flags & HS_SUSPEND_WATCH_HELD)
                   ? held_deadline[slot] == dl
                   : InterlockedCompareExchange64(&held_deadline[slot], 0, dl) == dl;
    in_context[slot] = 0;
    if (!ours)
        return HS_SUSPEND_TIMEOUT;
    if (!ok) {
        release_slot(slot);
        fetch_error = err;
        return thread_gone(thread) ? HS_SUSPEND_GONE : HS_SUSPEND_DENIED;
    }
    return HS_SUSPEND_OK;
}

int hs_resume_one(HANDLE thread)
{
    for (int i = 0; i < HELD_SLOTS; i++) {
        if (held_one[i] != thread)
            continue;
        LONG64 dl = held_deadline[i];
        if (dl == DEADLINE_TAKEN || (dl > 0 && InterlockedCompareExchange64(&held_deadline[i], 0, dl) != dl))
            return 0;   /* the watchdog let it go */
        return release_slot(i);
    }
    return 0;
}

/* ---- every thread of a process ------------------------------------------------------ */

/* The threads of a process come from one system snapshot per pass
 * (NtQuerySystemInformation, into our own memory): it lists live threads
 * only, where walking thread handles would also visit every ended thread
 * whose object some handle keeps alive, several calls to the server each. */
typedef LONG (NTAPI *query_system_fn)(ULONG cls, void *buf, ULONG len, ULONG *ret);

#define SYSTEM_PROCESS_INFORMATION_CLASS 5
#define STATUS_INFO_LENGTH_MISMATCH_ ((LONG)0xC0000004)

/* (x86: 0xB8 and 0x40) */
_Static_assert(sizeof(SYSTEM_PROCESS_INFORMATION) == (sizeof(void *) == 8 ? 0x100 : 0xB8), "threads follow it");
_Static_assert(sizeof(SYSTEM_THREAD_INFORMATION) == (sizeof(void *) == 8 ? 0x50 : 0x40), "thread record");

static query_system_fn query_system(void)
{
    static query_system_fn fn;
    if (!fn)
        fn = (query_system_fn)(void (*)(void))GetProcAddress(GetModuleHandleW(L"ntdll.dll"),
                                                              "NtQuerySystemInformation");
    return fn;
}

/* One snapshot of every process's threads, in memory of our own (kept
 * between calls, grown as needed). NULL when it cannot be taken. */
static SRWLOCK snap_lock = SRWLOCK_INIT;
static void *snap_buf;
static ULONG snap_size;
static LONG snap_status;   /* the last failure */

static const SYSTEM_PROCESS_INFORMATION *snapshot(void)
{
    query_system_fn q = query_system();
    if (!q)
        return NULL;
    for (int tries = 0; tries < 8; tries++) {
        if (!snap_buf) {
            snap_size = snap_size ? snap_size : 256 * 1024;
            snap_buf = VirtualAlloc(NULL, snap_size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
            if (!snap_buf)
                return NULL;
        }
        ULONG need = 0;
        LONG st = q(SYSTEM_PROCESS_INFORMATION_CLASS, snap_buf, snap_size, &need);
        if (st == 0)
            return snap_buf;
        snap_status = st;
        if (st != STATUS_INFO_LENGTH_MISMATCH_)
            continue;   /* (a process came or went meanwhile: try again) */
        VirtualFree(snap_buf, 0, MEM_RELEASE);
        snap_buf = NULL;
        snap_size = (need > snap_size ? need : snap_size) * 2;
    }
    return NULL;
}

int hs_suspend_count_others(int (*skip)(DWORD tid, void *ud), void *ud)
{
    DWORD pid = GetCurrentProcessId(), me = GetCurrentThreadId();
    int n = -1;
    AcquireSRWLockExclusive(&snap_lock);
    const SYSTEM_PROCESS_INFORMATION *p = snapshot();
    while (p && (DWORD)(uintptr_t)p->UniqueProcessId != pid)
        p = p->NextEntryOffset ? (const SYSTEM_PROCESS_INFORMATION *)((const char *)p + p->NextEntryOffset)
                               : NULL;
    if (p) {
        const SYSTEM_THREAD_INFORMATION *th = (const SYSTEM_THREAD_INFORMATION *)(p + 1);
        n = 0;
        for (ULONG k = 0; k < p->NumberOfThreads; k++) {
            DWORD tid = (DWORD)(uintptr_t)th[k].ClientId.UniqueThread;
            if (tid && tid != me && !hs_suspend_is_worker(tid) && !(skip && skip(tid, ud)))
                n++;
        }
    }
    ReleaseSRWLockExclusive(&snap_lock);
    return n;
}

static int grow(hs_suspend_set *s)
{
    size_t cap = s->cap ? s->cap * 2 : 128;
    hs_suspended *t = VirtualAlloc(NULL, cap * sizeof *t, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!t)
        return -1;
    if (s->n)
        memcpy(t, s->t, s->n * sizeof *t);
    void *old = s->mem;
    AcquireSRWLockExclusive(&sets_lock);
    s->t = t;
    s->mem = t;
    s->cap = cap;
    ReleaseSRWLockExclusive(&sets_lock);
    if (old)
        VirtualFree(old, 0, MEM_RELEASE);
    return 0;
}

static int held_by(const hs_suspend_set *s, DWORD tid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->t[i].tid == tid)
            return 1;
    return 0;
}

/* Resume and forget every thread of the set (its memory stays). */
static void release_set(hs_suspend_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        release_entry(&s->t[i]);
        CloseHandle(s->t[i].handle);
    }
    s->n = 0;
}

/* Drop entry i (a thread that ended) from the set. */
static void drop_entry(hs_suspend_set *s, size_t i)
{
    release_entry(&s->t[i]);
    CloseHandle(s->t[i].handle);
    /* (under the lock: hs_suspend_release_all must not see the last
     * entry twice) */
    AcquireSRWLockExclusive(&sets_lock);
    s->t[i] = s->t[s->n - 1];
    s->n--;
    ReleaseSRWLockExclusive(&sets_lock);
}

const char *hs_suspend_slowest_name(uint8_t what)
{
    static const char *const names[] = { "snapshot", "open", "suspend", "context" };
    return what < sizeof names / sizeof *names ? names[what] : "?";
}

/* Note a call that took since `t` (GetTickCount), when it is the slowest yet. */
static void note_call(hs_suspend_set *s, DWORD t, uint8_t what, uint32_t pass)
{
    DWORD ms = GetTickCount() - t;
    if (ms > s->stats.slowest_ms) {
        s->stats.slowest_ms = ms;
        s->stats.slowest_what = what;
        s->stats.slowest_pass = pass;
    }
}

/* Suspend every thread of `process` not held yet, until a pass finds no
 * new one. Returns 0, or -1 (no snapshot, out of memory, the budget spent
 * before a pass: s->why set). */
static int suspend_everyone(hs_suspend_set *s, DWORD pid, int self, const hs_suspend_opts *o, DWORD t0,
                            DWORD budget)
{
    DWORD me = GetCurrentThreadId();
    int rc = 0;
    AcquireSRWLockExclusive(&snap_lock);
    for (int pass = 0; pass < 64 && rc == 0; pass++) {
        if (GetTickCount() - t0 >= budget) {
            /* threads keep coming (each pass a server call per thread) */
            s->why = HS_SUSPEND_TIMEOUT;
            rc = -1;
            break;
        }
        DWORD tc = GetTickCount();
        const SYSTEM_PROCESS_INFORMATION *p = snapshot();
        note_call(s, tc, HS_SLOWEST_SNAPSHOT, (uint32_t)pass + 1);
        if (!p) {
            s->why = HS_SUSPEND_DENIED;
            s->stats.error = (uint32_t)snap_status;
            rc = -1;
            break;
        }
        while ((DWORD)(uintptr_t)p->UniqueProcessId != pid) {
            if (!p->NextEntryOffset) {
                p = NULL;
                break;
            }
            p = (const SYSTEM_PROCESS_INFORMATION *)((const char *)p + p->NextEntryOffset);
        }
        if (!p) {
            s->why = HS_SUSPEND_GONE;   /* the process has ended */
            rc = -1;
            break;
        }
        const SYSTEM_THREAD_INFORMATION *th = (const SYSTEM_THREAD_INFORMATION *)(p + 1);
        int found = 0;
        for (ULONG k = 0; k < p->NumberOfThreads; k++) {
            DWORD tid = (DWORD)(uintptr_t)th[k].ClientId.UniqueThread;
            if (tid == 0 || held_by(s, tid) || (self && (tid == me || hs_suspend_is_worker(tid))) ||
                (o->skip && o->skip(tid, o->ud)))
                continue;
            if (s->n == s->cap && grow(s) < 0) {
                s->why = HS_SUSPEND_DENIED;
                rc = -1;
                break;
            }
            tc = GetTickCount();
            HANDLE h = OpenThread(THREAD_ACCESS, FALSE, tid);
            note_call(s, tc, HS_SLOWEST_OPEN, (uint32_t)pass + 1);
            if (!h)
                continue;   /* ended meanwhile */
            tc = GetTickCount();
            DWORD was = SuspendThread(h);
            note_call(s, tc, HS_SLOWEST_SUSPEND, (uint32_t)pass + 1);
            if (was == (DWORD)-1) {
                CloseHandle(h);
                continue;   /* ending */
            }
            hs_suspended *e = &s->t[s->n];
            e->handle = h;
            e->tid = tid;
            e->ctx.ContextFlags = 0;
            e->held = 1;
            MemoryBarrier();
            s->n++;
            found = 1;
        }
        if (!found)
            break;
    }
    ReleaseSRWLockExclusive(&snap_lock);
    return rc;
}

/* One round: suspend everyone, then read every context, each within
 * `wait_ms` (and the deadline). 1: all held with contexts; 0: a context
 * did not come (all released, try again); -1: failure (all released). */
static int one_round(hs_suspend_set *s, DWORD pid, int self, const hs_suspend_opts *o, DWORD flags,
                     DWORD wait_ms, DWORD t0, DWORD budget)
{
    if (suspend_everyone(s, pid, self, o, t0, budget) < 0) {
        release_set(s);
        return -1;
    }
    for (size_t i = 0; i < s->n;) {
        hs_suspended *e = &s->t[i];
        DWORD spent = GetTickCount() - t0;
        DWORD left = spent < budget ? budget - spent : 0;
        ctx_worker *w = claim_worker();
        DWORD tc = GetTickCount();
        hs_suspend_status st = w ? fetch(w, e->handle, &e->ctx, flags, 0, wait_ms < left ? wait_ms : left)
                                 : HS_SUSPEND_NO_WORKER;
        note_call(s, tc, HS_SLOWEST_CONTEXT, 0);
        if (st == HS_SUSPEND_OK) {
            i++;
            continue;
        }
        if (st == HS_SUSPEND_GONE) {
            s->stats.gone++;
            drop_entry(s, i);
            continue;
        }
        if (st == HS_SUSPEND_TIMEOUT) {
            s->stats.timeouts++;
            s->stats.stuck_tid = e->tid;
        } else if (st == HS_SUSPEND_NO_WORKER) {
            s->stats.no_worker++;
        } else {
            /* a thread whose handle or context failed and that has not
             * ended (yet): try the round again */
            s->stats.denied++;
            s->stats.error = fetch_error;
        }
        s->why = st;
        release_set(s);
        return 0;
    }
    if (o->test_stuck && s->n) {
        /* as if the last context had not come */
        DWORD spent = GetTickCount() - t0;
        Sleep(spent < budget ? (wait_ms < budget - spent ? wait_ms : budget - spent) : 0);
        s->stats.timeouts++;
        s->stats.stuck_tid = s->t[s->n - 1].tid;
        s->why = HS_SUSPEND_TIMEOUT;
        release_set(s);
        return 0;
    }
    return 1;
}

int hs_suspend_all(hs_suspend_set *s, HANDLE process, const hs_suspend_opts *o)
{
    static const hs_suspend_opts defaults;
    if (!o)
        o = &defaults;
    memset(s, 0, sizeof *s);
    DWORD t0 = GetTickCount();
    DWORD budget = o->budget_ms ? o->budget_ms : 10000;
    DWORD flags = o->ctx_flags ? o->ctx_flags : CONTEXT_CONTROL;
    DWORD pid = process == GetCurrentProcess() ? GetCurrentProcessId() : GetProcessId(process);
    int self = pid == GetCurrentProcessId();
    s->why = HS_SUSPEND_DENIED;
    if (!n_workers || !pid || !query_system() || grow(s) < 0)
        goto fail;
    AcquireSRWLockExclusive(&sets_lock);
    for (int k = 0; k < SET_SLOTS && !s->registered; k++) {
        if (!held_sets[k]) {
            held_sets[k] = s;
            s->registered = k + 1;
        }
    }
    ReleaseSRWLockExclusive(&sets_lock);
    if (!s->registered)
        goto fail;

    DWORD wait_ms = 50, pause = 1;
    for (;;) {
        s->stats.attempts++;
        s->why = HS_SUSPEND_OK;
        int r = one_round(s, pid, self, o, flags, wait_ms, t0, budget);
        if (r > 0) {
            s->stats.ms = GetTickCount() - t0;
            return (int)s->n;
        }
        if (r < 0)
            break;
        /* nothing is held now: the thread being created gets to start,
         * and a worker can be added if every one is stuck */
        ctx_worker *w = claim_worker();
        if (w)
            unclaim_worker(w);
        else
            add_worker();
        DWORD spent = GetTickCount() - t0;
        if (spent + pause >= budget)
            break;
        Sleep(pause);
        if (pause < 16)
            pause *= 2;
        if (wait_ms < 1000)
            wait_ms *= 2;
    }
fail:
    s->stats.ms = GetTickCount() - t0;
    hs_suspend_status why = s->why == HS_SUSPEND_OK ? HS_SUSPEND_TIMEOUT : s->why;
    hs_suspend_stats stats = s->stats;
    hs_resume_all(s);
    s->why = why;
    s->stats = stats;
    return -1;
}

int hs_suspend_set_rip(hs_suspend_set *s, size_t i, uint64_t rip)
{
    if (i >= s->n || !s->t[i].held)
        return -1;
    hs_suspended *e = &s->t[i];
#if defined(__i386__)
    e->ctx.Eip = (DWORD)rip;
#else
    e->ctx.Rip = rip;
#endif
    e->ctx.ContextFlags = CONTEXT_CONTROL;
    return SetThreadContext(e->handle, &e->ctx) ? 0 : -1;
}

void hs_resume_all(hs_suspend_set *s)
{
    release_set(s);
    AcquireSRWLockExclusive(&sets_lock);
    if (s->registered)
        held_sets[s->registered - 1] = NULL;
    ReleaseSRWLockExclusive(&sets_lock);
    if (s->mem)
        VirtualFree(s->mem, 0, MEM_RELEASE);
    memset(s, 0, sizeof *s);
}
