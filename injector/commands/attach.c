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

#include "hook/base/util.h"
#include "hookscope/path.h"
#include "injector/commands/commands.h"
#include "injector/commands/progress.h"
#include "injector/output/outdir.h"
#include "injector/trace/inject.h"
#include "injector/trace/outcome.h"
#include "injector/trace/rights.h"
#include "injector/trace/target.h"
#include "injector/trace/trace.h"

#define DETACH_TIMEOUT_MS 60000

/* Is process `pid` a running hookscope? */
static int hookscope_alive(DWORD pid)
{
    HANDLE p = pid ? OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid) : NULL;
    if (!p)
        return 0;
    wchar_t path[MAX_PATH * 2];
    DWORD len = MAX_PATH * 2;
    int alive = WaitForSingleObject(p, 0) == WAIT_TIMEOUT && QueryFullProcessImageNameW(p, 0, path, &len) &&
                !_wcsicmp(hs_file_name(path), L"hookscope.exe");
    CloseHandle(p);
    return alive;
}

/* How taking the agent out of a process ended (take_agent_out). */
typedef enum {
    AGENT_OUT,            /* every hook out, the agent unloaded */
    AGENT_NO_ANSWER,      /* its detach could not be called, or did not answer */
    AGENT_STAYS,          /* its detach refused (its code says why: ERROR_BUSY, timed calls
                             open in it; WAIT_TIMEOUT, threads it could not stop) */
    AGENT_NOT_UNLOADED,   /* every hook out, the unload failed */
} agent_out;

/* Take hookscope's agent out of the process whose session is s: its
 * detach (every hook out), then its unload. *code: the detach's answer. */
static agent_out take_agent_out(HANDLE process, hs_session_host *s, DWORD *code)
{
    *code = 0;
    if (hs_agent_call(process, s, "hs_agent_detach", DETACH_TIMEOUT_MS, code) < 0)
        return AGENT_NO_ANSWER;
    if (*code)
        return AGENT_STAYS;
    hs_log("hooks out; unloading the agent");
    return hs_agent_unload(process, s) < 0 ? AGENT_NOT_UNLOADED : AGENT_OUT;
}

/* An attach that failed after the agent may have loaded: take out what
 * went in, and say so when the agent stays (the process keeps it,
 * inactive). */
static void abandon_agent(HANDLE process, hs_session_host *s, DWORD pid)
{
    hs_session_header h;
    hs_session_host_header(s, &h);
    if (h.agent_state < HS_AGENT_LOADED)
        return;
    DWORD code;
    agent_out out = take_agent_out(process, s, &code);
    if (out == AGENT_NOT_UNLOADED)
        hs_err("the agent could not be unloaded from process %lu; its hooks are out", (unsigned long)pid);
    else if (out == AGENT_STAYS)
        hs_err("the agent stays loaded in process %lu, inactive, every hook out (%s)", (unsigned long)pid,
               hs_win_error(code));
}

/* hookscope's agent is loaded in the process already. 1: it is resident
 * (an earlier attach left it for timed calls still running in it) and can
 * serve this attach; 0: it was taken out now (a hookscope that attached
 * ended without detaching), a fresh one can be loaded; -1: neither (the
 * error is printed). */
static int agent_left_behind(HANDLE process, DWORD pid, uint64_t base, const hs_agent_public *pub)
{
    if (pub->state == HS_PUBLIC_RESIDENT)
        return 1;
    if (pub->state == HS_PUBLIC_NONE) {
        hs_err("process %lu has a hookscope agent loaded that this hookscope cannot use (another version?)",
               (unsigned long)pid);
        return -1;
    }
    if (hookscope_alive(pub->injector_pid)) {
        hs_err("process %lu is being traced by another hookscope (process %lu)", (unsigned long)pid,
               (unsigned long)pub->injector_pid);
        return -1;
    }
    /* the hookscope that attached ended without detaching: its hooks may
     * still be in; take them out first */
    hs_session_host old;
    if (hs_session_open(&old, process, pub->session_handle, base) < 0) {
        hs_err("process %lu has a hookscope agent whose session is gone (a hookscope ended while "
               "attaching?)", (unsigned long)pid);
        return -1;
    }
    hs_log("the hookscope (process %lu) that attached before ended without detaching; taking its hooks out",
           (unsigned long)pub->injector_pid);
    DWORD code;
    int rc = -1;
    agent_out out = take_agent_out(process, &old, &code);
    if (out == AGENT_OUT) {
        rc = 0;
    } else if (out == AGENT_STAYS && (code == ERROR_BUSY || code == WAIT_TIMEOUT)) {
        rc = 1;
    } else if (out == AGENT_STAYS) {
        hs_session_header h;
        hs_session_host_header(&old, &h);
        hs_err("could not take out the hooks of the hookscope that attached before (%s): %s",
               hs_win_error(code), h.error_text);
    }
    hs_session_close(&old);
    return rc;
}

