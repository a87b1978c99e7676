/*
 * hook/suspend/threads_win.h - the one way hookscope stops threads: suspend
 * them, read their contexts, resume them: one thread at a time (the
 * sampler: stop it, read it, copy its stack, let it go) or every thread of
 * a process at once (the patch freeze), in this process or in another
 * one, with a bounded wait everywhere and no thread ever left suspended.
 *
 * Why this needs care: SuspendThread only asks a thread to stop.
 * GetThreadContext then waits until the thread has really stopped and
 * handed over its registers, and under Wine 8 it waits with no timeout:
 * a thread that cannot get there (one being created while its creator is
 * suspended) blocks the caller for good. Two ways out, one per use:
 *  - one thread (hs_suspend_one) that has given a context before: it
 *    exists on the Unix side, so its context comes; the caller reads it
 *    itself, with no hand-over that would keep the thread stopped longer,
 *    and a watchdog resumes the thread at the deadline (a loaded machine),
 *    so it is never left stopped; the caller then reports a timeout.
 *  - one thread seen for the first time (HS_SUSPEND_NEW), which may be in
 *    the case above: its context is read by a worker, as for a freeze.
 *  - every thread (hs_suspend_all): the freeze holds the creator of a
 *    thread being created as well, so that context cannot come while the
 *    round lasts, and the caller (the agent's hooking thread) must never
 *    block: contexts are read by worker threads started beforehand, and
 *    the caller waits for a worker with a timeout.
 * (See threads_win.c for what is known about Wine.)
 *
 * The contract:
 *  - hs_suspend_init() starts the workers; call it where creating threads
 *    and waiting for them is safe (not under the loader lock), before any
 *    other call. hs_suspend_shutdown() stops them.
 *  - Every call returns within its timeout or budget, plus the calls of
 *    the step it was in when the time ran out (one pass over the threads,
 *    resuming what it holds): a server round trip each under Wine, a few
 *    milliseconds, longer when the server is busy with other programs.
 *  - A call that fails holds nothing: every thread it suspended is resumed
 *    (exactly once) before it returns.
 *  - A call that succeeds holds exactly the threads it reports, each
 *    suspended once more than before (a thread the program itself had
 *    suspended stays suspended by the program), until hs_resume_one or
 *    hs_resume_all.
 *  - A thread that ends while held is simply dropped: resuming it is
 *    harmless, and no call waits on it.
 *  - No heap: memory comes from VirtualAlloc, so a suspended thread that
 *    holds the heap lock cannot block us, and nothing here takes the
 *    loader lock.
 *  - hs_suspend_release_all() resumes every thread held at that moment by
 *    any call of this module: for a Ctrl+C handler or a crash filter of
 *    the process that holds threads of another one, so that the target is
 *    not left frozen even then (a process killed outright cannot do it;
 *    nothing can).
 *  - Threads: hs_suspend_one and hs_resume_one may run on several threads
 *    at once; one hs_suspend_all at a time per process suspended.
 */
#ifndef HOOKSCOPE_SUSPEND_WIN_H
#define HOOKSCOPE_SUSPEND_WIN_H

#include <stddef.h>
#include <stdint.h>
#include <windows.h>

typedef enum hs_suspend_status {
    HS_SUSPEND_OK = 0,
    HS_SUSPEND_GONE,        /* the thread has ended, or is ending */
    HS_SUSPEND_TIMEOUT,     /* its context did not come in time (resumed again) */
    HS_SUSPEND_NO_WORKER,   /* every context worker is still waiting for an earlier thread */
    HS_SUSPEND_DENIED,      /* no access to it, not initialised, or out of memory */
    HS_SUSPEND_HELD,        /* hs_suspend_one, HS_SUSPEND_NOT_IF_HELD: someone else holds it
                               suspended (created suspended, a freeze); left as it was */
} hs_suspend_status;

/* "ok", "gone", "timeout", "no-worker", "denied", "held" */
const char *hs_suspend_status_name(hs_suspend_status s);

/* Start the context workers. `on_worker_start` (may be NULL) runs first on
 * each worker thread. Returns 0, or -1 (GetLastError set). Calling it
 * again is harmless. */
int hs_suspend_init(void (*on_worker_start)(void));

/* Stop the workers (and the watchdog of hs_suspend_one). Returns 0, or -1 when a worker could not be stopped
 * within `timeout_ms` (it is still waiting for a context: code it runs
 * must then stay loaded). */
int hs_suspend_shutdown(DWORD timeout_ms);

/* Is `tid` one of this module's workers (never to be suspended)? */
int hs_suspend_is_worker(DWORD tid);

/* Have the first worker call `fn` whenever it has had no request for
 * `every_ms` (for a periodic check that waits for nothing). */
void hs_suspend_on_idle(void (*fn)(void), DWORD every_ms);

/* How many threads this process has besides the caller, the workers and
 * the ones `skip` names (may be NULL); -1 when they cannot be counted. */
int hs_suspend_count_others(int (*skip)(DWORD tid, void *ud), void *ud);

/* ---- one thread ------------------------------------------------------------ */

/* Suspend `thread` (THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT |
 * SYNCHRONIZE access) and read its context into *ctx (16-byte aligned;
 * ctx->ContextFlags says which parts, CONTEXT_CONTROL when 0) within
 * `timeout_ms` (see above). HS_SUSPEND_OK: the thread is held until
 * hs_resume_one(thread). Anything else: nothing is held. flags:
 * HS_SUSPEND_NEW for a thread whose context was never read (it may still
 * be under creation: read by a worker, hs_suspend_init needed);
 * HS_SUSPEND_NOT_IF_HELD leaves a thread that was suspended already as it
 * was (HS_SUSPEND_HELD); HS_SUSPEND_WATCH_HELD keeps a deadline while the
 * thread is held: the watchdog lets it go when the caller takes too long
 * (hs_resume_one then says so). */
