/*
 * sampler/etl/internal.h - what the reader's files share and nobody else
 * needs: the buffer header, the logfile header, the trace header kinds and
 * the GUIDs of kernel event groups.
 */
#ifndef HOOKSCOPE_ETL_INTERNAL_H
#define HOOKSCOPE_ETL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/etl/reader.h"

#define HS_ETL_BUFHDR 72                        /* sizeof(WMI_BUFFER_HEADER) */
#define HS_ETL_MAX_BUFFER (64u << 20)           /* larger is taken for corruption */

/* WMI_BUFFER_HEADER flags and types (Geoff Chappell's WMI_BUFFER_HEADER page). */
enum {
    HS_ETL_BUF_FLUSH_MARKER = 0x0001,
    HS_ETL_BUF_EVENTS_LOST = 0x0002,
    HS_ETL_BUF_BUFFER_LOST = 0x0004,
    HS_ETL_BUF_PROC_INDEX = 0x0020,             /* ClientContext holds a 16-bit processor index */
    HS_ETL_BUF_COMPRESSED = 0x0040,
    HS_ETL_BUFTYPE_HEADER = 4,
};

/* LogFileMode bits the reader looks at. */
#define HS_ETL_MODE_COMPRESSED 0x04000000u      /* EVENT_TRACE_COMPRESSED_MODE */

typedef struct hs_etl_bufhdr {
    uint32_t size;                              /* bytes in the file (compressed size if compressed) */
    uint32_t saved;                             /* SavedOffset: end of the events */
    uint32_t offset;                            /* Offset: end of the events when SavedOffset is 0 */
    uint64_t ts;
    uint64_t seq;
    uint16_t cpu;
    uint16_t flags, type;
    uint32_t state;                             /* the header buffer's low 16 bits: compression format */
} hs_etl_bufhdr;

/* Read the 72 bytes at p. */
void hs_etl_bufhdr_parse(const uint8_t *p, hs_etl_bufhdr *b);
/* Where its events end (SavedOffset, or Offset when that is 0). */
static inline uint32_t hs_etl_bufhdr_end(const hs_etl_bufhdr *b)
{
    return b->saved ? b->saved : b->offset;
}

/* Fill info from the logfile header event (ev: the first event of the
 * file, a system header of group 0 type 0) and the header buffer's state.
 * Returns 0 or -1 (err). */
int hs_etl_logfile_parse(const hs_etl_event *ev, uint32_t state, hs_etl_info *info, hs_etl_error *err);

/* One event header at p (avail bytes to the end of the buffer's data):
 * fills ev (header, group, type, version, ptr, pid, tid, ts, guid, data,
 * size, total, extended items). Returns 0 for an event, 1 for the end of
 * the events (0xFFFFFFFF padding), -1 with *why for a bad header.
 * has_ts is set to 0 for kinds without a timestamp. */
int hs_etl_hdr_parse(const uint8_t *p, size_t avail, hs_etl_event *ev, int *has_ts, const char **why);
/* The views of the individual kinds (hdr_*.c), called by hs_etl_hdr_parse
 * once it knows the kind; same contract. */
int hs_etl_hdr_system(const uint8_t *p, size_t avail, hs_etl_event *ev, const char **why);
int hs_etl_hdr_perfinfo(const uint8_t *p, size_t avail, hs_etl_event *ev, const char **why);
int hs_etl_hdr_classic(const uint8_t *p, size_t avail, hs_etl_event *ev, const char **why);
int hs_etl_hdr_event(const uint8_t *p, size_t avail, hs_etl_event *ev, const char **why);

/* The kernel group whose events a provider GUID carries (process, thread,
 * image, perfinfo, stackwalk), HS_ETL_GROUP_IMAGEID for KernelTraceControl's
 * image identity events, the HS_ETL_GROUP_CLR* groups for the CLR's, else
 * HS_ETL_GROUP_NONE. */
uint8_t hs_etl_guid_group(const uint8_t *guid);

/* Call the observer for one event: its event callback, then its view's. */
int hs_etl_dispatch(const hs_etl_event *ev, const hs_etl_observer *obs, hs_etl_error *err);

#endif
