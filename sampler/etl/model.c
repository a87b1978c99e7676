/*
 * sampler/etl/model.c - the trace model once every event is read: the pids
 * of samples and scheduling events whose thread was only seen later (a
 * thread end or rundown after the event: circular and truncated traces),
 * the process record of each of them and of each thread and image, and
 * the sorted tables behind hs_etl_image_at and hs_etl_process_at. Also the
 * entry points that read a whole file into a model, and its release.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/search.h"
#include "hook/base/util.h"
#include "sampler/etl/collector.h"

/* ---- sorting by an index (the array passed along, no globals) ------------ */

static int cmp_thread(const void *pa, const void *pb, void *ctx)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const hs_etl_thread *t = ctx;
    if (t[a].tid != t[b].tid)
        return t[a].tid < t[b].tid ? -1 : 1;
    return t[a].start < t[b].start ? -1 : t[a].start > t[b].start;
}

static int cmp_proc(const void *pa, const void *pb, void *ctx)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const hs_etl_process *p = ctx;
    if (p[a].pid != p[b].pid)
        return p[a].pid < p[b].pid ? -1 : 1;
    return p[a].start < p[b].start ? -1 : p[a].start > p[b].start;
}

static int cmp_image(const void *pa, const void *pb, void *ctx)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const hs_etl_image *m = ctx;
    if (m[a].pid != m[b].pid)
        return m[a].pid < m[b].pid ? -1 : 1;
    return m[a].base < m[b].base ? -1 : m[a].base > m[b].base;
}

static int cmp_kimage(const void *pa, const void *pb, void *ctx)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const hs_etl_image *m = ctx;
    return m[a].base < m[b].base ? -1 : m[a].base > m[b].base;
}

static uint32_t *identity(uint32_t n)
{
    uint32_t *ix = malloc((size_t)(n ? n : 1) * sizeof *ix);
    if (ix)
        for (uint32_t i = 0; i < n; i++)
            ix[i] = i;
    return ix;
}

/* ---- lookups -------------------------------------------------------------- */

/* What a search of the sorted index of processes, images or threads looks for. */
typedef struct sought {
    const hs_etl_trace *t;
    const uint32_t *ix;
    uint32_t id;                   /* pid or tid */
    uint64_t at;                   /* a time, or an address */
    int kernel;
} sought;

static bool process_not_after(const void *ctx, size_t i)
{
    const sought *q = ctx;
    const hs_etl_process *p = &q->t->procs[q->ix[i]];
    return p->pid < q->id || (p->pid == q->id && p->start <= q->at);
}

static uint32_t process_index(const hs_etl_trace *t, uint32_t pid, uint64_t ts)
{
    const hs_etl_priv *pv = t->priv;
    if (!pv || !pv->proc_sorted || pid == HS_ETL_NONE)
        return HS_ETL_NONE;
    sought q = { t, pv->proc_sorted, pid, ts, 0 };
    uint32_t lo = (uint32_t)hs_partition_point(t->nprocs, &q, process_not_after);   /* first record after (pid, ts) */
    if (lo > 0 && t->procs[pv->proc_sorted[lo - 1]].pid == pid)
        return pv->proc_sorted[lo - 1];
    return HS_ETL_NONE;
}

const hs_etl_process *hs_etl_process_at(const hs_etl_trace *t, uint32_t pid, uint64_t ts)
{
    uint32_t i = process_index(t, pid, ts);
    return i == HS_ETL_NONE ? NULL : &t->procs[i];
}

static int covers(const hs_etl_image *m, uint64_t addr, uint64_t ts)
{
    return addr >= m->base && addr - m->base < m->size && m->load <= ts && ts < m->unload;
}

static bool image_not_after(const void *ctx, size_t i)
{
    const sought *q = ctx;
    const hs_etl_image *m = &q->t->images[q->ix[i]];
    return (!q->kernel && m->pid < q->id) || ((q->kernel || m->pid == q->id) && m->base <= q->at);
}

const hs_etl_image *hs_etl_image_at(const hs_etl_trace *t, uint32_t pid, uint64_t addr, uint64_t ts)
{
    const hs_etl_priv *pv = t->priv;
    if (!pv)
        return NULL;
    int kernel = addr >= t->kernel_boundary;
    const uint32_t *ix = kernel ? pv->kimg_sorted : pv->img_sorted;
    uint32_t n = kernel ? pv->n_kimg_sorted : pv->n_img_sorted;
    if (!ix)
        return NULL;
    sought q = { t, ix, pid, addr, kernel };
    uint32_t lo = (uint32_t)hs_partition_point(n, &q, image_not_after);   /* first image after (pid, addr) */
    const hs_etl_image *best = NULL;
    uint32_t best_i = 0;
    for (uint32_t k = lo; k-- > 0;) {
        const hs_etl_image *m = &t->images[ix[k]];
        if ((!kernel && m->pid != pid) || addr - m->base >= pv->max_image_size)
            break;
        if (covers(m, addr, ts) &&
            (!best || m->load > best->load || (m->load == best->load && ix[k] < best_i))) {
            best = m;
            best_i = ix[k];
        }
    }
    return best;
}

