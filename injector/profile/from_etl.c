/*
 * injector/profile/from_etl.c - see from_etl.h.
 */
#include "injector/profile/from_etl.h"

#include <stdio.h>
#include <stdlib.h>

#include "hook/base/util.h"
#include "injector/profile/from_samples.h"

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
    hs_profile_warn(p, "read from %s", trace_path);
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
    sp->rate_hz = 1e7 / st.interval;
    sp->cpu_s = -1;
    sp->lost = t->info.events_lost;
}
