/*
 * sampler/etw/etw_backend_win.c - the ETW sampling backend (sampler.h).
 *
 * The live part is etw_session_win.c: a private kernel session records
 * the machine's CPU samples, context switches and readied threads with
 * their stacks, and process, thread and image events, into an .etl file,
 * from before the target resumes until it ends. At stop the file is
 * decoded by hookscope's own reader (etl.h) and the target's samples go
 * into the sample set like any backend's, its threads' time off the CPU
 * as ready and wait samples (etl_samples.h): every
 * frame as an address, leaf first, kernel frames included; the images as
 * modules (the trace's NT paths turned into this machine's paths, kernel
 * images marked, their PDB identities kept), so the naming pass and the
 * merge with the hooks are the same as for the suspend sampler's samples.
 *
 * HOOKSCOPE_ETW_API=path\to\a.dll makes the backend run against the ETW
 * functions that DLL's hs_etw_test_api() returns instead of the system's:
 * how the tests run the whole backend under Wine, which has no ETW
 * (tests/support/etw_fake_dll.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "sampler/codemap.h"
#include "sampler/etl/etl.h"
#include "sampler/etl_samples.h"
#include "sampler/etw/etw_session_win.h"
#include "sampler/sampler.h"

struct hs_sampler {
    hs_etw_session etw;
    hs_sampleset *out;
    uint32_t pid;
    double rate_hz;
    bool fixed;                /* --sample-rate */
    char *path;
    bool keep;
    int (*own)(void *ctx, hs_owncode *o);   /* hookscope's code and threads in the target */
    void *own_ctx;
};

static const hs_etw_api *etw_api(void)
{
    const hs_etw_api *test = hs_test_table("HOOKSCOPE_ETW_API", "hs_etw_test_api");
    return test ? test : hs_etw_system_api();
}

static char *local_path(void *ctx, const char *nt_path)
{
    (void)ctx;
    return hs_nt_path_local(nt_path);
}

static int no_memory(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx, (void)addr, (void)buf, (void)len;
    return -1;
}

/* The ETL reader over a file still being written: its complete buffers
 * (the first buffer's header gives their size). -1 when it cannot be
 * read now. */
static int read_so_far(const char *path, hs_etl_trace *t)
{
    const char *why = NULL;
    size_t size = 0;
    uint8_t *data = hs_load_file(path, &size, &why);
    if (!data || size < 72) {
        free(data);
        return -1;
    }
    uint32_t buf = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
    if (buf >= 72 && buf <= (64u << 20))
        size -= size % buf;
    hs_etl_error err;
    int rc = size ? hs_etl_read_mem(data, size, t, &err) : -1;
    if (rc < 0 && size)
        hs_etl_trace_free(t);
    free(data);
    return rc;
}

static const char no_samples[] = "ETW recorded no CPU samples%s: another driver holds the profiling interrupt "
                                 "(VTune; Defender's real-time protection with Intel TDT: PerfView issues 1639, "
                                 "1647, 1726)";

/* Do samples come? A machine where another driver holds the profiling
 * interrupt records none at all, of any process: after the session
 * starts (the target still held, for run), its buffers are flushed to
 * the file a few times and read. 1 when samples came, or when the file
 * cannot be read while it is written (then only the end of the run can
 * tell); 0 when none came. */
static int samples_come(hs_sampler *s)
{
    double window = s->rate_hz > 0 && 3.0 / s->rate_hz > 1.5 ? 3.0 / s->rate_hz : 1.5;
    int readable = 0;
    for (double waited = 0; waited < window + 0.01; waited += 0.25) {
        if (hs_etw_flush(&s->etw) == ERROR_SUCCESS) {
            hs_etl_trace t;
            if (read_so_far(s->path, &t) == 0) {
                readable = 1;
                uint32_t n = t.nsamples;
                hs_etl_trace_free(&t);
                if (n) {
                    hs_log("ETW records samples (%u in the first %.2f s)", n, waited);
                    return 1;
                }
            }
        }
        Sleep(250);
    }
    return !readable;
}

/* The target's samples and images from the recorded trace. Samples of
 * hookscope's threads in the target are left out, and frames in its code
 * are attributed as the suspend sampler's are (codemap.h): the kernel's
 * stacks are of the hooked process as it ran. */
