/*
 * sampler/etl/views.h - typed views of the kernel event payloads hookscope
 * reads, one group per file (ev_process.c, ev_thread.c, ev_image.c,
 * ev_perfinfo.c, ev_stackwalk.c; ev_thread.c has the dispatcher's CSwitch
 * and ReadyThread too, which the kernel logs in the thread group). A view
 * points into the payload; strings
 * are given as bytes and lengths (UTF-16LE or 8-bit, no terminator).
 *
 * Layouts (TraceEvent KernelTraceEventParser.cs / SymbolTraceEventParser.cs,
 * snail-server snail/etl/parser/records; P = the event's pointer size):
 *   process v1+ (hook 0x0301 start, 02 end, 03 DCStart, 04 DCEnd, 0x27 defunct):
 *     UniqueProcessKey P @0 (v2+), pid @P, ppid @P+4, session @P+8,
 *     exit status @P+12, directory table base P @P+16 (v3+), flags @2P+16
 *     (v4+), then a SID (4 zero bytes, or a TOKEN_USER of 2P bytes and a
 *     SID of 8 + 4 * SubAuthorityCount bytes) at P+16 (v1, v2), 2P+16 (v3),
 *     2P+20 (v4+), then the 8-bit image name, then the UTF-16 command line
 *     (v2+). v0: pid P @0, ppid P @P, SID @2P, name.
 *   thread (hook 0x0501..04): v1+ pid @0, tid @4; v0 tid @0, pid @4.
 *   CSwitch (hook 0x0524, versions 2-4; "CSwitch class"): NewThreadId
 *     @0, OldThreadId @4, NewThreadPriority i8 @8, OldThreadPriority i8
 *     @9, PreviousCState @10, SpareByte @11, OldThreadWaitReason @12,
 *     OldThreadWaitMode @13, OldThreadState @14,
 *     OldThreadWaitIdealProcessor @15, NewThreadWaitTime u32 @16,
 *     Reserved u32 @20: 24 bytes (the ppt fixture's 29533 version-2
 *     events are 24 bytes; TraceEvent reads the same offsets).
 *   ReadyThread (hook 0x0532, "ReadyThread class"): TThreadId @0,
 *     AdjustReason i8 @4, AdjustIncrement i8 @5, Flag @6, Reserved @7.
 *   image (hook 0x030A load - logged in the process group -, 0x1402
 *     unload, 0x1403 DCStart, 0x1404 DCEnd): base P @0, size P @P, pid @2P,
 *     checksum @2P+4, TimeDateStamp @2P+8, default base P @2P+16, UTF-16
 *     file name @3P+32 (v2+); v1: pid @2P, name @2P+4; v0: size u32 @P,
 *     name @P+4.
 *   KernelTraceControl ImageID (GUID b3e675d7-..., opcode 0): base P @0,
 *     size P @P, pid @2P, TimeDateStamp @2P+4, UTF-16 name @2P+8.
 *     DbgID_RSDS (opcode 36): base P @0, pid @P, GUID @P+4, age @P+20,
 *     8-bit PDB name @P+24.
 *   SampledProfile (hook 0x0F2E): ip P @0, tid @P, count u16 @P+4, a byte
 *     @P+6 (bit 0 DPC, bit 1 ISR, bits 3-7 priority), rank @P+7.
 *   the sampling interval (hook 0x0F48 SetInterval, 0x0F49 CollectionStart,
 *     0x0F4A CollectionEnd; TraceEvent's SampledProfileIntervalTraceData):
 *     source @0 (0: the timer), new interval @4, old interval @8 (100 ns
 *     units), then (version 3) the source's name.
 *   CLR method events (Microsoft-Windows-DotNETRuntime e13c0d23-...: ids
 *     143 MethodLoadVerbose, 144 MethodUnloadVerbose; its rundown provider
 *     a669021c-...: 143 MethodDCStartVerbose, 144 MethodDCEndVerbose; the
 *     classic MOF forms under the CLR's MethodGuid 3044f61a-... opcodes 37
 *     load / 38 unload verbose and MethodRundown 0bcd91db-... opcodes 39
 *     DCStart / 40 DCEnd verbose; TraceEvent ClrTraceEventParser.cs
 *     MethodLoadUnloadVerboseTraceData): MethodID u64 @0, ModuleID u64 @8,
 *     MethodStartAddress u64 @16, MethodSize u32 @24, MethodToken u32 @28,
 *     MethodFlags u32 @32, then the UTF-16 MethodNamespace (the type's full
 *     name), MethodName, MethodSignature; v1 adds ClrInstanceID u16, v2
 *     ReJITID u64. Every version keeps 64-bit fields in a 32-bit process.
 *   CLR module events (runtime 152 ModuleLoad, 153 ModuleUnload; rundown
 *     153 ModuleDCStart, 154 ModuleDCEnd; classic: LoaderGuid d00792da-...
 *     opcodes 33/34, LoaderRundown 5a54f4df-... opcodes 35/36
 *     DCStart/DCEnd): ModuleID u64 @0, AssemblyID u64 @8, ModuleFlags u32
 *     @16, Reserved u32 @20, then the UTF-16 ModuleILPath (the assembly's
 *     file) and ModuleNativePath (its NGen image, may be empty).
 *   StackWalk (hook 0x1820): event timestamp u64 @0, pid @8, tid @12,
 *     frames (P each) @16, leaf first.
 *   stack key references (0x1825 kernel, 0x1826 user): timestamp @0, pid
 *     @8, tid @12, key P @16. Definitions (0x1822 create, 0x1823 delete,
 *     0x1824 rundown): key P @0, frames @P.
 */