static bool jit_not_after(const void *ctx, size_t i)
{
    const sought *q = ctx;
    const hs_etl_jit *j = &q->t->jits[q->ix[i]];
    return j->pid < q->id || (j->pid == q->id && j->start <= q->at);
}

const hs_etl_jit *hs_etl_jit_at(const hs_etl_trace *t, uint32_t pid, uint64_t addr, uint64_t ts)
{
    const hs_etl_priv *pv = t->priv;
    if (!pv || !pv->jit_sorted)
        return NULL;
    sought q = { t, pv->jit_sorted, pid, addr, 0 };
    uint32_t lo = (uint32_t)hs_partition_point(t->njits, &q, jit_not_after);   /* first method after (pid, addr) */
    const hs_etl_jit *best = NULL;
    for (uint32_t k = lo; k-- > 0;) {
        const hs_etl_jit *j = &t->jits[pv->jit_sorted[k]];
        if (j->pid != pid || addr - j->start >= pv->max_jit_size)
            break;
        if (addr - j->start < j->size && j->load <= ts && ts < j->unload && (!best || j->load > best->load))
            best = j;
    }
    return best;
}

static int cmp_jit(const void *pa, const void *pb, void *ctx)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const hs_etl_jit *j = ctx;
    if (j[a].pid != j[b].pid)
        return j[a].pid < j[b].pid ? -1 : 1;
    if (j[a].start != j[b].start)
        return j[a].start < j[b].start ? -1 : 1;
    return a < b ? -1 : a > b;
}

double hs_etl_seconds(const hs_etl_trace *t, uint64_t ts)
{
    if (!t->info.clock_hz || ts < t->info.first_ts)
        return 0;
    return (double)(ts - t->info.first_ts) / (double)t->info.clock_hz;
}

/* ---- finishing ------------------------------------------------------------ */

/* Samples and scheduling events whose thread was unknown when they came:
 * the record of that tid (seen later) that started last before the event
 * gives the pid, if it had not ended by then. */
static bool thread_not_after(const void *ctx, size_t i)
{
    const sought *q = ctx;
    const hs_etl_thread *th = &q->t->threads[q->ix[i]];
    return th->tid < q->id || (th->tid == q->id && th->start <= q->at);
}

static void resolve_pid(const hs_etl_trace *t, const uint32_t *ix, uint32_t tid, uint64_t ts, uint32_t *pid)
{
    if (*pid != HS_ETL_NONE || tid == HS_ETL_NONE)
        return;
    sought q = { t, ix, tid, ts, 0 };
    uint32_t lo = (uint32_t)hs_partition_point(t->nthreads, &q, thread_not_after);   /* first record after (tid, ts) */
    if (lo > 0) {
        const hs_etl_thread *th = &t->threads[ix[lo - 1]];
        if (th->tid == tid && ts <= th->end)
            *pid = th->pid;
    }
}

static int resolve_pids(hs_etl_trace *t)
{
    uint32_t unknown = 0;
    for (uint32_t i = 0; i < t->nsamples; i++)
        unknown += t->samples[i].pid == HS_ETL_NONE;
    for (uint32_t i = 0; i < t->nsched; i++)
        unknown += t->sched[i].pid == HS_ETL_NONE || t->sched[i].other_pid == HS_ETL_NONE;
    if (!unknown || !t->nthreads)
        return 0;
    uint32_t *ix = identity(t->nthreads);
    if (!ix)
        return -1;
    hs_sort(ix, t->nthreads, sizeof *ix, cmp_thread, t->threads);
    for (uint32_t i = 0; i < t->nsamples; i++)
        resolve_pid(t, ix, t->samples[i].tid, t->samples[i].ts, &t->samples[i].pid);
    for (uint32_t i = 0; i < t->nsched; i++) {
        hs_etl_sched *e = &t->sched[i];
        resolve_pid(t, ix, e->tid, e->ts, &e->pid);
        resolve_pid(t, ix, e->other_tid, e->ts, &e->other_pid);
    }
    free(ix);
    return 0;
}

