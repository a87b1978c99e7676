/*
 * sampler/etl/stackjoin.c - joining events with their stacks, as PerfView's
 * TraceLog does (TraceLog.cs: GetIncompleteStackForStackEvent,
 * GetBestEventForQPC, EmitStackOnExitFromKernel, IncompleteStack,
 * LogStackDefinition). The events that can have a stack ("owners") are
 * CPU samples, context switches and ReadyThread events.
 *
 * A stack event names its event by timestamp and thread; it is looked up
 * among the last HS_ETL_STACK_WINDOW owners. Of several with that
 * timestamp, the best is one of that thread (a ReadyThread logged without
 * a thread matches any, and takes the stack's thread and process from
 * then on: the thread that readied it), then one on the same CPU, then
 * one that has no part of a stack yet (a sample and a context switch of
 * one thread at one instant, each with its stack walk), then a sample;
 * of equals, the latest on the same CPU, else the earliest.
 *   - A StackWalk whose last frame is a kernel address is the kernel part
 *     of an event in kernel mode. The user part comes later, when the
 *     thread returns to user mode: the event waits on its thread.
 *   - A StackWalk ending in user mode that starts in user mode is that
 *     user part: it completes every event waiting on the thread (and its
 *     own event, if that is not one of them, gets it as its whole stack).
 *     One that starts in the kernel is a whole stack at once.
 *   - With stack caching the events carry keys instead: StackKeyKernel
 *     (the event waits on its thread as above) and StackKeyUser (given to
 *     every waiting event); a key's frames come in a definition event
 *     (key delete or rundown; a key create is kept for references that
 *     come after it). A definition whose last frame is in the kernel
 *     defines a kernel key, else a user key.
 *   - An event's stack is complete when its user part is known and either
 *     its kernel frames are known or it had no kernel key. Processes 0 and
 *     4 have no user part. At the end, events still waiting in the kernel
 *     keep their kernel stack (HS_ETL_STACK_USER_MISSING).
 * A stack is kern_depth kernel frames then user_depth user frames, both
 * in the frame pool; one user part shared by many events is stored once.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/search.h"
#include "hook/base/vec.h"
#include "sampler/etl/collector.h"

static int oom(hs_etl_collector *c)
{
    hs_etl_fail(c->err, 0, 0, "out of memory");
    return -1;
}

/* Copy frames into the pool; *off receives where. */
static int pool_add(hs_etl_collector *c, const hs_etl_frames *f, uint32_t *off)
{
    hs_etl_trace *t = c->t;
    if ((uint64_t)t->nframes + f->n > 0xFFFFFFF0u) {
        hs_etl_fail(c->err, 0, 0, "too many stack frames (over 4 billion)");
        return -1;
    }
    while (c->cap_frames < (size_t)t->nframes + f->n) {
        if (hs_grow(&t->frames, &c->cap_frames, c->cap_frames, sizeof *t->frames) < 0)
            return oom(c);
    }
    *off = t->nframes;
    for (uint32_t i = 0; i < f->n; i++)
        t->frames[t->nframes + i] = hs_etl_frames_at(f, i);
    t->nframes += f->n;
    return 0;
}

static hs_etl_tstate *tstate(hs_etl_collector *c, uint32_t tid)
{
    uint32_t i = hs_map_get(&c->tstate_of, tid, 0);
    if (i == HS_ETL_NONE) {
        if (hs_grow(&c->tstates, &c->cap_tstates, c->ntstates, sizeof *c->tstates) < 0)
            return NULL;
        i = c->ntstates++;
        c->tstates[i] = (hs_etl_tstate){.wait = HS_ETL_NONE};
        if (hs_map_put(&c->tstate_of, tid, 0, i) < 0)
            return NULL;
    }
    return &c->tstates[i];
}

/* The stack and the flags of owner i. */
static hs_etl_stack *stack_of(hs_etl_collector *c, uint32_t i)
{
    const hs_etl_owner *o = &c->owners[i];
    return o->kind ? &c->t->sched[o->index].stack : &c->t->samples[o->index].stack;
}

static uint8_t *flags_of(hs_etl_collector *c, uint32_t i)
{
    const hs_etl_owner *o = &c->owners[i];
    return o->kind ? &c->t->sched[o->index].flags : &c->t->samples[o->index].flags;
}

