/*
 * sampler/etl_samples.h - the CPU samples of one process of a recorded ETW
 * trace (sampler/etl/etl.h) into a sample set: the one loop that both
 * `run --sampler etw` (sampler/etw/) and `report --etl`
 * (injector/profile/from_etl.c) go through, so that a trace is named the
 * same way by both.
 */
#ifndef HOOKSCOPE_SAMPLER_ETL_SAMPLES_H
#define HOOKSCOPE_SAMPLER_ETL_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/codemap.h"
#include "sampler/etl/etl.h"
#include "sampler/sampler.h"

/* A process of the trace with samples, for the table `report --etl` shows
 * without a filter. */
typedef struct hs_etl_proc_row {
    uint32_t index;              /* into t->procs */
    uint32_t pid;
    const char *name;
    uint64_t samples, with_stack;
} hs_etl_proc_row;

/* The processes with samples, by samples (most first), then pid; malloc'd. */
size_t hs_etl_process_table(const hs_etl_trace *t, hs_etl_proc_row **rows);

/* The process instance to profile: by pid (pid != 0) or by image name
 * (case ignored); when several instances match, the one with the most
 * samples. Returns 0, or -1 with one line in err naming what exists. */
int hs_etl_pick_process(const hs_etl_trace *t, uint32_t pid, const char *name, uint32_t *index, char *err,
                        size_t errlen);

/* Every sample of process `index` of t: its frames leaf first, kernel
 * frames kept, the sampled instruction alone when it has no stack; each
 * frame with its module, the image mapped there at the sample's time
 * (a return address is looked up one byte back, in its call); the images
 * used as the set's modules, with their names, kernel flag and PDB
 * identity (DbgID_RSDS). `own` (NULL: no hooks): hookscope's code and
 * threads in the process, whose samples are left out and whose frames are
 * attributed as the suspend sampler's are (codemap.h). map_path (NULL:
 * none) turns a trace's NT path into a path of this machine (malloc'd,
 * or NULL). Returns the samples added. */
uint64_t hs_etl_samples(const hs_etl_trace *t, uint32_t index, const hs_codemap *own,
                        char *(*map_path)(void *ctx, const char *nt_path), void *map_ctx, hs_sampleset *out);

#endif
