/*
 * sampler/etl/collector.c - the observer that builds the trace model from
 * the event stream: one record per process, thread and image instance
 * (a rundown record and a live start/end of the same instance are one
 * record), ImageID / DbgID_RSDS records attached to the image they precede,
 * every CPU sample, context switch and ReadyThread event, whose stacks
 * stackjoin.c joins, and the sampling interval of the timer.
 *
 * Samples and scheduling events carry no process: a thread's pid is the
 * pid of its current record (thread start and rundown events), or found at
 * the end for threads only seen later (model.c).
 */
#include "sampler/etl/collector.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "hook/base/vec.h"

static int oom(hs_etl_collector *c)
{
    hs_etl_fail(c->err, 0, 0, "out of memory");
    return -1;
}

/* ---- processes ------------------------------------------------------------ */

static int new_process(hs_etl_collector *c, uint32_t pid, uint32_t *idx)
{
    hs_etl_trace *t = c->t;
    if (hs_grow(&t->procs, &c->cap_procs, t->nprocs, sizeof *t->procs) < 0)
        return oom(c);
    *idx = t->nprocs++;
    t->procs[*idx] = (hs_etl_process){.pid = pid, .end = HS_ETL_NEVER, .name = "", .cmdline = ""};
    return hs_map_put(&c->pid_now, pid, 0, *idx) < 0 ? oom(c) : 0;
}

static int on_process(void *ctx, const hs_etl_event *ev, const hs_etl_process_ev *v)
{
    hs_etl_collector *c = ctx;
    uint32_t idx = hs_map_get(&c->pid_now, v->pid, 0);
    hs_etl_process *p = idx == HS_ETL_NONE ? NULL : &c->t->procs[idx];
    switch (ev->type) {
    case 1:                                      /* start: always a new instance */
        if (p && p->end == HS_ETL_NEVER && !(p->flags & HS_ETL_SEEN_END))
            p->end = ev->ts;                     /* a start over a live record: it was gone */
        if (new_process(c, v->pid, &idx) < 0)
            return -1;
        c->t->procs[idx].start = ev->ts;
        c->t->procs[idx].flags |= HS_ETL_SEEN_START;
        break;
    case 3:                                      /* DCStart: alive when the trace began */
        if (!p || (p->flags & HS_ETL_SEEN_END)) {
            if (new_process(c, v->pid, &idx) < 0)
                return -1;
        }
        c->t->procs[idx].flags |= HS_ETL_SEEN_RUNDOWN_START;
        break;
    default:                                     /* end, DCEnd, defunct */
        if (!p || (p->flags & HS_ETL_SEEN_END)) {
            if (new_process(c, v->pid, &idx) < 0)
                return -1;
        }
        p = &c->t->procs[idx];
        if (ev->type == 2) {
            p->flags |= HS_ETL_SEEN_END;
            p->end = ev->ts;
        } else {
            p->flags |= ev->type == 4 ? HS_ETL_SEEN_RUNDOWN_END : HS_ETL_SEEN_DEFUNCT;
        }
    }
    p = &c->t->procs[idx];
    p->ppid = v->ppid;
    p->session = v->session;
    p->exit_status = v->exit_status;
    if (v->unique_key)
        p->unique_key = v->unique_key;
    if (!p->name[0] && v->name_len) {
        if (!(p->name = hs_etl_arena_u8(&c->priv->arena, v->name, v->name_len)))
            return oom(c);
    }
    if (!p->cmdline[0] && v->cmdline_len) {
        if (!(p->cmdline = hs_etl_arena_u16(&c->priv->arena, v->cmdline, v->cmdline_len)))
            return oom(c);
    }
    return 0;
}

/* ---- threads -------------------------------------------------------------- */

static int on_thread(void *ctx, const hs_etl_event *ev, const hs_etl_thread_ev *v)
{
    hs_etl_collector *c = ctx;
    hs_etl_trace *t = c->t;
    uint32_t idx = hs_map_get(&c->tid_now, v->tid, 0);
    hs_etl_thread *th = idx == HS_ETL_NONE ? NULL : &t->threads[idx];
    int fresh = !th || (th->flags & HS_ETL_SEEN_END) || ev->type == 1 || th->pid != v->pid;
    if (fresh) {
        if (th && ev->type == 1 && !(th->flags & HS_ETL_SEEN_END))
            th->end = ev->ts;
        if (hs_grow(&t->threads, &c->cap_threads, t->nthreads, sizeof *t->threads) < 0)
            return oom(c);
        idx = t->nthreads++;
        t->threads[idx] = (hs_etl_thread){.tid = v->tid, .pid = v->pid, .process = HS_ETL_NONE,
                                          .end = HS_ETL_NEVER};
        if (hs_map_put(&c->tid_now, v->tid, 0, idx) < 0)
            return oom(c);
    }
    th = &t->threads[idx];
    switch (ev->type) {
    case 1:
        th->start = ev->ts;
        th->flags |= HS_ETL_SEEN_START;
        break;
    case 2:
        th->end = ev->ts;
        th->flags |= HS_ETL_SEEN_END;
        break;
    case 3:
        th->flags |= HS_ETL_SEEN_RUNDOWN_START;
        break;
    default:
        th->flags |= HS_ETL_SEEN_RUNDOWN_END;
    }
    return 0;
}

