/*
 * sampler/etl/ev_stackwalk.c - the views of StackWalk events: a stack
 * (frames leaf first, for the event with the given timestamp and thread),
 * a reference to a cached stack by key (StackKeyKernel / StackKeyUser),
 * and a key's definition (key create, delete, rundown).
 */
#include "sampler/etl/reader.h"

int hs_etl_view_stack(const hs_etl_event *ev, hs_etl_stack_ev *out, hs_etl_error *err)
{
    if (ev->size < 16) {
        hs_etl_fail_event(err, ev, "StackWalk event of %u bytes is too short for its layout", ev->size);
        return -1;
    }
    out->event_ts = hs_le64(ev->data);
    out->pid = hs_le32(ev->data + 8);
    out->tid = hs_le32(ev->data + 12);
    out->frames.p = ev->data + 16;
    out->frames.ptr = ev->ptr;
    out->frames.n = (ev->size - 16) / ev->ptr;
    return 0;
}

int hs_etl_view_stack_ref(const hs_etl_event *ev, hs_etl_stack_ref_ev *out, hs_etl_error *err)
{
    if (ev->size < 16u + ev->ptr) {
        hs_etl_fail_event(err, ev, "stack key event of %u bytes is too short for its layout", ev->size);
        return -1;
    }
    out->event_ts = hs_le64(ev->data);
    out->pid = hs_le32(ev->data + 8);
    out->tid = hs_le32(ev->data + 12);
    out->key = hs_leptr(ev->data + 16, ev->ptr);
    out->kernel = ev->type == 37;
    return 0;
}

int hs_etl_view_stack_def(const hs_etl_event *ev, hs_etl_stack_def_ev *out, hs_etl_error *err)
{
    if (ev->size < ev->ptr) {
        hs_etl_fail_event(err, ev, "stack key definition of %u bytes is too short for its layout", ev->size);
        return -1;
    }
    out->key = hs_leptr(ev->data, ev->ptr);
    out->type = ev->type;
    out->frames.p = ev->data + ev->ptr;
    out->frames.ptr = ev->ptr;
    out->frames.n = (ev->size - ev->ptr) / ev->ptr;
    return 0;
}
