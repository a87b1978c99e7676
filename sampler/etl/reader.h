/*
 * sampler/etl/reader.h - the lower layer of the ETL reader: a file's
 * buffers, its events in time order, and the observer the decoder calls.
 *
 * An .etl file is a sequence of buffers, each with a 72-byte
 * WMI_BUFFER_HEADER (buffer.c). The first buffer's first event is the
 * logfile header (logfile.c). Every buffer holds the events of one CPU,
 * 8-byte aligned, each led by one of several trace header kinds (hdr_*.c).
 * hs_etl_decode reads each CPU's buffers in sequence order, decompresses
 * them if needed, merges the CPUs' events by timestamp (ties: the lower
 * CPU first) and hands each event to the observer (dispatch.c), first as
 * a normalized hs_etl_event, then through the typed view of its kind.
 */
#ifndef HOOKSCOPE_ETL_READER_H
#define HOOKSCOPE_ETL_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sampler/etl/etl.h"
#include "sampler/etl/views.h"

/* Trace header kinds: the byte at offset 2 of every event. */
enum {
    HS_ETL_HDR_SYSTEM32 = 0x01,
    HS_ETL_HDR_SYSTEM64 = 0x02,
    HS_ETL_HDR_COMPACT32 = 0x03,
    HS_ETL_HDR_COMPACT64 = 0x04,
    HS_ETL_HDR_FULL32 = 0x0A,               /* EVENT_TRACE_HEADER (classic, GUID) */
    HS_ETL_HDR_INSTANCE32 = 0x0B,
    HS_ETL_HDR_TIMED = 0x0C,
    HS_ETL_HDR_ERROR = 0x0D,
    HS_ETL_HDR_WNODE = 0x0E,
    HS_ETL_HDR_MESSAGE = 0x0F,
    HS_ETL_HDR_PERFINFO32 = 0x10,
    HS_ETL_HDR_PERFINFO64 = 0x11,
    HS_ETL_HDR_EVENT32 = 0x12,              /* EVENT_HEADER (manifest, TraceLogging) */
    HS_ETL_HDR_EVENT64 = 0x13,
    HS_ETL_HDR_FULL64 = 0x14,
    HS_ETL_HDR_INSTANCE64 = 0x15,
};

/* Kernel event groups (the high byte of a hook id). */
enum {
    HS_ETL_GROUP_HEADER = 0x00,
    HS_ETL_GROUP_PROCESS = 0x03,
    HS_ETL_GROUP_THREAD = 0x05,
    HS_ETL_GROUP_PERFINFO = 0x0F,
    HS_ETL_GROUP_IMAGE = 0x14,
    HS_ETL_GROUP_STACKWALK = 0x18,
    HS_ETL_GROUP_IMAGEID = 0xF0,            /* not a kernel group: KernelTraceControl's ImageID events */
    HS_ETL_GROUP_CLR = 0xF1,                /* the CLR runtime provider (manifest: by event id) */
    HS_ETL_GROUP_CLR_RUNDOWN = 0xF2,        /* its rundown provider (manifest: by event id) */
    HS_ETL_GROUP_CLR_METHOD = 0xF3,         /* classic MOF events of the CLR (by opcode): methods, */
    HS_ETL_GROUP_CLR_LOADER = 0xF4,         /* modules, */
    HS_ETL_GROUP_CLR_METHOD_RUNDOWN = 0xF5, /* methods' rundown, */
    HS_ETL_GROUP_CLR_LOADER_RUNDOWN = 0xF6, /* modules' rundown */
    HS_ETL_GROUP_NONE = 0xFF,               /* any other provider */
};

/* EVENT_HEADER extended item types the reader understands. */
enum {
    HS_ETL_EXT_STACK_TRACE32 = 5,
    HS_ETL_EXT_STACK_TRACE64 = 6,
    HS_ETL_EXT_STACK_KEY32 = 17,
    HS_ETL_EXT_STACK_KEY64 = 18,
};