#define HS_SUSPEND_NOT_IF_HELD 1u
#define HS_SUSPEND_WATCH_HELD 2u
#define HS_SUSPEND_NEW 4u
/* HS_SUSPEND_WOW64: a 32-bit thread of a WOW64 process, read from a
 * 64-bit one: *ctx is filled as a WOW64_CONTEXT (Wow64GetThreadContext;
 * ContextFlags the WOW64_CONTEXT_* ones, WOW64_CONTEXT_CONTROL when 0),
 * which a CONTEXT's buffer holds. GetThreadContext would give the 64-bit
 * side's registers: on Windows wow64cpu's, or a 64-bit system call's;
 * under Wine 8, whose 32-bit programs run as 32-bit Linux processes,
 * the 32-bit ones in the 64-bit fields. */
#define HS_SUSPEND_WOW64 8u
hs_suspend_status hs_suspend_one(HANDLE thread, CONTEXT *ctx, DWORD timeout_ms, unsigned flags);

/* Is a call of hs_suspend_one still waiting for a context the watchdog
 * gave up on (its thread resumed)? Only a thread that never gave one
 * read without HS_SUSPEND_NEW may keep it waiting for good. */
int hs_suspend_one_stuck(void);

/* Let a thread held by hs_suspend_one go (the same handle). Returns 1, or
 * 0 when it was let go already (by the watchdog, HS_SUSPEND_WATCH_HELD,
 * or hs_suspend_release_all): it ran meanwhile. */
int hs_resume_one(HANDLE thread);

/* ---- every thread of a process ----------------------------------------------- */

/* A context's instruction pointer (Rip; Eip in 32-bit code, whose
 * threads the 32-bit agent freezes from inside its own process). */
static inline uint64_t hs_context_ip(const CONTEXT *c)
{
#if defined(__i386__)
    return c->Eip;
#else
    return c->Rip;
#endif
}

typedef struct hs_suspended {
    CONTEXT ctx;            /* first: 16-byte aligned in the set */
    HANDLE handle;
    DWORD tid;
    volatile LONG held;     /* 1 while suspended by the set */
} hs_suspended;

typedef struct hs_suspend_stats {
    uint32_t attempts;      /* rounds of suspending everything */
    uint32_t timeouts;      /* contexts that did not come within a round */
    uint32_t gone;          /* threads that ended while being suspended */
    uint32_t no_worker;     /* rounds that found no free worker */
    uint32_t denied;        /* rounds ended by a call that failed (error below) */
    uint32_t ms;            /* time the call took */
    DWORD stuck_tid;        /* the last thread whose context did not come */
    uint32_t error;         /* the last failure: a Win32 error or an NTSTATUS */
    /* the longest single call of the freeze (where the time went when the
     * budget ran out): how long, which (HS_SLOWEST_*), in which pass of
     * listing and suspending the threads (1, 2, ...; 0 for a context) */
    uint32_t slowest_ms, slowest_pass;
    uint8_t slowest_what;
} hs_suspend_stats;

enum { HS_SLOWEST_SNAPSHOT = 0, HS_SLOWEST_OPEN, HS_SLOWEST_SUSPEND, HS_SLOWEST_CONTEXT };
/* "snapshot", "open", "suspend", "context" */
const char *hs_suspend_slowest_name(uint8_t what);

typedef struct hs_suspend_opts {
    DWORD ctx_flags;        /* CONTEXT_CONTROL when 0 */
    DWORD budget_ms;        /* the whole call; 0: 10000 */
    /* threads to leave running besides the caller and the workers */
    int (*skip)(DWORD tid, void *ud);
    void *ud;
    /* for tests of the failure path: every round's last context "does not
     * come" (all is resumed, as for a real one) */
    int test_stuck;
} hs_suspend_opts;

typedef struct hs_suspend_set {
    hs_suspended *t;        /* t[0..n): the threads held */
    size_t n;
    hs_suspend_stats stats; /* of the hs_suspend_all that filled the set */
    hs_suspend_status why;  /* why it failed (HS_SUSPEND_OK when it did not) */
    /* private */
    size_t cap;
    void *mem;
    int registered;
} hs_suspend_set;

/* Suspend every thread of `process` (GetCurrentProcess(), or a handle
 * with PROCESS_QUERY_INFORMATION) but the caller, the workers and what
 * o->skip names, and read each one's context. Threads created meanwhile
 * are found too (the enumeration repeats until it finds no new thread).
 * When a context does not come, everything is resumed and the whole round
 * is tried again after a pause (the thread being created gets to start),
 * until o->budget_ms is spent. Returns the number of threads held, or -1
 * (s->why says why) with nothing held. */
int hs_suspend_all(hs_suspend_set *s, HANDLE process, const hs_suspend_opts *o);

/* Make held thread i continue at `rip` when it resumes (SetThreadContext
 * with its control registers). Returns 0, or -1. */
int hs_suspend_set_rip(hs_suspend_set *s, size_t i, uint64_t rip);

/* Resume every thread of the set (once each), close the handles and free
 * the set's memory. Harmless on an empty or failed set, and twice. */
void hs_resume_all(hs_suspend_set *s);

/* Emergency: resume every thread any call of this module holds right now
 * (sets and single threads). Returns how many were resumed. */
int hs_suspend_release_all(void);

#endif
