/*
 * hook/engine/tail.c - how many incoming stack slots a timed function's wrapper
 * must copy so that every function it tail-jumps to sees the stack it
 * would have seen untraced.
 *
 * The wrapper calls the function with a copy of its argument area (the
 * caller's return address is never touched). A function that ends with
 * `jmp g` hands g that same area: g's fifth argument is read from the
 * copy, so the copy must hold every slot g reads too, and those of the
 * functions g tail-jumps to in turn. For each function the full analysis
 * gives the slots it reads itself ("own") and its exits (hook.h); here the
 * exits are resolved to functions:
 *
 *   jmp rel32 / jcc to a function's entry       that function
 *   jmp [rip+slot], slot in an import table     the function the slot is
 *                                               bound to (in any loaded image)
 *   an indirect jmp (a function pointer),      a function not known: the
 *     a function that cannot be analyzed,      copy must be the widest
 *     code without unwind data                 (HS_TAIL_WIDE)
 *   a jump into the middle of code, or with    never wrapped
 *     rsp not back at its entry value          (HS_TAIL_NEVER)
 *
 * and need(f) = max(own(f), need(g) for every g f jumps to), WIDE as soon
 * as any of them is, NEVER as soon as any of them is, solved by iterating
 * to the fixpoint (tail calls may form cycles). Functions outside the set
 * added (other modules, or functions the caller did not analyze) are
 * analyzed on demand through the environment.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/vec.h"
#include "hook/engine/engine_int.h"

typedef struct tnode {
    uint64_t entry;
    int32_t own, need;
    uint32_t first, n;        /* exits in t->ex */
} tnode;

typedef struct texit {
    hs_exit x;
    int32_t to;               /* node index, or HS_TAIL_WIDE / HS_TAIL_NEVER */
} texit;

struct hs_tail {
    tnode *nodes;
    size_t n_nodes, cap_nodes;
    texit *ex;
    size_t n_ex, cap_ex;
    uint32_t *hash;           /* node index + 1, 0 empty; open addressing */
    size_t hash_cap;          /* power of two */
};

hs_tail *hs_tail_new(void)
{
    return calloc(1, sizeof(hs_tail));
}

void hs_tail_free(hs_tail *t)
{
    if (!t)
        return;
    free(t->nodes);
    free(t->ex);
    free(t->hash);
    free(t);
}