int hs_etl_model_finish(hs_etl_collector *c)
{
    hs_etl_trace *t = c->t;
    hs_etl_priv *pv = c->priv;
    if (hs_etl_join_finish(c) < 0)
        return -1;
    if (resolve_pids(t) < 0)
        goto oom;
    if (!(pv->proc_sorted = identity(t->nprocs)))
        goto oom;
    hs_sort(pv->proc_sorted, t->nprocs, sizeof *pv->proc_sorted, cmp_proc, t->procs);
    for (uint32_t i = 0; i < t->nsamples; i++)
        t->samples[i].process = process_index(t, t->samples[i].pid, t->samples[i].ts);
    for (uint32_t i = 0; i < t->nsched; i++) {
        hs_etl_sched *e = &t->sched[i];
        e->process = process_index(t, e->pid, e->ts);
        e->other_process = process_index(t, e->other_pid, e->ts);
    }
    for (uint32_t i = 0; i < t->nthreads; i++)
        t->threads[i].process = process_index(t, t->threads[i].pid, t->threads[i].start);
    /* an image over 4 GiB is corrupt (a PE's SizeOfImage is 32-bit): it
     * stays in the model but out of the lookup tables, whose scans it
     * would make long */
    uint32_t nk = 0, nu = 0;
    for (uint32_t i = 0; i < t->nimages; i++) {
        hs_etl_image *m = &t->images[i];
        m->process = process_index(t, m->pid, m->load);
        if (m->size > 0xFFFFFFFFull)
            continue;
        if (m->flags & HS_ETL_IMAGE_KERNEL)
            nk++;
        else
            nu++;
        if (m->size > pv->max_image_size)
            pv->max_image_size = m->size;
    }
    pv->img_sorted = malloc((size_t)(nu ? nu : 1) * sizeof *pv->img_sorted);
    pv->kimg_sorted = malloc((size_t)(nk ? nk : 1) * sizeof *pv->kimg_sorted);
    if (!pv->img_sorted || !pv->kimg_sorted)
        goto oom;
    for (uint32_t i = 0; i < t->nimages; i++) {
        if (t->images[i].size > 0xFFFFFFFFull)
            continue;
        if (t->images[i].flags & HS_ETL_IMAGE_KERNEL)
            pv->kimg_sorted[pv->n_kimg_sorted++] = i;
        else
            pv->img_sorted[pv->n_img_sorted++] = i;
    }
    hs_sort(pv->img_sorted, pv->n_img_sorted, sizeof *pv->img_sorted, cmp_image, t->images);
    hs_sort(pv->kimg_sorted, pv->n_kimg_sorted, sizeof *pv->kimg_sorted, cmp_kimage, t->images);
    hs_etl_clr_finish(c);
    if (!(pv->jit_sorted = identity(t->njits)))
        goto oom;
    hs_sort(pv->jit_sorted, t->njits, sizeof *pv->jit_sorted, cmp_jit, t->jits);
    for (uint32_t i = 0; i < t->njits; i++)
        if (t->jits[i].size > pv->max_jit_size)
            pv->max_jit_size = t->jits[i].size;
    return 0;
oom:
    hs_etl_fail(c->err, 0, 0, "out of memory");
    return -1;
}

/* ---- reading a whole file ------------------------------------------------- */

static int read_all(hs_etl_file *f, hs_etl_trace *t, hs_etl_error *err)
{
    hs_etl_collector c;
    if (hs_etl_collector_init(&c, t, err) < 0)
        return -1;
    hs_etl_observer obs = hs_etl_collector_observer(&c);
    int rc = hs_etl_decode(f, &obs, err);
    if (rc == 0) {
        uint64_t kb = t->kernel_boundary;
        t->info = *hs_etl_file_info(f);
        t->kernel_boundary = kb;
        rc = hs_etl_model_finish(&c);
    }
    hs_etl_collector_free(&c);
    if (rc < 0)
        hs_etl_trace_free(t);
    return rc;
}

int hs_etl_read_file(const char *path, hs_etl_trace *t, hs_etl_error *err)
{
    hs_etl_file *f;
    memset(t, 0, sizeof *t);
    if (hs_etl_open_file(&f, path, err) < 0)
        return -1;
    int rc = read_all(f, t, err);
    hs_etl_close(f);
    return rc;
}

int hs_etl_read_fp(FILE *fp, hs_etl_trace *t, hs_etl_error *err)
{
    hs_etl_file *f;
    memset(t, 0, sizeof *t);
    if (hs_etl_open_fp(&f, fp, err) < 0)
        return -1;
    int rc = read_all(f, t, err);
    hs_etl_close(f);
    return rc;
}

int hs_etl_read_mem(const void *data, size_t size, hs_etl_trace *t, hs_etl_error *err)
{
    hs_etl_file *f;
    memset(t, 0, sizeof *t);
    if (hs_etl_open_mem(&f, data, size, err) < 0)
        return -1;
    int rc = read_all(f, t, err);
    hs_etl_close(f);
    return rc;
}

void hs_etl_trace_free(hs_etl_trace *t)
{
    hs_etl_priv *pv = t->priv;
    if (pv) {
        hs_etl_arena_free(&pv->arena);
        free(pv->img_sorted);
        free(pv->kimg_sorted);
        free(pv->proc_sorted);
        free(pv->jit_sorted);
        free(pv);
    }
    free(t->procs);
    free(t->threads);
    free(t->images);
    free(t->jits);
    free(t->samples);
    free(t->sched);
    free(t->frames);
    memset(t, 0, sizeof *t);
}
