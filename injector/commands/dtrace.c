/*
 * injector/commands/dtrace.c - `hookscope dtrace ...` (and
 * hookscope-dtrace.exe): DTrace's command line (dtrace/dcli.h) mapped onto
 * a run or an attach, and the run's profile printed as DTrace prints the
 * program's aggregation (output/dtrace.h), to -o FILE (appended, as
 * dtrace does) or stdout.
 *
 *   profile-N              sampling at N Hz (hs_options.sample,
 *                          sample_rate_hz); @[ustack(N)] over the CPU
 *                          samples, N frames
 *   fpid$target:MOD::entry / pid$target:MOD:FUNC:entry
 *                          hooks: -m MOD (none for an empty MOD: the
 *                          exe), -f MOD!FUNC; with ustack() in the key,
 *                          entry stacks of every call (--stacks=N, at
 *                          most 256 frames); @[probefunc] counts the calls
 *
 * The run writes its reports into a temporary directory, which is read
 * back and removed. Exit status: 0 when the trace was made (whatever the
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

#include "base/util.h"
#include "commands/commands.h"
#include "dtrace/dcli.h"
#include "output/dtrace.h"
#include "profile/load.h"

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
    "  -p PID             attach to a running process until it exits or Ctrl+C\n"
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
        r->sample = 1;
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
    if (c.npids > 1)
        return dt_err("one -p PID at a time: hookscope attaches to one process per run");

    wchar_t *mods[HS_DTRACE_MAX_PROBES + 1] = { 0 }, *filters[HS_DTRACE_MAX_PROBES + 1] = { 0 };
    hs_options r;
    trace_options(&c, &r, mods, filters);
    wchar_t *dir = temp_dir();
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

    char *json = hs_xasprintf("%s\\report.json", r.outdir);
    hs_profile *p = hs_profile_load(json, err, sizeof err);
    free(json);
    if (!p) {
        remove_dir(dir);
        return rc ? rc : HS_EXIT_FAILED;
    }
    bool target_code = p->exited && (uint32_t)rc == p->exit_code;
    if (rc && !target_code) {
        /* hookscope's own failure (printed by the run): no output, as dtrace */
        hs_profile_free(p);
        remove_dir(dir);
        return rc;
    }
    hs_dtrace_agg agg = { c.prog.key, c.prog.provider == HS_DPROG_PROFILE ? HS_STACK_CPU : HS_STACK_ENTRY,
                          hs_dcli_frames(&c) };
    if (c.prog.provider == HS_DPROG_PROFILE && !p->sampling.on)
        fprintf(stderr, "hookscope dtrace: this run took no CPU samples (the sampler is off or not available), "
                        "so the aggregation is empty\n");
    if (agg.kind == HS_STACK_ENTRY && agg.key != HS_DKEY_FUNC && p->stacks_dropped)
        fprintf(stderr, "hookscope dtrace: %llu entry stacks were dropped (tables full); the counts are lower "
                        "than the calls\n", (unsigned long long)p->stacks_dropped);
    FILE *out = stdout;
    if (c.outfile) {
        out = hs_fopen(c.outfile, "ab");
        if (!out) {
            hs_err("cannot open output file '%s'", c.outfile);
            rc = HS_EXIT_FAILED;
        }
    } else {
        _setmode(_fileno(stdout), _O_BINARY);
    }
    if (out) {
        int wrc = hs_write_dtrace_agg(p, &agg, out);
        if ((out == stdout ? fflush(out) : fclose(out)) != 0 || wrc != 0) {
            hs_err("cannot write the output%s%s", c.outfile ? " to " : "", c.outfile ? c.outfile : "");
            rc = HS_EXIT_FAILED;
        } else {
            rc = 0;
        }
    }
    if (!rc && !c.quiet) {
        uint64_t samples = 0;
        for (size_t i = 0; i < p->nstacks; i++)
            if (p->stacks[i].kind == HS_STACK_CPU)
                samples += p->stacks[i].count;
        fprintf(stderr, "hookscope dtrace: pid %u: %llu calls counted, %llu CPU samples\n", p->pid,
                (unsigned long long)p->total_calls, (unsigned long long)samples);
    }
    hs_profile_free(p);
    remove_dir(dir);
    for (int i = 0; mods[i]; i++)
        free(mods[i]);
    for (int i = 0; filters[i]; i++)
        free(filters[i]);
    hs_dcli_free(&c);
    return rc;
}
