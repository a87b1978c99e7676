/*
 * hook/freeze_win.c - suspend the other threads of this process (see
 * freeze_win.h).
 *
 * Contexts are fetched by worker threads started before any freeze, and
 * waited for with a timeout: under Wine, GetThreadContext on a thread
 * that was suspended while it was being created (its creator frozen in
 * CreateThread) waits until that thread runs, which it cannot while we
 * hold the freeze. When an answer does not come, the freeze is undone and
 * tried again after a moment (the new thread gets to start); the worker
 * that is stuck is not used again until its call returns.
 */
#include "freeze_win.h"

#include <string.h>

typedef LONG (NTAPI *get_next_thread_fn)(HANDLE process, HANDLE thread, ACCESS_MASK access,
                                         ULONG attributes, ULONG flags, HANDLE *next);

static get_next_thread_fn get_next_thread(void)
{
    static get_next_thread_fn fn;
    if (!fn)
        fn = (get_next_thread_fn)(void (*)(void))GetProcAddress(GetModuleHandleW(L"ntdll.dll"),
                                                                 "NtGetNextThread");
    return fn;
}

/* ---- context workers ----------------------------------------------------- */

#define WORKERS 4
#define CONTEXT_TIMEOUT_MS 200
#define FREEZE_TRIES 100

typedef struct ctx_worker {
    HANDLE thread, go, done, ready;
    DWORD tid;
    HANDLE target;             /* request */
    CONTEXT *ctx;
    volatile LONG busy;        /* a request is out (maybe stuck) */
    BOOL ok;                   /* reply */
} ctx_worker;

static ctx_worker workers[WORKERS];
static void (*worker_start_hook)(void);
static volatile LONG workers_stop;

static DWORD WINAPI worker_main(void *arg)
{
    ctx_worker *w = arg;
    if (worker_start_hook)
        worker_start_hook();
    SetEvent(w->ready);
    for (;;) {
        WaitForSingleObject(w->go, INFINITE);
        if (workers_stop)
            return 0;
        w->ok = GetThreadContext(w->target, w->ctx);
        MemoryBarrier();
        w->busy = 0;
        SetEvent(w->done);
    }
    return 0;
}

int hs_freeze_init(void (*on_worker_start)(void))
{
    if (!get_next_thread())
        return -1;
    worker_start_hook = on_worker_start;
    for (int i = 0; i < WORKERS; i++) {
        ctx_worker *w = &workers[i];
        if (w->thread)
            continue;
        w->go = CreateEventW(NULL, FALSE, FALSE, NULL);
        w->done = CreateEventW(NULL, FALSE, FALSE, NULL);
        w->ready = CreateEventW(NULL, TRUE, FALSE, NULL);
        if (!w->go || !w->done || !w->ready)
            return -1;
        w->thread = CreateThread(NULL, 64 * 1024, worker_main, w, STACK_SIZE_PARAM_IS_A_RESERVATION, &w->tid);
        if (!w->thread)
            return -1;
    }
    for (int i = 0; i < WORKERS; i++)
        if (WaitForSingleObject(workers[i].ready, 10000) != WAIT_OBJECT_0)
            return -1;
    return 0;
}

void hs_freeze_shutdown(void)
{
    workers_stop = 1;
    for (int i = 0; i < WORKERS; i++) {
        ctx_worker *w = &workers[i];
        if (!w->thread)
            continue;
        SetEvent(w->go);
        if (WaitForSingleObject(w->thread, 1000) != WAIT_OBJECT_0)
            TerminateThread(w->thread, 0);   /* stuck in GetThreadContext */
        CloseHandle(w->thread);
        CloseHandle(w->go);
        CloseHandle(w->done);
        CloseHandle(w->ready);
        memset(w, 0, sizeof *w);
    }
}

int hs_freeze_is_worker(DWORD tid)
{
    for (int i = 0; i < WORKERS; i++)
        if (workers[i].tid == tid)
            return 1;
    return 0;
}

/* Fetch a thread's context through a free worker; 0 when it does not
 * come within the timeout (or no worker is free). */
static int fetch_context(HANDLE target, CONTEXT *ctx)
{
    for (int i = 0; i < WORKERS; i++) {
        ctx_worker *w = &workers[i];
        if (!w->thread || w->busy)
            continue;
        w->target = target;
        w->ctx = ctx;
        w->busy = 1;
        ResetEvent(w->done);
        SetEvent(w->go);
        if (WaitForSingleObject(w->done, CONTEXT_TIMEOUT_MS) == WAIT_OBJECT_0)
            return w->ok;
        return 0;   /* stuck: it stays busy until GetThreadContext returns */
    }
    return 0;
}