/* One event, whatever its header kind. */
typedef struct hs_etl_event {
    uint8_t header;                         /* HS_ETL_HDR_* */
    uint8_t group;                          /* HS_ETL_GROUP_* (from the hook id, or the GUID) */
    uint8_t type;                           /* event type / opcode */
    uint8_t ptr;                            /* pointer size of its payload: 4 or 8 */
    uint16_t version;                       /* event version */
    uint16_t cpu;                           /* the CPU whose buffer held it */
    uint16_t event_id;                      /* EVENT_HEADER: the descriptor's id, else 0 */
    uint16_t header_flags;                  /* EVENT_HEADER: its Flags, else 0 */
    uint32_t pid, tid;                      /* HS_ETL_NONE when the header has none */
    uint64_t ts;                            /* ticks of the trace's clock */
    const uint8_t *guid;                    /* 16 bytes for GUID-based headers, else NULL */
    const uint8_t *data;                    /* the payload (user data) */
    uint32_t size;                          /* its length */
    uint32_t total;                         /* the whole event, header included */
    uint64_t offset;                        /* where the event starts: in the file for an
                                               uncompressed buffer, else in the buffer's
                                               decompressed data (see buffer_offset) */
    uint64_t buffer_offset;                 /* the file offset of its buffer */
    int in_compressed;                      /* offset is within decompressed data */
    /* EVENT_HEADER extended items */
    hs_etl_frames ext_stack;                /* STACK_TRACE32/64 (n 0 if none) */
    uint64_t ext_match_id;
    uint64_t ext_stack_key;                 /* STACK_KEY32/64 (0 if none) */
} hs_etl_event;

/* What a CLR method or module event says happened (the observer's
 * clr_method and clr_module get it). */
enum {
    HS_ETL_CLR_LOAD = 1,                    /* loaded (JIT-compiled) during the trace */
    HS_ETL_CLR_UNLOAD = 2,
    HS_ETL_CLR_DCSTART = 3,                 /* rundown: there when the trace began */
    HS_ETL_CLR_DCEND = 4,                   /* rundown: there when it ended */
};

/* What the decoder calls. Every member may be NULL. A callback returns 0
 * to go on, or -1 to stop the decode (having filled the error it was
 * given in its context, if it can say why). Views point into the buffer
 * being read: copy what must outlive the call. */
typedef struct hs_etl_observer {
    void *ctx;
    int (*info)(void *ctx, const hs_etl_info *info);           /* once, before any event */
    int (*event)(void *ctx, const hs_etl_event *ev);           /* every event, before its view */
    int (*process)(void *ctx, const hs_etl_event *ev, const hs_etl_process_ev *p);
    int (*thread)(void *ctx, const hs_etl_event *ev, const hs_etl_thread_ev *t);
    int (*image)(void *ctx, const hs_etl_event *ev, const hs_etl_image_ev *im);
    int (*image_id)(void *ctx, const hs_etl_event *ev, const hs_etl_imageid_ev *id);
    int (*dbg_id)(void *ctx, const hs_etl_event *ev, const hs_etl_dbgid_ev *id);
    int (*sample)(void *ctx, const hs_etl_event *ev, const hs_etl_sample_ev *s);
    int (*interval)(void *ctx, const hs_etl_event *ev, const hs_etl_interval_ev *iv);
    int (*cswitch)(void *ctx, const hs_etl_event *ev, const hs_etl_cswitch_ev *cs);
    int (*ready)(void *ctx, const hs_etl_event *ev, const hs_etl_ready_ev *r);
    int (*stack)(void *ctx, const hs_etl_event *ev, const hs_etl_stack_ev *s);
    int (*clr_method)(void *ctx, const hs_etl_event *ev, int what, const hs_etl_clr_method_ev *m);
    int (*clr_module)(void *ctx, const hs_etl_event *ev, int what, const hs_etl_clr_module_ev *m);
    int (*stack_ref)(void *ctx, const hs_etl_event *ev, const hs_etl_stack_ref_ev *r);
    int (*stack_def)(void *ctx, const hs_etl_event *ev, const hs_etl_stack_def_ev *d);
} hs_etl_observer;

typedef struct hs_etl_file hs_etl_file;

/* Open a file (streamed: buffers are read as needed) or bytes in memory
 * (kept by reference). Both read the logfile header and index every
 * buffer at once, so a truncated file or a bad buffer header fails here.
 * Return 0, or -1 with err filled. */
int hs_etl_open_file(hs_etl_file **f, const char *path, hs_etl_error *err);
int hs_etl_open_mem(hs_etl_file **f, const void *data, size_t size, hs_etl_error *err);
/* An open stream (e.g. from _wfopen on Windows), read from its start; it
 * stays open after hs_etl_close, for the caller to close. */
int hs_etl_open_fp(hs_etl_file **f, FILE *fp, hs_etl_error *err);
/* The logfile header's facts and what the index counted (the events count
 * and timestamps are filled by hs_etl_decode). */
const hs_etl_info *hs_etl_file_info(const hs_etl_file *f);
/* Decode every event in time order. Returns 0, or -1 with err filled. A
 * file can be decoded once. */
int hs_etl_decode(hs_etl_file *f, const hs_etl_observer *obs, hs_etl_error *err);
void hs_etl_close(hs_etl_file *f);

/* Fill err with a message, and the offset if has_offset (printf-style). */
void hs_etl_fail(hs_etl_error *err, int has_offset, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fill err for a bad event: names its place in the file. */
void hs_etl_fail_event(hs_etl_error *err, const hs_etl_event *ev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
