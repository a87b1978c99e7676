/*
 * bench/etlstat.c - what hookscope's ETL reader finds in a trace, from the
 * command line (built natively: build/native/etlstat).
 *
 *   etlstat FILE                    the logfile header's facts, and CPU
 *                                   samples per process
 *   etlstat FILE --pid N            ... and samples per module (the module
 *   etlstat FILE --process NAME     of the sampled address) of one process
 *   etlstat FILE --summary          everything above for every process, and
 *                                   the scheduling events, one fact per
 *                                   line, for tests to compare
 *   etlstat FILE --bench N          decode N times: seconds and events/s
 *
 * Exit status 0, or 1 with one line "etlstat: ..." on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler/etl/etl.h"

struct count {
    const char *name;
    uint32_t pid;
    uint64_t n, stacked;
};

static int by_count(const void *a, const void *b)
{
    const struct count *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? 1 : -1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_pid_name(const void *a, const void *b)
{
    const struct count *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Add one to (pid, name) in a small growing table. */
static struct count *bump(struct count **tab, size_t *n, size_t *cap, uint32_t pid, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if ((*tab)[i].pid == pid && !strcmp((*tab)[i].name, name))
            return &(*tab)[i];
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *tab = realloc(*tab, *cap * sizeof **tab);
        if (!*tab) {
            fprintf(stderr, "etlstat: out of memory\n");
            exit(1);
        }
    }
    (*tab)[*n] = (struct count){.name = name, .pid = pid};
    return &(*tab)[(*n)++];
}

static const char *proc_name(const hs_etl_trace *t, const hs_etl_sample *s)
{
    return s->process == HS_ETL_NONE ? "?" : t->procs[s->process].name[0] ? t->procs[s->process].name : "?";
}

static const char *module_of(const hs_etl_trace *t, const hs_etl_sample *s)
{
    const hs_etl_image *m = hs_etl_image_at(t, s->pid, s->ip, s->ts);
    return m ? m->name : "?";
}

static uint64_t fnv(uint64_t h, uint64_t x)
{
    for (int i = 0; i < 8; i++) {
        h ^= (x >> (8 * i)) & 0xFF;
        h *= 0x100000001B3ull;
    }
    return h;
}

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench(const char *path, int rounds)
{
    double *secs = calloc((size_t)rounds, sizeof *secs);
    hs_etl_trace t;
    hs_etl_error err;
    uint64_t events = 0, samples = 0;
    FILE *fp = fopen(path, "rb");
    long size = 0;
    if (fp) {
        fseek(fp, 0, SEEK_END);
        size = ftell(fp);
        fclose(fp);
    }
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        if (hs_etl_read_file(path, &t, &err) < 0) {
            fprintf(stderr, "etlstat: %s: %s\n", path, err.msg);
            return 1;
        }
        secs[r] = now() - t0;
        events = t.info.events;
        samples = t.nsamples;
        hs_etl_trace_free(&t);
    }
    qsort(secs, (size_t)rounds, sizeof *secs, cmp_double);
    double med = secs[rounds / 2];
    printf("file_bytes %ld\nrounds %d\nevents %llu\nsamples %llu\ndecode_s_min %.4f\ndecode_s_median %.4f\n"
           "events_per_s %.0f\nmb_per_s %.1f\n",
           size, rounds, (unsigned long long)events, (unsigned long long)samples, secs[0], med, events / med,
           size / 1e6 / med);
    free(secs);
    return 0;
}

