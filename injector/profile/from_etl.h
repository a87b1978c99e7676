/*
 * injector/profile/from_etl.h - the profile of one process of a recorded
 * ETW trace (sampler/etl/etl.h): its CPU samples, and the ready and wait
 * samples its threads' context switches give (sampler/etl_samples.h), as
 * sample stacks per thread, leaf first, kernel frames kept (their modules
 * marked kernel), every frame's module the image mapped there at the
 * sample's time; the images with their PDB identity (DbgID_RSDS) so that
 * the naming pass can find their PDBs without the image files; the
 * sampling rate the trace's timer interval gives. Portable C.
 */
#ifndef HOOKSCOPE_FROM_ETL_H
#define HOOKSCOPE_FROM_ETL_H

#include <stddef.h>
#include <stdint.h>

#include "injector/profile/profile.h"
#include "sampler/etl/etl.h"
#include "sampler/etl_samples.h"

/* Fill p (new, empty) from process `index` of t; `trace_path` names the
 * file in the report. map_path (may be NULL) turns a trace's NT path
 * (\Device\HarddiskVolume2\...) into a path of this machine, or NULL. */
void hs_profile_from_etl(const hs_etl_trace *t, uint32_t index, const char *trace_path,
                         char *(*map_path)(void *ctx, const char *nt_path), void *map_ctx, hs_profile *p);

#endif
