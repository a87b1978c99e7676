/*
 * agent/dllmain.c - the agent DLL's entry points.
 *
 * The injector loads the DLL with a remote LoadLibraryW and then starts a
 * second remote thread at hs_agent_init, waiting for both before the
 * target's main thread runs. DllMain only notes where the DLL is; the
 * session (a section handle the injector duplicated into this process,
 * hs_agent_init's argument) is attached and everything else done in
 * hs_agent_init, outside the loader lock.
 */
#include <stdlib.h>

#include "agent/agent.h"
#include "hook/suspend/threads_win.h"

BOOL WINAPI DllMain(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
    switch (reason) {
    case DLL_PROCESS_ATTACH:
        g_hs.self = inst;
        g_hs.self_size = hs_pe_mapped_size(inst, NULL);
        InitializeSRWLock(&g_hs.layout_lock);
        InitializeCriticalSection(&g_hs.install_lock);
        break;
    case DLL_THREAD_ATTACH: {
        uint64_t t0 = hs_rdtsc();
        hs_ending_thread(1);
        hs_thread_cost(HS_THREAD_ATTACH, t0);
        break;
    }
    case DLL_THREAD_DETACH: {
        uint64_t t0 = hs_rdtsc();
        hs_ending_thread(0);
        hs_thread_exit();
        hs_retired_thread_exit();
        hs_thread_cost(HS_THREAD_DETACH, t0);
        break;
    }
    case DLL_PROCESS_DETACH:
        hs_thread_exit();
        /* Unloaded by FreeLibrary after hs_agent_detach: release what we
         * hold. (At process exit, reserved != NULL: leave everything.) */
        if (!reserved && g_hs.hdr && g_hs.hdr->agent_state == HS_AGENT_DETACHED) {
            hs_tls_set(NULL);
            TlsFree(g_hs.tls);
            hs_retired_release();
            UnmapViewOfFile(g_hs.view);
            CloseHandle(g_hs.mapping);
            g_hs.hdr = NULL;
            g_hs.view = NULL;
            for (size_t i = 0; i < g_hs.n_mods; i++)
                hs_unwind_unregister(&g_hs.mods[i]);
            hs_arena_free(&g_hs.arena);
        }
        break;
    }
    return TRUE;
}

/* The freeze's context workers are hookscope's threads: their calls are
 * not the target's, and a sampler leaves them alone. */
static void worker_start(void)
{
    hs_agent_enter();
    InterlockedDecrement(&hs_target_threads);   /* (counted at its DLL_THREAD_ATTACH) */
    hs_session_header *h = g_hs.hdr;
    LONG tid = (LONG)GetCurrentThreadId();
    for (int i = 0; h && i < 8; i++)
        if (InterlockedCompareExchange((volatile LONG *)&h->agent_tids[i], tid, 0) == 0)
            break;
}

/* One (performance counter, rdtsc) pair read close together: of a few
 * tries, the one whose two counter reads are nearest, so that a preemption
 * between the reads (a loaded machine) does not skew the pair. */
static void tsc_pair(LONGLONG *qpc, uint64_t *tsc)
{
    LONGLONG best = -1;
    for (int i = 0; i < 8; i++) {
        LARGE_INTEGER a, b;
        QueryPerformanceCounter(&a);
        uint64_t t = hs_rdtsc();
        QueryPerformanceCounter(&b);
        if (best < 0 || b.QuadPart - a.QuadPart < best) {
            best = b.QuadPart - a.QuadPart;
            *qpc = a.QuadPart + best / 2;
            *tsc = t;
        }
    }
}

/* rdtsc ticks per second, against the performance counter, over ~20 ms;
 * the wrapper needs it to give durations in ns. */
static void calibrate_tsc(hs_session_header *h)
{
    LARGE_INTEGER f;
    LONGLONG q0, q1;
    uint64_t t0, t1;
    QueryPerformanceFrequency(&f);
    tsc_pair(&q0, &t0);
    Sleep(20);
    tsc_pair(&q1, &t1);
    double secs = (double)(q1 - q0) / (double)f.QuadPart;
    double hz = secs > 0 ? (double)(t1 - t0) / secs : 1e9;
    if (hz < 1e6)
        hz = 1e9;
    h->tsc_hz = hz;
    h->tsc_ns_mult = (uint64_t)(1e9 / hz * 4294967296.0);
    hs_tsc_ns_mult = h->tsc_ns_mult;
}

