/*
 * hook/freeze_win.h - stop every other thread of this process while code
 * is patched, and move threads whose instruction pointer lies in bytes
 * that change.
 *
 * Nothing here uses the heap once threads are frozen (a frozen thread may
 * hold the heap lock): buffers come from VirtualAlloc, threads are found
 * with NtGetNextThread, and enumeration repeats until no new thread shows
 * up, so a thread created while the freeze is under way is not missed.
 * Thread contexts are fetched with a timeout (see freeze_win.c).
 */
#ifndef HOOKSCOPE_FREEZE_WIN_H
#define HOOKSCOPE_FREEZE_WIN_H

#include <stddef.h>
#include <stdint.h>
#include <windows.h>

typedef struct hs_freeze {
    HANDLE *handles;
    DWORD *tids;
    CONTEXT *ctx;      /* 16-byte aligned, CONTEXT_CONTROL of each thread */
    size_t n, cap;
    void *mem;         /* the VirtualAlloc'd buffer holding the arrays */
    size_t mem_size;
} hs_freeze;

/* Resolve what the freeze needs and start the context workers (before any
 * freeze, where taking the loader lock is safe: not from a DLL
 * notification). `on_worker_start` runs first on each worker. Returns
 * once every worker runs. */
int hs_freeze_init(void (*on_worker_start)(void));
/* Is `tid` one of the context workers (never frozen)? */
int hs_freeze_is_worker(DWORD tid);
/* Stop the workers (before the code they run is unloaded). */
void hs_freeze_shutdown(void);

/* Suspend every thread of the process but the caller; returns the number
 * of threads frozen, or -1. */
int hs_freeze_all(hs_freeze *f);

/* For each frozen thread, call `move(ud, rip)`; when it returns a nonzero
 * address the thread continues there. Returns the number moved. */
int hs_freeze_move(hs_freeze *f, uint64_t (*move)(void *ud, uint64_t rip), void *ud);

/* Resume and release everything. */
void hs_thaw(hs_freeze *f);

#endif