static void print_info(const hs_etl_trace *t, const char *prefix)
{
    const hs_etl_info *i = &t->info;
    printf("%spointer_size %u\n%sncpus %u\n%sclock %u\n%sclock_hz %llu\n%scpu_mhz %u\n", prefix,
           i->pointer_size, prefix, i->ncpus, prefix, i->clock, prefix, (unsigned long long)i->clock_hz, prefix,
           i->cpu_mhz);
    printf("%sstart_time %llu\n%send_time %llu\n%sevents_lost %u\n%sbuffers_lost %u\n", prefix,
           (unsigned long long)i->start_time, prefix, (unsigned long long)i->end_time, prefix, i->events_lost,
           prefix, i->buffers_lost);
    printf("%sbuffers_written %u\n%sbuffers %u\n%sbuffer_size %u\n%slog_file_mode 0x%08x\n", prefix,
           i->buffers_written, prefix, i->buffers, prefix, i->buffer_size, prefix, i->log_file_mode);
    printf("%scompressed %d\n%scompression %u\n%sbuffers_compressed %u\n%sbuffers_events_lost %u\n"
           "%sbuffers_buffer_lost %u\n%ssequence_gaps %u\n%scpus_seen %u\n%sevents %llu\n",
           prefix, i->compressed, prefix, i->compression, prefix, i->buffers_compressed, prefix,
           i->buffers_events_lost, prefix, i->buffers_buffer_lost, prefix, i->sequence_gaps, prefix,
           i->cpus_seen, prefix, (unsigned long long)i->events);
    printf("%sprovider_version %u\n%slogger_name %s\n%slog_file_name %s\n", prefix, i->provider_version, prefix,
           i->logger_name, prefix, i->log_file_name);
    if (i->clock_hz)
        printf("%sduration_s %.3f\n", prefix, hs_etl_seconds(t, i->last_ts));
}

/* The scheduling events: how many of each kind and with a stack, the
 * timer's interval, and a digest of every field of every event. */
static void sched_summary(const hs_etl_trace *t)
{
    uint64_t stacked = 0, h = 0xCBF29CE484222325ull;
    for (uint32_t i = 0; i < t->nsched; i++) {
        const hs_etl_sched *e = &t->sched[i];
        uint32_t d = hs_etl_stack_depth(&e->stack);
        stacked += (e->flags & HS_ETL_STACK_FOUND) != 0;
        uint64_t f[] = {e->ts, e->kind, e->cpu, e->tid, e->pid, e->other_tid, e->other_pid,
                        e->flags & (HS_ETL_STACK_FOUND | HS_ETL_STACK_USER_MISSING), (uint8_t)e->sw.new_priority,
                        (uint8_t)e->sw.old_priority, e->sw.old_state, e->sw.old_wait_reason, e->sw.old_wait_mode,
                        e->sw.previous_cstate, (uint8_t)e->sw.old_ideal_cpu, e->sw.new_wait_time,
                        (uint8_t)e->rd.adjust_reason, (uint8_t)e->rd.adjust_increment, e->rd.flags, d};
        for (size_t k = 0; k < sizeof f / sizeof *f; k++)
            h = fnv(h, f[k]);
        for (uint32_t k = 0; k < d; k++)
            h = fnv(h, hs_etl_stack_frame(t, &e->stack, k));
    }
    printf("count switches %u\ncount readies %u\ncount sched_with_stack %llu\nsched %016llx\n"
           "info sample_interval %u\n",
           t->nswitches, t->nreadies, (unsigned long long)stacked, (unsigned long long)h, t->sample_interval);
}

