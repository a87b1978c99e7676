/*
 * injector/commands/attach.c - `hookscope attach PID`: hook and sample a running
 * process until --duration or Ctrl+C, then stop sampling, take every
 * patch out, unload the agent and leave: the process keeps running as if
 * nothing happened, its code bytes as they were. With --no-hooks nothing
 * goes into the process: it is only sampled, from outside.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "base/util.h"
#include "commands/commands.h"
#include "commands/progress.h"
#include "output/outdir.h"
#include "trace/inject.h"
#include "trace/target.h"
#include "trace/trace.h"

#define DETACH_TIMEOUT_MS 60000

int hs_cmd_attach(const hs_options *o)
{
    /* samples only: reading is enough */
    const DWORD access = !o->no_hooks ? PROCESS_CREATE_THREAD | PROCESS_QUERY_INFORMATION | PROCESS_VM_OPERATION |
                                        PROCESS_VM_WRITE | PROCESS_VM_READ | SYNCHRONIZE
                                  : PROCESS_QUERY_INFORMATION | PROCESS_VM_READ | SYNCHRONIZE;
    HANDLE process = OpenProcess(access, FALSE, o->pid);
    if (!process) {
        DWORD err = GetLastError();
        if (err == ERROR_INVALID_PARAMETER)
            hs_err("no process has id %u", o->pid);
        else if (err == ERROR_ACCESS_DENIED)
            hs_err("cannot open process %u: access denied (it runs as another user, or elevated: "
                   "run hookscope the same way)", o->pid);
        else
            hs_err("cannot open process %u: %s", o->pid, hs_win_error(err));
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

    if (hs_outdir_open(o->outdir) < 0)
        return HS_EXIT_FAILED;
    hs_trace t;
    if (hs_trace_begin(&t, o) < 0)
        return HS_EXIT_FAILED;
    t.p->pid = o->pid;
    if (!o->no_hooks) {
        if (hs_trace_session(&t, o->pid, o, HS_OPT_ATTACH) < 0)
            return HS_EXIT_FAILED;
        if (hs_inject(process, &t.session) < 0 || hs_trace_check_filters(&t, o) < 0) {
            /* the agent may be half loaded: take out whatever went in */
            DWORD ignored;
            if (t.session.hdr->agent_state >= HS_AGENT_LOADED &&
                hs_agent_call(process, &t.session, "hs_agent_detach", DETACH_TIMEOUT_MS, &ignored) == 0 &&
                ignored == 0)
                hs_agent_unload(process, &t.session);
            hs_trace_abandon(&t);
            return HS_EXIT_FAILED;
        }
    }
    if (hs_trace_sample_start(&t, o->pid) < 0) {
        DWORD ignored;
        if (!o->no_hooks && hs_agent_call(process, &t.session, "hs_agent_detach", DETACH_TIMEOUT_MS, &ignored) == 0 &&
            ignored == 0)
            hs_agent_unload(process, &t.session);
        hs_trace_abandon(&t);
        return HS_EXIT_FAILED;
    }
    t.t_start = hs_now();
    if (!o->quiet && !o->no_hooks) {
        uint32_t hooked = 0;
        for (uint32_t m = 0; m < t.session.hdr->n_modules && m < t.session.hdr->max_modules; m++)
            hooked += hs_session_module(t.session.view, m)->n_hooked;
        hs_err("attached to %u (%s), %u functions hooked; %s", o->pid, hs_basename(shown), hooked,
               o->duration > 0 ? "detaching after --duration or at Ctrl+C" : "Ctrl+C to stop");
    } else if (!o->quiet) {
        hs_err("sampling %u (%s), nothing injected; %s", o->pid, hs_basename(shown),
               o->duration > 0 ? "stopping after --duration or at Ctrl+C" : "Ctrl+C to stop");
    }

    /* collect until --duration, Ctrl+C, or the process ends */
    int stop = HS_STOP_DETACH;
    hs_progress pr;
    hs_progress_start(&pr, o);
    for (;;) {
        if (WaitForSingleObject(process, 50) == WAIT_OBJECT_0) {
            stop = HS_STOP_TARGET_GONE;
            break;
        }
        double now = hs_now();
        hs_progress_update(&pr, now, now - t.t_start, hs_trace_live_calls(&t), hs_trace_live_samples(&t));
        if (hs_trace_interrupts() > 0)
            break;
        if (o->duration > 0 && now - t.t_start >= o->duration)
            break;
    }

    hs_progress_end(&pr);
    /* no sample is taken once the detach begins */
    hs_trace_sample_stop(&t);
    int rc = 0;
    if (stop == HS_STOP_DETACH && !o->no_hooks) {
        DWORD dcode = 0;
        if (hs_agent_call(process, &t.session, "hs_agent_detach", DETACH_TIMEOUT_MS, &dcode) < 0) {
            rc = HS_EXIT_FAILED;
        } else if (dcode == ERROR_BUSY) {
            hs_profile_warn(t.p, "timed calls were still running at detach; their frames return "
                                  "into the agent, which stays loaded (inactive, hooks out)");
            hs_err("timed calls were still running at detach: the agent stays loaded, inactive "
                   "(every hook is out)");
        } else if (dcode != 0) {
            hs_profile_warn(t.p, "some threads stayed inside hooks; the agent stays loaded (inactive)");
            hs_err("could not unload the agent (%s); its hooks are out, it stays loaded inactive",
                   hs_win_error(dcode));
        } else if (hs_agent_unload(process, &t.session) < 0) {
            hs_profile_warn(t.p, "the agent could not be unloaded; its hooks are out");
        }
    } else if (stop != HS_STOP_DETACH) {
        GetExitCodeProcess(process, &code);
        t.p->exited = 1;
        t.p->exit_code = code;
    }
    CloseHandle(process);
    t.p->stop = stop;
    t.p->target_path = hs_utf8(path);
    int frc = hs_trace_finish(&t, o);
    return rc ? rc : frc;
}
