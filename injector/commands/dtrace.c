/*
 * injector/commands/dtrace.c - `hookscope dtrace ...` (and
 * hookscope-dtrace.exe): DTrace's command line (dtrace/dcli.h) mapped onto
 * a run or an attach, and the run's profile printed as DTrace prints the
 * program's aggregation (output/dtrace_agg.h), to -o FILE (appended, as
 * dtrace does) or stdout.
 *
 *   profile-N              sampling at N Hz (hs_options.sample,
 *                          sample_rate_hz), no hooks (--no-hooks);
 *                          @[ustack(N)] over the CPU samples, N frames
 *   fpid$target:MOD::entry / pid$target:MOD:FUNC:entry
 *                          hooks: -m MOD (none for an empty MOD: the
 *                          exe), -f MOD!FUNC; with ustack() in the key,
 *                          entry stacks of every call (--stacks=N, at
 *                          most 256 frames); @[probefunc] counts the calls
 *
 * The run writes its reports into a temporary directory, which is read
 * back and removed. Several -p: one child `hookscope dtrace -p PID` per
 * process, all at once, then one aggregation of all of them. Exit status: 0 when the trace was made (whatever the
 * program's own exit code, as dtrace), 2 for a usage error, else the
 * run's failure. Unless -q, a last line on stderr says what was counted
 * ("hookscope dtrace: pid N: C calls counted, S CPU samples"), as dtrace
 * says what its probes matched.
 */
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "injector/commands/commands.h"
#include "injector/dtrace/dcli.h"
#include "injector/output/dtrace_agg.h"
#include "injector/profile/load.h"
#include "injector/trace/target.h"

#define MAX_STACK_DEPTH 256

static const char usage[] =
    "usage: hookscope dtrace [-q] [-x ustackframes=N] -n PROGRAM [-o FILE] (-c 'CMD ARGS' | -p PID)\n"
    "\n"
    "DTrace's command line for the programs hookscope can run:\n"
    "  profile-N /pid == $target/ { @[ustack(N)] = count(); }\n"
    "      CPU samples at N Hz per thread, by stack (cargo-flamegraph's program)\n"
    "  fpid$target:MOD::entry { @[probefunc] = count(); }\n"
    "  pid$target:MOD:FUNC:entry { @[probefunc, ustack()] = count(); }\n"
    "      every call of MOD's functions (FUNC: a glob), counted by hookscope's\n"
    "      hooks; keys: probefunc, probefunc and ustack(), or ustack()\n"
    "\n"
    "  -n PROGRAM         the program (one clause)\n"
    "  -c 'CMD ARGS'      run CMD; arguments split at spaces, '\\ ' is a space\n"
    "  -p PID             attach to a running process until it exits or Ctrl+C;\n"
    "                     repeatable: every process at once, one aggregation\n"
    "  -o FILE            append the output to FILE instead of stdout\n"
    "  -x ustackframes=N  frames of ustack() without a count (default 20)\n"
    "  -q                 quiet\n"
    "\n"
    "The output is DTrace's: a blank line, then each key and its count, by\n"
    "count ascending; stacks leaf first, frames as module`function+0xoffset.\n";

static int dt_err(const char *msg)
{
    fprintf(stderr, "hookscope dtrace: %s\n", msg);
    return HS_EXIT_USAGE;
}

/* A fresh directory for the run's reports. */
static wchar_t *temp_dir(void)
{
    wchar_t base[MAX_PATH];
    DWORD n = GetTempPathW(MAX_PATH, base);
    if (!n || n >= MAX_PATH)
        wcscpy(base, L".\\");
    for (unsigned k = 0; k < 1000; k++) {
        wchar_t *d = hs_xmalloc((wcslen(base) + 64) * sizeof *d);
        swprintf(d, wcslen(base) + 64, L"%lshookscope-dtrace-%lu-%u", base, GetCurrentProcessId(), k);
        if (CreateDirectoryW(d, NULL))
            return d;
        free(d);
    }
    return NULL;
}

