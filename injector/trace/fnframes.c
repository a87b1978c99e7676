/*
 * injector/trace/fnframes.c - see fnframes.h.
 */
#include "injector/trace/fnframes.h"

#include "hook/base/util.h"
#include "hook/unwind/cfi32.h"

static hs_frame32_entry entry_of(uint32_t rva, uint32_t end, const hs_uw32_frame_data *fd)
{
    return (hs_frame32_entry){ rva, end, fd->prolog, fd->locals, fd->saved_regs, fd->params, fd->ebp_saved_at,
                               fd->uses_ebp ? HS_FRAME32_USES_EBP : 0 };
}

typedef struct rows {
    hs_frame32_entry *out;
    size_t n, room;
} rows;

static void add_row(void *ctx, uint32_t rva, uint32_t end, const hs_uw32_frame_data *fd)
{
    rows *r = ctx;
    if (r->n < r->room)
        r->out[r->n] = entry_of(rva, end, fd);
    r->n++;   /* (counted beyond the room: the part does not fit) */
}

void hs_fnframes_build(const hs_pe *pe, const char *path, const hs_symconf *conf, hs_frame32_entry *out, size_t room,
                       int32_t *npdb, int32_t *ncfi)
{
    *npdb = *ncfi = 0;
    if (pe->bits != 32)
        return;
    hs_fpo32 *pdb = hs_modsyms_frames32(path, conf);
    size_t n = hs_fpo32_count(pdb);
    if (n <= room) {
        for (size_t i = 0; i < n; i++) {
            uint32_t end;
            const hs_uw32_frame_data *fd = hs_fpo32_record(pdb, i, &end);
            out[i] = entry_of(fd->begin, end, fd);
        }
        *npdb = (int32_t)n;
    } else {
        hs_log("frame data of %s: its PDB's %zu records do not fit the list's room", hs_basename(path), n);
    }
    hs_fpo32_free(pdb);
    hs_cfi32 *cfi = hs_cfi32_from_pe(pe);
    rows r = { out + *npdb, 0, room - (size_t)*npdb };
    hs_cfi32_each_row(cfi, add_row, &r);
    if (r.n <= r.room)
        *ncfi = (int32_t)r.n;
    else
        hs_log("frame data of %s: its .eh_frame's %zu rows do not fit the list's room", hs_basename(path), r.n);
    hs_cfi32_free(cfi);
    hs_log("frame data of %s: %d records from its PDB, %d rows of its .eh_frame", hs_basename(path), (int)*npdb,
           (int)*ncfi);
}
