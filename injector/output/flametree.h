/*
 * injector/output/flametree.h - the call tree a flame graph draws: the
 * stacks of one kind merged root first into a tree of frames named
 * "module!function" (as entry-stacks.folded names them), each node with
 * the count of the stacks through it; children in name order, each laid
 * out from the left at `x` (the counts before it). For a differential
 * graph the same tree also carries a baseline's counts along the same
 * paths, matched by frame names ("match, then link"; two functions of one
 * name in a module by their order, profile/match.h).
 */
#ifndef HOOKSCOPE_FLAMETREE_H
#define HOOKSCOPE_FLAMETREE_H

#include <stdint.h>

#include "hook/base/map.h"
#include "injector/output/stackset.h"
#include "injector/profile/profile.h"

#define HS_FNONE UINT32_MAX
#define HS_FKIDS_LISTED 8

typedef struct hs_fnode {
    uint32_t name;               /* index into the tree's names; HS_FNONE: the root */
    uint32_t parent, first, next;/* HS_FNONE when none */
    uint32_t depth;              /* the root is 0 */
    uint32_t nkids;              /* its children */
    uint64_t value;              /* stacks through this node */
    uint64_t base;               /* the baseline's stacks through the same path */
    uint64_t x;                  /* after hs_flametree_layout: the counts left of it */
} hs_fnode;

typedef struct hs_flametree {
    int kind;                    /* hs_stack_kind of the stacks */
    hs_strtab names;             /* frame names, "module!function" */
    int32_t *name_func;          /* per name: a function of the profile with it, or -1 */
    int32_t *name_module;        /* per name: its module, or -1 */
    int32_t *func_name;          /* per function of the profile: its name, -1 when in no stack */
    size_t nfuncs;
    hs_fnode *nodes;             /* nodes[0] is the root */
    size_t n, cap, names_cap;
    hs_map kids;                 /* (parent, name) -> node, for parents of many children
                                    (HS_FKIDS_LISTED or fewer are found along their list) */
    uint64_t total, base_total;
    uint32_t max_depth;
} hs_flametree;

/* Merge p's stacks of `kind` (truncated stacks start at their deepest
 * frame, as in entry-stacks.folded). */
void hs_flametree_build(hs_flametree *t, const hs_profile *p, int kind);

/* Add the baseline's stacks of `kind` along the paths t (built from p)
 * has; a frame of the baseline in a function that is one of p's
 * (p_of_base: hs_match_funcs(base, p)) is named as p names it, and a frame
 * name t does not have ends the path there. Sets base and base_total. */
void hs_flametree_add_baseline(hs_flametree *t, const hs_profile *p, const hs_profile *base,
                               const int32_t *p_of_base, int kind);

/* Order every node's children by name, those with a value below
 * `narrow_below` after the others (so that they are side by side, to be
 * drawn as one), and set each node's x. */
void hs_flametree_layout(hs_flametree *t, uint64_t narrow_below);

void hs_flametree_free(hs_flametree *t);

#endif
