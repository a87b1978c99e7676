/*
 * tests/unit/etl_build.h - writes small synthetic .etl files for the ETL
 * reader's tests, to the documented layouts (the same sources the reader
 * cites: WMI_BUFFER_HEADER, the trace header kinds, TraceEvent's payload
 * layouts), and compresses buffers with test-side XPRESS and LZNT1
 * compressors written from [MS-XCA] 2.3 and 2.5.
 *
 *   etlb b;
 *   etlb_init(&b, 8, 2, 4096);                 // 8-byte pointers, 2 CPUs
 *   etlb_begin(&b, 0, 1);                      // a buffer of CPU 0, sequence 1
 *   etlb_sys(&b, ..., payload);                // events
 *   etlb_end(&b, ETLB_PLAIN);                  // or ETLB_XPRESS / ETLB_LZNT1
 *   ... b.data, b.size: the file
 */
#ifndef HS_TEST_ETL_BUILD_H
#define HS_TEST_ETL_BUILD_H

#include <stddef.h>
#include <stdint.h>

/* A growing byte string. */
typedef struct etlb_bytes {
    uint8_t *p;
    size_t n, cap;
} etlb_bytes;

void eb_put(etlb_bytes *b, const void *p, size_t n);
void eb_u8(etlb_bytes *b, uint8_t v);
void eb_u16(etlb_bytes *b, uint16_t v);
void eb_u32(etlb_bytes *b, uint32_t v);
void eb_u64(etlb_bytes *b, uint64_t v);
void eb_ptr(etlb_bytes *b, unsigned ptr, uint64_t v);
void eb_wstr(etlb_bytes *b, const char *ascii);    /* UTF-16LE, NUL-terminated */
void eb_str(etlb_bytes *b, const char *s);         /* 8-bit, NUL-terminated */
void eb_free(etlb_bytes *b);

/* [MS-XCA] compressors: return the compressed size (out must hold n + n/8 + 64). */
size_t etlb_xpress(const uint8_t *in, size_t n, uint8_t *out);
size_t etlb_lznt1(const uint8_t *in, size_t n, uint8_t *out);

enum { ETLB_PLAIN = 0, ETLB_XPRESS = 3, ETLB_LZNT1 = 2 };

typedef struct etlb {
    etlb_bytes file;
    unsigned ptr;
    uint32_t buffer_size;
    size_t header_state_at;         /* where the header buffer's State field is */
    size_t logfile_mode_at;         /* where the logfile header's LogFileMode is */
    /* the open buffer */
    etlb_bytes buf;
    uint16_t cpu;
    uint64_t seq;
    int proc_index;                 /* write ClientContext as a 16-bit processor index */
    uint16_t extra_flags;           /* more BufferFlag bits for the next buffers */
} etlb;

/* Start a file: the header buffer with a logfile header (QPC clock at
 * 10 MHz, buffer_size bytes per buffer). */
void etlb_init(etlb *b, unsigned ptr, uint32_t ncpus, uint32_t buffer_size);
/* Mark the file compressed in this format (LogFileMode and State). */
void etlb_set_compression(etlb *b, uint32_t format);
void etlb_begin(etlb *b, uint16_t cpu, uint64_t seq);
/* Events, with 32- or 64-bit header kinds as the file's pointer size says. */
void etlb_sys(etlb *b, int compact, uint8_t group, uint8_t type, uint16_t version, uint32_t tid, uint32_t pid,
              uint64_t ts, const etlb_bytes *payload);
void etlb_perf(etlb *b, uint8_t group, uint8_t type, uint16_t version, uint64_t ts, int pebs, int npmc,
               const etlb_bytes *payload);
void etlb_classic(etlb *b, int instance, const uint8_t guid[16], uint8_t type, uint16_t version, uint32_t tid,
                  uint32_t pid, uint64_t ts, const etlb_bytes *payload);
/* An EVENT_HEADER record; with nstack > 0 a STACK_TRACE32/64 extended item
 * (after a RELATED_ACTIVITYID item, to test item chains). */
