/*
 * injector/profile/from_samples.h - a sampler's sample set (sampler/sampler.h)
 * into a profile: the importer of samples, beside the session's
 * (from_session.h), the trace's (from_etl.h) and a saved run's (load.h).
 */
#ifndef HOOKSCOPE_FROM_SAMPLES_H
#define HOOKSCOPE_FROM_SAMPLES_H

#include "injector/profile/profile.h"
#include "sampler/sampler.h"

/* Every stack of every thread and kind with its count and raw addresses
 * (for hs_profile_resolve), the modules p does not have yet, the threads
 * (samples, CPU time; calls are the session's), and the sampling figures
 * (backend, rate and cpu_s are the caller's to set). Stacks come in a
 * fixed order: by kind, thread, then frames. */
void hs_profile_add_samples(hs_profile *p, const hs_sampleset *s);

#endif
