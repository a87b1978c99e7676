/*
 * injector/collect.h - read a session into hs_results: modules, functions
 * and the call counts summed over every thread region.
 */
#ifndef HOOKSCOPE_COLLECT_H
#define HOOKSCOPE_COLLECT_H

#include "results.h"

int hs_collect(void *session, hs_results *r);

#endif
