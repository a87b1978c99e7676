/*
 * sampler/etl/dispatch.c - from an event to the observer: every event to
 * its event callback, then the kinds hookscope reads through their views.
 *
 *   process group: 1 start, 2 end, 3 DCStart, 4 DCEnd, 39 defunct
 *                  10: an image load (the kernel logs loads as 0x030A)
 *   thread group:  1 start, 2 end, 3 DCStart, 4 DCEnd, 36 CSwitch
 *                  (versions 2 and later: Windows XP's older layout is
 *                  not read), 50 ReadyThread
 *   image group:   2 unload, 3 DCStart, 4 DCEnd, 10 load (GUID form)
 *   perfinfo:      46 SampledProfile, 72 SetInterval, 73 CollectionStart,
 *                  74 CollectionEnd
 *   stackwalk:     32 stack, 34/35/36 key create/delete/rundown,
 *                  37/38 StackKeyKernel/StackKeyUser
 *   ImageID:       0 ImageID, 36 DbgID_RSDS
 *   CLR:           methods and modules (views.h): manifest events by
 *                  their event id, classic ones by opcode
 */
#include "sampler/etl/internal.h"

/* A CLR event: 1 a method event, 2 a module event, 0 neither; *what is
 * HS_ETL_CLR_*. */
static int clr_kind(const hs_etl_event *ev, int *what)
{
    int id = ev->event_id, op = ev->type;
    switch (ev->group) {
    case HS_ETL_GROUP_CLR:
        if (id == 143 || id == 144)
            return *what = id == 143 ? HS_ETL_CLR_LOAD : HS_ETL_CLR_UNLOAD, 1;
        if (id == 152 || id == 153)
            return *what = id == 152 ? HS_ETL_CLR_LOAD : HS_ETL_CLR_UNLOAD, 2;
        return 0;
    case HS_ETL_GROUP_CLR_RUNDOWN:
        if (id == 143 || id == 144)
            return *what = id == 143 ? HS_ETL_CLR_DCSTART : HS_ETL_CLR_DCEND, 1;
        if (id == 153 || id == 154)
            return *what = id == 153 ? HS_ETL_CLR_DCSTART : HS_ETL_CLR_DCEND, 2;
        return 0;
    case HS_ETL_GROUP_CLR_METHOD:
        if (op == 37 || op == 38)
            return *what = op == 37 ? HS_ETL_CLR_LOAD : HS_ETL_CLR_UNLOAD, 1;
        return 0;
    case HS_ETL_GROUP_CLR_METHOD_RUNDOWN:
        if (op == 39 || op == 40)
            return *what = op == 39 ? HS_ETL_CLR_DCSTART : HS_ETL_CLR_DCEND, 1;
        return 0;
    case HS_ETL_GROUP_CLR_LOADER:
        if (op == 33 || op == 34)
            return *what = op == 33 ? HS_ETL_CLR_LOAD : HS_ETL_CLR_UNLOAD, 2;
        return 0;
    case HS_ETL_GROUP_CLR_LOADER_RUNDOWN:
        if (op == 35 || op == 36)
            return *what = op == 35 ? HS_ETL_CLR_DCSTART : HS_ETL_CLR_DCEND, 2;
        return 0;
    default:
        return 0;
    }
}

int hs_etl_dispatch(const hs_etl_event *ev, const hs_etl_observer *o, hs_etl_error *err)
{
    void *c = o->ctx;
    if (o->event && o->event(c, ev) < 0)
        return -1;
    switch (ev->group) {
    case HS_ETL_GROUP_PROCESS:
        if (ev->type == 10)
            goto image;
        if (o->process && (ev->type <= 4 ? ev->type >= 1 : ev->type == 39)) {
            hs_etl_process_ev v;
            return hs_etl_view_process(ev, &v, err) < 0 ? -1 : o->process(c, ev, &v);
        }
        return 0;
    case HS_ETL_GROUP_THREAD:
        if (o->thread && ev->type >= 1 && ev->type <= 4) {
            hs_etl_thread_ev v;
            return hs_etl_view_thread(ev, &v, err) < 0 ? -1 : o->thread(c, ev, &v);
        }
        if (o->cswitch && ev->type == 36 && ev->version >= 2) {
            hs_etl_cswitch_ev v;
            return hs_etl_view_cswitch(ev, &v, err) < 0 ? -1 : o->cswitch(c, ev, &v);
        }
        if (o->ready && ev->type == 50) {
            hs_etl_ready_ev v;
            return hs_etl_view_ready(ev, &v, err) < 0 ? -1 : o->ready(c, ev, &v);
        }
        return 0;
    case HS_ETL_GROUP_IMAGE:
        if (ev->type == 2 || ev->type == 3 || ev->type == 4 || ev->type == 10)
            goto image;
        return 0;
    case HS_ETL_GROUP_PERFINFO:
        if (o->sample && ev->type == 46) {
            hs_etl_sample_ev v;
            return hs_etl_view_sample(ev, &v, err) < 0 ? -1 : o->sample(c, ev, &v);
        }
        if (o->interval && ev->type >= 72 && ev->type <= 74) {
            hs_etl_interval_ev v;
            return hs_etl_view_interval(ev, &v, err) < 0 ? -1 : o->interval(c, ev, &v);
        }
        return 0;
    case HS_ETL_GROUP_STACKWALK:
        if (o->stack && ev->type == 32) {
            hs_etl_stack_ev v;
            return hs_etl_view_stack(ev, &v, err) < 0 ? -1 : o->stack(c, ev, &v);
        }
        if (o->stack_ref && (ev->type == 37 || ev->type == 38)) {
            hs_etl_stack_ref_ev v;
            return hs_etl_view_stack_ref(ev, &v, err) < 0 ? -1 : o->stack_ref(c, ev, &v);
        }
        if (o->stack_def && ev->type >= 34 && ev->type <= 36) {
            hs_etl_stack_def_ev v;
            return hs_etl_view_stack_def(ev, &v, err) < 0 ? -1 : o->stack_def(c, ev, &v);
        }
        return 0;
    case HS_ETL_GROUP_IMAGEID:
        if (o->image_id && ev->type == 0) {
            hs_etl_imageid_ev v;
            return hs_etl_view_imageid(ev, &v, err) < 0 ? -1 : o->image_id(c, ev, &v);
        }
        if (o->dbg_id && ev->type == 36) {
            hs_etl_dbgid_ev v;
            return hs_etl_view_dbgid(ev, &v, err) < 0 ? -1 : o->dbg_id(c, ev, &v);
        }
        return 0;
    default:
        break;
    }
    int what = 0, kind = clr_kind(ev, &what);
    if (kind == 1 && o->clr_method) {
        hs_etl_clr_method_ev v;
        return hs_etl_view_clr_method(ev, &v, err) < 0 ? -1 : o->clr_method(c, ev, what, &v);
    }
    if (kind == 2 && o->clr_module) {
        hs_etl_clr_module_ev v;
        return hs_etl_view_clr_module(ev, &v, err) < 0 ? -1 : o->clr_module(c, ev, what, &v);
    }
    return 0;
image:
    if (o->image) {
        hs_etl_image_ev v;
        return hs_etl_view_image(ev, &v, err) < 0 ? -1 : o->image(c, ev, &v);
    }
    return 0;
}
