/*
 * agent/walkplans.h - the entry stack walks' plans, one table for all
 * threads of either agent: a return address -> the plan of the step out
 * of its frame (the x64 unwinder's hs_uw_plan, the x86 walker's
 * hs_uw32_plan), which depends on the return address alone (its code,
 * its unwind or frame data), so that a return address seen before costs a
 * probe of the table and the plan's few loads from the stack. A slot per
 * hash, each a seqlock (a thread writing a slot makes its count odd, a
 * reader takes a copy only between two equal even counts). The plans of a
 * module unloaded are forgotten: a slot holds the generation it was made
 * in. No heap and no lock: this runs in the middle of the target's calls.
 */
#ifndef HOOKSCOPE_AGENT_WALKPLANS_H
#define HOOKSCOPE_AGENT_WALKPLANS_H

#include <stdint.h>
#include <windows.h>

#include "hook/unwind/unwind32.h"
#include "hook/unwind/unwinder.h"

typedef union hs_walk_plan {
    hs_uw_plan x64;
    hs_uw32_plan x86;
} hs_walk_plan;

/* The current generation (a walk takes it once, at its start). */
LONG hs_walk_plans_gen(void);
/* A module is gone: a new generation, every plan made before it unused. */
void hs_walk_plans_forget(void);
/* The plan of pc made in generation gen, copied to *p: 1, or 0 (none, or
 * being written). */
int hs_walk_plan_get(uint64_t pc, LONG gen, hs_walk_plan *p);
/* Keep pc's plan, unless another thread is writing its slot. */
void hs_walk_plan_put(uint64_t pc, LONG gen, const hs_walk_plan *p);

#endif