/* Serve the session whose section is `handle` (in this process): its TLS
 * slot, the sink, the state the injector waits for. Returns 0 or a Win32
 * error. */
static DWORD attach(uint64_t handle)
{
    if (hs_session_attach(handle) < 0)
        return ERROR_INVALID_HANDLE;   /* no session of this process */
    hs_session_header *h = g_hs.hdr;
    g_hs.tls = TlsAlloc();
    if (g_hs.tls == TLS_OUT_OF_INDEXES || hs_sink_init() < 0) {
        hs_agent_fail((int)GetLastError(), "agent: no TLS slot or memory");
        h->agent_state = HS_AGENT_FAILED;
        g_hs.hdr = NULL;
        return ERROR_NOT_ENOUGH_MEMORY;
    }
    h->tls_index = g_hs.tls;
    hs_session_describe_agent(h);
    h->tsc_start = hs_rdtsc();
    MemoryBarrier();
    h->agent_state = HS_AGENT_LOADED;
    return 0;
}

/* Run by the injector in a remote thread before the target runs (or, for
 * attach, while it runs), with the session's section handle (duplicated
 * into this process) as its argument: attach to the session and hook the
 * configured modules. Returns 0 or a Win32 error; the session's
 * error_text says what went wrong. */
__declspec(dllexport) DWORD WINAPI hs_agent_init(void *param)
{
    if (!g_hs.hdr) {
        DWORD rc = attach((uint64_t)(uintptr_t)param);
        if (rc)
            return rc;
    }
    hs_session_header *h = g_hs.hdr;
    /* This thread belongs to hookscope: whatever it runs (the exe's TLS
     * callbacks at its exit too) counts into the sink, for good. */
    hs_agent_enter();
    DWORD rc = 0;
    if (h->options & HS_OPT_TIME)
        calibrate_tsc(h);   /* 20 ms: only the timing histograms need it */
    g_hs.tl_wait_ticks = (uint64_t)((double)h->timeline_wait_ms * h->tsc_hz / 1e3);
    hs_regions_prepare();   /* (the timeline's filter in ticks needs the clock) */
    if (!g_hs.engine)
        g_hs.engine = hs_engine_new_bits(HS_AGENT_X86 ? 32 : 64);
    if (!g_hs.engine) {
        hs_agent_fail(ERROR_NOT_ENOUGH_MEMORY, "agent: cannot start the disassembler");
        rc = ERROR_NOT_ENOUGH_MEMORY;
    } else if (hs_suspend_init(worker_start) < 0) {
        hs_agent_fail((int)GetLastError(), "agent: cannot start its thread-freeze workers");
        rc = ERROR_PROC_NOT_FOUND;
    } else {
        /* before the modules' hooks, which may lie over the detours */
        EnterCriticalSection(&g_hs.install_lock);
        hs_ending_install();
        if (h->options & HS_OPT_TIME)
            hs_backtrace_install();
        LeaveCriticalSection(&g_hs.install_lock);
        if (hs_modules_init() < 0)
            rc = h->agent_error ? (DWORD)h->agent_error : ERROR_GEN_FAILURE;
    }
    MemoryBarrier();
    h->agent_state = rc ? HS_AGENT_FAILED : HS_AGENT_READY;
    return rc;
}

/* Put every patch of every live hooked module in (install) or out. */
static DWORD patch_all(int install)
{
    if (!g_hs.hdr)
        return ERROR_NOT_READY;
    hs_agent_enter();
    DWORD rc = 0;
    EnterCriticalSection(&g_hs.install_lock);
    /* every module under one freeze */
    hs_mod_state **list = g_hs.n_mods ? malloc(g_hs.n_mods * sizeof *list) : NULL;
    size_t n = 0;
    for (size_t i = 0; i < g_hs.n_mods; i++) {
        hs_mod_state *m = &g_hs.mods[i];
        if (m->hooked != install && !m->unloaded && !m->retired && list)
            list[n++] = m;
    }
    if (g_hs.n_mods && !list)
        rc = ERROR_NOT_ENOUGH_MEMORY;
    else if (n && hs_patch_modules(list, n, install) < 0)
        rc = GetLastError() ? GetLastError() : ERROR_GEN_FAILURE;
    free(list);
    LeaveCriticalSection(&g_hs.install_lock);
    return rc;
}