int hs_etl_join_owner(hs_etl_collector *c, uint8_t kind, uint32_t index, uint64_t ts, uint32_t tid, uint32_t pid,
                      uint16_t cpu)
{
    size_t cap = c->cap_owners;
    if (hs_grow(&c->owners, &c->cap_owners, c->nowners, sizeof *c->owners) < 0)
        return oom(c);
    if (c->cap_owners != cap) {
        hs_etl_pend *np = realloc(c->pend, c->cap_owners * sizeof *np);
        if (!np)
            return oom(c);
        c->pend = np;
    }
    uint32_t i = c->nowners++;
    c->owners[i] = (hs_etl_owner){.ts = ts, .tid = tid, .pid = pid, .index = index, .cpu = cpu, .kind = kind};
    c->pend[i] = (hs_etl_pend){.next_k = HS_ETL_NONE, .next_u = HS_ETL_NONE, .next_wait = HS_ETL_NONE};
    return 0;
}

typedef struct owner_time {
    const hs_etl_owner *o;         /* the window searched */
    uint64_t ts;
} owner_time;

static bool owner_not_after(const void *ctx, size_t i)
{
    const owner_time *q = ctx;
    return q->o[i].ts <= q->ts;
}

/* Owner i has no part of a stack yet. */
static int fresh(const hs_etl_collector *c, uint32_t i)
{
    const hs_etl_pend *p = &c->pend[i];
    const hs_etl_owner *o = &c->owners[i];
    const hs_etl_stack *st = o->kind ? &c->t->sched[o->index].stack : &c->t->samples[o->index].stack;
    return !p->done && !p->user_known && !p->waiting && !p->kkey && !p->ukey && st->kern_depth == 0;
}

/* The owner a stack event of thread tid (process pid) on this CPU belongs
 * to (see the top of the file), or HS_ETL_NONE. */
static uint32_t find_owner(hs_etl_collector *c, uint64_t ts, uint32_t tid, uint32_t pid, uint16_t cpu)
{
    const hs_etl_owner *o = c->owners;
    uint32_t n = c->nowners, floor = n > HS_ETL_STACK_WINDOW ? n - HS_ETL_STACK_WINDOW : 0;
    owner_time q = { o + floor, ts };
    uint32_t lo = floor + (uint32_t)hs_partition_point(n - floor, &q, owner_not_after);   /* first owner with ts > wanted */
    uint32_t found = HS_ETL_NONE;
    int best = -1;
    for (uint32_t i = lo; i-- > floor && o[i].ts == ts;) {
        if (o[i].tid != tid && o[i].tid != HS_ETL_NONE)
            continue;
        int same_cpu = o[i].cpu == cpu;
        int score = (o[i].tid == tid) << 3 | same_cpu << 2 | fresh(c, i) << 1 | (o[i].kind == 0);
        if (score > best || (score == best && !same_cpu)) {
            best = score;
            found = i;
        }
    }
    if (found != HS_ETL_NONE && o[found].tid == HS_ETL_NONE) {
        hs_etl_owner *w = &c->owners[found];
        w->tid = tid;
        w->pid = pid;
        if (w->kind) {
            c->t->sched[w->index].other_tid = tid;
            c->t->sched[w->index].other_pid = pid;
        }
    }
    return found;
}

/* Owner i's stack is complete when its user part is known and it has its
 * kernel frames or never had a kernel key. Returns whether it is. */
static int try_emit(hs_etl_collector *c, uint32_t i)
{
    hs_etl_pend *p = &c->pend[i];
    hs_etl_stack *s = stack_of(c, i);
    if (p->done)
        return 1;
    if (!p->user_known || (s->kern_depth == 0 && p->kkey != 0))
        return 0;
    p->done = 1;
    if (hs_etl_stack_depth(s) > 0)
        *flags_of(c, i) |= HS_ETL_STACK_FOUND;
    return 1;
}

static int no_user_part(const hs_etl_collector *c, uint32_t i)
{
    return c->owners[i].pid == 0 || c->owners[i].pid == 4;
}

/* The kernel frames of owner i are known. Returns whether it is complete. */
static int log_kernel(hs_etl_collector *c, uint32_t i, uint32_t off, uint32_t n)
{
    hs_etl_stack *s = stack_of(c, i);
    if (c->pend[i].done)
        return 1;
    s->kern_frames = off;
    s->kern_depth = (uint16_t)(n > 0xFFFF ? 0xFFFF : n);
    if (no_user_part(c, i)) {
        c->pend[i].user_known = 1;
        s->user_depth = 0;
    }
    return try_emit(c, i);
}

