/*
 * sampler/suspend/grab_win.c - suspend, context, one stack read, resume (see
 * grab_win.h).
 *
 * The sampling thread suspends the thread and asks for its context
 * itself; a watchdog thread makes the wait bounded: the thread being
 * sampled is published (with a deadline) before it is suspended, and
 * whoever takes it back first resumes it: the sampling thread when it is
 * done, or the watchdog when the deadline passed (the sample is then
 * dropped; a sampling thread stuck for good in GetThreadContext is
 * reported by hs_grabber_stuck and ended at hs_grabber_free). So no
 * thread stays suspended, and no sample needs a hand-over to another
 * thread, which on a busy machine waits for a time slice each time.
 *
 * suspend_and_context is the piece a shared suspend primitive in hook/
 * would replace: it returns with the thread suspended and its registers
 * fetched, or with the thread running again.
 */
#include "sampler/suspend/grab_win.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"

/* A thread's first context: under Wine, one still being created does not
 * give it while suspended, so it is not waited for long; later ones only
 * come slowly on a machine that is very busy. */
#define FIRST_CONTEXT_TIMEOUT_MS 100
#define CONTEXT_TIMEOUT_MS 1000
#define WATCH_MS 20

struct hs_grabber {
    HANDLE watchdog, wake;
    volatile LONG stop;
    void *volatile inflight;   /* the thread suspended now; whoever takes it resumes it */
    volatile LONG64 deadline;  /* performance-counter ticks */
    volatile LONG rescued;     /* threads the watchdog resumed */
    volatile LONG in_grab;     /* the sampling thread is inside a grab */
    LARGE_INTEGER qpf;
    uint8_t *stack;
    size_t cap;
    CONTEXT *ctx;
    void *ctx_mem;
};

static LONG64 qpc(void)
{
    LARGE_INTEGER c;
    QueryPerformanceCounter(&c);
    return c.QuadPart;
}

static DWORD WINAPI watchdog_main(void *arg)
{
    hs_grabber *g = arg;
    while (!g->stop) {
        WaitForSingleObject(g->wake, WATCH_MS);
        void *h = g->inflight;
        if (h && qpc() > g->deadline &&
            InterlockedCompareExchangePointer((void *volatile *)&g->inflight, NULL, h) == h) {
            ResumeThread(h);
            InterlockedIncrement(&g->rescued);
        }
    }
    return 0;
}

