/*
 * sampler/suspend/classify.c - CPU or wait per sample (see classify.h).
 */
#include "sampler/suspend/classify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "sampler/sampler.h"

#define MAX_PENDING 100000
#define CARRY_MAX 32.0     /* samples of CPU carried from window to window, each way */

void hs_cls_init(hs_cls_thread *t, hs_cls_shared *shared)
{
    memset(t, 0, sizeof *t);
    t->shared = shared;
    t->last_x = -1;
}

void hs_cls_free(hs_cls_thread *t)
{
    free(t->pend);
    t->pend = NULL;
    t->n = t->cap = 0;
}

/* Is candidate j (of m) one of the k chosen, spread evenly? */
static bool chosen(size_t j, size_t k, size_t m)
{
    return (j + 1) * k / m > j * k / m;
}

/* A sample that is not waiting and not chosen as running: ready. */
static uint8_t idle_kind(const hs_cls_pending *p)
{
    return p->waiting ? HS_SAMPLE_WAIT : HS_SAMPLE_READY;
}

/* Close the window: the thread gained `dcpu` of CPU clock over `dwall`
 * (dwall 0 and known false: no CPU information: moved = CPU; known false
 * with dwall != 0: take the share of the window before). */
static void close_window(hs_cls_thread *t, uint64_t dcpu, uint64_t dwall, bool known, hs_cls_emit emit, void *ctx)
{
    /* moved: samples that moved and can be CPU samples (not waiting);
     * ran: whether the thread ran at all in the window (a sample that moved
     * into a wait shows it did too) */
    size_t n = t->n, moved = 0, waiting = 0;
    bool ran = false;
    for (size_t i = 0; i < n; i++) {
        moved += t->pend[i].moved && !t->pend[i].waiting;
        waiting += t->pend[i].waiting;
        ran |= t->pend[i].moved;
    }
    double x;
    if (known) {
        hs_cls_shared *sh = t->shared;
        double gain = (double)dcpu;
        if (!ran && n && (!dwall || gain / (double)dwall < 0.25)) {
            /* the thread did not run: all it gained is the sampler's */
            double per = gain / (double)n;
            sh->overhead = sh->learned ? (sh->overhead * (double)sh->learned + gain) / (double)(sh->learned + n) : per;
            sh->learned += n;
        }
        gain -= sh->overhead * (double)n;
        x = gain <= 0 ? 0 : dwall ? gain / (double)dwall : 1;
        t->last_x = x;
    } else {
        x = t->last_x;
    }
    if (x < 0) {
        for (size_t i = 0; i < n; i++)
            emit(ctx, t->pend[i].stack,
                 t->pend[i].moved && !t->pend[i].waiting ? HS_SAMPLE_CPU : idle_kind(&t->pend[i]));
        t->n = 0;
        return;
    }
    /* x above 1: a clock charged in whole ticks put more than the window's
     * wall time into it; what cannot be placed here is carried on (up to
     * CARRY_MAX samples each way), so that over the thread's life its CPU
     * samples stay its CPU time times the rate */
    double target = x * (double)n + t->carry;
    double k = floor(target + 0.5);
    if (k < 0)
        k = 0;
    if (k > (double)n)
        k = (double)n;
    size_t want = (size_t)k;
    size_t from_moved = want < moved ? want : moved;
    /* unmoved samples fill up only in a window that shows the thread ran
     * (a moved sample): where none moved, it executed nothing of its own,
     * whatever its clock says (a clock charged in whole ticks charges a
     * waiting thread a tick now and then, for the sampler's suspensions) */
    size_t still = n - moved - waiting;
    size_t from_still = moved && want > moved && x >= 0.5 ? want - moved : 0;
    if (from_still > still)
        from_still = still;
    size_t placed = 0;
    for (size_t i = 0, jm = 0, js = 0; i < n; i++) {
        const hs_cls_pending *p = &t->pend[i];
        bool cpu;
        if (p->waiting)
            cpu = false;       /* blocked at that instant, whatever the window's share */
        else if (p->moved)
            cpu = chosen(jm++, from_moved, moved);
        else
            cpu = from_still && chosen(js++, from_still, still);
        placed += cpu;
        emit(ctx, p->stack, cpu ? HS_SAMPLE_CPU : idle_kind(p));
    }
    t->carry = target - (double)placed;
    if (t->carry > CARRY_MAX)
        t->carry = CARRY_MAX;
    if (t->carry < -CARRY_MAX)
        t->carry = -CARRY_MAX;
    t->n = 0;
}

void hs_cls_sample(hs_cls_thread *t, uint64_t wall, uint64_t cpu, bool moved, bool waiting, uint32_t stack,
                   uint64_t max_window, hs_cls_emit emit, void *ctx)
{
    if (!t->started) {
        t->started = true;
        t->win_wall = wall;
        t->win_cpu = t->last_cpu = cpu;
    }
    hs_xgrow(&t->pend, &t->cap, t->n + 1, sizeof *t->pend);
    t->pend[t->n].stack = stack;
    t->pend[t->n].moved = moved;
    t->pend[t->n].waiting = waiting;
    t->n++;
    bool late = wall - t->win_wall >= max_window || t->n >= MAX_PENDING;
    if (cpu > t->last_cpu && !late && !t->shared->learned) {
        /* a little CPU over a window in which the thread moved, before any
         * idle window has told what a sample costs: wait for that (the
         * window grows; it is closed when it is known, or when late) */
        bool moved_any = false;
        for (size_t i = 0; i < t->n && !moved_any; i++)
            moved_any = t->pend[i].moved;
        uint64_t dw = wall - t->win_wall;
        if (moved_any && dw && (double)(cpu - t->win_cpu) / (double)dw < 0.25) {
            t->last_cpu = cpu;
            return;
        }
    }
    if (cpu > t->last_cpu || late) {
        /* the clock moved, or nothing was gained for a long time */
        close_window(t, cpu - t->win_cpu, wall - t->win_wall, true, emit, ctx);
        t->win_wall = wall;
        t->win_cpu = cpu;
    }
    if (cpu > t->last_cpu)
        t->last_cpu = cpu;
}

void hs_cls_finish(hs_cls_thread *t, uint64_t wall, uint64_t cpu, bool known, hs_cls_emit emit, void *ctx)
{
    if (!t->n)
        return;
    if (known && cpu >= t->win_cpu)
        close_window(t, cpu - t->win_cpu, wall > t->win_wall ? wall - t->win_wall : 0, true, emit, ctx);
    else
        close_window(t, 0, 1, false, emit, ctx);
}
