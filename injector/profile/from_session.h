/*
 * injector/profile/from_session.h - read a session into a profile: modules,
 * functions and everything the agent counted, summed over every thread
 * region, with raw addresses (profile/resolve.h names them). The only
 * host code that reads the session's layout.
 */
#ifndef HOOKSCOPE_FROM_SESSION_H
#define HOOKSCOPE_FROM_SESSION_H

#include "injector/profile/profile.h"

/* p->tsc_hz must be set (durations are converted to ns here); with
 * p->sampling.on, the calls of each thread go to p's thread list too.
 * commit (NULL: none needed) makes a range of the view readable before it
 * is read: the agent commits the session's pages as its tables fill. */
void hs_profile_from_session(hs_profile *p, void *view, void (*commit)(void *p, uint64_t len));

#endif