#ifndef HOOKSCOPE_ETL_VIEWS_H
#define HOOKSCOPE_ETL_VIEWS_H

#include <stddef.h>
#include <stdint.h>

#include "hook/base/bytes.h"
#include "sampler/etl/etl.h"

struct hs_etl_event;

/* n addresses of ptr bytes each at p. */
typedef struct hs_etl_frames {
    const uint8_t *p;
    uint32_t n;
    uint32_t ptr;
} hs_etl_frames;

static inline uint64_t hs_etl_frames_at(const hs_etl_frames *f, uint32_t i)
{
    return hs_leptr(f->p + (size_t)i * f->ptr, f->ptr);
}

typedef struct hs_etl_process_ev {
    uint32_t pid, ppid, session, exit_status, flags;
    uint64_t unique_key, dir_base;
    const uint8_t *name;            /* 8-bit */
    uint32_t name_len;
    const uint8_t *cmdline;         /* UTF-16LE */
    uint32_t cmdline_len;
} hs_etl_process_ev;

typedef struct hs_etl_thread_ev {
    uint32_t pid, tid;
} hs_etl_thread_ev;

typedef struct hs_etl_image_ev {
    uint64_t base, size, default_base;
    uint32_t pid, checksum, timestamp;
    const uint8_t *path;            /* UTF-16LE */
    uint32_t path_len;
} hs_etl_image_ev;

typedef struct hs_etl_imageid_ev {
    uint64_t base, size;
    uint32_t pid, timestamp;
    const uint8_t *name;            /* UTF-16LE */
    uint32_t name_len;
} hs_etl_imageid_ev;

typedef struct hs_etl_dbgid_ev {
    uint64_t base;
    uint32_t pid, age;
    const uint8_t *guid;            /* 16 bytes */
    const uint8_t *pdb;             /* 8-bit */
    uint32_t pdb_len;
} hs_etl_dbgid_ev;

typedef struct hs_etl_sample_ev {
    uint64_t ip;
    uint32_t tid;
    uint16_t count;
    uint8_t flags;                  /* HS_ETL_SAMPLE_DPC, HS_ETL_SAMPLE_ISR */
    uint8_t priority, rank;
} hs_etl_sample_ev;

/* A context switch: the thread switched in, the one switched out, and why
 * it left (hs_etl_sched has the meaning of each field). */
typedef struct hs_etl_cswitch_ev {
    uint32_t new_tid, old_tid;
    hs_etl_switch_facts f;
} hs_etl_cswitch_ev;

