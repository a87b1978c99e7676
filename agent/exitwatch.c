/*
 * agent/exitwatch.c - see from inside how the target ends, so that hookscope
 * tells a crash from an exit by what happened, not by the exit code (a
 * program may well exit with 0xC0000005 on purpose); and keep hookscope's
 * own threads from keeping the process alive once the target's threads
 * are gone.
 *
 * Detours (agent/detour.c: the entry jumps to a C function here that
 * notes what it sees and calls the original), patched under one freeze:
 *
 *   kernelbase!UnhandledExceptionFilter  called for every exception
 *       nothing handled, before the program's own filter
 *       (SetUnhandledExceptionFilter) and before the debugger (AeDebug),
 *       by Wine's RtlUserThreadStart as by Windows': notes the code, the
 *       address and the thread; a return of EXCEPTION_CONTINUE_EXECUTION
 *       (a filter repaired the fault) takes the note back.
 *   ntdll!NtTerminateProcess  every end the process asks for itself
 *       (ExitProcess, exit(), TerminateProcess of itself, the last
 *       ExitThread, and the end after a crash): notes the exit code.
 *   ntdll!RtlExitUserThread  a thread ending; when it is the last thread
 *       but hookscope's own, it ends the process with its code, as it
 *       would untraced (hookscope's threads must not keep it alive).
 *   msvcrt!abort, ucrtbase!abort  an abnormal end the C runtime reports
 *       with exit code 3 (std::terminate after an uncaught C++ exception,
 *       a failed assert()).
 *
 * And while the agent is idle, every second, it checks that the target
 * still has a thread: under Wine a thread whose stack overflowed with no
 * room left to report it dies at once, with no exception and no exit call;
 * when that was the last one, the agent ends the process as Wine would
 * have (code 1) and notes that the thread vanished.
 *
 * What cannot be seen here: a fast fail (__fastfail) on Windows ends the
 * process in the kernel, with no handler and no exit call; so does a
 * kill from another process. The injector concludes from what was noted
 * (injector/run.c).
 *
 * The detours use little stack (a thread whose stack overflowed runs the
 * filter on what is left) and call nothing that is hooked but the
 * originals.
 */
#include <string.h>

#include "agent/agent.h"
#include "hook/base/search.h"
#include "hook/suspend/threads_win.h"

typedef LONG (WINAPI *filter_fn)(EXCEPTION_POINTERS *);
typedef LONG (NTAPI *terminate_fn)(HANDLE, LONG);
typedef void (NTAPI *exit_thread_fn)(ULONG);
typedef void (NTAPI *exit_process_fn)(ULONG);
typedef void (__cdecl *abort_fn)(void);

static filter_fn orig_filter;
static terminate_fn orig_terminate;
static exit_thread_fn orig_exit_thread;
static exit_process_fn exit_process;
static abort_fn orig_abort[2];

/* threads in a detour's call of the original (their return address is
 * the agent's: it must not be unloaded under them) */
static volatile LONG in_detour;

static void note_bits(uint32_t bits)
{
    InterlockedOr((volatile LONG *)&g_hs.hdr->end_seen, (LONG)bits);
}

static LONG WINAPI on_unhandled(EXCEPTION_POINTERS *ep)
{
    hs_session_header *h = g_hs.hdr;
    int mine = 0;
    if (h && ep && ep->ExceptionRecord &&
        !(InterlockedOr((volatile LONG *)&h->end_seen, HS_END_UNHANDLED) & HS_END_UNHANDLED)) {
        /* the first unhandled exception is the one that counts */
        h->end_code = ep->ExceptionRecord->ExceptionCode;
        h->end_addr = (uint64_t)(uintptr_t)ep->ExceptionRecord->ExceptionAddress;
        h->end_tid = (uint32_t)hs_teb_read(HS_TEB_THREAD_ID);
        mine = 1;
    }
    InterlockedIncrement(&in_detour);
    LONG r = orig_filter(ep);
    InterlockedDecrement(&in_detour);
    if (mine && r == EXCEPTION_CONTINUE_EXECUTION)
        InterlockedAnd((volatile LONG *)&h->end_seen, ~(LONG)HS_END_UNHANDLED);
    return r;
}