hs_grabber *hs_grabber_new(size_t stack_cap)
{
    hs_grabber *g = hs_xcalloc(1, sizeof *g);
    QueryPerformanceFrequency(&g->qpf);
    g->cap = stack_cap;
    g->stack = VirtualAlloc(NULL, stack_cap, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    g->ctx_mem = hs_xcalloc(1, sizeof(CONTEXT) + 16);
    g->ctx = (CONTEXT *)(((uintptr_t)g->ctx_mem + 15) & ~(uintptr_t)15);
    g->wake = CreateEventW(NULL, FALSE, FALSE, NULL);
    if (g->stack && g->wake)
        g->watchdog = CreateThread(NULL, 64 * 1024, watchdog_main, g, STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (!g->watchdog) {
        hs_err("cannot start the sampler's watchdog: %s", hs_win_error(GetLastError()));
        hs_grabber_free(g);
        return NULL;
    }
    SetThreadPriority(g->watchdog, THREAD_PRIORITY_HIGHEST);
    return g;
}

bool hs_grabber_stuck(const hs_grabber *g)
{
    return g->in_grab && g->inflight == NULL && g->rescued > 0;
}

void hs_grabber_free(hs_grabber *g)
{
    if (!g)
        return;
    g->stop = 1;
    if (g->watchdog) {
        SetEvent(g->wake);
        WaitForSingleObject(g->watchdog, INFINITE);
        CloseHandle(g->watchdog);
    }
    /* a sample in flight (the sampling thread was ended while stuck) */
    void *h = InterlockedExchangePointer((void *volatile *)&g->inflight, NULL);
    if (h)
        ResumeThread(h);
    if (g->wake)
        CloseHandle(g->wake);
    if (g->stack)
        VirtualFree(g->stack, 0, MEM_RELEASE);
    if (!g->in_grab)
        free(g->ctx_mem);   /* else a stuck call may still write it */
    free(g);
}

void hs_grab_regs(const CONTEXT *c, uint64_t out[HS_GRAB_REGS])
{
    const uint64_t r[HS_GRAB_REGS] = { c->Rax, c->Rcx, c->Rdx, c->Rbx, c->Rsp, c->Rbp, c->Rsi, c->Rdi, c->R8, c->R9,
                                       c->R10, c->R11, c->R12, c->R13, c->R14, c->R15, c->Rip, c->EFlags };
    memcpy(out, r, sizeof r);
}

/* Publish the thread, suspend it, fetch its registers into g->ctx. On
 * success it stays suspended (and published); on failure it runs again. */
static int suspend_and_context(hs_grabber *g, HANDLE thread, bool first)
{
    DWORD timeout_ms = first ? FIRST_CONTEXT_TIMEOUT_MS : CONTEXT_TIMEOUT_MS;
    g->deadline = qpc() + g->qpf.QuadPart * timeout_ms / 1000;
    InterlockedExchangePointer((void *volatile *)&g->inflight, thread);
    DWORD count = SuspendThread(thread);
    if (count == (DWORD)-1) {
        InterlockedExchangePointer((void *volatile *)&g->inflight, NULL);
        return HS_GRAB_GONE;
    }
    if (count > 0) {
        /* suspended already: not running, and under Wine a thread that
         * never ran (created suspended) gives no context while suspended */
        if (InterlockedExchangePointer((void *volatile *)&g->inflight, NULL) == thread)
            ResumeThread(thread);
        return HS_GRAB_HELD;
    }
    g->ctx->ContextFlags = CONTEXT_CONTROL | CONTEXT_INTEGER;
    BOOL ok = GetThreadContext(thread, g->ctx);
    if (ok && g->inflight == thread)
        return HS_GRAB_OK;
    /* failed, or the watchdog resumed it meanwhile */
    int rc = ok ? HS_GRAB_TIMEOUT : HS_GRAB_FAILED;
    if (InterlockedExchangePointer((void *volatile *)&g->inflight, NULL) == thread)
        ResumeThread(thread);
    else
        rc = HS_GRAB_TIMEOUT;
    if (WaitForSingleObject(thread, 0) == WAIT_OBJECT_0)
        rc = HS_GRAB_GONE;
    return rc;
}

/* Resume the thread if the watchdog has not; false if it had. */
static bool resume(hs_grabber *g, HANDLE thread)
{
    if (InterlockedExchangePointer((void *volatile *)&g->inflight, NULL) != thread)
        return false;
    ResumeThread(thread);
    return true;
}

int hs_grab_thread(hs_grabber *g, HANDLE process, HANDLE thread, uint64_t stack_base, const uint64_t *prev,
                   hs_grab *out)
{
    memset(out, 0, sizeof *out);
    LONG64 t0 = qpc();
    g->in_grab = 1;
    int rc = suspend_and_context(g, thread, prev == NULL);
    if (rc != HS_GRAB_OK) {
        g->in_grab = 0;
        return rc;
    }
    out->ctx = g->ctx;
    if (prev) {
        uint64_t now[HS_GRAB_REGS];
        hs_grab_regs(g->ctx, now);
        if (!memcmp(now, prev, sizeof now)) {
            bool ours = resume(g, thread);
            out->stopped_qpc = (uint64_t)(qpc() - t0);
            out->same = true;
            g->in_grab = 0;
            return ours ? HS_GRAB_OK : HS_GRAB_TIMEOUT;
        }
    }
    uint64_t rsp = g->ctx->Rsp;
    size_t len;
    bool complete = false;
    if (stack_base > rsp && stack_base - rsp <= g->cap) {
        len = (size_t)(stack_base - rsp);
        complete = true;
    } else if (stack_base > rsp) {
        len = g->cap;
    } else {
        /* not on the stack its TEB names (a fiber?): the rest of its page */
        len = 4096 - (size_t)(rsp & 4095);
    }
    SIZE_T got = 0;
    BOOL ok = ReadProcessMemory(process, (const void *)(uintptr_t)rsp, g->stack, len, &got);
    bool ours = resume(g, thread);
    out->stopped_qpc = (uint64_t)(qpc() - t0);
    g->in_grab = 0;
    if (!ours)
        return HS_GRAB_TIMEOUT;   /* it ran again during the copy: the copy may be torn */
    out->stack = g->stack;
    out->stack_lo = rsp;
    out->stack_len = ok ? len : (size_t)got;
    out->complete = complete && ok;
    return HS_GRAB_OK;
}