int hs_cmd_attach(const hs_options *o)
{
    hs_trace_config tc = hs_options_trace(o);
    /* samples only: reading is enough; hooks: the session's handles go in */
    const DWORD access = !o->no_hooks ? PROCESS_CREATE_THREAD | PROCESS_QUERY_INFORMATION | PROCESS_VM_OPERATION |
                                        PROCESS_VM_WRITE | PROCESS_VM_READ | PROCESS_DUP_HANDLE | SYNCHRONIZE
                                  : PROCESS_QUERY_INFORMATION | PROCESS_VM_READ | SYNCHRONIZE;
    char why[300];
    if (hs_rights_attach_check(hs_token_api_get(), o->pid, why, sizeof why) < 0) {
        hs_err("%s", why);
        return HS_EXIT_FAILED;
    }
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
    wchar_t path[MAX_PATH * 2];
    DWORD plen = MAX_PATH * 2;
    if (!QueryFullProcessImageNameW(process, 0, path, &plen)) {
        hs_err("cannot find the program of process %u: %s", o->pid, hs_win_error(GetLastError()));
        return HS_EXIT_FAILED;
    }
    char *shown = hs_utf8(path);
    int bits = 0;
    if (hs_target_check(path, shown, &bits) < 0)
        return HS_EXIT_FAILED;
    if (hs_is_wow64(process))
        bits = 32;   /* (what runs, whatever the file says) */
    tc.target_bits = bits;

    if (hs_outdir_open(o->outdir) < 0)
        return HS_EXIT_FAILED;
    hs_trace t;
    if (hs_trace_begin(&t, &tc) < 0)
        return HS_EXIT_FAILED;
    t.p->pid = o->pid;
    t.p->bits = bits;
    if (!o->no_hooks) {
        /* an agent left by an earlier attach serves this one too */
        uint64_t agent_base = 0;
        hs_agent_public pub;
        int reuse = 0, found = -1;
        for (int tries = 0; tries < 10 && found < 0; tries++) {
            /* (listing another process's modules fails now and then while
             * it loads or frees a DLL) */
            if (tries)
                Sleep(20);
            found = hs_agent_find(process, &agent_base, &pub);
        }
        if (found > 0 && (reuse = agent_left_behind(process, o->pid, agent_base, &pub)) < 0)
            return HS_EXIT_FAILED;
        if (hs_trace_session(&t, o->pid, &tc, HS_OPT_ATTACH) < 0)
            return HS_EXIT_FAILED;
        if ((reuse ? hs_agent_reuse(process, &t.session, agent_base) : hs_inject(process, &t.session)) < 0 ||
            hs_trace_check_filters(&t, &tc) < 0) {
            /* the agent may be half loaded */
            abandon_agent(process, &t.session, o->pid);
            hs_trace_abandon(&t);
            return HS_EXIT_FAILED;
        }
    }
    if (hs_trace_sample_start(&t, o->pid) < 0) {
        if (!o->no_hooks)
            abandon_agent(process, &t.session, o->pid);
        hs_trace_abandon(&t);
        return HS_EXIT_FAILED;
    }
    t.t_start = hs_now();
    if (!o->quiet && !o->no_hooks) {
        uint32_t hooked = 0;
        hs_session_src src = hs_session_host_src(&t.session);
        hs_module_rec rec;
        for (uint32_t m = 0; m < hs_session_modules(&src); m++)
            if (hs_session_module_at(&src, m, &rec))
                hooked += rec.n_hooked;
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
        double ratio;
        uint64_t calls = hs_trace_live_calls(&t, &ratio);
        hs_progress_update(&pr, now, now - t.t_start, calls, hs_trace_live_samples(&t),
                           hs_trace_live_rate(&t), ratio);
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
        DWORD dcode;
        hs_log("detaching: taking the hooks out");
        agent_out out = take_agent_out(process, &t.session, &dcode);
        if (out == AGENT_NO_ANSWER) {
            rc = HS_EXIT_FAILED;
        } else if (out == AGENT_STAYS && dcode == ERROR_BUSY) {
            hs_profile_warn(t.p, "timed calls were still running at detach; their frames return "
                                  "into the agent, which stays loaded (inactive, hooks out)");
            hs_err("timed calls were still running at detach: the agent stays loaded, inactive "
                   "(every hook is out)");
        } else if (out == AGENT_STAYS) {
            hs_profile_warn(t.p, "some threads stayed inside hooks; the agent stays loaded (inactive)");
            hs_session_header h;
            hs_session_host_header(&t.session, &h);
            if (!h.error_text[0])   /* (else that says why, at the end) */
                hs_err("could not unload the agent (%s); its hooks are out, it stays loaded inactive",
                       hs_win_error(dcode));
        } else if (out == AGENT_NOT_UNLOADED) {
            hs_profile_warn(t.p, "the agent could not be unloaded; its hooks are out");
        }
    } else if (stop != HS_STOP_DETACH) {
        GetExitCodeProcess(process, &code);
        t.p->exited = 1;
        t.p->exit_code = code;
        /* it ended while hooked: a crash, or an exit (from what the agent saw) */
        hs_session_header h;
        if (t.session.view)
            hs_session_host_header(&t.session, &h);
        hs_ending_decide(t.session.view ? &h : NULL, code, t.p);
        if (t.p->stop == HS_STOP_CRASH)
            stop = HS_STOP_CRASH;
    }
    CloseHandle(process);
    t.p->stop = stop;
    t.p->target_path = hs_utf8(path);
    int frc = hs_trace_finish(&t, &tc);
    return rc ? rc : frc;
}
