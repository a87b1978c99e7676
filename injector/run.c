/*
 * injector/run.c - `hookscope run`: launch the target suspended, inject
 * the agent, hook, resume, wait, collect, report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "addrsym.h"
#include "collect.h"
#include "commands.h"
#include "ending.h"
#include "inject.h"
#include "report.h"
#include "session_host.h"
#include "symbols.h"
#include "target.h"
#include "trace.h"
#include "util.h"

#define STATUS_CONTROL_C_EXIT_CODE 0xC000013Au

int hs_cmd_run(const hs_options *o)
{
    char *shown = hs_utf8(o->target_argv[0]);
    wchar_t *path = hs_target_resolve(o->target_argv[0]);
    if (!path) {
        hs_err("cannot find program '%s'", shown);
        return HS_EXIT_FAILED;
    }
    if (hs_target_check(path, shown) < 0)
        return HS_EXIT_FAILED;

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

    if (hs_make_output_dir(o->outdir) < 0) {
        hs_err("cannot create output directory %s", o->outdir);
        return HS_EXIT_FAILED;
    }
    hs_trace t;
    hs_trace_begin(&t, o);
    PROCESS_INFORMATION pi;
    if (!CreateProcessW(path, cmdline, NULL, NULL, TRUE, CREATE_SUSPENDED, NULL, NULL, &si, &pi)) {
        hs_err("cannot start '%s': %s", shown, hs_win_error(GetLastError()));
        return HS_EXIT_FAILED;
    }
    if (hs_session_create(&t.session, pi.dwProcessId, o, 0) < 0 || hs_inject(pi.hProcess, &t.session) < 0 ||
        hs_trace_check_filters(&t, o) < 0) {
        TerminateProcess(pi.hProcess, HS_EXIT_FAILED);
        WaitForSingleObject(pi.hProcess, 5000);
        return HS_EXIT_FAILED;
    }
    t.r.pid = pi.dwProcessId;
    t.t_start = hs_now();
    hs_log("resuming the target (pid %lu)", (unsigned long)pi.dwProcessId);
    ResumeThread(pi.hThread);
    CloseHandle(pi.hThread);

    /* wait for the end: exit, Ctrl+C, or --duration */
    int stop = HS_STOP_EXIT;
    double interrupted_at = 0;
    for (;;) {
        if (WaitForSingleObject(pi.hProcess, 50) == WAIT_OBJECT_0)
            break;
        double now = hs_now();
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
    if (stop == HS_STOP_EXIT && hs_trace_interrupts() > 0)
        stop = HS_STOP_INTERRUPT;   /* the target ended on the Ctrl+C it got too */
    DWORD code = 0;
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hProcess);
    hs_log("the target ended with 0x%lx; collecting", (unsigned long)code);

    t.r.exited = stop != HS_STOP_DURATION;
    t.r.exit_code = code;
    t.r.stop = stop;
    if (stop == HS_STOP_EXIT) {
        /* crash or exit: from how it ended, as the agent saw it */
        hs_ending_decide(t.session.hdr, code, &t.r);
        stop = t.r.stop;
        hs_log("ending seen by the agent: 0x%x (watched 0x%x)", t.session.hdr->end_seen, t.session.hdr->end_watch);
    }
    t.r.target_path = hs_utf8(path);
    t.r.args = NULL;
    t.r.nargs = o->target_argc - 1;
    char **args = hs_xcalloc((size_t)o->target_argc, sizeof *args);
    for (int i = 1; i < o->target_argc; i++)
        args[i - 1] = hs_utf8(o->target_argv[i]);
    t.r.args = args;

    int rc = hs_trace_finish(&t, o);
    if (rc != 0)
        return rc;
    if (stop == HS_STOP_CRASH) {
        char where[512] = "";
        if (t.r.crash_address) {
            hs_addrsym *as = hs_addrsym_new(&t.r);
            char name[480];
            hs_addrsym_format(as, t.r.crash_address, 1, name, sizeof name);
            hs_addrsym_free(as);
            snprintf(where, sizeof where, " at %s", name);
        }
        hs_err("the target crashed: 0x%08lX (%s)%s; the report has everything counted until then",
               (unsigned long)t.r.crash_code, t.r.crash_what, where);
    }
    if (stop == HS_STOP_DURATION)
        return 0;
    return (int)code;
}