/* ---- the freeze ----------------------------------------------------------- */

static int grow(hs_freeze *f)
{
    size_t cap = f->cap ? f->cap * 2 : 256;
    size_t ctx_bytes = cap * sizeof(CONTEXT);
    size_t size = ctx_bytes + cap * (sizeof(HANDLE) + sizeof(DWORD)) + 64;
    void *mem = VirtualAlloc(NULL, size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!mem)
        return -1;
    CONTEXT *ctx = mem; /* VirtualAlloc memory is page aligned */
    HANDLE *handles = (HANDLE *)((char *)mem + ctx_bytes);
    DWORD *tids = (DWORD *)(handles + cap);
    if (f->n) {
        memcpy(ctx, f->ctx, f->n * sizeof(CONTEXT));
        memcpy(handles, f->handles, f->n * sizeof(HANDLE));
        memcpy(tids, f->tids, f->n * sizeof(DWORD));
    }
    if (f->mem)
        VirtualFree(f->mem, 0, MEM_RELEASE);
    f->mem = mem;
    f->mem_size = size;
    f->ctx = ctx;
    f->handles = handles;
    f->tids = tids;
    f->cap = cap;
    return 0;
}

static int known(const hs_freeze *f, DWORD tid)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->tids[i] == tid)
            return 1;
    return 0;
}

static void release(hs_freeze *f)
{
    for (size_t i = 0; i < f->n; i++) {
        ResumeThread(f->handles[i]);
        CloseHandle(f->handles[i]);
    }
    f->n = 0;
}

/* One attempt: suspend everyone, then fetch every context. Returns 1 when
 * all contexts came, 0 when one did not (everything is resumed again),
 * -1 on failure. */
static int freeze_once(hs_freeze *f)
{
    get_next_thread_fn next_thread = get_next_thread();
    DWORD self = GetCurrentThreadId();
    const ACCESS_MASK access = THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_SET_CONTEXT |
                               THREAD_QUERY_LIMITED_INFORMATION;
    for (int rounds = 0; rounds < 64; rounds++) {
        int found = 0;
        HANDLE cur = NULL;
        int cur_kept = 0;
        for (;;) {
            HANDLE next = NULL;
            if (next_thread(GetCurrentProcess(), cur, access, 0, 0, &next) != 0)
                break;
            if (cur && !cur_kept)
                CloseHandle(cur);
            cur = next;
            cur_kept = 0;
            DWORD tid = GetThreadId(next);
            if (tid == self || tid == 0 || hs_freeze_is_worker(tid) || known(f, tid))
                continue;
            if (SuspendThread(next) == (DWORD)-1)
                continue;       /* exiting */
            if (f->n == f->cap && grow(f) < 0) {
                ResumeThread(next);
                continue;
            }
            f->handles[f->n] = next;
            f->tids[f->n] = tid;
            f->n++;
            cur_kept = 1;
            found = 1;
        }
        if (cur && !cur_kept)
            CloseHandle(cur);
        if (!found)
            break;
    }
    /* Fetching the context also waits until the thread really stopped
     * (suspension can be asynchronous). */
    for (size_t i = 0; i < f->n; i++) {
        memset(&f->ctx[i], 0, sizeof f->ctx[i]);
        f->ctx[i].ContextFlags = CONTEXT_CONTROL;
        if (!fetch_context(f->handles[i], &f->ctx[i])) {
            release(f);
            return 0;
        }
    }
    return 1;
}

int hs_freeze_all(hs_freeze *f)
{
    memset(f, 0, sizeof *f);
    if (!get_next_thread() || grow(f) < 0)
        return -1;
    for (int tries = 0; tries < FREEZE_TRIES; tries++) {
        int r = freeze_once(f);
        if (r > 0)
            return (int)f->n;
        if (r < 0)
            break;
        Sleep(tries < 10 ? 1 : 10);   /* let a thread that is being created start */
    }
    hs_thaw(f);
    return -1;
}

int hs_freeze_move(hs_freeze *f, uint64_t (*move)(void *ud, uint64_t rip), void *ud)
{
    int moved = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (!f->ctx[i].ContextFlags)
            continue;
        uint64_t to = move(ud, f->ctx[i].Rip);
        if (to && to != f->ctx[i].Rip) {
            f->ctx[i].Rip = to;
            f->ctx[i].ContextFlags = CONTEXT_CONTROL;
            if (SetThreadContext(f->handles[i], &f->ctx[i]))
                moved++;
        }
    }
    return moved;
}

void hs_thaw(hs_freeze *f)
{
    release(f);
    if (f->mem)
        VirtualFree(f->mem, 0, MEM_RELEASE);
    memset(f, 0, sizeof *f);
}