/* Take every patch out (the hooks stay ready to go back in). */
__declspec(dllexport) DWORD WINAPI hs_agent_unhook(void *param __attribute__((unused)))
{
    return patch_all(0);
}

/* Put every patch back in (modules hooked before and still loaded). */
__declspec(dllexport) DWORD WINAPI hs_agent_rehook(void *param __attribute__((unused)))
{
    return patch_all(1);
}

/* End of an attach: stop hooking new modules, take every patch out, and
 * wait until no thread runs in a stub or in the agent's probe code, so
 * that the agent can be unloaded. Returns 0, or a Win32 error (then the
 * agent must stay loaded). */
__declspec(dllexport) DWORD WINAPI hs_agent_detach(void *param __attribute__((unused)))
{
    hs_session_header *h = g_hs.hdr;
    if (!h)
        return ERROR_NOT_READY;
    h->stop_requested = 1;
    hs_modules_stop();
    /* (the workers of the freezes may have been stopped by an earlier
     * detach of this agent) */
    hs_suspend_init(worker_start);
    DWORD rc = hs_agent_unhook(NULL);
    if (rc == 0) {
        EnterCriticalSection(&g_hs.install_lock);
        if (hs_ending_remove() < 0 || hs_backtrace_remove() < 0)
            rc = ERROR_TIMEOUT;
        LeaveCriticalSection(&g_hs.install_lock);
    }
    /* Stubs drain in microseconds; a timed call still running (a wrapper
     * frame on some stack) returns into the agent's code whenever it ends,
     * so then the agent must stay loaded. */
    if (rc == 0 && hs_quiesce(2000) < 0)
        rc = hs_live_wrapper_frames() ? ERROR_BUSY : WAIT_TIMEOUT;
    /* the freeze's workers run agent code: stop them before an unload;
     * and once the patches are out, an agent that stays (for open timed
     * calls) needs no thread of its own, which would keep the process
     * alive after its last thread ended (a later attach starts them) */
    if ((rc == 0 || rc == ERROR_BUSY || rc == WAIT_TIMEOUT) && hs_suspend_shutdown(2000) < 0 && rc == 0)
        rc = WAIT_TIMEOUT;
    for (size_t i = 0; i < g_hs.n_mods; i++)
        if (!g_hs.mods[i].hooked && !g_hs.mods[i].retired)
            hs_session_module(g_hs.view, g_hs.mods[i].index)->flags |= HS_MOD_UNHOOKED;
    MemoryBarrier();
    if (rc == 0) {
        h->agent_state = HS_AGENT_DETACHED;
        hs_agent_public_state.state = HS_PUBLIC_NONE;
    } else if (rc == ERROR_BUSY || rc == WAIT_TIMEOUT) {
        /* every patch is out; the agent stays for the calls still in it,
         * and a later attach may reuse it */
        hs_agent_public_state.frames_open = hs_live_wrapper_frames();
        hs_agent_public_state.state = HS_PUBLIC_RESIDENT;
    }
    return rc;
}

/* A later attach, with the agent still loaded from an earlier one (see
 * hs_agent_detach): serve the session whose section handle (duplicated
 * into this process) is `param` and hook as hs_agent_init does. Returns 0 or a Win32
 * error (ERROR_BUSY: the agent is not resident, e.g. another hookscope is
 * taking it over). */
__declspec(dllexport) DWORD WINAPI hs_agent_reattach(void *param)
{
    hs_agent_public *p = &hs_agent_public_state;
    if (InterlockedCompareExchange((volatile LONG *)&p->state, HS_PUBLIC_SWITCHING, HS_PUBLIC_RESIDENT) !=
        HS_PUBLIC_RESIDENT)
        return ERROR_BUSY;
    hs_agent_enter();
    EnterCriticalSection(&g_hs.install_lock);
    hs_modules_reset();
    hs_regions_reset();
    int rc = hs_session_switch((uint64_t)(uintptr_t)param);
    LeaveCriticalSection(&g_hs.install_lock);
    if (rc < 0) {
        p->state = HS_PUBLIC_RESIDENT;
        return rc == -2 ? ERROR_TOO_MANY_OPEN_FILES : ERROR_FILE_NOT_FOUND;
    }
    hs_retired_release();
    g_hs.hdr->agent_state = HS_AGENT_LOADED;
    return hs_agent_init(NULL);
}