/* A thread made ready to run. */
typedef struct hs_etl_ready_ev {
    uint32_t tid;                   /* TThreadId */
    hs_etl_ready_facts f;
} hs_etl_ready_ev;

/* A sampling interval set, or in effect when a trace's collection started
 * or ended. */
typedef struct hs_etl_interval_ev {
    uint32_t source;                /* 0: the timer (CPU samples); else a counter */
    uint32_t new_interval, old_interval;   /* 100 ns units */
} hs_etl_interval_ev;

typedef struct hs_etl_stack_ev {
    uint64_t event_ts;              /* the timestamp of the event it belongs to */
    uint32_t pid, tid;
    hs_etl_frames frames;
} hs_etl_stack_ev;

typedef struct hs_etl_stack_ref_ev {
    uint64_t event_ts;
    uint32_t pid, tid;
    uint64_t key;
    int kernel;                     /* StackKeyKernel (1) or StackKeyUser (0) */
} hs_etl_stack_ref_ev;

typedef struct hs_etl_stack_def_ev {
    uint64_t key;
    uint8_t type;                   /* 34 create, 35 delete, 36 rundown */
    hs_etl_frames frames;
} hs_etl_stack_def_ev;

/* A CLR method's code (load, unload or rundown: see hs_etl_event's
 * clr_kind in reader.h). */
typedef struct hs_etl_clr_method_ev {
    uint64_t method_id, module_id, start;
    uint32_t size, token, flags;
    const uint8_t *ns, *name, *sig;  /* UTF-16LE: MethodNamespace, MethodName, MethodSignature */
    uint32_t ns_len, name_len, sig_len;
    uint64_t rejit_id;               /* v2, else 0 */
} hs_etl_clr_method_ev;

/* A CLR module (an assembly's module) loaded, unloaded or in a rundown. */
typedef struct hs_etl_clr_module_ev {
    uint64_t module_id, assembly_id;
    uint32_t flags;
    const uint8_t *il_path, *native_path;   /* UTF-16LE */
    uint32_t il_path_len, native_path_len;
} hs_etl_clr_module_ev;

/* Each returns 0, or -1 with err naming the event when its payload is too
 * short for its layout. */
int hs_etl_view_process(const struct hs_etl_event *ev, hs_etl_process_ev *out, hs_etl_error *err);
int hs_etl_view_thread(const struct hs_etl_event *ev, hs_etl_thread_ev *out, hs_etl_error *err);
int hs_etl_view_image(const struct hs_etl_event *ev, hs_etl_image_ev *out, hs_etl_error *err);
int hs_etl_view_imageid(const struct hs_etl_event *ev, hs_etl_imageid_ev *out, hs_etl_error *err);
int hs_etl_view_dbgid(const struct hs_etl_event *ev, hs_etl_dbgid_ev *out, hs_etl_error *err);
int hs_etl_view_sample(const struct hs_etl_event *ev, hs_etl_sample_ev *out, hs_etl_error *err);
int hs_etl_view_interval(const struct hs_etl_event *ev, hs_etl_interval_ev *out, hs_etl_error *err);
int hs_etl_view_cswitch(const struct hs_etl_event *ev, hs_etl_cswitch_ev *out, hs_etl_error *err);
int hs_etl_view_ready(const struct hs_etl_event *ev, hs_etl_ready_ev *out, hs_etl_error *err);
int hs_etl_view_stack(const struct hs_etl_event *ev, hs_etl_stack_ev *out, hs_etl_error *err);
int hs_etl_view_stack_ref(const struct hs_etl_event *ev, hs_etl_stack_ref_ev *out, hs_etl_error *err);
int hs_etl_view_clr_method(const struct hs_etl_event *ev, hs_etl_clr_method_ev *out, hs_etl_error *err);
int hs_etl_view_clr_module(const struct hs_etl_event *ev, hs_etl_clr_module_ev *out, hs_etl_error *err);
int hs_etl_view_stack_def(const struct hs_etl_event *ev, hs_etl_stack_def_ev *out, hs_etl_error *err);

#endif
