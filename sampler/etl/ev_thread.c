/*
 * sampler/etl/ev_thread.c - the views of thread events (start, end,
 * rundown: the pid and the tid, whose order changed after version 0) and
 * of the dispatcher's events the kernel logs in the thread group: CSwitch
 * (a context switch) and ReadyThread (a thread made ready). See views.h
 * for the layouts.
 */
#include "sampler/etl/reader.h"

int hs_etl_view_thread(const hs_etl_event *ev, hs_etl_thread_ev *out, hs_etl_error *err)
{
    if (ev->size < 8) {
        hs_etl_fail_event(err, ev, "thread event (version %u) of %u bytes is too short for its layout",
                          ev->version, ev->size);
        return -1;
    }
    if (ev->version == 0) {
        out->tid = hs_le32(ev->data);
        out->pid = hs_le32(ev->data + 4);
    } else {
        out->pid = hs_le32(ev->data);
        out->tid = hs_le32(ev->data + 4);
    }
    return 0;
}

int hs_etl_view_cswitch(const hs_etl_event *ev, hs_etl_cswitch_ev *out, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    if (ev->size < 24) {
        hs_etl_fail_event(err, ev, "CSwitch event (version %u) of %u bytes is too short for its 24-byte layout",
                          ev->version, ev->size);
        return -1;
    }
    out->new_tid = hs_le32(d);
    out->old_tid = hs_le32(d + 4);
    out->f.new_priority = (int8_t)d[8];
    out->f.old_priority = (int8_t)d[9];
    out->f.previous_cstate = d[10];
    out->f.old_wait_reason = d[12];
    out->f.old_wait_mode = d[13];
    out->f.old_state = d[14];
    out->f.old_ideal_cpu = (int8_t)d[15];
    out->f.new_wait_time = hs_le32(d + 16);
    return 0;
}

int hs_etl_view_ready(const hs_etl_event *ev, hs_etl_ready_ev *out, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    if (ev->size < 8) {
        hs_etl_fail_event(err, ev, "ReadyThread event (version %u) of %u bytes is too short for its 8-byte layout",
                          ev->version, ev->size);
        return -1;
    }
    out->tid = hs_le32(d);
    out->f.adjust_reason = (int8_t)d[4];
    out->f.adjust_increment = (int8_t)d[5];
    out->f.flags = d[6];
    return 0;
}
