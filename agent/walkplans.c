/*
 * agent/walkplans.c - see walkplans.h.
 */
#include "agent/walkplans.h"

static volatile LONG code_gen;

LONG hs_walk_plans_gen(void)
{
    return code_gen;
}

void hs_walk_plans_forget(void)
{
    InterlockedIncrement(&code_gen);
}

/* A slot per hash of the return address, 64 bytes each. */
#define PLAN_BITS 11
typedef struct plan_slot {
    volatile LONG seq;             /* odd while a thread writes the slot */
    LONG gen;                      /* code_gen it was made in */
    uint64_t pc;
    hs_walk_plan plan;
} plan_slot;
_Static_assert(sizeof(plan_slot) == 64, "a plan slot is a cache line");
static plan_slot plans[1u << PLAN_BITS] __attribute__((aligned(64)));

static plan_slot *plan_slot_of(uint64_t pc)
{
    return &plans[(pc * 0x9E3779B97F4A7C15ull) >> (64 - PLAN_BITS)];
}

int hs_walk_plan_get(uint64_t pc, LONG gen, hs_walk_plan *p)
{
    plan_slot *s = plan_slot_of(pc);
    LONG seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if ((seq & 1) || s->pc != pc || s->gen != gen)
        return 0;
    *p = s->plan;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq;
}

void hs_walk_plan_put(uint64_t pc, LONG gen, const hs_walk_plan *p)
{
    plan_slot *s = plan_slot_of(pc);
    LONG seq = s->seq;
    if ((seq & 1) || InterlockedCompareExchange(&s->seq, seq + 1, seq) != seq)
        return;
    s->pc = pc;
    s->gen = gen;
    s->plan = *p;
    __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
}
