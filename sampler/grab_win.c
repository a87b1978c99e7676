/*
 * sampler/grab_win.c - suspend, context, one stack read, resume (see
 * grab_win.h).
 *
 * The suspend-and-get-context part (suspend_and_context) is the piece a
 * shared suspend primitive in hook/ would replace: it must return with the
 * thread suspended and its registers fetched, or with it resumed.
 */
#include "grab_win.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define WORKERS 4
#define CONTEXT_TIMEOUT_MS 100

typedef struct worker {
    HANDLE thread, go, done;
    HANDLE target;             /* request */
    volatile LONG busy;        /* a request is out (perhaps stuck) */
    BOOL ok;                   /* reply */
    CONTEXT *ctx;              /* the worker's own buffer: a stuck call may write it late */
    void *ctx_mem;
} worker;

struct hs_grabber {
    worker w[WORKERS];
    volatile LONG stop;
    uint8_t *stack;
    size_t cap;
    CONTEXT *ctx;
    void *ctx_mem;
};

static CONTEXT *aligned_context(void **mem)
{
    *mem = hs_xcalloc(1, sizeof(CONTEXT) + 16);
    return (CONTEXT *)(((uintptr_t)*mem + 15) & ~(uintptr_t)15);
}

typedef struct worker_arg {
    hs_grabber *g;
    worker *w;
} worker_arg;

static DWORD WINAPI worker_main(void *arg)
{
    worker_arg a = *(worker_arg *)arg;
    free(arg);
    for (;;) {
        WaitForSingleObject(a.w->go, INFINITE);
        if (a.g->stop)
            return 0;
        a.w->ctx->ContextFlags = CONTEXT_CONTROL | CONTEXT_INTEGER;
        a.w->ok = GetThreadContext(a.w->target, a.w->ctx);
        MemoryBarrier();
        a.w->busy = 0;
        SetEvent(a.w->done);
    }
}

static int start_worker(hs_grabber *g, worker *w)
{
    w->go = CreateEventW(NULL, FALSE, FALSE, NULL);
    w->done = CreateEventW(NULL, FALSE, FALSE, NULL);
    w->ctx = aligned_context(&w->ctx_mem);
    worker_arg *a = hs_xmalloc(sizeof *a);
    a->g = g;
    a->w = w;
    if (w->go && w->done)
        w->thread = CreateThread(NULL, 64 * 1024, worker_main, a, STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (!w->thread) {
        free(a);
        return -1;
    }
    SetThreadPriority(w->thread, THREAD_PRIORITY_HIGHEST);
    return 0;
}

hs_grabber *hs_grabber_new(size_t stack_cap)
{
    hs_grabber *g = hs_xcalloc(1, sizeof *g);
    g->cap = stack_cap;
    g->stack = VirtualAlloc(NULL, stack_cap, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    g->ctx = aligned_context(&g->ctx_mem);
    for (int i = 0; i < WORKERS && g->stack; i++) {
        if (start_worker(g, &g->w[i]) < 0) {
            hs_err("cannot start the sampler's threads: %s", hs_win_error(GetLastError()));
            hs_grabber_free(g);
            return NULL;
        }
    }
    if (!g->stack) {
        hs_err("cannot allocate the sampler's stack buffer");
        hs_grabber_free(g);
        return NULL;
    }
    return g;
}

void hs_grabber_free(hs_grabber *g)
{
    if (!g)
        return;
    g->stop = 1;
    for (int i = 0; i < WORKERS; i++) {
        worker *w = &g->w[i];
        if (w->thread) {
            SetEvent(w->go);
            if (WaitForSingleObject(w->thread, 1000) != WAIT_OBJECT_0)
                TerminateThread(w->thread, 0);   /* stuck in GetThreadContext */
            CloseHandle(w->thread);
        }
        if (w->go)
            CloseHandle(w->go);
        if (w->done)
            CloseHandle(w->done);
        /* a terminated worker may have left its buffer in use: keep it */
        if (!w->busy)
            free(w->ctx_mem);
    }
    if (g->stack)
        VirtualFree(g->stack, 0, MEM_RELEASE);
    free(g->ctx_mem);
    free(g);
}

/* The registers of a suspended thread, through a free worker, waited for
 * with a timeout. */
static int fetch_context(hs_grabber *g, HANDLE thread)
{
    for (int i = 0; i < WORKERS; i++) {
        worker *w = &g->w[i];
        if (!w->thread || w->busy)
            continue;
        w->target = thread;
        w->busy = 1;
        ResetEvent(w->done);
        SetEvent(w->go);
        if (WaitForSingleObject(w->done, CONTEXT_TIMEOUT_MS) != WAIT_OBJECT_0)
            return HS_GRAB_TIMEOUT;   /* it stays busy until its call returns */
        if (!w->ok)
            return HS_GRAB_FAILED;
        memcpy(g->ctx, w->ctx, sizeof *g->ctx);
        return HS_GRAB_OK;
    }
    return HS_GRAB_TIMEOUT;   /* every worker is stuck */
}

/* Suspend the thread and fetch its registers into g->ctx. On success it
 * stays suspended; on failure it is running again. */
static int suspend_and_context(hs_grabber *g, HANDLE thread)
{
    if (SuspendThread(thread) == (DWORD)-1)
        return HS_GRAB_GONE;
    int rc = fetch_context(g, thread);
    if (rc != HS_GRAB_OK) {
        ResumeThread(thread);
        if (WaitForSingleObject(thread, 0) == WAIT_OBJECT_0)
            rc = HS_GRAB_GONE;
    }
    return rc;
}

void hs_grab_regs(const CONTEXT *c, uint64_t out[HS_GRAB_REGS])
{
    const uint64_t r[HS_GRAB_REGS] = { c->Rax, c->Rcx, c->Rdx, c->Rbx, c->Rsp, c->Rbp, c->Rsi, c->Rdi, c->R8, c->R9,
                                       c->R10, c->R11, c->R12, c->R13, c->R14, c->R15, c->Rip, c->EFlags };
    memcpy(out, r, sizeof r);
}

int hs_grab_thread(hs_grabber *g, HANDLE process, HANDLE thread, uint64_t stack_base, const uint64_t *prev,
                   hs_grab *out)
{
    memset(out, 0, sizeof *out);
    LARGE_INTEGER t0, t1;
    QueryPerformanceCounter(&t0);
    int rc = suspend_and_context(g, thread);
    if (rc != HS_GRAB_OK)
        return rc;
    out->ctx = g->ctx;
    if (prev) {
        uint64_t now[HS_GRAB_REGS];
        hs_grab_regs(g->ctx, now);
        if (!memcmp(now, prev, sizeof now)) {
            ResumeThread(thread);
            QueryPerformanceCounter(&t1);
            out->same = true;
            out->stopped_qpc = (uint64_t)(t1.QuadPart - t0.QuadPart);
            return HS_GRAB_OK;
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
    ResumeThread(thread);
    QueryPerformanceCounter(&t1);
    if (!ok && got == 0) {
        got = 0;
        complete = false;
    } else if (!ok) {
        complete = false;
    }
    out->ctx = g->ctx;
    out->stack = g->stack;
    out->stack_lo = rsp;
    out->stack_len = ok ? len : (size_t)got;
    out->complete = complete && ok;
    out->stopped_qpc = (uint64_t)(t1.QuadPart - t0.QuadPart);
    return HS_GRAB_OK;
}