static size_t hslot(uint64_t a, size_t cap)
{
    return (size_t)((a * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static int find(const hs_tail *t, uint64_t entry)
{
    if (!t->hash_cap)
        return -1;
    for (size_t i = hslot(entry, t->hash_cap);; i = (i + 1) & (t->hash_cap - 1)) {
        uint32_t v = t->hash[i];
        if (!v)
            return -1;
        if (t->nodes[v - 1].entry == entry)
            return (int)(v - 1);
    }
}

static int rehash(hs_tail *t, size_t cap)
{
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h)
        return -1;
    for (size_t k = 0; k < t->n_nodes; k++) {
        size_t i = hslot(t->nodes[k].entry, cap);
        while (h[i])
            i = (i + 1) & (cap - 1);
        h[i] = (uint32_t)k + 1;
    }
    free(t->hash);
    t->hash = h;
    t->hash_cap = cap;
    return 0;
}

int32_t hs_tail_own(const hs_plan *p)
{
    if (p->flags & (HS_FN_STACK_PROBE | HS_FN_UNRESOLVED_TABLE))
        return HS_TAIL_NEVER;
    if (p->stack_arg_slots < 0 || (p->flags & (HS_FN_VARARGS | HS_FN_ARGS_ADDRESS | HS_FN_NO_FRAME_INFO)))
        return HS_TAIL_WIDE;
    return p->stack_arg_slots < 4 ? 4 : p->stack_arg_slots;
}

/* The need of a function that reaches both a and b. */
static int32_t join(int32_t a, int32_t b)
{
    if (a == HS_TAIL_NEVER || b == HS_TAIL_NEVER)
        return HS_TAIL_NEVER;
    if (a == HS_TAIL_WIDE || b == HS_TAIL_WIDE)
        return HS_TAIL_WIDE;
    return a > b ? a : b;
}

int hs_tail_add(hs_tail *t, uint64_t entry, int32_t own, const hs_exit *x, size_t n)
{
    if (find(t, entry) >= 0)
        return 0;
    if ((t->n_nodes + 1) * 2 > t->hash_cap && rehash(t, t->hash_cap ? t->hash_cap * 2 : 1024) < 0)
        return -1;
    if (hs_grow(&t->nodes, &t->cap_nodes, t->n_nodes, sizeof *t->nodes) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (hs_grow(&t->ex, &t->cap_ex, t->n_ex + i, sizeof *t->ex) < 0)
            return -1;
        t->ex[t->n_ex + i].x = x[i];
        t->ex[t->n_ex + i].to = HS_TAIL_WIDE;
    }
    tnode *d = &t->nodes[t->n_nodes];
    d->entry = entry;
    d->own = own;
    d->need = own;
    d->first = (uint32_t)t->n_ex;
    d->n = (uint32_t)n;
    t->n_ex += n;
    size_t i = hslot(entry, t->hash_cap);
    while (t->hash[i])
        i = (i + 1) & (t->hash_cap - 1);
    t->hash[i] = (uint32_t)t->n_nodes + 1;
    t->n_nodes++;
    return 0;
}

/* The node of the function at `entry`, analyzing it through the
 * environment when it is not known yet; HS_TAIL_WIDE when nothing can be
 * known of it but that a call may enter it, HS_TAIL_NEVER when no call
 * enters it. */
static int node_for(hs_tail *t, hs_engine *e, const hs_tail_env *env, uint64_t entry, int *budget)
{
    int k = find(t, entry);
    if (k >= 0)
        return k;
    if (!env || !env->func_at || *budget <= 0)
        return HS_TAIL_WIDE;
    (*budget)--;
    hs_func_input fn;
    memset(&fn, 0, sizeof fn);
    int flags = 0;
    int r = env->func_at(env->ctx, entry, &fn, &flags);
    if (r < 0)
        return r == -2 ? HS_TAIL_WIDE : HS_TAIL_NEVER;
    hs_plan p;
    hs_analyze(e, &fn, HS_ANALYZE_FULL, &p);
    const hs_exit *x;
    size_t n = hs_analyze_exits(e, &x);
    int32_t own = (flags & HS_TAIL_UNBOUNDED) ? HS_TAIL_NEVER : hs_tail_own(&p);
    if (hs_tail_add(t, entry, own, x, n) < 0)
        return HS_TAIL_NEVER;
    return find(t, entry);
}

void hs_tail_solve(hs_tail *t, hs_engine *e, const hs_tail_env *env, int budget)
{
    /* resolve every exit; nodes added on the way are resolved in turn */
    for (size_t k = 0; k < t->n_nodes; k++) {
        for (uint32_t j = 0; j < t->nodes[k].n; j++) {
            const hs_exit x = t->ex[t->nodes[k].first + j].x;
            uint64_t to = 0;
            int r;
            if (x.rsp != 0)
                r = HS_TAIL_NEVER;          /* not a tail call: its frame is still set up */
            else if (x.target)
                r = node_for(t, e, env, x.target, &budget);
            else if (x.slot && env && env->import_at && env->import_at(env->ctx, x.slot, &to) == 0 && to)
                r = node_for(t, e, env, to, &budget);
            else
                r = HS_TAIL_WIDE;           /* a function pointer */
            /* t->ex may have moved */
            t->ex[t->nodes[k].first + j].to = r;
        }
    }
    /* need = join over what is reachable by tail jumps */
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t k = 0; k < t->n_nodes; k++) {
            tnode *d = &t->nodes[k];
            if (d->need == HS_TAIL_NEVER)
                continue;
            for (uint32_t j = 0; j < d->n; j++) {
                int32_t to = t->ex[d->first + j].to;
                int32_t v = join(d->need, to < 0 ? to : t->nodes[to].need);
                if (v != d->need) {
                    d->need = v;
                    changed = 1;
                }
            }
        }
    }
}

int32_t hs_tail_need(const hs_tail *t, uint64_t entry)
{
    int k = find(t, entry);
    return k < 0 ? -2 : t->nodes[k].need;
}

size_t hs_tail_count(const hs_tail *t)
{
    return t->n_nodes;
}

void hs_tail_node(const hs_tail *t, size_t k, uint64_t *entry, int32_t *own, int32_t *need, size_t *n_exits)
{
    const tnode *d = &t->nodes[k];
    *entry = d->entry;
    *own = d->own;
    *need = d->need;
    *n_exits = d->n;
}

int hs_tail_exit(const hs_tail *t, size_t k, size_t j, hs_exit *x)
{
    const texit *te = &t->ex[t->nodes[k].first + j];
    *x = te->x;
    return te->to;
}
