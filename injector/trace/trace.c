/*
 * injector/trace/trace.c - shared parts of run and attach (see trace.h).
 */
#include "injector/trace/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "injector/output/writers.h"
#include "injector/profile/from_samples.h"
#include "injector/profile/from_session.h"
#include "injector/profile/resolve.h"
#include "injector/symbols/modsyms.h"
#include "injector/trace/checks.h"

static volatile LONG interrupts;

static BOOL WINAPI on_ctrl(DWORD type)
{
    if (type == CTRL_C_EVENT || type == CTRL_BREAK_EVENT) {
        InterlockedIncrement(&interrupts);
        return TRUE;   /* we stay alive to write the report */
    }
    return FALSE;
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

int hs_trace_begin(hs_trace *t, const hs_trace_config *o)
{
    memset(t, 0, sizeof *t);
    if (o->sample) {
        t->sampler_name = o->sampler ? o->sampler : "auto";
        if (!hs_sampler_name_ok(t->sampler_name)) {
            hs_err("no sampler '%s' (there are: %s)", t->sampler_name, hs_sampler_names());
            return -1;
        }
        t->rate_hz = o->sample_rate_hz;   /* 0: the backend chooses */
    }
    t->outdir = o->outdir;
    t->timeline = o->timeline != 0;
    t->keep_etl = o->keep_etl != 0;
    t->symbols = o->symbols;
    t->p = hs_profile_new();
    t->p->command = hs_xstrdup(o->command);
    t->p->duration_s = o->duration;
    t->t0 = hs_now();
    t->tsc0 = rdtsc();
    SetConsoleCtrlHandler(on_ctrl, TRUE);
    return 0;
}

/* A 32-bit target's modules under the files hookscope reads for them
 * (hs_wow64_file): the 32-bit agent records its system DLLs in the
 * system directory, as the program sees them. */
static void wow64_module_paths(hs_profile *p)
{
    for (size_t i = 0; i < p->nmodules; i++) {
        hs_prof_module *m = &p->modules[i];
        wchar_t *w = hs_wide(m->path ? m->path : "");
        wchar_t *wow = hs_wow64_file(w);
        if (wow) {
            free(m->path);
            m->path = hs_utf8(wow);
            free(wow);
        }
        free(w);
    }
}

/* The sampler's pdb_frames: an i386 image's PDB frame data (its x86
 * walker's, where frames have no frame pointer: MSVC's /Oy, LLVM's -O2). */
static hs_fpo32 *pdb_frames(void *ctx, const char *path)
{
    return hs_modsyms_frames32(path, ctx);
}

int hs_trace_sample_start(hs_trace *t, uint32_t pid)
{
    if (!t->sampler_name)
        return 0;
    hs_sampler_config c;
    memset(&c, 0, sizeof c);
    c.pid = pid;
    c.rate_hz = t->rate_hz;
    c.bits = t->p->bits;
    if (t->session.view) {
        t->own.session = &t->session;
        c.own = hs_owncode_read;
        c.true_returns = hs_owncode_true_returns;
        hs_session_header h;
        hs_session_host_header(&t->session, &h);
        c.returns_moved = c.bits == 32 && (h.options & HS_OPT_TIME);
        c.own_ctx = &t->own;
    }
    if (c.bits == 32) {
        c.pdb_frames = pdb_frames;
        c.pdb_frames_ctx = &t->symbols;
    }
    /* the etw backend records into the output directory */
    t->etl_path = hs_path_join(t->outdir, HS_ETL_FILE);
    c.etl_path = t->etl_path;
    c.keep_etl = t->keep_etl;
    t->samples = hs_sampleset_new();
    if (t->timeline)
        hs_sampleset_keep_times(t->samples, HS_TL_MAX_SAMPLES);
    t->backend = hs_sampler_start(t->sampler_name, &c, t->samples, &t->sampler);
    if (!t->backend) {
        hs_sampleset_free(t->samples);
        t->samples = NULL;
        return -1;
    }
    if (c.returns_moved && !t->backend->true_returns)
        hs_profile_warn(t->p, "the %s sampler's stacks of a timed 32-bit program have hookscope's return thunk "
                        "where the callers of open timed calls are (use --sampler suspend)", t->backend->name);
    return 0;
}

void hs_trace_sample_stop(hs_trace *t)
{
    if (!t->sampler)
        return;
    t->backend->stop(t->sampler, &t->stats);
    t->sampler = NULL;
    if (!t->stats.backend)
        t->stats.backend = t->backend->name;
    if (t->stats.events_lost || t->stats.buffers_lost)
        hs_profile_warn(t->p, "the ETW session lost %llu events and %llu buffers: samples are missing",
                        (unsigned long long)t->stats.events_lost, (unsigned long long)t->stats.buffers_lost);
    if (t->stats.stalled)
        hs_profile_warn(t->p, "sampling stopped early: a thread's context never came (it was resumed)");
    if (t->stats.note[0])
        hs_profile_warn(t->p, "%s", t->stats.note);
    hs_log("sampling stopped: %llu CPU, %llu ready, %llu wait and %llu hookscope samples, %zu unique stacks; a "
           "thread stayed suspended %.0f us per sample (median; %.0f us at the 99th percentile); unwinding took "
           "%.1f us per sample",
           (unsigned long long)hs_sampleset_total(t->samples, HS_SAMPLE_CPU),
           (unsigned long long)hs_sampleset_total(t->samples, HS_SAMPLE_READY),
           (unsigned long long)hs_sampleset_total(t->samples, HS_SAMPLE_WAIT),
           (unsigned long long)hs_sampleset_total(t->samples, HS_SAMPLE_HOOKSCOPE), hs_sampleset_unique(t->samples),
           t->stats.suspended_us_p50, t->stats.suspended_us_p99, t->stats.unwind_us_avg);
}

int hs_trace_list_exe(hs_trace *t, const hs_trace_config *o, const wchar_t *exe)
{
    if (!t->fn && !(t->fn = hs_fnservice_new(o)))
        return -1;
    if (o->nmodules == 0)
        hs_fnservice_prefetch(t->fn, exe);
    return 0;
}

int hs_trace_session(hs_trace *t, uint32_t pid, const hs_trace_config *o, uint32_t options)
{
    if (!t->fn && !(t->fn = hs_fnservice_new(o)))
        return -1;
    /* the exe's functions size a 32-bit target's session (session_host.c,
     * fit_32bit); a 64-bit one's does not wait for its list */
    long functions = o->target_bits == 32 ? hs_fnservice_exe_functions(t->fn) : -1;
    if (hs_session_create(&t->session, pid, o, options, functions) < 0 || hs_fnservice_serve(t->fn, &t->session) < 0) {
        hs_fnservice_stop(t->fn);
        t->fn = NULL;
        hs_session_close(&t->session);
        return -1;
    }
    if (o->timeline) {
        t->drain = hs_tl_drain_start(&t->session, o->outdir, o->timeline_max);
        if (!t->drain) {
            hs_fnservice_stop(t->fn);
            t->fn = NULL;
            hs_session_close(&t->session);
            return -1;
        }
    }
    /* kept open to the end: the CPU time of a target that exited */
    t->process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
    return 0;
}

/* Stop the timeline's drain: its description, or NULL without one. */
static hs_prof_timeline *stop_drain(hs_trace *t, hs_session_trust *trust)
{
    if (!t->drain)
        return NULL;
    hs_prof_timeline *tl = hs_tl_drain_stop(t->drain, trust);
    t->drain = NULL;
    return tl;
}

static void close_process(hs_trace *t)
{
    if (t->process)
        CloseHandle(t->process);
    t->process = NULL;
}

void hs_trace_abandon(hs_trace *t)
{
    hs_prof_timeline *tl = stop_drain(t, NULL);
    if (tl) {
        /* no run, no file of it */
        const char *why = NULL;
        if (hs_remove_file(tl->file, &why) < 0)
            hs_err("cannot remove %s: %s", tl->file, why);
        hs_timeline_free(tl);
    }
    hs_fnservice_stop(t->fn);
    t->fn = NULL;
    hs_session_close(&t->session);
    close_process(t);
}

int hs_trace_interrupts(void)
{
    return (int)interrupts;
}

int hs_trace_check_filters(hs_trace *t, const hs_trace_config *o)
{
    hs_session_header h;
    hs_session_host_header(&t->session, &h);
    hs_session_src src = hs_session_host_src(&t->session);
    /* the functions found so far, named as the report will name them */
    hs_profile *p = hs_profile_new();
    p->pid = t->p->pid;
    hs_profile_from_session(p, &src, NULL);
    hs_symconf conf = o->symbols;
    hs_profile_resolve(p, &conf);
    int rc = hs_check_at_start(o, p, h.pattern_matched, h.filter_matched, (h.options & HS_OPT_ATTACH) != 0);
    hs_profile_free(p);
    return rc;
}

/* -v: how long each step of installing the hooks took, over all modules. */
static void log_install_steps(const hs_session_header *h, double tsc_hz)
{
    static const char *const names[HS_STEPS] = { "open", "function list", "records", "analyze", "size",
                                                 "emit", "unwind", "patch" };
    char line[400];
    size_t n = 0;
    if (!(tsc_hz > 0))
        return;
    for (int i = 0; i < HS_STEPS && n < sizeof line; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, "%s%s %.1f ms", i ? ", " : "", names[i],
                              1e3 * (double)h->install_step_ticks[i] / tsc_hz);
    hs_log("install steps: %s", line);
}

/* The middle of the bucket that holds the median of hist (0: empty). */
static double cost_median_ticks(const volatile uint32_t *hist)
{
    uint64_t total = 0, seen = 0;
    for (uint32_t b = 0; b < HS_COST_BUCKETS; b++)
        total += hist[b];
    for (uint32_t b = 0; b < HS_COST_BUCKETS && total; b++) {
        seen += hist[b];
        if (2 * seen >= total)
            return ((double)hs_cost_bucket_low(b) + (double)hs_cost_bucket_low(b + 1)) / 2;
    }
    return 0;
}

/* -v: the agent's own work per start and end of a thread of the target
 * (its cycles, which the system's scheduling does not blur as it does a
 * thread's start and end measured on the wall clock; the median, which a
 * few threads preempted inside it do not move as they move the mean). */
static void log_thread_costs(const hs_session_header *h, double tsc_hz)
{
    static const char *const names[HS_THREAD_COSTS] = { "attach", "region", "exit call", "detach" };
    char line[500];
    size_t n = 0;
    if (!(tsc_hz > 0))
        return;
    for (int i = 0; i < HS_THREAD_COSTS && n < sizeof line; i++) {
        uint32_t count = h->thread_cost_count[i];
        n += (size_t)snprintf(line + n, sizeof line - n, "%s%s %.2f us (median %.2f) x %u", i ? ", " : "",
                              names[i], count ? 1e6 * (double)h->thread_cost_ticks[i] / count / tsc_hz : 0.0,
                              1e6 * cost_median_ticks(h->thread_cost_hist[i]) / tsc_hz, count);
    }
    hs_log("agent's work per thread: %s", line);
}

/* Calls the timeline could not keep: one warning (report and stderr). */
static void timeline_losses(hs_profile *p, const hs_prof_timeline *tl)
{
    hs_prof_tl_thread sum = hs_timeline_totals(tl);
    uint64_t buffer = sum.dropped_buffer, file = sum.dropped_file;
    uint32_t threads = 0;
    for (size_t i = 0; i < tl->nthreads; i++)
        threads += tl->threads[i].dropped_buffer + tl->threads[i].dropped_file > 0;
    if (!buffer && !file)
        return;
    char line[300];
    snprintf(line, sizeof line,
             "the timeline dropped %llu calls of %u thread%s: %llu found its buffer full (a larger "
             "--timeline-buffer), %llu did not fit in --timeline-max; report.json's timeline has each thread's "
             "and when; the counts and times of every call are exact",
             (unsigned long long)(buffer + file), threads, threads == 1 ? "" : "s", (unsigned long long)buffer,
             (unsigned long long)file);
    hs_profile_warn(p, "%s", line);
    hs_err("%s", line);
}

int hs_trace_finish(hs_trace *t, const hs_trace_config *o)
{
    /* the run's end, before the sampler's own wind-down; the counter and
     * the TSC read together, for the TSC's rate over the whole run */
    double now = hs_now();
    uint64_t tsc_now = rdtsc();
    hs_trace_sample_stop(t);
    hs_fnservice_stop(t->fn);   /* nothing asks any more */
    t->fn = NULL;
    hs_profile *p = t->p;
    hs_session_header hcopy;
    const hs_session_header *h = NULL;
    char corrupt[300] = "";
    p->wall_s = now - t->t_start;
    if (now > t->t0)
        p->tsc_hz = (double)(tsc_now - t->tsc0) / (now - t->t0);
    p->sampling.on = t->samples != NULL;
    if (t->session.view) {
        h = &hcopy;
        hs_session_host_header(&t->session, &hcopy);
        log_install_steps(h, p->tsc_hz);
        log_thread_costs(h, p->tsc_hz);
        if (h->error_text[0])
            hs_profile_warn(p, "%s", h->error_text);
        hs_session_src src = hs_session_host_src(&t->session);
        hs_session_trust trust = { 0, "" };
        hs_prof_timeline *tl = stop_drain(t, &trust);
        hs_profile_from_session(p, &src, &trust);
        if (tl) {
            /* the events' function numbers are the session's, which are
             * the profile's first functions */
            tl->nfunc_map = tl->funcs_named > p->nfuncs ? tl->funcs_named : (uint32_t)p->nfuncs;
            tl->func_map = hs_xcalloc(tl->nfunc_map ? tl->nfunc_map : 1, sizeof *tl->func_map);
            for (uint32_t i = 0; i < tl->nfunc_map; i++)
                tl->func_map[i] = i < p->nfuncs ? i : UINT32_MAX;   /* (a function the session lost) */
            tl->tsc_hz = (double)(uint64_t)(p->tsc_hz + 0.5);
            hs_session_timeline_check(p, tl, &trust);
            p->timeline = tl;
            timeline_losses(p, tl);
        }
        hs_session_trust_line(&trust, corrupt, sizeof corrupt);
        if (corrupt[0]) {
            hs_profile_warn(p, "%s", corrupt);
            hs_err("%s", corrupt);
        }
        double ratio = hs_trace_probe_ratio(t, p->stack_ticks, p->tsc_hz, p->wall_s);
        if (ratio > HS_PROBE_RATIO_WARN)
            hs_profile_warn(p,
                            "hookscope's probes cost %.0fx the program's own time (%.1f s capturing entry "
                            "stacks): the run took that much longer than the program; capture fewer stacks "
                            "(--stack-every N, a smaller --stacks depth) or hook fewer functions",
                            ratio, (double)p->stack_ticks / p->tsc_hz);
    }
    if (t->samples) {
        hs_profile_add_samples(p, t->samples);
        snprintf(p->sampling.backend, sizeof p->sampling.backend, "%s", t->stats.backend);
        p->sampling.etl_kept = t->keep_etl && !strcmp(t->stats.backend, "etw");
        p->sampling.rate_hz = hs_rate_as_saved(t->stats.rate_hz > 0 ? t->stats.rate_hz : t->rate_hz);
        snprintf(p->sampling.rate_reason, sizeof p->sampling.rate_reason, "%s",
                 t->stats.rate_reason[0] ? t->stats.rate_reason : t->rate_hz > 0 ? "--sample-rate" : "");
        snprintf(p->sampling.lost_why, sizeof p->sampling.lost_why, "%s", t->stats.lost_why);
        p->sampling.suspensions = t->stats.suspensions;
        p->sampling.reused = t->stats.reused;
        p->sampling.cpu_s = t->stats.cpu_s;
        p->sampling.held_s = t->stats.held_s;
        p->sampling.threads_s = t->stats.threads_s;
        hs_sampleset_free(t->samples);
        t->samples = NULL;
    }
    if (t->etl_path && !p->sampling.etl_kept && !t->stats.etl_left) {
        /* an earlier run's, kept then; or this run's, should the backend
         * have left it */
        const char *why = NULL;
        if (hs_remove_file(t->etl_path, &why) < 0)
            hs_err("cannot remove %s: %s", t->etl_path, why);
    }
    free(t->etl_path);
    t->etl_path = NULL;
    if (!p->timeline) {
        /* an earlier run's timeline */
        char *tlpath = hs_xasprintf("%s\\%s", o->outdir, HS_TIMELINE_FILE);
        const char *why = NULL;
        if (hs_remove_file(tlpath, &why) < 0)
            hs_err("cannot remove %s: %s", tlpath, why);
        free(tlpath);
    }
    if (p->bits == 32)
        wow64_module_paths(p);
    hs_log("collected %zu functions, %zu edges, %zu stacks; naming", p->nfuncs, p->nedges, p->nstacks);
    hs_symconf conf = o->symbols;
    p->srcline_on = o->srcline != 0;
    hs_profile_resolve(p, &conf);
    hs_profile_count_samples(p);
    hs_log("writing the reports");
    int rc = 0;
    hs_profile_round_seconds(p);
    if (hs_write_all(p, o->outdir) < 0)
        rc = HS_EXIT_FAILED;

    if (h && hs_check_at_end(o, p, h->pattern_matched, h->filter_matched) < 0)
        rc = HS_EXIT_FAILED;
    if (h && h->error_text[0]) {
        /* a module loaded later could not be hooked */
        hs_err("%s", h->error_text);
        rc = HS_EXIT_FAILED;
    }
    char *txt = hs_path_join(o->outdir, "report.txt");
    if (!o->quiet && !h) {
        hs_err("%llu CPU, %llu ready and %llu wait samples of %u thread%s at %.0f Hz (%s); report in %s",
               (unsigned long long)p->sampling.samples, (unsigned long long)p->sampling.ready_samples,
               (unsigned long long)p->sampling.wait_samples, p->sampling.threads,
               p->sampling.threads == 1 ? "" : "s", p->sampling.rate_hz, p->sampling.rate_reason, txt);
    } else if (!o->quiet) {
        size_t hooked = 0, found = 0, nmods = 0;
        for (size_t m = 0; m < p->nmodules; m++) {
            if (!p->modules[m].traced)
                continue;
            hooked += p->modules[m].funcs_hooked;
            found += p->modules[m].funcs_found;
            nmods++;
        }
        char samples[160] = "";
        if (p->sampling.on)
            snprintf(samples, sizeof samples, ", %llu CPU samples at %.0f Hz (%llu more in hookscope's code)",
                     (unsigned long long)p->sampling.samples, p->sampling.rate_hz,
                     (unsigned long long)p->sampling.hookscope_samples);
        hs_err("%zu of %zu functions hooked in %zu module%s, %llu calls%s; report in %s",
               hooked, found, nmods, nmods == 1 ? "" : "s", (unsigned long long)p->total_calls, samples, txt);
    }
    free(txt);
    hs_session_close(&t->session);
    close_process(t);
    return rc;
}

uint64_t hs_trace_live_samples(const hs_trace *t)
{
    /* the sampling thread adds to the set meanwhile: a count read a
     * moment early is all a progress line needs. The suspend sampler
     * classifies a sample as CPU or wait only once the thread's CPU clock
     * moves, so the samples it took come first. */
    if (!t->samples)
        return 0;
    uint64_t counted = hs_sampleset_total(t->samples, HS_SAMPLE_CPU) + hs_sampleset_total(t->samples, HS_SAMPLE_WAIT);
    uint64_t taken = hs_sampleset_taken(t->samples);
    return taken > counted ? taken : counted;
}

double hs_trace_live_rate(const hs_trace *t)
{
    if (!t->sampler)
        return 0;
    return t->backend->rate_now ? t->backend->rate_now(t->sampler) : t->rate_hz;
}

/* The target's CPU time (user and kernel) so far, or -1. */
static double target_cpu_s(const hs_trace *t)
{
    FILETIME c, e, k, u;
    if (!t->process || !GetProcessTimes(t->process, &c, &e, &k, &u))
        return -1;
    ULARGE_INTEGER kk = { .u = { k.dwLowDateTime, k.dwHighDateTime } };
    ULARGE_INTEGER uu = { .u = { u.dwLowDateTime, u.dwHighDateTime } };
    return (double)(kk.QuadPart + uu.QuadPart) * 1e-7;
}

double hs_trace_probe_ratio(const hs_trace *t, uint64_t stack_ticks, double tsc_hz, double elapsed)
{
    if (!(tsc_hz > 0))
        return 0;
    double probes = (double)stack_ticks / tsc_hz;
    if (probes < 0.05)
        return 0;
    /* the probes' ticks are the time their threads spent in them, as the
     * wall clock runs (preemption included): against the wall time of a
     * single thread, the CPU time of several (under Wine a CPU clock
     * short of the wall time and in 10-15 ms steps) */
    double cpu = target_cpu_s(t);
    double own = (cpu > elapsed ? cpu : elapsed) - probes;
    /* the CPU clock moves in steps (10-15 ms under Wine): no less than one */
    if (own < 0.015)
        own = 0.015;
    return probes / own;
}

uint64_t hs_trace_live_calls(const hs_trace *t, double *probe_ratio)
{
    if (probe_ratio)
        *probe_ratio = 0;
    if (!t->session.view)
        return 0;
    hs_session_src src = hs_session_host_src(&t->session);
    uint64_t stacks = 0;
    uint64_t calls = hs_session_live_calls(&src, &stacks);
    if (probe_ratio) {
        double now = hs_now();
        double hz = now > t->t0 + 0.1 ? (double)(rdtsc() - t->tsc0) / (now - t->t0) : 0;
        *probe_ratio = hs_trace_probe_ratio(t, stacks, hz, now - t->t_start);
    }
    return calls;
}