void etlb_evh(etlb *b, const uint8_t guid[16], uint16_t id, uint8_t opcode, uint8_t version, uint32_t tid,
              uint32_t pid, uint64_t ts, const uint64_t *stack, uint32_t nstack, const etlb_bytes *payload);
/* Close the buffer: plain (padded to buffer_size with 0xFF), or compressed. */
void etlb_end(etlb *b, int how);
void etlb_free(etlb *b);

/* Payloads (P = the file's pointer size). */
void etlb_p_process(etlb_bytes *o, unsigned P, uint32_t pid, uint32_t ppid, int with_sid, const char *name,
                    const char *cmdline);                 /* version 4 */
void etlb_p_thread(etlb_bytes *o, unsigned P, uint32_t pid, uint32_t tid);        /* version 3 */
void etlb_p_image(etlb_bytes *o, unsigned P, uint64_t base, uint64_t size, uint32_t pid, uint32_t checksum,
                  uint32_t timestamp, const char *path);  /* version 3 */
void etlb_p_sample(etlb_bytes *o, unsigned P, uint64_t ip, uint32_t tid, uint8_t flags);
/* CSwitch ("CSwitch class", 24 bytes; extra: more bytes after them, as a
 * later version may have), ReadyThread (8 bytes), and a PerfInfo sampling
 * interval event (12 bytes). */
void etlb_p_cswitch(etlb_bytes *o, uint32_t new_tid, uint32_t old_tid, int8_t new_priority, int8_t old_priority,
                    uint8_t old_wait_reason, uint8_t old_wait_mode, uint8_t old_state, uint32_t new_wait_time,
                    size_t extra);
void etlb_p_ready(etlb_bytes *o, uint32_t tid, int8_t adjust_reason, int8_t adjust_increment, uint8_t flags);
void etlb_p_interval(etlb_bytes *o, uint32_t source, uint32_t new_interval, uint32_t old_interval);
void etlb_p_stack(etlb_bytes *o, unsigned P, uint64_t ets, uint32_t pid, uint32_t tid, const uint64_t *frames,
                  uint32_t n);
void etlb_p_keyref(etlb_bytes *o, unsigned P, uint64_t ets, uint32_t pid, uint32_t tid, uint64_t key);
void etlb_p_keydef(etlb_bytes *o, unsigned P, uint64_t key, const uint64_t *frames, uint32_t n);
void etlb_p_imageid(etlb_bytes *o, unsigned P, uint64_t base, uint64_t size, uint32_t timestamp, const char *name);
void etlb_p_dbgid(etlb_bytes *o, unsigned P, uint64_t base, const uint8_t guid[16], uint32_t age, const char *pdb);

/* The CLR's method and module events (views.h's layouts): MethodID,
 * ModuleID, start, size, token, flags, the three UTF-16 names; version 1
 * adds ClrInstanceID, version 2 ReJITID. Module: ModuleID, AssemblyID,
 * flags, reserved, the IL and native paths (then ClrInstanceID from
 * version 1). */
void etlb_p_clr_method(etlb_bytes *o, unsigned version, uint64_t method_id, uint64_t module_id, uint64_t start,
                       uint32_t size, const char *ns, const char *name, const char *sig, uint64_t rejit_id);
void etlb_p_clr_module(etlb_bytes *o, unsigned version, uint64_t module_id, const char *il_path,
                       const char *native_path);

/* The GUIDs of the kernel groups and of KernelTraceControl's ImageID, as stored. */
extern const uint8_t etlb_guid_process[16], etlb_guid_thread[16], etlb_guid_image[16], etlb_guid_perfinfo[16],
    etlb_guid_stackwalk[16], etlb_guid_imageid[16], etlb_guid_other[16];
/* The CLR's runtime and rundown providers and its classic MethodGuid task. */
extern const uint8_t etlb_guid_clr_runtime[16], etlb_guid_clr_rundown[16], etlb_guid_clr_method[16];

#endif