/* ---- images --------------------------------------------------------------- */

static uint32_t take_pending_id(hs_etl_collector *c, uint32_t pid, uint64_t base)
{
    uint32_t i = hs_map_get(&c->id_now, base, pid);
    if (i != HS_ETL_NONE)
        hs_map_del(&c->id_now, base, pid);
    return i;
}

static int on_image(void *ctx, const hs_etl_event *ev, const hs_etl_image_ev *v)
{
    hs_etl_collector *c = ctx;
    hs_etl_trace *t = c->t;
    /* version 0 has no pid: the header's, if it has one */
    uint32_t pid = ev->version == 0 ? (ev->pid == HS_ETL_NONE ? 0 : ev->pid) : v->pid;
    uint32_t idx = hs_map_get(&c->img_now, v->base, pid);
    int load = ev->type == 10;
    if (idx == HS_ETL_NONE || load) {
        if (idx != HS_ETL_NONE) {                /* a load over a live record: it was gone */
            t->images[idx].unload = ev->ts;
        }
        if (hs_grow(&t->images, &c->cap_images, t->nimages, sizeof *t->images) < 0)
            return oom(c);
        idx = t->nimages++;
        hs_etl_image *im = &t->images[idx];
        *im = (hs_etl_image){.pid = pid, .process = HS_ETL_NONE, .base = v->base, .size = v->size,
                             .default_base = v->default_base, .checksum = v->checksum,
                             .timestamp = v->timestamp, .unload = HS_ETL_NEVER};
        if (!(im->path = hs_etl_arena_u16(&c->priv->arena, v->path, v->path_len)))
            return oom(c);
        im->name = hs_basename(im->path);
        if (v->base >= t->kernel_boundary)
            im->flags |= HS_ETL_IMAGE_KERNEL;
        if (hs_map_put(&c->img_now, v->base, pid, idx) < 0)
            return oom(c);
    }
    hs_etl_image *im = &t->images[idx];
    switch (ev->type) {
    case 10:
        im->load = ev->ts;
        im->flags |= HS_ETL_SEEN_START;
        break;
    case 3:
        im->flags |= HS_ETL_SEEN_RUNDOWN_START;
        break;
    case 4:
        im->flags |= HS_ETL_SEEN_RUNDOWN_END;
        break;
    default:                                     /* unload */
        im->unload = ev->ts;
        im->flags |= HS_ETL_SEEN_END;
        hs_map_del(&c->img_now, v->base, pid);
    }
    uint32_t id = take_pending_id(c, pid, v->base);
    if (id != HS_ETL_NONE) {
        const hs_etl_pending_id *p = &c->ids[id];
        if (p->flags & HS_ETL_IMAGE_ID)
            im->orig_name = p->orig_name;
        if (p->flags & HS_ETL_IMAGE_RSDS) {
            im->pdb_name = p->pdb_name;
            im->pdb_age = p->age;
            memcpy(im->pdb_guid, p->guid, 16);
        }
        im->flags |= p->flags;
    }
    return 0;
}

/* The pending identity record for (pid, base), made if needed. KernelTraceControl
 * logs it with the pid in the event header (the payload's pid is 0). */
static hs_etl_pending_id *pending_id(hs_etl_collector *c, uint32_t pid, uint64_t base)
{
    uint32_t i = hs_map_get(&c->id_now, base, pid);
    if (i == HS_ETL_NONE) {
        if (hs_grow(&c->ids, &c->cap_ids, c->nids, sizeof *c->ids) < 0)
            return NULL;
        i = c->nids++;
        c->ids[i] = (hs_etl_pending_id){.pid = pid, .base = base};
        if (hs_map_put(&c->id_now, base, pid, i) < 0)
            return NULL;
    }
    return &c->ids[i];
}

