/*
 * injector/profile/from_etl.c - see from_etl.h.
 */
#include "injector/profile/from_etl.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "hook/base/util.h"
#include "injector/profile/from_samples.h"

/* "2016-03-01 10:20:30 UTC" from a FILETIME (100 ns since 1601), or "". */
static void utc_text(uint64_t ft, char *buf, size_t len)
{
    buf[0] = 0;
    if (!ft)
        return;
    time_t secs = (time_t)((int64_t)(ft / 10000000u) - 11644473600LL);   /* since 1970 */
    const struct tm *tm = gmtime(&secs);
    if (!tm || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", tm))
        buf[0] = 0;
}

/* What the trace's header says of the machine and when it ran. */
static void trace_facts(const hs_etl_trace *t, const char *path, hs_prof_trace *tr)
{
    tr->file = hs_xstrdup(path);
    uint32_t major = t->info.version & 0xff, minor = (t->info.version >> 8) & 0xff;
    char os[48] = "";
    if (major)
        snprintf(os, sizeof os, "Windows %u.%u build %u, ", major, minor, t->info.provider_version);
    if (t->info.ncpus)
        snprintf(tr->machine, sizeof tr->machine, "%s%u CPU%s", os, t->info.ncpus, t->info.ncpus == 1 ? "" : "s");
    utc_text(t->info.start_time, tr->start, sizeof tr->start);
    tr->span_s = hs_etl_seconds(t, t->info.last_ts) - hs_etl_seconds(t, t->info.first_ts);
}

/* A process's width, from its images: 32 when one was mapped from
 * SysWOW64 (a WOW64 process's system DLLs), 64 when it has others, 0 when
 * the trace shows none. */
static int process_bits(const hs_etl_trace *t, uint32_t index)
{
    int bits = 0;
    for (size_t i = 0; i < t->nimages; i++) {
        const hs_etl_image *im = &t->images[i];
        if (im->process != index || !im->path)
            continue;
        bits = 64;
        for (const char *c = im->path; *c; c++)
            if (*c == '\\' && !strncasecmp(c, "\\SysWOW64\\", 10))
                return 32;
    }
    return bits;
}

void hs_profile_from_etl(const hs_etl_trace *t, uint32_t index, const char *trace_path,
                         char *(*map_path)(void *ctx, const char *nt_path), void *map_ctx, hs_profile *p)
{
    const hs_etl_process *pr = &t->procs[index];
    p->command = hs_xstrdup("etl");
    p->target_path = hs_xstrdup(pr->name ? pr->name : "?");
    p->pid = pr->pid;
    p->stop = HS_STOP_RECORDED;
    p->exited = pr->end != HS_ETL_NEVER && (pr->flags & HS_ETL_SEEN_END);
    p->exit_code = pr->exit_status;
    uint64_t t0 = pr->start ? pr->start : t->info.first_ts;
    uint64_t t1 = pr->end != HS_ETL_NEVER ? pr->end : t->info.last_ts;
    p->wall_s = hs_etl_seconds(t, t1) - hs_etl_seconds(t, t0);
    trace_facts(t, trace_path, &p->trace);
    p->bits = process_bits(t, index);
    if (t->info.events_lost || t->info.buffers_lost || t->info.buffers_events_lost || t->info.buffers_buffer_lost)
        hs_profile_warn(p, "the trace lost events: %u events and %u buffers by its header; %u buffers flagged "
                           "events lost, %u flagged buffers lost",
                        t->info.events_lost, t->info.buffers_lost, t->info.buffers_events_lost,
                        t->info.buffers_buffer_lost);

    hs_sampleset *set = hs_sampleset_new();
    hs_etl_sample_stats st;
    hs_etl_samples(t, index, NULL, map_path, map_ctx, set, &st);
    hs_profile_add_samples(p, set);
    hs_sampleset_free(set);
    if (st.off_cpu_known && !st.ready_events)
        hs_profile_warn(p, "the trace has no ReadyThread events: a thread woken from a wait counts as waiting "
                           "until it runs");
    hs_prof_sampling *sp = &p->sampling;
    snprintf(sp->backend, sizeof sp->backend, "etw");
    sp->rate_hz = hs_rate_as_saved(1e7 / st.interval);
    sp->cpu_s = -1;
    sp->lost = t->info.events_lost;
}
