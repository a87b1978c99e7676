/*
 * hook/base/remote_win.c - calls that act inside another process, bounded
 * in time (see remote_win.h).
 */
#include "hook/base/remote_win.h"

#include <stdlib.h>
#include <string.h>

enum { RUNNING, RETURNED, GIVEN_UP };

typedef struct job {
    volatile LONG refs;            /* the caller's and the worker's */
    volatile LONG state;           /* RUNNING, then RETURNED or GIVEN_UP: whoever comes first */
    HANDLE process;                /* the worker's own handle */
    hs_remote_fn fn;
    hs_remote_drop drop;
    _Alignas(16) unsigned char args[];
} job;

static void release(job *j)
{
    if (InterlockedDecrement(&j->refs) == 0) {
        CloseHandle(j->process);
        free(j);
    }
}

static DWORD WINAPI worker(void *arg)
{
    job *j = arg;
    j->fn(j->process, j->args);
    /* given up on: what it made is nobody's */
    if (InterlockedCompareExchange(&j->state, RETURNED, RUNNING) == GIVEN_UP && j->drop)
        j->drop(j->args);
    release(j);
    return 0;
}

bool hs_remote_run(HANDLE process, DWORD timeout_ms, hs_remote_fn fn, hs_remote_drop drop, void *args, size_t size)
{
    job *j = malloc(sizeof *j + size);
    if (!j) {
        SetLastError(ERROR_NOT_ENOUGH_MEMORY);
        return false;
    }
    j->refs = 2;
    j->state = RUNNING;
    j->fn = fn;
    j->drop = drop;
    memcpy(j->args, args, size);
    if (!DuplicateHandle(GetCurrentProcess(), process, GetCurrentProcess(), &j->process, 0, FALSE,
                         DUPLICATE_SAME_ACCESS)) {
        DWORD err = GetLastError();
        free(j);
        SetLastError(err);
        return false;
    }
    HANDLE th = CreateThread(NULL, 64 * 1024, worker, j, STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (!th) {
        DWORD err = GetLastError();
        CloseHandle(j->process);
        free(j);
        SetLastError(err);
        return false;
    }
    HANDLE both[2] = { th, j->process };
    DWORD w = WaitForMultipleObjects(2, both, FALSE, timeout_ms);
    DWORD err = w == WAIT_OBJECT_0 + 1 ? ERROR_PROCESS_ABORTED : w == WAIT_TIMEOUT ? WAIT_TIMEOUT : GetLastError();
    CloseHandle(th);
    /* (the call may have returned just as the wait ended otherwise) */
    bool returned = w == WAIT_OBJECT_0 || InterlockedCompareExchange(&j->state, GIVEN_UP, RUNNING) == RETURNED;
    if (returned)
        memcpy(args, j->args, size);
    release(j);
    if (!returned)
        SetLastError(err);
    return returned;
}

/* Each call's arguments and results, its LastError among them. */
typedef struct alloc_call {
    SIZE_T bytes;
    DWORD protect, err;
    void *at;
} alloc_call;

static void do_alloc(HANDLE process, void *arg)
{
    alloc_call *c = arg;
    c->at = VirtualAllocEx(process, NULL, c->bytes, MEM_RESERVE | MEM_COMMIT, c->protect);
    c->err = GetLastError();
}

void *hs_remote_alloc(HANDLE process, SIZE_T bytes, DWORD protect)
{
    alloc_call c = { bytes, protect, 0, NULL };
    if (!hs_remote_run(process, HS_REMOTE_TIMEOUT_MS, do_alloc, NULL, &c, sizeof c))
        return NULL;
    SetLastError(c.err);
    return c.at;
}

typedef struct free_call {
    void *at;
    BOOL ok;
    DWORD err;
} free_call;

static void do_free(HANDLE process, void *arg)
{
    free_call *c = arg;
    c->ok = VirtualFreeEx(process, c->at, 0, MEM_RELEASE);
    c->err = GetLastError();
}

BOOL hs_remote_free(HANDLE process, void *addr)
{
    free_call c = { addr, FALSE, 0 };
    if (!hs_remote_run(process, HS_REMOTE_TIMEOUT_MS, do_free, NULL, &c, sizeof c))
        return FALSE;
    SetLastError(c.err);
    return c.ok;
}

typedef struct thread_call {
    LPTHREAD_START_ROUTINE start;
    void *param;
    DWORD flags, tid, err;
    HANDLE thread;
} thread_call;

static void do_thread(HANDLE process, void *arg)
{
    thread_call *c = arg;
    c->thread = CreateRemoteThread(process, NULL, 0, c->start, c->param, c->flags, &c->tid);
    c->err = GetLastError();
}

static void drop_thread(void *arg)
{
    thread_call *c = arg;
    if (c->thread)
        CloseHandle(c->thread);
}

HANDLE hs_remote_thread(HANDLE process, LPTHREAD_START_ROUTINE start, void *param, DWORD flags, DWORD *tid)
{
    thread_call c = { start, param, flags, 0, 0, NULL };
    if (!hs_remote_run(process, HS_REMOTE_TIMEOUT_MS, do_thread, drop_thread, &c, sizeof c))
        return NULL;
    if (tid)
        *tid = c.tid;
    SetLastError(c.err);
    return c.thread;
}