static void decode(hs_sampler *s, hs_sampler_stats *stats)
{
    hs_codemap *own = NULL;
    if (s->own) {
        hs_owncode o;
        memset(&o, 0, sizeof o);
        if (s->own(s->own_ctx, &o) > 0) {
            own = hs_codemap_new(no_memory, NULL);
            hs_codemap_set_own(own, &o);
        }
        hs_owncode_free(&o);
    }
    hs_etl_trace t;
    hs_etl_error err;
    FILE *f = hs_fopen(s->path, "rb");
    int rc = f ? hs_etl_read_fp(f, &t, &err) : -1;
    if (f)
        fclose(f);
    if (rc < 0) {
        hs_err("cannot read the ETW trace %s: %s", s->path, f ? err.msg : "cannot open it");
        if (f)
            hs_etl_trace_free(&t);
        return;
    }
    if (!t.nsamples) {
        snprintf(stats->note, sizeof stats->note, no_samples, "");
        hs_err("%s", stats->note);
    }
    uint32_t index;
    char why[200];
    /* the grid of the ready and wait samples is the run's interval (the
     * reader finds it too: the SetInterval after the session's
     * CollectionStart, which shows the machine's interval from before) */
    if (s->etw.interval)
        t.sample_interval = s->etw.interval;
    if (hs_etl_pick_process(&t, s->pid, NULL, &index, NULL, why, sizeof why) == 0)
        hs_etl_samples(&t, index, own, local_path, NULL, s->out, NULL);
    if (t.info.events_lost || t.info.buffers_lost)
        hs_sampleset_lost(s->out, t.info.events_lost);
    stats->events_lost = t.info.events_lost;
    stats->buffers_lost = t.info.buffers_lost;
    hs_etl_trace_free(&t);
    if (own)
        hs_codemap_free(own);
}

/* The session that runs, for the ways out of hookscope that do not pass
 * through stop (exit() on an error, a crash of hookscope, the console
 * closed): each stops it, so that the machine's sampling interval is put
 * back. Whoever takes it from here stops it; nobody else. (A hookscope
 * killed outright runs none of these: the next one stops the session it
 * left, hs_etw_clean_leftovers.) */
static hs_etw_session *volatile running;
static LPTOP_LEVEL_EXCEPTION_FILTER next_filter;

static void stop_running(void)
{
    hs_etw_session *e = InterlockedExchangePointer((void *volatile *)&running, NULL);
    if (e)
        hs_etw_stop(e, NULL, 0);
}

static LONG WINAPI on_crash(EXCEPTION_POINTERS *x)
{
    stop_running();
    return next_filter ? next_filter(x) : EXCEPTION_CONTINUE_SEARCH;
}

static BOOL WINAPI on_console_end(DWORD type)
{
    if (type == CTRL_CLOSE_EVENT || type == CTRL_LOGOFF_EVENT || type == CTRL_SHUTDOWN_EVENT)
        stop_running();
    return FALSE;   /* Ctrl+C is trace.c's: the run ends normally and stops the session */
}

static void guard(hs_etw_session *e)
{
    static int once;
    if (!once) {
        once = 1;
        atexit(stop_running);
        next_filter = SetUnhandledExceptionFilter(on_crash);
        SetConsoleCtrlHandler(on_console_end, TRUE);
    }
    InterlockedExchangePointer((void *volatile *)&running, e);
}

