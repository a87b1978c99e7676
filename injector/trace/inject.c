/*
 * injector/trace/inject.c - agent injection (see inject.h).
 *
 * A remote thread runs LoadLibraryW(agent path); kernel32 is at the same
 * address in every process of a session, so our own LoadLibraryW is the
 * target's. In a process created suspended that thread also completes the
 * process's initialisation, so the exe's imports are loaded when it
 * returns. The agent's base is then found in the target's module list,
 * the session's section and events are duplicated into the target, and
 * a second remote thread runs hs_agent_init (its rva is read from the
 * agent DLL's export table with our PE reader) with the section's handle
 * there: the agent maps it and hooks the modules. Both threads are waited
 * for before the caller resumes the target, so no code of the target runs
 * unhooked.
 *
 * A 32-bit (WOW64) process gets the 32-bit agent, hookscope-agent32.dll,
 * through the LoadLibraryW of its own i386 kernel32, whose address is read
 * from that kernel32's export table in the target; one created suspended
 * is first initialised by a thread of its own (remote32.h).
 */
#include "injector/trace/inject.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "hook/base/remote_win.h"
#include "hook/base/util.h"
#include "hook/pe/pe.h"
#include "injector/trace/remote32.h"

#define LOAD_TIMEOUT_MS 60000
#define INIT_TIMEOUT_MS 600000

/* Wait for a remote thread and fetch its exit code; returns -1 if the
 * process died or the wait timed out (error printed). */
static int wait_remote(HANDLE thread, HANDLE process, DWORD timeout, const char *what, DWORD *code)
{
    HANDLE both[2] = { thread, process };
    DWORD w = WaitForMultipleObjects(2, both, FALSE, timeout);
    if (w == WAIT_OBJECT_0) {
        *code = 0;
        GetExitCodeThread(thread, code);
        return 0;
    }
    if (w == WAIT_OBJECT_0 + 1) {
        DWORD code = 0;
        GetExitCodeProcess(process, &code);
        hs_err("the target exited (code 0x%lX) while %s", (unsigned long)code, what);
    } else {
        hs_err("timed out while %s", what);
    }
    return -1;
}

bool hs_is_wow64(HANDLE process)
{
    BOOL wow64 = FALSE;
    return IsWow64Process(process, &wow64) && wow64;
}

static const wchar_t *agent_name(int x86)
{
    return x86 ? L"hookscope-agent32.dll" : L"hookscope-agent.dll";
}

/* Full path of the agent DLL, next to hookscope.exe (malloc'd). */
static wchar_t *agent_path(int x86)
{
    const wchar_t *dir = hs_self_dir(), *name = agent_name(x86);
    wchar_t *agent = hs_xmalloc((wcslen(dir) + wcslen(name) + 1) * sizeof(wchar_t));
    wcscpy(agent, dir);
    wcscat(agent, name);
    return agent;
}

/* rva of an export of the agent DLL (the 32-bit one when x86), read from
 * its file (once per run); 0 after printing an error. */
static uint32_t agent_export(int x86, const char *name)
{
    static hs_pe pe[2];
    static uint8_t *file[2];
    if (!file[x86]) {
        wchar_t *agent = agent_path(x86);
        size_t size = 0;
        unsigned long err = 0;
        file[x86] = hs_read_file(agent, &size, &err);
        if (!file[x86]) {
            char *a = hs_utf8(agent);
            hs_err("cannot read the agent %s: %s", a, hs_win_error(err));
            free(a);
        } else if (hs_pe_load_file(&pe[x86], file[x86], size) != HS_PE_OK) {
            memset(&pe[x86], 0, sizeof pe[x86]);
        }
        free(agent);
        if (!file[x86])
            return 0;
    }
    uint32_t rva = pe[x86].image ? hs_pe_export_rva(&pe[x86], name) : 0;
    if (!rva)
        hs_err("the agent DLL has no %s export", name);
    return rva;
}

/* Start a thread in the target, suspended; record its id in the session
 * (so the agent knows its calls are ours), then let it run. */
static HANDLE remote_thread(HANDLE process, hs_session_host *s, uint64_t start, void *param)
{
    DWORD tid = 0;
    HANDLE th = hs_remote_thread(process, (LPTHREAD_START_ROUTINE)(uintptr_t)start, param, CREATE_SUSPENDED, &tid);
    if (!th) {
        hs_err("cannot start a thread in the target: %s", hs_win_error(GetLastError()));
        return NULL;
    }
    static int next;
    s->hdr->injector_tids[next++ % 16] = tid;
    MemoryBarrier();
    ResumeThread(th);
    return th;
}

