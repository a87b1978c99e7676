/*
 * sampler/classify.c - CPU or wait per sample (see classify.h).
 */
#include "classify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "profile/profile.h"

#define MAX_PENDING 100000

void hs_cls_init(hs_cls_thread *t)
{
    memset(t, 0, sizeof *t);
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

/* Close the window with share x (< 0: no CPU information: moved = CPU). */
static void close_window(hs_cls_thread *t, double x, hs_cls_emit emit, void *ctx)
{
    size_t n = t->n, moved = 0;
    for (size_t i = 0; i < n; i++)
        moved += t->pend[i].moved;
    if (x < 0) {
        for (size_t i = 0; i < n; i++)
            emit(ctx, t->pend[i].stack, t->pend[i].moved ? HS_STACK_CPU : HS_STACK_WAIT);
        t->n = 0;
        return;
    }
    if (x > 1)
        x = 1;
    if (!moved) {
        /* the thread did not run: what its clock gained is what the
         * sampler's own suspensions cost it */
        if (x < 0.25)
            t->overhead = t->overhead > 0 ? (t->overhead + x) / 2 : x;
    } else {
        x -= t->overhead;
        if (x < 0)
            x = 0;
    }
    double target = x * (double)n + t->carry;
    double k = floor(target + 0.5);
    if (k < 0)
        k = 0;
    if (k > (double)n)
        k = (double)n;
    t->carry = target - k;
    if (t->carry > 0.5)
        t->carry = 0.5;
    if (t->carry < -0.5)
        t->carry = -0.5;
    size_t want = (size_t)k;
    size_t from_moved = want < moved ? want : moved;
    size_t from_still = want > moved && x >= 0.5 ? want - moved : 0;
    size_t still = n - moved;
    for (size_t i = 0, jm = 0, js = 0; i < n; i++) {
        bool cpu;
        if (t->pend[i].moved)
            cpu = chosen(jm++, from_moved, moved);
        else
            cpu = from_still && chosen(js++, from_still, still);
        emit(ctx, t->pend[i].stack, cpu ? HS_STACK_CPU : HS_STACK_WAIT);
    }
    t->n = 0;
}

static double share(uint64_t dcpu, uint64_t dwall)
{
    if (!dwall)
        return dcpu ? 1.0 : 0.0;
    return (double)dcpu / (double)dwall;
}

void hs_cls_sample(hs_cls_thread *t, uint64_t wall, uint64_t cpu, bool moved, uint32_t stack,
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
    t->n++;
    if (cpu > t->last_cpu) {
        double x = share(cpu - t->win_cpu, wall - t->win_wall);
        t->last_x = x;
        close_window(t, x, emit, ctx);
        t->win_wall = wall;
        t->win_cpu = cpu;
    } else if (wall - t->win_wall >= max_window || t->n >= MAX_PENDING) {
        /* nothing gained for a long time */
        close_window(t, 0, emit, ctx);
        t->last_x = 0;
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
    double x;
    if (known && cpu >= t->win_cpu)
        x = share(cpu - t->win_cpu, wall > t->win_wall ? wall - t->win_wall : 0);
    else
        x = t->last_x;
    close_window(t, x, emit, ctx);
}