static LONG NTAPI on_terminate(HANDLE process, LONG status)
{
    hs_session_header *h = g_hs.hdr;
    /* 0: every other thread (RtlExitUserProcess does that first), -1: this process */
    if (h && (process == NULL || process == GetCurrentProcess() ||
              GetProcessId(process) == GetCurrentProcessId()) &&
        !(InterlockedOr((volatile LONG *)&h->end_seen, HS_END_EXIT) & HS_END_EXIT))
        h->end_exit_code = (uint32_t)status;
    InterlockedIncrement(&in_detour);
    LONG r = orig_terminate(process, status);
    InterlockedDecrement(&in_detour);
    return r;
}

/* Threads that are hookscope's: the injector's remote threads. */
static int hookscope_thread(DWORD tid, void *ud __attribute__((unused)))
{
    for (int i = 0; i < 16; i++)
        if (g_hs.hdr && g_hs.hdr->injector_tids[i] == tid)
            return 1;
    return 0;
}

/* Threads that may still be the target's (DLL_THREAD_ATTACH minus
 * DETACH, from the count at start, hookscope's own left out): only when
 * it says "none but this one" is the exact, slower count taken. */
volatile LONG hs_target_threads;

/* The threads counted at the start (sorted): their DLL_THREAD_ATTACH may
 * still come (in a process started suspended, the first thread attaches
 * when it runs) and must not count them twice. One that ends is marked
 * gone (thread ids are reused). */
#define MAX_COUNTED 4096
static DWORD counted[MAX_COUNTED];
static volatile LONG counted_gone[MAX_COUNTED];
static size_t n_counted, n_building;

static bool counted_below(const void *tid, size_t i)
{
    return counted[i] < *(const DWORD *)tid;
}

static int counted_at(DWORD tid)
{
    size_t lo = hs_partition_point(n_counted, &tid, counted_below);
    return lo < n_counted && counted[lo] == tid ? (int)lo : -1;
}

static int collect_tid(DWORD tid, void *ud __attribute__((unused)))
{
    if (!hookscope_thread(tid, NULL) && n_building < MAX_COUNTED) {
        size_t i = n_building++;
        while (i > 0 && counted[i - 1] > tid) {
            counted[i] = counted[i - 1];
            i--;
        }
        counted[i] = tid;
    }
    return 1;   /* (counted here, not by hs_suspend_count_others) */
}

void hs_ending_thread(int attach)
{
    DWORD tid = GetCurrentThreadId();
    if (hookscope_thread(tid, NULL))
        return;
    int k = counted_at(tid);
    if (attach) {
        if (k < 0 || counted_gone[k])
            InterlockedIncrement(&hs_target_threads);
    } else if (!hs_suspend_is_worker(tid)) {   /* (a worker takes itself out when it starts) */
        InterlockedDecrement(&hs_target_threads);
        if (k >= 0)
            counted_gone[k] = 1;
    }
}

static void NTAPI on_exit_thread(ULONG status)
{
    uint64_t t0 = hs_rdtsc();
    if (g_hs.hdr && hs_target_threads <= 1 && hs_suspend_count_others(hookscope_thread, NULL) == 0) {
        /* the last of the target's threads: untraced, the process would end now */
        exit_process(status);
    }
    hs_thread_cost(HS_THREAD_EXIT, t0);
    orig_exit_thread(status);
}

static void __cdecl on_abort0(void)
{
    if (g_hs.hdr)
        note_bits(HS_END_ABORT);
    orig_abort[0]();
}

static void __cdecl on_abort1(void)
{
    if (g_hs.hdr)
        note_bits(HS_END_ABORT);
    orig_abort[1]();
}

/* Every second while idle (on a freeze worker): has the target lost its
 * last thread without ending? */