/* The thread ended: forget its id (ids are reused by new threads). */
static void forget_thread(hs_session_host *s, HANDLE th)
{
    if (WaitForSingleObject(th, 0) != WAIT_OBJECT_0)
        return;   /* still running (timed out): keep it marked */
    DWORD tid = GetThreadId(th);
    for (int i = 0; i < 16; i++)
        if (s->hdr->injector_tids[i] == tid)
            s->hdr->injector_tids[i] = 0;
}

/* Run agent export `name` with `param` in a remote thread and wait for it. */
static int call_export(HANDLE process, hs_session_host *s, const char *name, uint64_t param, DWORD timeout_ms,
                       DWORD *code)
{
    uint32_t rva = agent_export(hs_is_wow64(process), name);
    if (!rva)
        return -1;
    HANDLE th = remote_thread(process, s, s->agent_base + rva, (void *)(uintptr_t)param);
    if (!th)
        return -1;
    int rc = wait_remote(th, process, timeout_ms, name, code);
    forget_thread(s, th);
    CloseHandle(th);
    return rc;
}

int hs_agent_call(HANDLE process, hs_session_host *s, const char *name, DWORD timeout_ms,
                  DWORD *code)
{
    return call_export(process, s, name, 0, timeout_ms, code);
}

/* The address of kernel32's export `name` in `process`: our own for a
 * 64-bit target (kernel32 is at the same address in every process of a
 * session), read from the target's i386 kernel32 for a 32-bit one. 0
 * after printing why. */
static uint64_t kernel32_export(HANDLE process, const char *name)
{
    if (!hs_is_wow64(process))
        return (uint64_t)(uintptr_t)GetProcAddress(GetModuleHandleW(L"kernel32.dll"), name);
    uint64_t k32 = 0;
    hs_remote_module(process, true, L"kernel32.dll", &k32);
    uint64_t addr = k32 ? hs_remote32_export(process, k32, name) : 0;
    if (!addr)
        hs_err("cannot find %s in the target's 32-bit kernel32.dll%s", name, k32 ? "" : " (not loaded)");
    return addr;
}

int hs_agent_unload(HANDLE process, hs_session_host *s)
{
    uint64_t fl = kernel32_export(process, "FreeLibrary");
    if (!fl)
        return -1;
    HANDLE th = remote_thread(process, s, fl, (void *)(uintptr_t)s->agent_base);
    if (!th)
        return -1;
    DWORD code = 0;
    int rc = wait_remote(th, process, 30000, "unloading the agent", &code);
    forget_thread(s, th);
    CloseHandle(th);
    return rc < 0 || !code ? -1 : 0;
}

/* After the agent hooked (hs_agent_init or hs_agent_reattach returned
 * `code`): 0, or -1 after printing why it failed. */
static int check_ready(hs_session_host *s, DWORD code)
{
    hs_session_header h;
    hs_session_host_header(s, &h);
    hs_log("hooked %u functions in %u modules; threads stopped in %u freeze(s), %u round(s), "
           "%u context timeout(s), longest %u ms", h.n_functions, h.n_modules, h.freezes, h.freeze_rounds,
           h.freeze_timeouts, h.freeze_ms_max);
    if (code != 0 || h.agent_state != HS_AGENT_READY) {
        hs_err("the agent failed: %s", h.error_text[0] ? h.error_text : hs_win_error(code));
        return -1;
    }
    if (h.error_text[0]) {
        /* a module asked for could not be hooked (e.g. the function table is full) */
        hs_err("%s", h.error_text);
        return -1;
    }
    return 0;
}

int hs_agent_find(HANDLE process, uint64_t *base, hs_agent_public *pub)
{
    const int x86 = hs_is_wow64(process);
    int found = hs_remote_module(process, x86, agent_name(x86), base);
    if (found <= 0)
        return found;
    memset(pub, 0, sizeof *pub);
    uint32_t rva = agent_export(x86, "hs_agent_public_state");
    SIZE_T got = 0;
    if (!rva || !ReadProcessMemory(process, (void *)(uintptr_t)(*base + rva), pub, sizeof *pub, &got) ||
        got != sizeof *pub || pub->magic != HS_PUBLIC_MAGIC || pub->version != HS_SESSION_VERSION)
        pub->state = HS_PUBLIC_NONE;   /* another build of the agent: nothing to go by */
    return 1;
}

