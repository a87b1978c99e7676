/*
 * hook/base/remote_win.h - calls that act inside another process, bounded
 * in time.
 *
 * Under Wine, VirtualAllocEx, VirtualFreeEx, VirtualQueryEx and
 * CreateRemoteThread on another process are carried out by one of that
 * process's own threads (a system APC), and the caller waits for it with
 * no time limit (ntdll's server_queue_process_apc waits on the APC with a
 * NULL timeout). A target that dies, or stops, at that moment can leave
 * the caller waiting forever: test_session_guard's scribbling target,
 * crashing while hookscope attached, left hs_inject's VirtualFreeEx
 * waiting in about one attach in sixty (Wine 8). On Windows these calls do
 * not wait for the target's threads.
 *
 * (The suspend sampler's VirtualQueryEx, made often, is not run this way:
 * its stop gives up on its thread once the target has ended.)
 *
 * hs_remote_run runs such a call on a thread of its own and waits for it,
 * for the target's end or for a time limit, whichever comes first. A call
 * given up on keeps its thread (and a handle of its own to the process)
 * until it returns, if ever; its results are then dropped (a remote thread
 * it made is closed, not waited for).
 */
#ifndef HOOKSCOPE_HOOK_BASE_REMOTE_WIN_H
#define HOOKSCOPE_HOOK_BASE_REMOTE_WIN_H

#include <stdbool.h>
#include <stddef.h>
#include <windows.h>

/* How long a call that acts in a live target may take before it is given
 * up on: as long as the agent's loading may (it takes ~0.1 ms, also in a
 * process just created suspended, at load 6 under Wine; the limit is for
 * a target whose threads never run it). */
#define HS_REMOTE_TIMEOUT_MS 60000

/* One call: fn(process, args) on the worker, with the worker's own handle
 * to the process. drop(args), if not NULL, undoes what a call given up on
 * returned (run on the worker when it returns late). */
typedef void (*hs_remote_fn)(HANDLE process, void *args);
typedef void (*hs_remote_drop)(void *args);

/* Run fn with a copy of args (size bytes); true once it returned, its
 * results copied back into args. false (GetLastError: ERROR_PROCESS_ABORTED
 * when the target ended, WAIT_TIMEOUT after timeout_ms, or why the worker
 * could not start) when it was given up on: args are as they were. */
bool hs_remote_run(HANDLE process, DWORD timeout_ms, hs_remote_fn fn, hs_remote_drop drop, void *args, size_t size);

/* The calls hookscope makes, each bounded by HS_REMOTE_TIMEOUT_MS and the
 * target's end; each fails as its Windows call does (NULL, FALSE, 0) with
 * GetLastError set. */
void *hs_remote_alloc(HANDLE process, SIZE_T bytes, DWORD protect);
BOOL hs_remote_free(HANDLE process, void *addr);
HANDLE hs_remote_thread(HANDLE process, LPTHREAD_START_ROUTINE start, void *param, DWORD flags, DWORD *tid);

#endif