static void check_threads_left(void)
{
    hs_session_header *h = g_hs.hdr;
    if (!h || !(h->end_watch & HS_END_WATCH_LAST) || h->stop_requested)
        return;
    if (hs_suspend_count_others(hookscope_thread, NULL) == 0) {
        note_bits(HS_END_VANISHED);
        exit_process(1);
    }
}

/* ---- detours ------------------------------------------------------------------------ */

typedef struct watch_detour {
    hs_detour d;
    uint32_t watch;            /* HS_END_WATCH_* */
} watch_detour;

static watch_detour detours[] = {
    { { .module = L"kernelbase.dll", .name = "UnhandledExceptionFilter", .fn = (void *)on_unhandled,
        .orig = (void **)&orig_filter }, HS_END_WATCH_UNHANDLED },
    { { .module = L"ntdll.dll", .name = "NtTerminateProcess", .fn = (void *)on_terminate,
        .orig = (void **)&orig_terminate }, HS_END_WATCH_EXIT },
    { { .module = L"ntdll.dll", .name = "RtlExitUserThread", .fn = (void *)on_exit_thread,
        .orig = (void **)&orig_exit_thread }, HS_END_WATCH_LAST },
    { { .module = L"msvcrt.dll", .name = "abort", .fn = (void *)on_abort0, .orig = (void **)&orig_abort[0] },
      HS_END_WATCH_ABORT },
    { { .module = L"ucrtbase.dll", .name = "abort", .fn = (void *)on_abort1, .orig = (void **)&orig_abort[1] },
      HS_END_WATCH_ABORT },
};
#define N_DETOURS (sizeof detours / sizeof detours[0])

/* Patch every prepared detour not in yet (or take every one out); what
 * is in is watched. */
static void patch_detours(int install)
{
    hs_detour *list[N_DETOURS];
    for (size_t i = 0; i < N_DETOURS; i++)
        list[i] = &detours[i].d;
    if (hs_detours_patch(list, N_DETOURS, install) < 0 || !install)
        return;
    for (size_t i = 0; i < N_DETOURS; i++)
        if (detours[i].d.patched)
            InterlockedOr((volatile LONG *)&g_hs.hdr->end_watch, (LONG)detours[i].watch);
}

void hs_ending_install(void)
{
    exit_process = (exit_process_fn)(void (*)(void))GetProcAddress(GetModuleHandleW(L"ntdll.dll"),
                                                                    "RtlExitUserProcess");
    if (!exit_process)
        return;
    for (size_t i = 0; i < N_DETOURS; i++) {
        hs_detour *d = &detours[i].d;
        /* the last-thread check needs the exit call and a count of threads to start from */
        if (detours[i].watch == HS_END_WATCH_LAST) {
            n_counted = n_building = 0;
            if (hs_suspend_count_others(collect_tid, NULL) < 0)
                continue;
            memset((void *)counted_gone, 0, sizeof counted_gone);
            hs_target_threads = (LONG)n_building;
            MemoryBarrier();
            n_counted = n_building;
        }
        if (!d->ready)
            hs_detour_prepare(d);
    }
    patch_detours(1);
    hs_suspend_on_idle(check_threads_left, 1000);
}

void hs_ending_module_loaded(void)
{
    size_t before = 0, after = 0;
    for (size_t i = 0; i < N_DETOURS; i++)
        before += detours[i].d.ready;
    for (size_t i = 0; i < N_DETOURS; i++)
        if (!detours[i].d.ready && detours[i].watch == HS_END_WATCH_ABORT)
            hs_detour_prepare(&detours[i].d);
    for (size_t i = 0; i < N_DETOURS; i++)
        after += detours[i].d.ready;
    if (after > before)
        patch_detours(1);
}

int hs_ending_remove(void)
{
    hs_suspend_on_idle(NULL, 0);
    patch_detours(0);
    for (size_t i = 0; i < N_DETOURS; i++)
        if (detours[i].d.patched)
            return -1;
    return 0;
}

LONG hs_ending_busy(void)
{
    return in_detour;
}