static int on_image_id(void *ctx, const hs_etl_event *ev, const hs_etl_imageid_ev *v)
{
    hs_etl_collector *c = ctx;
    uint32_t pid = ev->pid != HS_ETL_NONE ? ev->pid : v->pid;
    hs_etl_pending_id *p = pending_id(c, pid, v->base);
    if (!p || !(p->orig_name = hs_etl_arena_u16(&c->priv->arena, v->name, v->name_len)))
        return oom(c);
    p->flags |= HS_ETL_IMAGE_ID;
    return 0;
}

static int on_dbg_id(void *ctx, const hs_etl_event *ev, const hs_etl_dbgid_ev *v)
{
    hs_etl_collector *c = ctx;
    uint32_t pid = ev->pid != HS_ETL_NONE ? ev->pid : v->pid;
    hs_etl_pending_id *p = pending_id(c, pid, v->base);
    if (!p || !(p->pdb_name = hs_etl_arena_u8(&c->priv->arena, v->pdb, v->pdb_len)))
        return oom(c);
    memcpy(p->guid, v->guid, 16);
    p->age = v->age;
    p->flags |= HS_ETL_IMAGE_RSDS;
    return 0;
}

/* ---- samples and stacks --------------------------------------------------- */

/* The pid of thread tid's current record, HS_ETL_NONE if none yet. */
static uint32_t pid_now(hs_etl_collector *c, uint32_t tid)
{
    uint32_t th = hs_map_get(&c->tid_now, tid, 0);
    return th == HS_ETL_NONE ? HS_ETL_NONE : c->t->threads[th].pid;
}

/* An event-header record with its stack inline: a StackWalk for it. */
static int inline_stack(hs_etl_collector *c, const hs_etl_event *ev, uint32_t tid)
{
    if (!ev->ext_stack.n)
        return 0;
    c->t->stacks.ext_stacks++;
    hs_etl_stack_ev s = {.event_ts = ev->ts, .pid = ev->pid, .tid = tid, .frames = ev->ext_stack};
    return hs_etl_join_stack(c, ev, &s);
}

static int on_sample(void *ctx, const hs_etl_event *ev, const hs_etl_sample_ev *v)
{
    hs_etl_collector *c = ctx;
    hs_etl_trace *t = c->t;
    c->sampled = true;
    if (hs_grow(&t->samples, &c->cap_samples, t->nsamples, sizeof *t->samples) < 0)
        return oom(c);
    uint32_t i = t->nsamples++;
    t->samples[i] = (hs_etl_sample){
        .ts = ev->ts, .ip = v->ip, .tid = v->tid, .cpu = ev->cpu, .priority = v->priority,
        .pid = pid_now(c, v->tid), .process = HS_ETL_NONE,
        .flags = (uint8_t)(v->flags | (v->ip >= t->kernel_boundary ? HS_ETL_SAMPLE_KERNEL : 0)),
    };
    if (hs_etl_join_owner(c, 0, i, ev->ts, v->tid, t->samples[i].pid, ev->cpu) < 0)
        return -1;
    return inline_stack(c, ev, v->tid);
}

/* A new scheduling event of this kind at the event's time and CPU. */
static hs_etl_sched *new_sched(hs_etl_collector *c, const hs_etl_event *ev, uint8_t kind)
{
    hs_etl_trace *t = c->t;
    if (hs_grow(&t->sched, &c->cap_sched, t->nsched, sizeof *t->sched) < 0) {
        oom(c);
        return NULL;
    }
    hs_etl_sched *e = &t->sched[t->nsched++];
    *e = (hs_etl_sched){.ts = ev->ts, .kind = kind, .cpu = ev->cpu, .process = HS_ETL_NONE,
                        .other_process = HS_ETL_NONE};
    return e;
}

static int on_cswitch(void *ctx, const hs_etl_event *ev, const hs_etl_cswitch_ev *v)
{
    hs_etl_collector *c = ctx;
    hs_etl_sched *e = new_sched(c, ev, HS_ETL_SWITCH);
    if (!e)
        return -1;
    c->t->nswitches++;
    e->tid = v->new_tid;
    e->pid = pid_now(c, v->new_tid);
    e->other_tid = v->old_tid;
    e->other_pid = pid_now(c, v->old_tid);
    e->sw = v->f;
    /* the stack walked for a context switch is the new thread's */
    if (hs_etl_join_owner(c, HS_ETL_SWITCH, c->t->nsched - 1, ev->ts, e->tid, e->pid, ev->cpu) < 0)
        return -1;
    return inline_stack(c, ev, v->new_tid);
}

