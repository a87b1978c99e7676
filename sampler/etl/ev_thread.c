/*
 * sampler/etl/ev_thread.c - the view of thread events (start, end,
 * rundown): the pid and the tid (their order changed after version 0).
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
