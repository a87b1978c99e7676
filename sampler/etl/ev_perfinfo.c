/*
 * sampler/etl/ev_perfinfo.c - the views of PerfInfo events: SampledProfile
 * (one CPU sample: the interrupted instruction and thread) and the
 * sampling interval (set, or in effect when the collection started or
 * ended).
 */
#include "sampler/etl/reader.h"

int hs_etl_view_sample(const hs_etl_event *ev, hs_etl_sample_ev *out, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    size_t P = ev->ptr;
    if (ev->size < P + 4) {
        hs_etl_fail_event(err, ev, "SampledProfile event of %u bytes is too short for its layout", ev->size);
        return -1;
    }
    *out = (hs_etl_sample_ev){0};
    out->ip = hs_leptr(d, (unsigned)P);
    out->tid = hs_le32(d + P);
    if (ev->size >= P + 6)
        out->count = hs_le16(d + P + 4);
    if (ev->size >= P + 8) {
        uint8_t b = d[P + 6];
        out->flags = (b & 1 ? HS_ETL_SAMPLE_DPC : 0) | (b & 2 ? HS_ETL_SAMPLE_ISR : 0);
        out->priority = b >> 3;
        out->rank = d[P + 7];
    }
    return 0;
}

int hs_etl_view_interval(const hs_etl_event *ev, hs_etl_interval_ev *out, hs_etl_error *err)
{
    if (ev->size < 12) {
        hs_etl_fail_event(err, ev, "sampling interval event of %u bytes is too short for its layout", ev->size);
        return -1;
    }
    out->source = hs_le32(ev->data);
    out->new_interval = hs_le32(ev->data + 4);
    out->old_interval = hs_le32(ev->data + 8);
    return 0;
}