static hs_sampler *etw_start(const hs_sampler_config *c, hs_sampleset *out, hs_sampler_refusal *why)
{
    hs_sampler *s = hs_xcalloc(1, sizeof *s);
    s->out = out;
    s->pid = c->pid;
    s->rate_hz = c->rate_hz > 0 ? c->rate_hz : HS_ETW_DEFAULT_RATE;
    s->fixed = c->rate_hz > 0;
    s->keep = c->keep_etl;
    s->own = c->own;
    s->own_ctx = c->own_ctx;
    s->path = hs_xstrdup(c->etl_path ? c->etl_path : "hookscope.etl");
    /* the session wants a full path */
    wchar_t *rel = hs_wide(s->path), full[MAX_PATH * 2];
    DWORD n = GetFullPathNameW(rel, MAX_PATH * 2, full, NULL);
    wchar_t *w = n && n < MAX_PATH * 2 ? _wcsdup(full) : rel;
    if (w != rel)
        free(rel);
    char err[400];
    int na = 0;
    int rc = hs_etw_start(&s->etw, etw_api(), w, s->rate_hz, HS_ETW_MAX_FILE_MB, &na, err, sizeof err);
    free(w);
    if (rc == 0) {
        guard(&s->etw);
        ULONG clr = hs_etw_enable_clr(&s->etw, s->pid);
        if (clr)
            hs_log("etw: the .NET runtime's events were not enabled (%s): JIT-compiled code stays unnamed",
                   hs_win_error(clr));
        if (samples_come(s))
            return s;
        stop_running();
        const char *gone;
        hs_remove_file(s->path, &gone);
        snprintf(err, sizeof err, no_samples, " in its first seconds");
    }
    /* any failure: auto samples with the next backend */
    why->not_available = true;
    snprintf(why->text, sizeof why->text, "%s%s", err,
             na ? "; --sampler suspend samples without ETW or privileges" : "");
    free(s->path);
    free(s);
    return NULL;
}

/* A target that still runs (attach): its .NET runtime, if any, lists the
 * methods it holds before the session stops (hs_etw_clr_end_rundown),
 * given CLR_RUNDOWN_MS to write them. */
#define CLR_RUNDOWN_MS 500
static void end_rundown(hs_sampler *s)
{
    HANDLE h = OpenProcess(SYNCHRONIZE, FALSE, s->pid);
    bool alive = h && WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
    if (h)
        CloseHandle(h);
    if (alive && hs_etw_clr_end_rundown(&s->etw, s->pid) == ERROR_SUCCESS)
        Sleep(CLR_RUNDOWN_MS);
}

static void etw_stop(hs_sampler *s, hs_sampler_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->cpu_s = -1;
    stats->held_s = stats->threads_s = -1;   /* the kernel samples without holding anything: none */
    stats->backend = "etw";
    stats->suspensions = stats->reused = -1;
    ULONG in_force = s->etw.interval_in_force ? s->etw.interval_in_force : s->etw.interval;
    stats->rate_hz = in_force ? 1e7 / (double)in_force : s->rate_hz;
    snprintf(stats->rate_reason, sizeof stats->rate_reason, "%s%s",
             s->fixed ? "--sample-rate" : "the ETW default (the kernel's samples cost the target nothing)",
             in_force && in_force != s->etw.interval ? " (as the kernel set it)" : "");
    /* not stopped by another way out meanwhile: stop it here */
    char err[400] = "";
    int stopped = 1;
    if (InterlockedCompareExchangePointer((void *volatile *)&running, NULL, &s->etw) == &s->etw) {
        end_rundown(s);
        stopped = hs_etw_stop(&s->etw, err, sizeof err) == 0;
    }
    if (s->etw.interval_foreign) {
        snprintf(stats->note, sizeof stats->note, "another tool changed the machine's sampling interval during the "
                 "run (from %lu to %lu x 100 ns): samples after the change came at %.0f Hz; it was left as that tool "
                 "set it", (unsigned long)in_force, (unsigned long)s->etw.interval_end,
                 s->etw.interval_end ? 1e7 / (double)s->etw.interval_end : 0.0);
        hs_err("%s", stats->note);
    }
    if (!stopped) {
        /* its file is still being written: neither read nor removed */
        snprintf(stats->note, sizeof stats->note, "%s", err);
        stats->etl_left = true;
        hs_err("%s", err);
    } else {
        if (hs_etw_file_full(&s->etw)) {
            hs_err("the ETW trace reached its cap of %lu MB: the samples after that are missing (a shorter run, "
                   "or a lower --sample-rate, fits)", (unsigned long)s->etw.max_file_mb);
            snprintf(stats->note, sizeof stats->note, "the ETW trace reached its cap of %lu MB: the samples after "
                     "that are missing", (unsigned long)s->etw.max_file_mb);
        }
        decode(s, stats);
        if (!s->keep) {
            const char *why;
            hs_remove_file(s->path, &why);
        }
    }
    free(s->path);
    free(s);
}

const hs_sampler_backend hs_sampler_etw = {
    "etw", "the kernel's CPU samples (administrator, Windows 8 or later)", etw_start, etw_stop, NULL, false,
};
