/*
 * sampler/etl/ev_image.c - the views of image events (load, unload,
 * rundown) and of KernelTraceControl's ImageID and DbgID_RSDS records,
 * which name an image's original file name and its PDB.
 */
#include "sampler/etl/reader.h"
#include "sampler/etl/text.h"

int hs_etl_view_image(const hs_etl_event *ev, hs_etl_image_ev *out, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    size_t n = ev->size, P = ev->ptr, name, next;
    *out = (hs_etl_image_ev){0};
    if (ev->version == 0) {
        if (n < P + 4)
            goto short_;
        out->base = hs_leptr(d, (unsigned)P);
        out->size = hs_le32(d + P);
        name = P + 4;
    } else if (ev->version == 1) {
        if (n < 2 * P + 4)
            goto short_;
        out->base = hs_leptr(d, (unsigned)P);
        out->size = hs_leptr(d + P, (unsigned)P);
        out->pid = hs_le32(d + 2 * P);
        name = 2 * P + 4;
    } else {
        if (n < 3 * P + 32)
            goto short_;
        out->base = hs_leptr(d, (unsigned)P);
        out->size = hs_leptr(d + P, (unsigned)P);
        out->pid = hs_le32(d + 2 * P);
        out->checksum = hs_le32(d + 2 * P + 4);
        out->timestamp = hs_le32(d + 2 * P + 8);
        out->default_base = hs_leptr(d + 2 * P + 16, (unsigned)P);
        name = 3 * P + 32;
    }
    out->path = d + name;
    out->path_len = (uint32_t)hs_u16le_len(d + name, n - name, &next);
    return 0;
short_:
    hs_etl_fail_event(err, ev, "image event (version %u) of %u bytes is too short for its layout",
                      ev->version, ev->size);
    return -1;
}

int hs_etl_view_imageid(const hs_etl_event *ev, hs_etl_imageid_ev *out, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    size_t n = ev->size, P = ev->ptr, next;
    if (n < 2 * P + 8) {
        hs_etl_fail_event(err, ev, "ImageID event of %u bytes is too short for its layout", ev->size);
        return -1;
    }
    out->base = hs_leptr(d, (unsigned)P);
    out->size = hs_leptr(d + P, (unsigned)P);
    out->pid = hs_le32(d + 2 * P);
    out->timestamp = hs_le32(d + 2 * P + 4);
    out->name = d + 2 * P + 8;
    out->name_len = (uint32_t)hs_u16le_len(out->name, n - (2 * P + 8), &next);
    return 0;
}

int hs_etl_view_dbgid(const hs_etl_event *ev, hs_etl_dbgid_ev *out, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    size_t n = ev->size, P = ev->ptr, next;
    if (n < P + 24) {
        hs_etl_fail_event(err, ev, "DbgID_RSDS event of %u bytes is too short for its layout", ev->size);
        return -1;
    }
    out->base = hs_leptr(d, (unsigned)P);
    out->pid = hs_le32(d + P);
    out->guid = d + P + 4;
    out->age = hs_le32(d + P + 20);
    out->pdb = d + P + 24;
    out->pdb_len = (uint32_t)hs_u8_len(out->pdb, n - (P + 24), &next);
    return 0;
}
