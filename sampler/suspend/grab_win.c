/*
 * sampler/suspend/grab_win.c - suspend, context, one stack read, resume (see
 * grab_win.h), with hookscope's one suspension primitive
 * (hook/suspend/threads_win.h): hs_suspend_one reads the context on this
 * thread, bounded by its watchdog, and the stack is copied before
 * hs_resume_one lets the thread go. A WOW64 thread's registers are its
 * 32-bit ones (HS_SUSPEND_WOW64), and its stack the 32-bit one they
 * point into: on Windows a thread inside a 64-bit system call is seen
 * where its 32-bit code made the call.
 */
#include "sampler/suspend/grab_win.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hook/base/x64.h"
#include "hook/suspend/threads_win.h"

/* A thread's first context: under Wine, one still being created does not
 * give it while suspended, so it is not waited for long; later ones only
 * come slowly on a machine that is very busy. */
#define FIRST_CONTEXT_TIMEOUT_MS 100
#define CONTEXT_TIMEOUT_MS 1000

struct hs_grabber {
    volatile LONG in_grab;     /* the sampling thread is inside a grab */
    uint8_t *stack;
    size_t cap;
    CONTEXT *ctx;              /* (a WOW64_CONTEXT, for a 32-bit process) */
    void *ctx_mem;
    bool wow64;
    void (*while_stopped)(void *ctx);
    void *while_stopped_ctx;
};

void hs_grab_while_stopped(hs_grabber *g, void (*fn)(void *ctx), void *ctx)
{
    g->while_stopped = fn;
    g->while_stopped_ctx = ctx;
}

static LONG64 qpc(void)
{
    LARGE_INTEGER c;
    QueryPerformanceCounter(&c);
    return c.QuadPart;
}

hs_grabber *hs_grabber_new(size_t stack_cap, int bits)
{
    hs_grabber *g = hs_xcalloc(1, sizeof *g);
    g->cap = stack_cap;
    g->wow64 = bits == 32;
    g->stack = VirtualAlloc(NULL, stack_cap, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    g->ctx_mem = hs_xcalloc(1, sizeof(CONTEXT) + 16);
    g->ctx = (CONTEXT *)(((uintptr_t)g->ctx_mem + 15) & ~(uintptr_t)15);
    if (!g->stack || hs_suspend_init(NULL) < 0) {
        hs_grabber_free(g);
        return NULL;
    }
    return g;
}

bool hs_grabber_stuck(const hs_grabber *g)
{
    return g->in_grab && hs_suspend_one_stuck();
}

void hs_grabber_free(hs_grabber *g)
{
    if (!g)
        return;
    if (g->stack)
        VirtualFree(g->stack, 0, MEM_RELEASE);
    if (!g->in_grab) {
        free(g->ctx_mem);   /* else a stuck call may still write it */
        hs_suspend_shutdown(1000);
    }
    free(g);
}

static void regs_of(const hs_grabber *g, uint64_t out[HS_GRAB_REGS])
{
    memset(out, 0, HS_GRAB_REGS * sizeof *out);
    if (g->wow64) {
        const WOW64_CONTEXT *c = (const WOW64_CONTEXT *)g->ctx;
        const uint64_t r[8] = { c->Eax, c->Ecx, c->Edx, c->Ebx, c->Esp, c->Ebp, c->Esi, c->Edi };
        memcpy(out, r, sizeof r);
        out[HS_GRAB_PC] = c->Eip;
        out[HS_GRAB_FLAGS] = c->EFlags;
        return;
    }
    const CONTEXT *c = g->ctx;
    const uint64_t r[HS_GRAB_REGS] = { c->Rax, c->Rcx, c->Rdx, c->Rbx, c->Rsp, c->Rbp, c->Rsi, c->Rdi, c->R8, c->R9,
                                       c->R10, c->R11, c->R12, c->R13, c->R14, c->R15, c->Rip, c->EFlags };
    memcpy(out, r, sizeof r);
}

static int grab_status(hs_suspend_status st)
{
    switch (st) {
    case HS_SUSPEND_OK: return HS_GRAB_OK;
    case HS_SUSPEND_GONE: return HS_GRAB_GONE;
    case HS_SUSPEND_TIMEOUT: return HS_GRAB_TIMEOUT;
    case HS_SUSPEND_HELD: return HS_GRAB_HELD;
    default: return HS_GRAB_FAILED;
    }
}

int hs_grab_thread(hs_grabber *g, HANDLE process, HANDLE thread, uint64_t stack_base, const uint64_t *prev,
                   hs_grab *out)
{
    memset(out, 0, sizeof *out);
    LONG64 t0 = qpc();
    g->in_grab = 1;
    g->ctx->ContextFlags = g->wow64 ? WOW64_CONTEXT_CONTROL | WOW64_CONTEXT_INTEGER : CONTEXT_CONTROL | CONTEXT_INTEGER;
    unsigned flags = HS_SUSPEND_NOT_IF_HELD | HS_SUSPEND_WATCH_HELD | (prev ? 0 : HS_SUSPEND_NEW) |
                     (g->wow64 ? HS_SUSPEND_WOW64 : 0);
    hs_suspend_status st = hs_suspend_one(thread, g->ctx, prev ? CONTEXT_TIMEOUT_MS : FIRST_CONTEXT_TIMEOUT_MS,
                                          flags);
    if (st != HS_SUSPEND_OK) {
        g->in_grab = 0;
        if (st == HS_SUSPEND_TIMEOUT && WaitForSingleObject(thread, 0) == WAIT_OBJECT_0)
            return HS_GRAB_GONE;
        return grab_status(st);
    }
    regs_of(g, out->regs);
    out->at_qpc = qpc();
    if (prev) {
        if (!memcmp(out->regs, prev, sizeof out->regs)) {
            int ours = hs_resume_one(thread);
            out->stopped_qpc = (uint64_t)(qpc() - t0);
            out->same = true;
            g->in_grab = 0;
            return ours ? HS_GRAB_OK : HS_GRAB_TIMEOUT;
        }
    }
    uint64_t rsp = out->regs[HS_RSP];
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
    if (g->while_stopped)
        g->while_stopped(g->while_stopped_ctx);
    int ours = hs_resume_one(thread);
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
