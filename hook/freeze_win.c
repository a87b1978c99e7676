/*
 * hook/freeze_win.c - suspend the other threads of this process (see
 * freeze_win.h).
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

int hs_freeze_init(void)
{
    return get_next_thread() ? 0 : -1;
}

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

int hs_freeze_all(hs_freeze *f)
{
    memset(f, 0, sizeof *f);
    if (grow(f) < 0)
        return -1;
    get_next_thread_fn next_thread = get_next_thread();
    if (!next_thread)
        return -1;
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
            if (tid == self || tid == 0 || known(f, tid))
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
        if (!GetThreadContext(f->handles[i], &f->ctx[i]))
            f->ctx[i].ContextFlags = 0;
    }
    return (int)f->n;
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
    for (size_t i = 0; i < f->n; i++) {
        ResumeThread(f->handles[i]);
        CloseHandle(f->handles[i]);
    }
    if (f->mem)
        VirtualFree(f->mem, 0, MEM_RELEASE);
    memset(f, 0, sizeof *f);
}
