/*
 * sampler/etl/ev_process.c - the view of process events (start, end,
 * rundown, defunct): see views.h for the layout by version.
 */
#include "sampler/etl/reader.h"
#include "sampler/etl/text.h"

int hs_etl_view_process(const hs_etl_event *ev, hs_etl_process_ev *out, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    size_t n = ev->size, P = ev->ptr, sid;
    *out = (hs_etl_process_ev){0};
    if (ev->version == 0) {
        if (n < 2 * P + 4)
            goto short_;
        out->pid = (uint32_t)hs_leptr(d, (unsigned)P);
        out->ppid = (uint32_t)hs_leptr(d + P, (unsigned)P);
        sid = 2 * P;
    } else {
        size_t fixed = ev->version >= 4 ? 2 * P + 20 : ev->version >= 3 ? 2 * P + 16 : P + 16;
        if (n < fixed + 4)
            goto short_;
        if (ev->version >= 2)
            out->unique_key = hs_leptr(d, (unsigned)P);
        out->pid = hs_le32(d + P);
        out->ppid = hs_le32(d + P + 4);
        out->session = hs_le32(d + P + 8);
        out->exit_status = hs_le32(d + P + 12);
        if (ev->version >= 3)
            out->dir_base = hs_leptr(d + P + 16, (unsigned)P);
        if (ev->version >= 4)
            out->flags = hs_le32(d + 2 * P + 16);
        sid = fixed;
    }
    /* the SID: 4 zero bytes, or a TOKEN_USER (2 pointers) and the SID itself */
    size_t name;
    if (hs_le32(d + sid) == 0) {
        name = sid + 4;
    } else {
        if (n < sid + 2 * P + 8)
            goto short_;
        name = sid + 2 * P + 8 + 4 * (size_t)d[sid + 2 * P + 1];
        if (name > n)
            goto short_;
    }
    size_t next;
    out->name = d + name;
    out->name_len = (uint32_t)hs_u8_len(d + name, n - name, &next);
    if (ev->version >= 2) {
        size_t cl = name + next;
        out->cmdline = d + cl;
        out->cmdline_len = (uint32_t)hs_u16le_len(d + cl, n - cl, &next);
    }
    return 0;
short_:
    hs_etl_fail_event(err, ev, "process event (version %u) of %u bytes is too short for its layout",
                      ev->version, ev->size);
    return -1;
}