static void remove_dir(const wchar_t *dir)
{
    size_t n = wcslen(dir) + MAX_PATH + 4;
    wchar_t *pat = hs_xmalloc(n * sizeof *pat);
    swprintf(pat, n, L"%ls\\*", dir);
    WIN32_FIND_DATAW fd;
    HANDLE h = FindFirstFileW(pat, &fd);
    if (h != INVALID_HANDLE_VALUE) {
        do {
            if (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
                continue;
            swprintf(pat, n, L"%ls\\%ls", dir, fd.cFileName);
            DeleteFileW(pat);
        } while (FindNextFileW(h, &fd));
        FindClose(h);
    }
    free(pat);
    RemoveDirectoryW(dir);
}

/* The options of the run or attach the program asks for. */
static void trace_options(const hs_dcli *c, hs_options *r, wchar_t **mods, wchar_t **filters)
{
    memset(r, 0, sizeof *r);
    r->cmd = hs_command_find(c->npids ? "attach" : "run");
    r->max_functions = 1u << 18;
    r->max_threads = 256;
    r->edges = 1;
    r->stack_every = 1;
    r->quiet = 1;
    r->modules = mods;
    const hs_dprog *p = &c->prog;
    if (p->provider == HS_DPROG_PROFILE) {
        /* as dtrace's profile provider: samples only, nothing injected
         * (hooks would only slow the program the samples describe) */
        r->sample = 1;
        r->no_hooks = 1;
        r->sample_rate_hz = p->hz;
        return;
    }
    int any_func = 0;
    for (int i = 0; i < p->nprobes; i++)
        any_func |= p->funcs[i][0] != 0;
    for (int i = 0; i < p->nprobes; i++) {
        if (p->modules[i][0]) {
            wchar_t *m = hs_wide(p->modules[i]);
            int dup = 0;
            for (int k = 0; k < r->nmodules; k++)
                dup |= !_wcsicmp(r->modules[k], m);
            if (!dup)
                r->modules[r->nmodules++] = m;
            else
                free(m);
        }
        if (any_func) {
            char *f = p->modules[i][0] ? hs_xasprintf("%s!%s", p->modules[i], p->funcs[i][0] ? p->funcs[i] : "*")
                                       : hs_xstrdup(p->funcs[i][0] ? p->funcs[i] : "*");
            filters[r->nfilters] = hs_wide(f);
            r->filters[r->nfilters] = filters[r->nfilters];
            r->nfilters++;
            free(f);
        }
    }
    if (p->key != HS_DKEY_FUNC) {
        uint32_t frames = hs_dcli_frames(c);
        r->stacks = frames > MAX_STACK_DEPTH ? MAX_STACK_DEPTH : frames;
    }
}

/* Set in the environment of the children of a dtrace with several -p:
 * the child traces into that directory, keeps it, and prints nothing;
 * the parent reads every child's report.json and prints one aggregation. */
#define KEEP_ENV L"HOOKSCOPE_DTRACE_KEEP"

/* Print the aggregation of the profiles (and what was counted, unless -q). */
static int print_aggregation(const hs_dcli *c, const hs_profile *const *ps, size_t n)
{
    hs_dtrace_agg agg = { c->prog.key, c->prog.provider == HS_DPROG_PROFILE ? HS_STACK_CPU : HS_STACK_ENTRY,
                          hs_dcli_frames(c) };
    for (size_t i = 0; i < n; i++) {
        const hs_profile *p = ps[i];
        if (c->prog.provider == HS_DPROG_PROFILE && !p->sampling.on)
            fprintf(stderr, "hookscope dtrace: pid %u: no CPU samples were taken (the sampler is off or not "
                            "available), so its part of the aggregation is empty\n", p->pid);
        if (agg.kind == HS_STACK_ENTRY && agg.key != HS_DKEY_FUNC && p->stacks_dropped)
            fprintf(stderr, "hookscope dtrace: pid %u: %llu entry stacks were dropped (tables full); the counts "
                            "are lower than the calls\n", p->pid, (unsigned long long)p->stacks_dropped);
    }
    FILE *out = stdout;
    if (c->outfile) {
        out = hs_fopen(c->outfile, "ab");
        if (!out) {
            hs_err("cannot open output file '%s'", c->outfile);
            return HS_EXIT_FAILED;
        }
    } else {
        _setmode(_fileno(stdout), _O_BINARY);
    }
    int wrc = hs_write_dtrace_aggs(ps, n, &agg, out);
    if ((out == stdout ? fflush(out) : fclose(out)) != 0 || wrc != 0) {
        hs_err("cannot write the output%s%s", c->outfile ? " to " : "", c->outfile ? c->outfile : "");
        return HS_EXIT_FAILED;
    }
    for (size_t i = 0; i < n && !c->quiet; i++) {
        uint64_t samples = 0;
        for (size_t k = 0; k < ps[i]->nstacks; k++)
            if (ps[i]->stacks[k].kind == HS_STACK_CPU)
                samples += ps[i]->stacks[k].count;
        fprintf(stderr, "hookscope dtrace: pid %u: %llu calls counted, %llu CPU samples\n", ps[i]->pid,
                (unsigned long long)ps[i]->total_calls, (unsigned long long)samples);
    }
    return 0;
}

static hs_profile *load_run(const wchar_t *dir)
{
    char *d = hs_utf8(dir), *json = hs_path_join(d, "report.json"), err[700];
    hs_profile *p = hs_profile_load(json, err, sizeof err);
    free(json);
    free(d);
    return p;
}

/* dtrace -p A -p B ...: one child attach per process, at the same time,
 * each keeping its run in a directory of its own; then one aggregation. */
static int several_pids(const hs_dcli *c)
{
    int n = c->npids;
    HANDLE procs[16];
    wchar_t *dirs[16] = { 0 };
    int started = 0, rc = 0;
    /* Ctrl+C is for the children (they detach and report); this one waits */
    SetConsoleCtrlHandler(NULL, TRUE);
    for (int i = 0; i < n; i++) {
        dirs[i] = temp_dir();
        if (!dirs[i]) {
            hs_err("cannot create a temporary directory for the run");
            rc = HS_EXIT_FAILED;
            break;
        }
        char frames[32], pid[16];
        snprintf(frames, sizeof frames, "ustackframes=%u", hs_dcli_frames(c));
        snprintf(pid, sizeof pid, "%u", c->pids[i]);
        const char *args[] = { "hookscope", "dtrace", "-q", "-x", frames, "-n", c->program, "-p", pid };
        wchar_t *wargs[9];
        for (int k = 0; k < 9; k++)
            wargs[k] = hs_wide(args[k]);
        wchar_t *cmdline = hs_build_cmdline(wargs, 9);
        wchar_t exe[MAX_PATH * 2];
        swprintf(exe, MAX_PATH * 2, L"%lshookscope.exe", hs_self_dir());
        SetEnvironmentVariableW(KEEP_ENV, dirs[i]);
        STARTUPINFOW si;
        memset(&si, 0, sizeof si);
        si.cb = sizeof si;
        si.dwFlags = STARTF_USESTDHANDLES;
        si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
        si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
        si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
        HANDLE std[3] = { si.hStdInput, si.hStdOutput, si.hStdError };
        for (int k = 0; k < 3; k++)
            if (std[k] && std[k] != INVALID_HANDLE_VALUE)
                SetHandleInformation(std[k], HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
        PROCESS_INFORMATION pi;
        BOOL ok = CreateProcessW(exe, cmdline, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi);
        SetEnvironmentVariableW(KEEP_ENV, NULL);
        for (int k = 0; k < 9; k++)
            free(wargs[k]);
        free(cmdline);
        if (!ok) {
            hs_err("cannot start %ls: %s", exe, hs_win_error(GetLastError()));
            rc = HS_EXIT_FAILED;
            break;
        }
        CloseHandle(pi.hThread);
        procs[started++] = pi.hProcess;
    }
    if (started)
        WaitForMultipleObjects((DWORD)started, procs, TRUE, INFINITE);
    hs_profile *ps[16];
    int loaded = 0;
    for (int i = 0; i < started; i++) {
        DWORD code = 0;
        GetExitCodeProcess(procs[i], &code);
        CloseHandle(procs[i]);
        hs_profile *p = code == 0 ? load_run(dirs[i]) : NULL;
        if (p)
            ps[loaded++] = p;
        else if (!rc)
            rc = code ? (int)code : HS_EXIT_FAILED;   /* the child said why */
    }
    if (!rc)
        rc = print_aggregation(c, (const hs_profile *const *)ps, (size_t)loaded);
    for (int i = 0; i < loaded; i++)
        hs_profile_free(ps[i]);
    for (int i = 0; i < n; i++) {
        if (dirs[i])
            remove_dir(dirs[i]);
        free(dirs[i]);
    }
    return rc;
}

int hs_cmd_dtrace(const hs_options *o)
{
    char **argv = hs_xcalloc((size_t)o->target_argc + 1, sizeof *argv);
    for (int i = 0; i < o->target_argc; i++)
        argv[i] = hs_utf8(o->target_argv[i]);
    hs_dcli c;
    char err[1024];
    if (hs_dcli_parse(o->target_argc, argv, &c, err, sizeof err) < 0)
        return dt_err(err);
    if (c.help) {
        fputs(usage, stdout);
        return 0;
    }
    if (c.npids > 1) {
        int rc = several_pids(&c);
        hs_dcli_free(&c);
        return rc;
    }

    const wchar_t *keep = _wgetenv(KEEP_ENV);
    wchar_t *mods[HS_DTRACE_MAX_PROBES + 1] = { 0 }, *filters[HS_DTRACE_MAX_PROBES + 1] = { 0 };
    hs_options r;
    trace_options(&c, &r, mods, filters);
    wchar_t *dir = keep && *keep ? _wcsdup(keep) : temp_dir();
    if (!dir) {
        hs_err("cannot create a temporary directory for the run");
        return HS_EXIT_FAILED;
    }
    r.outdir = hs_utf8(dir);
    wchar_t **targv = NULL;
    if (c.npids) {
        r.pid = c.pids[0];
    } else {
        targv = hs_xcalloc((size_t)c.ncmd + 1, sizeof *targv);
        for (int i = 0; i < c.ncmd; i++)
            targv[i] = hs_wide(c.cmd[i]);
        r.target_argv = targv;
        r.target_argc = c.ncmd;
    }
    int rc = r.cmd->run(&r);

    hs_profile *p = load_run(dir);
    if (!p) {
        if (!keep)
            remove_dir(dir);
        return rc ? rc : HS_EXIT_FAILED;
    }
    bool target_code = p->exited && (uint32_t)rc == p->exit_code;
    if (rc && !target_code) {
        /* hookscope's own failure (printed by the run): no output, as dtrace */
    } else if (keep) {
        rc = 0;   /* the parent prints */
    } else {
        const hs_profile *one = p;
        rc = print_aggregation(&c, &one, 1);
    }
    hs_profile_free(p);
    if (!keep)
        remove_dir(dir);
    free(dir);
    for (int i = 0; mods[i]; i++)
        free(mods[i]);
    for (int i = 0; filters[i]; i++)
        free(filters[i]);
    for (int i = 0; i < c.ncmd; i++)
        free(targv[i]);
    free(targv);
    hs_dcli_free(&c);
    return rc;
}
