/*
 * sampler/etl/collector.h - the observer that builds an hs_etl_trace
 * (collector.c: processes, threads, images, samples, scheduling events),
 * the stack joining it drives (stackjoin.c) and the finishing pass over
 * the model (model.c).
 */
#ifndef HOOKSCOPE_ETL_COLLECTOR_H
#define HOOKSCOPE_ETL_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/base/map.h"
#include "sampler/etl/reader.h"
#include "sampler/etl/text.h"

/* How far back (in events that can have a stack) a stack event may look
 * for its event. */
#define HS_ETL_STACK_WINDOW 4096

/* An event a stack can belong to (a sample, a context switch, a
 * ReadyThread), in the order of the stream. */
typedef struct hs_etl_owner {
    uint64_t ts;
    uint32_t tid;                   /* HS_ETL_NONE: not known yet (a ReadyThread whose header has no
                                       thread takes the thread of the stack walked for it) */
    uint32_t pid;
    uint32_t index;                 /* into samples, or into sched */
    uint16_t cpu;
    uint8_t kind;                   /* 0: a sample; HS_ETL_SWITCH, HS_ETL_READY: a scheduling event */
} hs_etl_owner;

/* The joining state of one owner (parallel to the owners). */
typedef struct hs_etl_pend {
    uint64_t kkey, ukey;            /* stack keys waiting for their definition (0: none) */
    uint32_t next_k, next_u;        /* other samples waiting for the same key */
    uint32_t next_wait;             /* the next owner waiting in the kernel on this thread */
    uint8_t user_known;             /* its user part is known (maybe empty) */
    uint8_t waiting;                /* on its thread's list, waiting for the user part */
    uint8_t done;                   /* its stack is final */
} hs_etl_pend;

/* The joining state of one thread id. */
typedef struct hs_etl_tstate {
    uint32_t wait;                  /* first owner waiting in the kernel (HS_ETL_NONE: none) */
    uint64_t last_emit;             /* timestamp of the last user stack given to its waiters */
} hs_etl_tstate;

/* A DbgID/ImageID record waiting for its image (they come just before it). */
typedef struct hs_etl_pending_id {
    uint32_t pid;
    uint64_t base;
    uint32_t flags;                 /* HS_ETL_IMAGE_ID, HS_ETL_IMAGE_RSDS */
    const char *orig_name, *pdb_name;
    uint8_t guid[16];
    uint32_t age;
} hs_etl_pending_id;

typedef struct hs_etl_priv {
    hs_etl_arena arena;             /* every string of the model */
    uint32_t *img_sorted;           /* user images by (pid, base) */
    uint32_t n_img_sorted;
    uint32_t *kimg_sorted;          /* kernel images by base */
    uint32_t n_kimg_sorted;
    uint64_t max_image_size;
    uint32_t *proc_sorted;          /* processes by (pid, start) */
    uint32_t *jit_sorted;           /* JIT methods by (pid, start) */
    uint32_t max_jit_size;
} hs_etl_priv;

typedef struct hs_etl_collector {
    hs_etl_trace *t;
    hs_etl_error *err;
    hs_etl_priv *priv;
    size_t cap_procs, cap_threads, cap_images, cap_samples, cap_sched, cap_frames, cap_ids, cap_tstates;
    hs_map pid_now;             /* pid -> its current process record */
    hs_map tid_now;             /* tid -> its current thread record */
    hs_map img_now;             /* (pid, base) -> the image mapped there now */
    hs_map id_now;              /* (pid, base) -> a pending ImageID/DbgID record */
    hs_map jit_now;             /* (pid, MethodID) -> the method's current record */
    hs_map clr_modules;         /* (pid, ModuleID) -> index into clr_paths */
    const char **clr_paths;     /* the assemblies' files (arena strings) */
    uint32_t nclr_paths;
    size_t cap_jits, cap_clr_paths;
    hs_etl_pending_id *ids;
    uint32_t nids;
    bool interval_started;      /* the sampling interval is known (on_interval) */
    bool sampled;               /* a SampledProfile event was seen */
    /* stack joining */
    hs_etl_owner *owners;
    uint32_t nowners;
    size_t cap_owners;
    hs_etl_pend *pend;          /* parallel to owners */
    hs_etl_tstate *tstates;
    uint32_t ntstates;
    hs_map tstate_of;           /* tid -> index into tstates */
    hs_map kkeys, ukeys;        /* stack key -> first owner waiting for it */
    hs_map keydefs;             /* (key, kernel) -> a created definition, index into defs */
    struct hs_etl_keydef { uint32_t off, len; } *defs;
    uint32_t ndefs;
    size_t cap_defs;
} hs_etl_collector;

/* Set up / tear down (the trace keeps what was collected). */
int hs_etl_collector_init(hs_etl_collector *c, hs_etl_trace *t, hs_etl_error *err);
void hs_etl_collector_free(hs_etl_collector *c);
/* The observer whose ctx is c. */
hs_etl_observer hs_etl_collector_observer(hs_etl_collector *c);

/* stackjoin.c: called by the collector for each event that can have a
 * stack (kind and index as in hs_etl_owner; the record is in the trace
 * already), then for each stack-bearing event. */
int hs_etl_join_owner(hs_etl_collector *c, uint8_t kind, uint32_t index, uint64_t ts, uint32_t tid, uint32_t pid,
                      uint16_t cpu);
int hs_etl_join_stack(hs_etl_collector *c, const hs_etl_event *ev, const hs_etl_stack_ev *s);
int hs_etl_join_ref(hs_etl_collector *c, const hs_etl_event *ev, const hs_etl_stack_ref_ev *r);
int hs_etl_join_def(hs_etl_collector *c, const hs_etl_event *ev, const hs_etl_stack_def_ev *d);
/* At the end of the trace: kernel stacks still waiting get an empty user part. */
int hs_etl_join_finish(hs_etl_collector *c);

/* clr.c: the observer's CLR callbacks, and the assemblies of the methods
 * once the trace is read. */
int hs_etl_on_clr_method(void *ctx, const hs_etl_event *ev, int what, const hs_etl_clr_method_ev *v);
int hs_etl_on_clr_module(void *ctx, const hs_etl_event *ev, int what, const hs_etl_clr_module_ev *v);
void hs_etl_clr_finish(hs_etl_collector *c);

/* model.c: resolve what only the whole trace tells (pids of samples and
 * scheduling events on threads seen later, process indices) and build the
 * lookup tables. */
int hs_etl_model_finish(hs_etl_collector *c);

#endif