int main(int argc, char **argv)
{
    const char *path = NULL, *pname = NULL;
    long pid = -1;
    int summary = 0, rounds = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pid") && i + 1 < argc)
            pid = strtol(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--process") && i + 1 < argc)
            pname = argv[++i];
        else if (!strcmp(argv[i], "--summary"))
            summary = 1;
        else if (!strcmp(argv[i], "--bench") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(stderr, "etlstat: usage: etlstat FILE [--pid N | --process NAME | --summary | --bench N]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "etlstat: usage: etlstat FILE [--pid N | --process NAME | --summary | --bench N]\n");
        return 2;
    }
    if (rounds > 0)
        return bench(path, rounds);

    hs_etl_trace t;
    hs_etl_error err;
    if (hs_etl_read_file(path, &t, &err) < 0) {
        fprintf(stderr, "etlstat: %s: %s\n", path, err.msg);
        return 1;
    }
    struct count *procs = NULL, *mods = NULL;
    size_t np = 0, cp = 0, nm = 0, cm = 0;
    uint64_t stacked = 0;
    for (uint32_t i = 0; i < t.nsamples; i++) {
        const hs_etl_sample *s = &t.samples[i];
        struct count *c = bump(&procs, &np, &cp, s->pid, proc_name(&t, s));
        int has = (s->flags & HS_ETL_SAMPLE_STACK) != 0;
        c->n++;
        c->stacked += has;
        stacked += has;
    }
    if (summary) {
        print_info(&t, "info ");
        printf("count processes %u\ncount threads %u\ncount images %u\ncount samples %u\ncount with_stack %llu\n",
               t.nprocs, t.nthreads, t.nimages, t.nsamples, (unsigned long long)stacked);
        sched_summary(&t);
        qsort(procs, np, sizeof *procs, by_pid_name);
        for (size_t i = 0; i < np; i++)
            printf("process %d %llu %llu %s\n", (int)procs[i].pid, (unsigned long long)procs[i].n,
                   (unsigned long long)procs[i].stacked, procs[i].name);
        for (uint32_t i = 0; i < t.nsamples; i++)
            bump(&mods, &nm, &cm, t.samples[i].pid, module_of(&t, &t.samples[i]))->n++;
        qsort(mods, nm, sizeof *mods, by_pid_name);
        for (size_t i = 0; i < nm; i++)
            printf("module %d %llu %s\n", (int)mods[i].pid, (unsigned long long)mods[i].n, mods[i].name);
        for (size_t p = 0; p < np; p++) {
            uint64_t h = 0xCBF29CE484222325ull;
            for (uint32_t i = 0; i < t.nsamples; i++) {
                const hs_etl_sample *s = &t.samples[i];
                if (s->pid != procs[p].pid || strcmp(proc_name(&t, s), procs[p].name))
                    continue;
                uint32_t d = hs_etl_depth(s);
                h = fnv(h, s->ts);
                h = fnv(h, s->tid);
                h = fnv(h, s->flags & (HS_ETL_SAMPLE_STACK | HS_ETL_SAMPLE_USER_MISSING));
                h = fnv(h, d);
                for (uint32_t k = 0; k < d; k++)
                    h = fnv(h, hs_etl_frame(&t, s, k));
            }
            printf("stacks %d %016llx %s\n", (int)procs[p].pid, (unsigned long long)h, procs[p].name);
        }
    } else {
        print_info(&t, "");
        printf("processes %u, threads %u, images %u, samples %u (%llu with a stack)\n\n", t.nprocs, t.nthreads,
               t.nimages, t.nsamples, (unsigned long long)stacked);
        qsort(procs, np, sizeof *procs, by_count);
        printf("%8s %10s %10s  %s\n", "pid", "samples", "stacks", "process");
        for (size_t i = 0; i < np; i++)
            printf("%8d %10llu %10llu  %s\n", (int)procs[i].pid, (unsigned long long)procs[i].n,
                   (unsigned long long)procs[i].stacked, procs[i].name);
        if (pid >= 0 || pname) {
            uint64_t total = 0, with = 0;
            for (uint32_t i = 0; i < t.nsamples; i++) {
                const hs_etl_sample *s = &t.samples[i];
                if (pid >= 0 ? (long)s->pid != pid : strcasecmp(proc_name(&t, s), pname) != 0)
                    continue;
                bump(&mods, &nm, &cm, 0, module_of(&t, s))->n++;
                total++;
                with += (s->flags & HS_ETL_SAMPLE_STACK) != 0;
            }
            qsort(mods, nm, sizeof *mods, by_count);
            printf("\n%s: %llu samples, %llu with a stack; self samples by module:\n",
                   pname ? pname : argv[0], (unsigned long long)total, (unsigned long long)with);
            for (size_t i = 0; i < nm; i++)
                printf("%10llu  %s\n", (unsigned long long)mods[i].n, mods[i].name);
        }
    }
    free(procs);
    free(mods);
    hs_etl_trace_free(&t);
    return 0;
}
