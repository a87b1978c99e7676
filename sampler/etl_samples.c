/*
 * sampler/etl_samples.c - see etl_samples.h.
 */
#include "sampler/etl_samples.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "hook/base/util.h"

static int name_is(const char *a, const char *b)
{
    if (!a || !b)
        return 0;
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/* samples and samples with a stack of every process instance */
static void count_samples(const hs_etl_trace *t, uint64_t *samples, uint64_t *with_stack)
{
    for (uint32_t i = 0; i < t->nsamples; i++) {
        const hs_etl_sample *s = &t->samples[i];
        if (s->process == HS_ETL_NONE || s->process >= t->nprocs)
            continue;
        samples[s->process]++;
        if (s->flags & HS_ETL_SAMPLE_STACK)
            with_stack[s->process]++;
    }
}

static int cmp_row(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const hs_etl_proc_row *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

size_t hs_etl_process_table(const hs_etl_trace *t, hs_etl_proc_row **rows)
{
    uint64_t *samples = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *samples);
    uint64_t *with_stack = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *with_stack);
    count_samples(t, samples, with_stack);
    hs_etl_proc_row *r = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *r);
    size_t n = 0;
    for (uint32_t i = 0; i < t->nprocs; i++) {
        if (!samples[i])
            continue;
        r[n].index = i;
        r[n].pid = t->procs[i].pid;
        r[n].name = t->procs[i].name ? t->procs[i].name : "?";
        r[n].samples = samples[i];
        r[n].with_stack = with_stack[i];
        n++;
    }
    hs_sort(r, n, sizeof *r, cmp_row, NULL);
    free(samples);
    free(with_stack);
    *rows = r;
    return n;
}

int hs_etl_pick_process(const hs_etl_trace *t, uint32_t pid, const char *name, uint32_t *index, char *err,
                        size_t errlen)
{
    uint64_t *samples = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *samples);
    uint64_t *with_stack = hs_xcalloc(t->nprocs ? t->nprocs : 1, sizeof *with_stack);
    count_samples(t, samples, with_stack);
    int found = 0;
    for (uint32_t i = 0; i < t->nprocs; i++) {
        const hs_etl_process *pr = &t->procs[i];
        if (pid ? pr->pid != pid : !name_is(pr->name, name))
            continue;
        if (!found || samples[i] > samples[*index])
            *index = i;
        found = 1;
    }
    free(samples);
    free(with_stack);
    if (found)
        return 0;
    if (pid)
        snprintf(err, errlen, "the trace has no process with id %u (run 'hookscope report --etl FILE' for the "
                              "processes it has)", pid);
    else
        snprintf(err, errlen, "the trace has no process named '%s' (run 'hookscope report --etl FILE' for the "
                              "processes it has)", name);
    return -1;
}

/* The set's module of trace image i, added on first use. */
static int32_t module_of(const hs_etl_trace *t, uint32_t i, int32_t *image_module,
                         char *(*map_path)(void *, const char *), void *map_ctx, hs_sampleset *out)
{
    if (image_module[i] >= 0)
        return image_module[i];
    const hs_etl_image *img = &t->images[i];
    char *local = map_path && img->path ? map_path(map_ctx, img->path) : NULL;
    const char *path = local ? local : img->path ? img->path : img->name ? img->name : "?";
    uint32_t m = hs_sampleset_module(out, path, img->base, (uint32_t)(img->size > UINT32_MAX ? UINT32_MAX : img->size),
                                     img->timestamp, img->unload != HS_ETL_NEVER, false);
    hs_sampleset_module_identity(out, m, img->name, (img->flags & HS_ETL_IMAGE_KERNEL) != 0,
                                 (img->flags & HS_ETL_IMAGE_RSDS) ? img->pdb_guid : NULL, img->pdb_age,
                                 img->pdb_name);
    free(local);
    image_module[i] = (int32_t)m;
    return (int32_t)m;
}

uint64_t hs_etl_samples(const hs_etl_trace *t, uint32_t index, const hs_codemap *own,
                        char *(*map_path)(void *ctx, const char *nt_path), void *map_ctx, hs_sampleset *out)
{
    if (index >= t->nprocs)
        return 0;
    uint32_t pid = t->procs[index].pid;
    int32_t *image_module = hs_xmalloc((t->nimages ? t->nimages : 1) * sizeof *image_module);
    for (uint32_t i = 0; i < t->nimages; i++)
        image_module[i] = -1;
    uint32_t cap = 256;
    uint64_t *frames = hs_xmalloc(cap * sizeof *frames);
    int32_t *mods = hs_xmalloc(cap * sizeof *mods);
    uint64_t added = 0;
    for (uint32_t i = 0; i < t->nsamples; i++) {
        const hs_etl_sample *s = &t->samples[i];
        if (s->process != index || (own && hs_codemap_own_thread(own, s->tid)))
            continue;
        uint32_t n = hs_etl_depth(s);
        if (n + 1 > cap) {
            cap = n + 1;
            frames = hs_xrealloc(frames, cap * sizeof *frames);
            mods = hs_xrealloc(mods, cap * sizeof *mods);
        }
        if (!n)
            frames[n++] = s->ip;   /* no stack: the sampled instruction alone */
        else
            for (uint32_t d = 0; d < n; d++)
                frames[d] = hs_etl_frame(t, s, d);
        int attr = HS_ATTR_PROGRAM;
        if (own)
            n = hs_codemap_attribute(own, NULL, frames, n, &attr);
        if (!n)
            continue;
        for (uint32_t d = 0; d < n; d++) {
            /* a return address points after its call */
            const hs_etl_image *img = hs_etl_image_at(t, pid, d ? frames[d] - 1 : frames[d], s->ts);
            mods[d] = img ? module_of(t, (uint32_t)(img - t->images), image_module, map_path, map_ctx, out) : -1;
        }
        uint32_t id = hs_sampleset_stack_in(out, s->tid, false, frames, mods, n);
        hs_sampleset_count(out, id, attr == HS_ATTR_HOOKSCOPE ? HS_SAMPLE_HOOKSCOPE : HS_SAMPLE_CPU, 1);
        added++;
    }
    free(frames);
    free(mods);
    free(image_module);
    return added;
}