static int on_ready(void *ctx, const hs_etl_event *ev, const hs_etl_ready_ev *v)
{
    hs_etl_collector *c = ctx;
    hs_etl_sched *e = new_sched(c, ev, HS_ETL_READY);
    if (!e)
        return -1;
    c->t->nreadies++;
    e->tid = v->tid;
    e->pid = pid_now(c, v->tid);
    /* the thread that readied it: the header's, if it has one (a perfinfo
     * header has none: then the stack walked for it tells) */
    e->other_tid = ev->tid;
    if (ev->tid != HS_ETL_NONE)
        e->other_pid = ev->pid != HS_ETL_NONE ? ev->pid : pid_now(c, ev->tid);
    else
        e->other_pid = HS_ETL_NONE;
    e->rd = v->f;
    if (hs_etl_join_owner(c, HS_ETL_READY, c->t->nsched - 1, ev->ts, e->other_tid, e->other_pid, ev->cpu) < 0)
        return -1;
    return ev->tid == HS_ETL_NONE ? 0 : inline_stack(c, ev, ev->tid);
}

/* The timer's interval: the one in force at the trace's first sample. A
 * CollectionStart or SetInterval before it gives its new interval (the
 * last of them wins: hookscope sets the run's interval just after its
 * session starts, so the CollectionStart shows the machine's interval
 * from before); without any before it, the old interval of the first
 * SetInterval after (the one it replaced), or a later CollectionStart's. */
static int on_interval(void *ctx, const hs_etl_event *ev, const hs_etl_interval_ev *v)
{
    hs_etl_collector *c = ctx;
    if (v->source != 0 || (ev->type != 72 && ev->type != 73))
        return 0;
    if (!c->sampled) {
        c->interval_started = true;
        c->t->sample_interval = v->new_interval;
    } else if (!c->interval_started) {
        c->interval_started = true;
        c->t->sample_interval = ev->type == 72 ? v->old_interval : v->new_interval;
    }
    return 0;
}

static int on_stack(void *ctx, const hs_etl_event *ev, const hs_etl_stack_ev *s)
{
    hs_etl_collector *c = ctx;
    c->t->stacks.stackwalks++;
    return hs_etl_join_stack(c, ev, s);
}

static int on_stack_ref(void *ctx, const hs_etl_event *ev, const hs_etl_stack_ref_ev *r)
{
    hs_etl_collector *c = ctx;
    c->t->stacks.key_refs++;
    return hs_etl_join_ref(c, ev, r);
}

static int on_stack_def(void *ctx, const hs_etl_event *ev, const hs_etl_stack_def_ev *d)
{
    hs_etl_collector *c = ctx;
    c->t->stacks.key_defs++;
    return hs_etl_join_def(c, ev, d);
}

static int on_info(void *ctx, const hs_etl_info *info)
{
    hs_etl_collector *c = ctx;
    c->t->info = *info;
    c->t->kernel_boundary = info->pointer_size == 4 ? 0x80000000ull : 0xFFFF000000000000ull;
    return 0;
}

hs_etl_observer hs_etl_collector_observer(hs_etl_collector *c)
{
    return (hs_etl_observer){
        .ctx = c, .info = on_info, .process = on_process, .thread = on_thread, .image = on_image,
        .image_id = on_image_id, .dbg_id = on_dbg_id, .sample = on_sample, .interval = on_interval,
        .cswitch = on_cswitch, .ready = on_ready, .stack = on_stack, .stack_ref = on_stack_ref,
        .stack_def = on_stack_def, .clr_method = hs_etl_on_clr_method, .clr_module = hs_etl_on_clr_module,
    };
}

int hs_etl_collector_init(hs_etl_collector *c, hs_etl_trace *t, hs_etl_error *err)
{
    memset(c, 0, sizeof *c);
    memset(t, 0, sizeof *t);
    c->t = t;
    c->err = err;
    c->priv = calloc(1, sizeof *c->priv);
    if (!c->priv) {
        hs_etl_fail(err, 0, 0, "out of memory");
        return -1;
    }
    t->priv = c->priv;
    t->kernel_boundary = 0xFFFF000000000000ull;
    return 0;
}

void hs_etl_collector_free(hs_etl_collector *c)
{
    hs_map_free(&c->pid_now);
    hs_map_free(&c->tid_now);
    hs_map_free(&c->img_now);
    hs_map_free(&c->id_now);
    hs_map_free(&c->jit_now);
    hs_map_free(&c->clr_modules);
    free(c->clr_paths);
    hs_map_free(&c->tstate_of);
    hs_map_free(&c->kkeys);
    hs_map_free(&c->ukeys);
    hs_map_free(&c->keydefs);
    free(c->ids);
    free(c->owners);
    free(c->pend);
    free(c->tstates);
    free(c->defs);
    c->ids = NULL;
    c->owners = NULL;
    c->pend = NULL;
    c->tstates = NULL;
    c->defs = NULL;
}
