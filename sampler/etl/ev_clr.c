/*
 * sampler/etl/ev_clr.c - the views of the CLR's method and module events
 * (views.h has their layouts), which name JIT-compiled code.
 */
#include "hook/base/text.h"
#include "sampler/etl/reader.h"

/* The UTF-16 string at *at (n bytes in all): its bytes and length; *at
 * moves past its terminator. */
static const uint8_t *u16_at(const uint8_t *d, size_t n, size_t *at, uint32_t *len)
{
    size_t next;
    const uint8_t *p = d + *at;
    *len = (uint32_t)hs_u16le_len(p, n - *at, &next);
    *at += next;
    return p;
}

int hs_etl_view_clr_method(const hs_etl_event *ev, hs_etl_clr_method_ev *out, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    size_t n = ev->size, at = 36;
    *out = (hs_etl_clr_method_ev){0};
    if (n < at + 6) {
        hs_etl_fail_event(err, ev, "CLR method event (version %u) of %u bytes is too short for its layout",
                          ev->version, ev->size);
        return -1;
    }
    out->method_id = hs_le64(d);
    out->module_id = hs_le64(d + 8);
    out->start = hs_le64(d + 16);
    out->size = hs_le32(d + 24);
    out->token = hs_le32(d + 28);
    out->flags = hs_le32(d + 32);
    out->ns = u16_at(d, n, &at, &out->ns_len);
    out->name = u16_at(d, n, &at, &out->name_len);
    out->sig = u16_at(d, n, &at, &out->sig_len);
    if (ev->version >= 2 && n >= at + 10)       /* ClrInstanceID, then ReJITID */
        out->rejit_id = hs_le64(d + at + 2);
    return 0;
}

int hs_etl_view_clr_module(const hs_etl_event *ev, hs_etl_clr_module_ev *out, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    size_t n = ev->size, at = 24;
    *out = (hs_etl_clr_module_ev){0};
    if (n < at + 4) {
        hs_etl_fail_event(err, ev, "CLR module event (version %u) of %u bytes is too short for its layout",
                          ev->version, ev->size);
        return -1;
    }
    out->module_id = hs_le64(d);
    out->assembly_id = hs_le64(d + 8);
    out->flags = hs_le32(d + 16);
    out->il_path = u16_at(d, n, &at, &out->il_path_len);
    out->native_path = u16_at(d, n, &at, &out->native_path_len);
    return 0;
}