/* The user part of owner i is known. Returns whether it is complete. */
static int log_user(hs_etl_collector *c, uint32_t i, uint32_t off, uint32_t n)
{
    hs_etl_stack *s = stack_of(c, i);
    if (c->pend[i].done)
        return 1;
    c->pend[i].user_known = 1;
    s->user_frames = off;
    s->user_depth = (uint16_t)(n > 0xFFFF ? 0xFFFF : n);
    return try_emit(c, i);
}

/* Put owner i on the list of a key's waiters. */
static int wait_key(hs_etl_collector *c, hs_map *m, uint64_t key, uint32_t i, int kernel)
{
    hs_etl_pend *p = &c->pend[i];
    uint32_t head = hs_map_get(m, key, 0);
    if (kernel) {
        p->kkey = key;
        p->next_k = head;
    } else {
        p->ukey = key;
        p->next_u = head;
    }
    return hs_map_put(m, key, 0, i) < 0 ? oom(c) : 0;
}

/* A created definition of key, if one is kept: its frames. */
static const struct hs_etl_keydef *cached_def(hs_etl_collector *c, uint64_t key, int kernel)
{
    uint32_t d = hs_map_get(&c->keydefs, key, (uint64_t)kernel);
    return d == HS_ETL_NONE ? NULL : &c->defs[d];
}

/* Owner i refers to a user key. */
static int log_user_key(hs_etl_collector *c, uint32_t i, uint64_t key)
{
    hs_etl_pend *p = &c->pend[i];
    if (p->ukey || p->done)
        return 0;
    const struct hs_etl_keydef *d = cached_def(c, key, 0);
    if (d) {
        log_user(c, i, d->off, d->len);
        return 0;
    }
    return wait_key(c, &c->ukeys, key, i, 0);
}

/* Owner i waits on its thread for its user part. */
static int wait_thread(hs_etl_collector *c, uint32_t tid, uint32_t i)
{
    hs_etl_pend *p = &c->pend[i];
    if (p->waiting)
        return 0;
    hs_etl_tstate *ts = tstate(c, tid);
    if (!ts)
        return oom(c);
    p->waiting = 1;
    p->next_wait = ts->wait;
    ts->wait = i;
    return 0;
}

/* The thread returned to user mode with this user part (frames, or a key):
 * every owner waiting on it gets it. *found: target was one of them. */
static int exit_kernel(hs_etl_collector *c, hs_etl_tstate *ts, const hs_etl_frames *fr, uint64_t key,
                       uint32_t target, int *found)
{
    uint32_t off = 0, i = ts->wait;
    *found = 0;
    if (i != HS_ETL_NONE && fr && pool_add(c, fr, &off) < 0)
        return -1;
    ts->wait = HS_ETL_NONE;
    while (i != HS_ETL_NONE) {
        hs_etl_pend *p = &c->pend[i];
        uint32_t next = p->next_wait;
        p->next_wait = HS_ETL_NONE;
        p->waiting = 0;
        if (fr)
            log_user(c, i, off, fr->n);
        else if (log_user_key(c, i, key) < 0)
            return -1;
        if (i == target)
            *found = 1;
        i = next;
    }
    return 0;
}

int hs_etl_join_stack(hs_etl_collector *c, const hs_etl_event *ev, const hs_etl_stack_ev *s)
{
    uint64_t kb = c->t->kernel_boundary;
    const hs_etl_frames *fr = &s->frames;
    if (fr->n == 0)
        return 0;
    uint32_t i = find_owner(c, s->event_ts, s->tid, s->pid, ev->cpu);
    if (i == HS_ETL_NONE)
        c->t->stacks.orphans++;
    if (hs_etl_frames_at(fr, fr->n - 1) >= kb) {
        /* a kernel part: the user part comes when the thread leaves the kernel */
        if (i == HS_ETL_NONE || c->pend[i].done)
            return 0;
        uint32_t off;
        if (pool_add(c, fr, &off) < 0)
            return -1;
        if (!log_kernel(c, i, off, fr->n))
            return wait_thread(c, s->tid, i);
        return 0;
    }
    hs_etl_tstate *ts = tstate(c, s->tid);
    if (!ts)
        return oom(c);
    uint64_t last = ts->last_emit;
    int logged = 0;
    if (hs_etl_frames_at(fr, 0) < kb) {
        /* a user part on its own: for everything waiting in the kernel */
        if (exit_kernel(c, ts, fr, 0, i, &logged) < 0)
            return -1;
        ts->last_emit = ev->ts;
    }
    if (logged || i == HS_ETL_NONE || c->pend[i].done)
        return 0;
    if (s->event_ts < last)
        return 0;                                /* older than a user part already given out */
    uint32_t off;
    if (pool_add(c, fr, &off) < 0)
        return -1;
    log_user(c, i, off, fr->n);
    return 0;
}

