/*
 * injector/attach.c - `hookscope attach PID`: hook a running process until
 * --duration or Ctrl+C, then take every patch out, unload the agent and
 * leave: the process keeps running as if nothing happened, its code bytes
 * as they were.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "commands.h"
#include "ending.h"
#include "inject.h"
#include "report.h"
#include "target.h"
#include "trace.h"
#include "util.h"

#define DETACH_TIMEOUT_MS 60000

int hs_cmd_attach(const hs_options *o)
{
    const DWORD access = PROCESS_CREATE_THREAD | PROCESS_QUERY_INFORMATION | PROCESS_VM_OPERATION |
                         PROCESS_VM_WRITE | PROCESS_VM_READ | SYNCHRONIZE;
    HANDLE process = OpenProcess(access, FALSE, o->pid);
    if (!process) {
        hs_err("cannot open process %u: %s", o->pid, hs_win_error(GetLastError()));
        return HS_EXIT_FAILED;
    }
    DWORD code = 0;
    if (GetExitCodeProcess(process, &code) && code != STILL_ACTIVE) {
        hs_err("process %u has already exited", o->pid);
        return HS_EXIT_FAILED;
    }
    BOOL wow64 = FALSE;
    if (IsWow64Process(process, &wow64) && wow64) {
        hs_err("process %u: 32-bit targets are not supported yet", o->pid);
        return HS_EXIT_FAILED;
    }
    wchar_t path[MAX_PATH * 2];
    DWORD plen = MAX_PATH * 2;
    if (!QueryFullProcessImageNameW(process, 0, path, &plen)) {
        hs_err("cannot find the program of process %u: %s", o->pid, hs_win_error(GetLastError()));
        return HS_EXIT_FAILED;
    }
    char *shown = hs_utf8(path);
    if (hs_target_check(path, shown) < 0)
        return HS_EXIT_FAILED;

    if (hs_make_output_dir(o->outdir) < 0) {
        hs_err("cannot create output directory %s", o->outdir);
        return HS_EXIT_FAILED;
    }
    hs_trace t;
    hs_trace_begin(&t, o);
    if (hs_session_create(&t.session, o->pid, o, HS_OPT_ATTACH) < 0)
        return HS_EXIT_FAILED;
    if (hs_inject(process, &t.session) < 0 || hs_trace_check_filters(&t, o) < 0) {
        /* the agent may be half loaded: take out whatever went in */
        DWORD ignored;
        if (t.session.hdr->agent_state >= HS_AGENT_LOADED &&
            hs_agent_call(process, &t.session, "hs_agent_detach", DETACH_TIMEOUT_MS, &ignored) == 0 &&
            ignored == 0)
            hs_agent_unload(process, &t.session);
        return HS_EXIT_FAILED;
    }
    t.r.pid = o->pid;
    t.t_start = hs_now();

    /* collect until --duration, Ctrl+C, or the process ends */
    int stop = HS_STOP_DETACH;
    for (;;) {
        if (WaitForSingleObject(process, 50) == WAIT_OBJECT_0) {
            stop = HS_STOP_TARGET_GONE;
            break;
        }
        if (hs_trace_interrupts() > 0)
            break;
        if (o->duration > 0 && hs_now() - t.t_start >= o->duration)
            break;
    }

    int rc = 0;
    if (stop == HS_STOP_DETACH) {
        DWORD dcode = 0;
        hs_log("detaching: taking the hooks out");
        if (hs_agent_call(process, &t.session, "hs_agent_detach", DETACH_TIMEOUT_MS, &dcode) < 0) {
            rc = HS_EXIT_FAILED;
        } else if (dcode == ERROR_BUSY) {
            hs_results_warn(&t.r, "timed calls were still running at detach; their frames return "
                                  "into the agent, which stays loaded (inactive, hooks out)");
            hs_err("timed calls were still running at detach: the agent stays loaded, inactive "
                   "(every hook is out)");
        } else if (dcode != 0) {
            hs_results_warn(&t.r, "some threads stayed inside hooks; the agent stays loaded (inactive)");
            hs_err("could not unload the agent (%s); its hooks are out, it stays loaded inactive",
                   hs_win_error(dcode));
        } else if (hs_log("hooks out; unloading the agent"), hs_agent_unload(process, &t.session) < 0) {
            hs_results_warn(&t.r, "the agent could not be unloaded; its hooks are out");
        }
    } else {
        GetExitCodeProcess(process, &code);
        t.r.exited = 1;
        t.r.exit_code = code;
        /* it ended while hooked: a crash, or an exit (from what the agent saw) */
        hs_ending_decide(t.session.hdr, code, &t.r);
        if (t.r.stop == HS_STOP_CRASH)
            stop = HS_STOP_CRASH;
    }
    CloseHandle(process);
    t.r.stop = stop;
    t.r.target_path = hs_utf8(path);
    int frc = hs_trace_finish(&t, o);
    return rc ? rc : frc;
}