int hs_agent_reuse(HANDLE process, hs_session_host *s, uint64_t base)
{
    uint64_t section = 0;
    s->agent_base = base;
    if (hs_session_hand_over(s, process, &section) < 0)
        return -1;
    hs_log("reusing the agent left at 0x%llx by an earlier attach; hooking", (unsigned long long)base);
    DWORD code = 0;
    if (call_export(process, s, "hs_agent_reattach", section, INIT_TIMEOUT_MS, &code) < 0)
        return -1;
    if (code == ERROR_BUSY) {
        hs_err("another hookscope is taking over the agent in this process");
        return -1;
    }
    if (code == ERROR_TOO_MANY_OPEN_FILES) {
        hs_err("the agent left in this process keeps as many earlier sessions as it can (32), each "
               "for timed calls that have not returned; restart the process to trace it again");
        return -1;
    }
    return check_ready(s, code);
}

/* The agent just loaded into `process`: its base, from the process's
 * module list (listing another process's modules fails now and then
 * while it loads or frees a DLL). */
static int loaded_agent(HANDLE process, uint64_t *base)
{
    hs_agent_public pub;
    for (int tries = 0; tries < 10; tries++) {
        if (tries)
            Sleep(20);
        if (hs_agent_find(process, base, &pub) > 0)
            return 0;
    }
    return -1;
}

/* A 32-bit process created suspended has no kernel32 yet (remote32.h):
 * a thread that only ends, at its ntdll's RtlExitUserThread, completes
 * its initialisation. 0, or -1 after printing why. */
static int initialise_32bit(HANDLE process, hs_session_host *s)
{
    uint64_t k32;
    if (hs_remote_module(process, true, L"kernel32.dll", &k32) > 0)
        return 0;
    uint64_t ntdll = hs_remote32_ntdll(process);
    uint64_t exit_thread = ntdll ? hs_remote32_export(process, ntdll, "RtlExitUserThread") : 0;
    if (!exit_thread) {
        hs_err("cannot find the 32-bit ntdll.dll's RtlExitUserThread in the target");
        return -1;
    }
    hs_log("initialising the 32-bit process (a thread at ntdll!RtlExitUserThread)");
    HANDLE th = remote_thread(process, s, exit_thread, NULL);
    if (!th)
        return -1;
    DWORD code = 0;
    int rc = wait_remote(th, process, LOAD_TIMEOUT_MS, "initialising the 32-bit process", &code);
    forget_thread(s, th);
    CloseHandle(th);
    return rc;
}

int hs_inject(HANDLE process, hs_session_host *s)
{
    const int x86 = hs_is_wow64(process);
    if (!agent_export(x86, "hs_agent_init") || (x86 && initialise_32bit(process, s) < 0))
        return -1;
    uint64_t load = kernel32_export(process, "LoadLibraryW");
    if (!load)
        return -1;
    wchar_t *agent = agent_path(x86);

    size_t bytes = (wcslen(agent) + 1) * sizeof(wchar_t);
    void *remote = hs_remote_alloc(process, bytes, PAGE_READWRITE);
    int rc = -1;
    HANDLE th = NULL;
    uint64_t section = 0;
    if (!remote || !WriteProcessMemory(process, remote, agent, bytes, NULL)) {
        hs_err("cannot write into the target: %s", hs_win_error(GetLastError()));
        goto out;
    }
    hs_log("loading the %s agent into the target", x86 ? "32-bit" : "64-bit");
    th = remote_thread(process, s, load, remote);
    if (!th)
        goto out;
    DWORD code = 0;
    int waited = wait_remote(th, process, LOAD_TIMEOUT_MS, "loading the agent", &code);
    forget_thread(s, th);
    CloseHandle(th);
    th = NULL;
    if (waited < 0)
        goto out;
    if (code == 0 || loaded_agent(process, &s->agent_base) < 0) {
        hs_err("the agent could not be loaded into the target");
        goto out;
    }
    if (hs_session_hand_over(s, process, &section) < 0)
        goto out;
    hs_log("agent loaded at 0x%llx; hooking", (unsigned long long)s->agent_base);
    if (call_export(process, s, "hs_agent_init", section, INIT_TIMEOUT_MS, &code) < 0)
        goto out;
    if (code == ERROR_INVALID_HANDLE) {
        hs_err("the agent failed to start: it could not map its session");
        goto out;
    }
    rc = check_ready(s, code);
out:
    if (th)
        CloseHandle(th);
    if (remote)
        hs_remote_free(process, remote);
    free(agent);
    return rc;
}