int hs_etl_join_ref(hs_etl_collector *c, const hs_etl_event *ev, const hs_etl_stack_ref_ev *r)
{
    uint32_t i = find_owner(c, r->event_ts, r->tid, r->pid, ev->cpu);
    if (i == HS_ETL_NONE) {
        c->t->stacks.orphans++;
        return 0;
    }
    hs_etl_pend *p = &c->pend[i];
    if (r->kernel) {
        if (p->kkey || p->done)
            return 0;
        const struct hs_etl_keydef *d = cached_def(c, r->key, 1);
        if (d) {
            if (log_kernel(c, i, d->off, d->len))
                return 0;
        } else {
            if (wait_key(c, &c->kkeys, r->key, i, 1) < 0)
                return -1;
            if (no_user_part(c, i)) {
                p->user_known = 1;
                return 0;
            }
        }
        return wait_thread(c, r->tid, i);
    }
    hs_etl_tstate *ts = tstate(c, r->tid);
    if (!ts)
        return oom(c);
    int found;
    if (exit_kernel(c, ts, NULL, r->key, i, &found) < 0)
        return -1;
    return found ? 0 : log_user_key(c, i, r->key);
}

int hs_etl_join_def(hs_etl_collector *c, const hs_etl_event *ev, const hs_etl_stack_def_ev *d)
{
    (void)ev;
    const hs_etl_frames *fr = &d->frames;
    if (fr->n == 0)
        return 0;
    int kernel = hs_etl_frames_at(fr, fr->n - 1) >= c->t->kernel_boundary;
    hs_map *m = kernel ? &c->kkeys : &c->ukeys;
    uint32_t i = hs_map_get(m, d->key, 0), off = 0;
    if (i != HS_ETL_NONE || d->type == 34) {
        if (pool_add(c, fr, &off) < 0)
            return -1;
    }
    if (i != HS_ETL_NONE) {
        hs_map_del(m, d->key, 0);
        while (i != HS_ETL_NONE) {
            hs_etl_pend *p = &c->pend[i];
            uint32_t next;
            if (kernel) {
                next = p->next_k;
                p->next_k = HS_ETL_NONE;
                p->kkey = 0;
                log_kernel(c, i, off, fr->n);
            } else {
                next = p->next_u;
                p->next_u = HS_ETL_NONE;
                p->ukey = 0;
                log_user(c, i, off, fr->n);
            }
            i = next;
        }
    }
    if (d->type == 34) {                         /* create: keep it for later references */
        if (hs_grow(&c->defs, &c->cap_defs, c->ndefs, sizeof *c->defs) < 0)
            return oom(c);
        c->defs[c->ndefs] = (struct hs_etl_keydef){.off = off, .len = fr->n};
        if (hs_map_put(&c->keydefs, d->key, (uint64_t)kernel, c->ndefs++) < 0)
            return oom(c);
    } else if (d->type == 35) {
        hs_map_del(&c->keydefs, d->key, (uint64_t)kernel);
    }
    return 0;
}

int hs_etl_join_finish(hs_etl_collector *c)
{
    for (uint32_t t = 0; t < c->ntstates; t++) {
        uint32_t i = c->tstates[t].wait;
        c->tstates[t].wait = HS_ETL_NONE;
        while (i != HS_ETL_NONE) {
            hs_etl_pend *p = &c->pend[i];
            uint32_t next = p->next_wait;
            p->next_wait = HS_ETL_NONE;
            p->waiting = 0;
            if (!p->done && log_user(c, i, 0, 0) && stack_of(c, i)->kern_depth)
                *flags_of(c, i) |= HS_ETL_STACK_USER_MISSING;
            i = next;
        }
    }
    for (uint32_t i = 0; i < c->nowners; i++) {
        if (c->pend[i].kkey)
            c->t->stacks.kernel_keys_unresolved++;
        if (c->pend[i].ukey)
            c->t->stacks.user_keys_unresolved++;
        if (!c->pend[i].done) {                  /* a part never came: no stack */
            stack_of(c, i)->kern_depth = 0;
            stack_of(c, i)->user_depth = 0;
        }
    }
    return 0;
}
