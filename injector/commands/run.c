/*
 * injector/commands/run.c - `hookscope run`: launch the target suspended, inject
 * the agent and hook (unless --no-hooks), start the sampler (unless
 * --no-sample), resume, wait, collect, report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "injector/commands/commands.h"
#include "injector/commands/progress.h"
#include "injector/output/format.h"
#include "injector/output/outdir.h"
#include "injector/trace/inject.h"
#include "injector/trace/outcome.h"
#include "injector/trace/rights.h"
#include "injector/trace/session_host.h"
#include "injector/trace/target.h"
#include "injector/trace/trace.h"

#define STATUS_CONTROL_C_EXIT_CODE 0xC000013Au

int hs_cmd_run(const hs_options *o)
{
    hs_trace_config tc = hs_options_trace(o);
    char *shown = hs_utf8(o->target_argv[0]);
    wchar_t *path = hs_target_resolve(o->target_argv[0]);
    if (!path) {
        DWORD attr = GetFileAttributesW(o->target_argv[0]);
        if (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY))
            hs_err("'%s' is a directory, not a program", shown);
        else
            hs_err("cannot find program '%s'", shown);
        return HS_EXIT_FAILED;
    }
    int bits = 0;
    if (hs_target_check(path, shown, &bits) < 0)
        return HS_EXIT_FAILED;
    tc.target_bits = bits;

    wchar_t *cmdline = hs_build_cmdline(o->target_argv, o->target_argc);
    STARTUPINFOW si;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
    si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    HANDLE std[3] = { si.hStdInput, si.hStdOutput, si.hStdError };
    for (int i = 0; i < 3; i++)
        if (std[i] && std[i] != INVALID_HANDLE_VALUE)
            SetHandleInformation(std[i], HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
    fflush(stdout);
    fflush(stderr);

    if (hs_outdir_open(o->outdir) < 0)
        return HS_EXIT_FAILED;
    hs_trace t;
    if (hs_trace_begin(&t, &tc) < 0)
        return HS_EXIT_FAILED;
    /* the exe's list is made while the process is created (and, for a
     * 64-bit target, while the agent is injected) */
    if (!o->no_hooks && hs_trace_list_exe(&t, &tc, path) < 0)
        return HS_EXIT_FAILED;
    PROCESS_INFORMATION pi;
    hs_rights rights;
    char why[400];
    if (hs_rights_start(hs_token_api_get(), o->elevated_target != 0, path, cmdline, &si, &pi, &rights, why,
                        sizeof why) < 0) {
        hs_err("cannot start '%s': %s", shown, why);
        hs_trace_abandon(&t);
        return HS_EXIT_FAILED;
    }
    if (hs_rights_name(rights)) {
        t.p->target_rights = hs_xstrdup(hs_rights_name(rights));
        hs_log("the target's rights: %s", hs_fmt_rights(t.p->target_rights));
    }
    t.p->pid = pi.dwProcessId;
    t.p->bits = bits;
    bool ready = true;
    if (!o->no_hooks) {
        ready = hs_trace_session(&t, pi.dwProcessId, &tc, 0) == 0;
        ready = ready && hs_inject(pi.hProcess, &t.session) == 0 && hs_trace_check_filters(&t, &tc) == 0;
    }
    if (!ready || hs_trace_sample_start(&t, pi.dwProcessId) < 0) {
        TerminateProcess(pi.hProcess, HS_EXIT_FAILED);
        WaitForSingleObject(pi.hProcess, 5000);
        hs_trace_abandon(&t);
        return HS_EXIT_FAILED;
    }
    t.t_start = hs_now();
    hs_log("resuming the target (pid %lu)", (unsigned long)pi.dwProcessId);
    ResumeThread(pi.hThread);
    CloseHandle(pi.hThread);

    /* wait for the end: exit, Ctrl+C, or --duration */
    int stop = HS_STOP_EXIT;
    double interrupted_at = 0;
    hs_progress pr;
    hs_progress_start(&pr, o);
    for (;;) {
        if (WaitForSingleObject(pi.hProcess, 50) == WAIT_OBJECT_0)
            break;
        double now = hs_now();
        double ratio;
        uint64_t calls = hs_trace_live_calls(&t, &ratio);
        hs_progress_update(&pr, now, now - t.t_start, calls, hs_trace_live_samples(&t),
                           hs_trace_live_rate(&t), ratio);
        int ints = hs_trace_interrupts();
        if (ints > 0 && interrupted_at == 0) {
            interrupted_at = now;
            stop = HS_STOP_INTERRUPT;
        }
        /* the target got the Ctrl+C too; give it a moment to exit by itself */
        if (interrupted_at > 0 && (ints > 1 || now - interrupted_at > 2.0)) {
            TerminateProcess(pi.hProcess, STATUS_CONTROL_C_EXIT_CODE);
            WaitForSingleObject(pi.hProcess, 5000);
            break;
        }
        if (o->duration > 0 && now - t.t_start >= o->duration && stop == HS_STOP_EXIT) {
            stop = HS_STOP_DURATION;
            TerminateProcess(pi.hProcess, STATUS_CONTROL_C_EXIT_CODE);
            WaitForSingleObject(pi.hProcess, 5000);
            break;
        }
    }
    hs_progress_end(&pr);
    if (stop == HS_STOP_EXIT && hs_trace_interrupts() > 0)
        stop = HS_STOP_INTERRUPT;   /* the target ended on the Ctrl+C it got too */
    DWORD code = 0;
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hProcess);
    hs_log("the target ended with 0x%lx; collecting", (unsigned long)code);

    t.p->exited = stop != HS_STOP_DURATION;
    t.p->exit_code = code;
    t.p->stop = stop;
    if (stop == HS_STOP_EXIT) {
        /* crash or exit: from how it ended, as the agent saw it */
        hs_session_header h;
        if (t.session.view)
            hs_session_host_header(&t.session, &h);
        hs_ending_decide(t.session.view ? &h : NULL, code, t.p);
        stop = t.p->stop;
        if (t.session.view)
            hs_log("ending seen by the agent: 0x%x (watched 0x%x)", h.end_seen, h.end_watch);
    }
    t.p->target_path = hs_utf8(path);
    t.p->nargs = o->target_argc - 1;
    t.p->args = hs_xcalloc((size_t)o->target_argc, sizeof *t.p->args);
    for (int i = 1; i < o->target_argc; i++)
        t.p->args[i - 1] = hs_utf8(o->target_argv[i]);

    int rc = hs_trace_finish(&t, &tc);
    if (rc != 0)
        return rc;
    if (stop == HS_STOP_CRASH) {
        char where[640] = "", at[600];
        if (t.p->crash_address)
            snprintf(where, sizeof where, " at %s", hs_loc_format(t.p, t.p->crash_at, true, true, at, sizeof at));
        hs_err("the target crashed: 0x%08lX (%s)%s; the report has everything counted until then",
               (unsigned long)t.p->crash_code, t.p->crash_what ? t.p->crash_what : "exception", where);
    }
    if (stop == HS_STOP_DURATION)
        return 0;
    return (int)code;
}
