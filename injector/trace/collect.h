/*
 * injector/trace/collect.h - read a session into a profile: modules,
 * functions and everything the agent counted, summed over every thread
 * region, with raw addresses (profile/resolve.h names them). The only
 * host code that reads the session's layout.
 */
#ifndef HOOKSCOPE_COLLECT_H
#define HOOKSCOPE_COLLECT_H

#include "profile/profile.h"

/* p->tsc_hz must be set (durations are converted to ns here). */
void hs_collect(void *session, hs_profile *p);

#endif
