/*
 * tests/unit/test_etl_synthetic.c - the ETL reader on small traces built
 * here to the documented layouts (etl_build.c), each showing one rule:
 *   - every trace header kind (system, compact, perfinfo with PEBS/PMC
 *     items, full and instance headers, event headers with and without
 *     extended items), 32- and 64-bit, read into the same fields;
 *   - the model: processes, threads and images from rundown and live
 *     events (an image load logged as hook 0x030A), ImageID/DbgID_RSDS
 *     attached to their image, samples with whole stacks, kernel stacks
 *     joined to the deferred user part of their thread, the kernel-only
 *     stacks of pid 4, a kernel stack whose user part never came, pids of
 *     samples on threads only seen later, image lookups by time;
 *   - stack keys: kernel and user references, definitions by delete,
 *     rundown and create, one user key shared, a key never defined;
 *   - per-CPU buffers: sorted by sequence number whatever their order in
 *     the file, events merged by (timestamp, CPU), 16-bit processor indexes;
 *   - XPRESS and LZNT1 buffers decode to the same model as plain ones;
 *   - truncated and corrupt files: the exact one-line error and offset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/etl/etl.h"
#include "sampler/etl/internal.h"
#include "sampler/etl/reader.h"
#include "tests/unit/etl_build.h"
#include "tests/unit/tap.h"

#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)
static char name[160];

/* ---- recording every event -------------------------------------------------- */

typedef struct rec {
    hs_etl_event ev[64];
    uint8_t data[64][64];
    uint64_t ext[64][4];
    int n;
} rec;

static int rec_event(void *ctx, const hs_etl_event *ev)
{
    rec *r = ctx;
    if (ev->group == HS_ETL_GROUP_HEADER && ev->type == 0)
        return 0;                                /* the logfile header */
    if (r->n < 64) {
        r->ev[r->n] = *ev;
        memcpy(r->data[r->n], ev->data, ev->size < 64 ? ev->size : 64);
        for (uint32_t i = 0; i < ev->ext_stack.n && i < 4; i++)
            r->ext[r->n][i] = hs_etl_frames_at(&ev->ext_stack, i);
    }
    r->n++;
    return 0;
}

static int decode_events(const etlb *b, rec *r, hs_etl_error *err)
{
    hs_etl_file *f;
    memset(r, 0, sizeof *r);
    if (hs_etl_open_mem(&f, b->file.p, b->file.n, err) < 0)
        return -1;
    hs_etl_observer o = {.ctx = r, .event = rec_event};
    int rc = hs_etl_decode(f, &o, err);
    hs_etl_close(f);
    return rc;
}

/* ---- header kinds ---------------------------------------------------------------- */

static void test_header_kinds(unsigned P)
{
    etlb b;
    etlb_bytes pl = {0};
    etlb_init(&b, P, 1, 4096);
    etlb_begin(&b, 0, 1);
    etlb_p_thread(&pl, P, 22, 11);
    etlb_sys(&b, 0, 0x05, 3, 3, 11, 22, 100, &pl);
    pl.n = 0;
    etlb_p_thread(&pl, P, 22, 12);
    etlb_sys(&b, 1, 0x05, 1, 3, 12, 22, 110, &pl);
    pl.n = 0;
    etlb_p_sample(&pl, P, 0x401234, 11, 0x5B);  /* priority 11, DPC, ISR */
    etlb_perf(&b, 0x0F, 46, 2, 120, 1, 2, &pl);
    pl.n = 0;
    etlb_p_thread(&pl, P, 22, 13);
    etlb_classic(&b, 0, etlb_guid_thread, 3, 3, 13, 22, 130, &pl);
    pl.n = 0;
    eb_put(&pl, "abc", 3);
    etlb_classic(&b, 1, etlb_guid_other, 7, 1, 14, 23, 140, &pl);
    pl.n = 0;
    eb_put(&pl, "hello", 5);
    etlb_evh(&b, etlb_guid_other, 300, 9, 2, 15, 24, 150, NULL, 0, &pl);
    pl.n = 0;
    etlb_p_sample(&pl, P, 0x401300, 11, 0);
    uint64_t st[3] = {0x401300, 0x402000, 0x403000};
    etlb_evh(&b, etlb_guid_perfinfo, 0, 46, 2, 11, 22, 160, st, 3, &pl);
    etlb_end(&b, ETLB_PLAIN);

    rec r;
    hs_etl_error err = {0};
    int rc = decode_events(&b, &r, &err);
    tap_check(rc == 0 && r.n == 7, NAME("kinds/%u/decode", P), "rc %d (%s), %d events", rc, err.msg, r.n);
    if (rc == 0 && r.n == 7) {
        struct {
            uint8_t header, group, type;
            uint16_t version, event_id;
            uint32_t pid, tid, size;
            uint64_t ts;
        } want[7] = {
            {P == 8 ? 2 : 1, 0x05, 3, 3, 0, 22, 11, 8 + 7 * P + 8, 100},
            {P == 8 ? 4 : 3, 0x05, 1, 3, 0, 22, 12, 8 + 7 * P + 8, 110},
            {P == 8 ? 0x11 : 0x10, 0x0F, 46, 2, 0, HS_ETL_NONE, HS_ETL_NONE, P + 8, 120},
            {P == 8 ? 0x14 : 0x0A, 0x05, 3, 3, 0, 22, 13, 8 + 7 * P + 8, 130},
            {P == 8 ? 0x15 : 0x0B, HS_ETL_GROUP_NONE, 7, 1, 0, 23, 14, 3, 140},
            {P == 8 ? 0x13 : 0x12, HS_ETL_GROUP_NONE, 9, 2, 300, 24, 15, 5, 150},
            {P == 8 ? 0x13 : 0x12, 0x0F, 46, 2, 0, 22, 11, P + 8, 160},
        };
        for (int i = 0; i < 7; i++) {
            const hs_etl_event *e = &r.ev[i];
            tap_check(e->header == want[i].header && e->group == want[i].group && e->type == want[i].type &&
                          e->version == want[i].version && e->event_id == want[i].event_id &&
                          e->pid == want[i].pid && e->tid == want[i].tid && e->size == want[i].size &&
                          e->ts == want[i].ts && e->ptr == P && e->cpu == 0,
                      NAME("kinds/%u/event-%d", P, i),
                      "header 0x%x group 0x%x type %u version %u id %u pid %u tid %u size %u ts %llu ptr %u", e->header,
                      e->group, e->type, e->version, e->event_id, e->pid, e->tid, e->size,
                      (unsigned long long)e->ts, e->ptr);
        }
        /* payloads start where they should */
        tap_check(!memcmp(r.data[4], "abc", 3) && !memcmp(r.data[5], "hello", 5) && r.data[0][0] == 22 &&
                      r.data[2][P] == 11 && r.data[6][0] == 0x00 && r.data[6][1] == 0x13,
                  NAME("kinds/%u/payloads", P), "instance %.3s, event header %.5s, thread pid %u, sample tid %u",
                  r.data[4], r.data[5], r.data[0][0], r.data[2][P]);
        tap_check(r.ev[6].ext_stack.n == 3 && r.ext[6][0] == 0x401300 && r.ext[6][2] == 0x403000 &&
                      r.ev[5].ext_stack.n == 0,
                  NAME("kinds/%u/extended-stack", P), "%u frames, first 0x%llx", r.ev[6].ext_stack.n,
                  (unsigned long long)r.ext[6][0]);
    }
    /* the same file into a model: threads from system, compact and classic
     * headers; samples from perfinfo and event headers (the latter with
     * its inline stack) */
    hs_etl_trace t;
    rc = hs_etl_read_mem(b.file.p, b.file.n, &t, &err);
    tap_check(rc == 0 && t.nthreads == 3 && t.nsamples == 2 && t.samples[0].priority == 11 &&
                  t.samples[0].flags == (HS_ETL_SAMPLE_DPC | HS_ETL_SAMPLE_ISR) && t.samples[0].pid == 22 &&
                  t.samples[1].flags == HS_ETL_SAMPLE_STACK && hs_etl_depth(&t.samples[1]) == 3 &&
                  hs_etl_frame(&t, &t.samples[1], 1) == 0x402000 && t.stacks.ext_stacks == 1,
              NAME("kinds/%u/model", P), "rc %d (%s) threads %u samples %u", rc, err.msg, t.nthreads, t.nsamples);
    hs_etl_trace_free(&t);
    eb_free(&pl);
    etlb_free(&b);
}

/* ---- the model ------------------------------------------------------------------ */

static uint64_t kbase(unsigned P)
{
    return P == 8 ? 0xFFFFF80000000000ull : 0x80000000ull;
}

static const uint8_t pdb_guid[16] = {0xdf, 0xd8, 0x83, 0xec, 0x59, 0x55, 0xe0, 0x46,
                                     0xb1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};

/* A trace with processes, threads, images and samples (see the header). */
static void build_model(etlb *b, unsigned P, int how, int proc_index)
{
    etlb_bytes pl = {0};
    uint64_t K = kbase(P);
    etlb_init(b, P, 2, 4096);
    if (how != ETLB_PLAIN)
        etlb_set_compression(b, (uint32_t)how);
    b->proc_index = proc_index;
#define SYS(g, ty, v, tid, pid, ts) (etlb_sys(b, 0, g, ty, v, tid, pid, ts, &pl), pl.n = 0)
#define PERF(g, ty, ts) (etlb_perf(b, g, ty, 2, ts, 0, 0, &pl), pl.n = 0)
    etlb_begin(b, 0, 1);
    etlb_p_process(&pl, P, 100, 4, 1, "app.exe", "app.exe -x");
    SYS(0x03, 3, 4, 0, 100, 10);
    etlb_p_process(&pl, P, 4, 0, 0, "System", "");
    SYS(0x03, 3, 4, 0, 4, 11);
    etlb_p_thread(&pl, P, 100, 1000);
    SYS(0x05, 3, 3, 1000, 100, 12);
    etlb_p_thread(&pl, P, 4, 8);
    SYS(0x05, 3, 3, 8, 4, 13);
    etlb_p_imageid(&pl, P, 0x400000, 0x10000, 0x5000, "APP.EXE");
    etlb_classic(b, 0, etlb_guid_imageid, 0, 2, 0, 100, 14, &pl), pl.n = 0;
    etlb_p_dbgid(&pl, P, 0x400000, pdb_guid, 3, "app.pdb");
    etlb_classic(b, 0, etlb_guid_imageid, 36, 2, 0, 100, 14, &pl), pl.n = 0;
    etlb_p_image(&pl, P, 0x400000, 0x10000, 100, 0x1234, 0x5000, "\\Device\\HarddiskVolume2\\app\\app.exe");
    SYS(0x14, 3, 3, 0, 100, 15);
    etlb_p_image(&pl, P, K + 0x100000, 0x200000, 0, 0x99, 0x6000, "\\SystemRoot\\system32\\ntoskrnl.exe");
    SYS(0x14, 3, 3, 0, 0, 16);
    /* 1: a user sample with its whole stack */
    etlb_p_sample(&pl, P, 0x401000, 1000, 0);
    PERF(0x0F, 46, 20);
    uint64_t f1[2] = {0x401000, 0x402000};
    etlb_p_stack(&pl, P, 20, 100, 1000, f1, 2);
    PERF(0x18, 32, 20);
    etlb_end(b, how);

    etlb_begin(b, 1, 2);
    /* 2, 3: kernel samples; their user part comes when the thread leaves the kernel */
    etlb_p_sample(&pl, P, K + 0x100100, 1000, 0);
    PERF(0x0F, 46, 30);
    uint64_t f2[2] = {K + 0x100100, K + 0x100200};
    etlb_p_stack(&pl, P, 30, 100, 1000, f2, 2);
    PERF(0x18, 32, 30);
    etlb_p_sample(&pl, P, K + 0x100300, 1000, 0);
    PERF(0x0F, 46, 35);
    uint64_t f3[1] = {K + 0x100300};
    etlb_p_stack(&pl, P, 35, 100, 1000, f3, 1);
    PERF(0x18, 32, 35);
    uint64_t fu[2] = {0x401500, 0x402000};
    etlb_p_stack(&pl, P, 30, 100, 1000, fu, 2);
    PERF(0x18, 32, 40);
    /* 4: pid 4 has no user part */
    etlb_p_sample(&pl, P, K + 0x100400, 8, 0);
    PERF(0x0F, 46, 50);
    uint64_t f4[1] = {K + 0x100400};
    etlb_p_stack(&pl, P, 50, 4, 8, f4, 1);
    PERF(0x18, 32, 50);
    etlb_end(b, how);

    etlb_begin(b, 0, 3);
    etlb_p_process(&pl, P, 200, 100, 0, "late.exe", "late.exe");
    SYS(0x03, 1, 4, 0, 200, 60);
    etlb_p_thread(&pl, P, 200, 2000);
    SYS(0x05, 1, 3, 2000, 200, 60);
    etlb_p_image(&pl, P, 0x10000000, 0x1000, 200, 0, 0x7000, "C:\\late\\late.dll");
    SYS(0x03, 10, 3, 2000, 200, 61);             /* a load: logged in the process group */
    /* 5: in late.dll; 6: after it was unloaded */
    etlb_p_sample(&pl, P, 0x10000100, 2000, 0);
    PERF(0x0F, 46, 62);
    etlb_p_image(&pl, P, 0x10000000, 0x1000, 200, 0, 0x7000, "C:\\late\\late.dll");
    SYS(0x14, 2, 3, 0, 200, 63);
    etlb_p_sample(&pl, P, 0x10000100, 2000, 0);
    PERF(0x0F, 46, 64);
    /* 7: a thread not known yet (its end comes later) */
    etlb_p_sample(&pl, P, 0x401000, 3000, 0);
    PERF(0x0F, 46, 70);
    etlb_p_thread(&pl, P, 100, 3000);
    SYS(0x05, 2, 3, 3000, 100, 80);
    /* 8: a kernel sample whose thread never returns to user mode */
    etlb_p_sample(&pl, P, K + 0x100500, 1000, 0);
    PERF(0x0F, 46, 90);
    uint64_t f8[2] = {K + 0x100500, K + 0x100600};
    etlb_p_stack(&pl, P, 90, 100, 1000, f8, 2);
    PERF(0x18, 32, 90);
    etlb_p_process(&pl, P, 200, 100, 0, "late.exe", "late.exe");
    SYS(0x03, 2, 4, 0, 200, 95);
    etlb_p_process(&pl, P, 100, 4, 1, "app.exe", "app.exe -x");
    SYS(0x03, 4, 4, 0, 100, 99);
    etlb_end(b, how);
#undef SYS
#undef PERF
    eb_free(&pl);
}

static int stack_is(const hs_etl_trace *t, const hs_etl_sample *s, const uint64_t *want, uint32_t n)
{
    if (hs_etl_depth(s) != n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (hs_etl_frame(t, s, i) != want[i])
            return 0;
    return 1;
}

/* A line per fact of the model, to compare two decodes. */
static char *digest(const hs_etl_trace *t)
{
    size_t cap = 1 << 16, n = 0;
    char *d = malloc(cap);
#define ADD(...) (n += (size_t)snprintf(d + n, cap - n, __VA_ARGS__))
    for (uint32_t i = 0; i < t->nprocs && n < cap - 200; i++)
        ADD("p %u %u %llu %llu %x %s %s\n", t->procs[i].pid, t->procs[i].ppid, (unsigned long long)t->procs[i].start,
            (unsigned long long)t->procs[i].end, t->procs[i].flags, t->procs[i].name, t->procs[i].cmdline);
    for (uint32_t i = 0; i < t->nthreads && n < cap - 200; i++)
        ADD("t %u %u %x\n", t->threads[i].tid, t->threads[i].pid, t->threads[i].flags);
    for (uint32_t i = 0; i < t->nimages && n < cap - 300; i++)
        ADD("i %u %llx %llx %x %s %s %s\n", t->images[i].pid, (unsigned long long)t->images[i].base,
            (unsigned long long)t->images[i].size, t->images[i].flags, t->images[i].path,
            t->images[i].orig_name ? t->images[i].orig_name : "-", t->images[i].pdb_name ? t->images[i].pdb_name : "-");
    for (uint32_t i = 0; i < t->nsamples && n < cap - 400; i++) {
        const hs_etl_sample *s = &t->samples[i];
        ADD("s %llu %llx %u %u %u %x:", (unsigned long long)s->ts, (unsigned long long)s->ip, s->pid, s->tid, s->cpu,
            s->flags);
        for (uint32_t k = 0; k < hs_etl_depth(s); k++)
            ADD(" %llx", (unsigned long long)hs_etl_frame(t, s, k));
        ADD("\n");
    }
#undef ADD
    return d;
}

static void test_model(unsigned P)
{
    etlb b;
    build_model(&b, P, ETLB_PLAIN, 0);
    hs_etl_trace t;
    hs_etl_error err = {0};
    uint64_t K = kbase(P);
    int rc = hs_etl_read_mem(b.file.p, b.file.n, &t, &err);
    tap_check(rc == 0, NAME("model/%u/read", P), "%s", err.msg);
    if (rc) {
        etlb_free(&b);
        return;
    }
    const hs_etl_info *in = &t.info;
    tap_check(in->pointer_size == P && in->ncpus == 2 && in->clock == HS_ETL_CLOCK_QPC && in->clock_hz == 10000000 &&
                  in->events_lost == 7 && in->buffers_lost == 3 && in->buffers == 4 && in->cpus_seen == 2 &&
                  in->sequence_gaps == 0 && in->first_ts == 10 && in->last_ts == 99 && in->events == 29 &&
                  !strcmp(in->logger_name, "Test Logger") && !strcmp(in->log_file_name, "C:\\test.etl") &&
                  t.kernel_boundary == (P == 8 ? 0xFFFF000000000000ull : 0x80000000ull),
              NAME("model/%u/info", P), "ptr %u cpus %u clock %u hz %llu lost %u/%u buffers %u seen %u gaps %u "
              "ts %llu..%llu events %llu names '%s' '%s'", in->pointer_size, in->ncpus, in->clock,
              (unsigned long long)in->clock_hz, in->events_lost, in->buffers_lost, in->buffers, in->cpus_seen,
              in->sequence_gaps, (unsigned long long)in->first_ts, (unsigned long long)in->last_ts,
              (unsigned long long)in->events, in->logger_name, in->log_file_name);
    /* processes */
    tap_check(t.nprocs == 3 && t.procs[0].pid == 100 && !strcmp(t.procs[0].name, "app.exe") &&
                  !strcmp(t.procs[0].cmdline, "app.exe -x") && t.procs[0].ppid == 4 && t.procs[0].start == 0 &&
                  t.procs[0].end == HS_ETL_NEVER &&
                  t.procs[0].flags == (HS_ETL_SEEN_RUNDOWN_START | HS_ETL_SEEN_RUNDOWN_END) &&
                  t.procs[1].pid == 4 && !strcmp(t.procs[1].name, "System") && t.procs[2].pid == 200 &&
                  t.procs[2].start == 60 && t.procs[2].end == 95 &&
                  t.procs[2].flags == (HS_ETL_SEEN_START | HS_ETL_SEEN_END),
              NAME("model/%u/processes", P), "%u processes", t.nprocs);
    /* threads: 1000, 8 (rundown), 2000 (started), 3000 (only its end) */
    tap_check(t.nthreads == 4 && t.threads[0].tid == 1000 && t.threads[0].process == 0 && t.threads[2].tid == 2000 &&
                  t.threads[2].start == 60 && t.threads[2].process == 2 && t.threads[3].tid == 3000 &&
                  t.threads[3].end == 80 && t.threads[3].flags == HS_ETL_SEEN_END,
              NAME("model/%u/threads", P), "%u threads", t.nthreads);
    /* images, with the ImageID and DbgID_RSDS records that came before */
    const hs_etl_image *app = t.nimages > 0 ? &t.images[0] : NULL, *nt = t.nimages > 1 ? &t.images[1] : NULL,
                       *late = t.nimages > 2 ? &t.images[2] : NULL;
    tap_check(t.nimages == 3 && app->base == 0x400000 && app->size == 0x10000 && app->checksum == 0x1234 &&
                  app->timestamp == 0x5000 && !strcmp(app->path, "\\Device\\HarddiskVolume2\\app\\app.exe") &&
                  !strcmp(app->name, "app.exe") && app->orig_name && !strcmp(app->orig_name, "APP.EXE") &&
                  app->pdb_name && !strcmp(app->pdb_name, "app.pdb") && app->pdb_age == 3 &&
                  !memcmp(app->pdb_guid, pdb_guid, 16) &&
                  app->flags == (HS_ETL_SEEN_RUNDOWN_START | HS_ETL_IMAGE_ID | HS_ETL_IMAGE_RSDS) &&
                  app->process == 0,
              NAME("model/%u/image-rundown-and-id", P), "%u images", t.nimages);
    tap_check(nt && (nt->flags & HS_ETL_IMAGE_KERNEL) && !strcmp(nt->name, "ntoskrnl.exe") && nt->pid == 0 && late &&
                  !strcmp(late->name, "late.dll") && late->load == 61 && late->unload == 63 &&
                  late->flags == (HS_ETL_SEEN_START | HS_ETL_SEEN_END) && !(late->flags & HS_ETL_IMAGE_KERNEL),
              NAME("model/%u/image-kernel-load-unload", P), "nt flags %x, late load %llu unload %llu",
              nt ? nt->flags : 0, late ? (unsigned long long)late->load : 0,
              late ? (unsigned long long)late->unload : 0);
    /* samples and their stacks */
    tap_check(t.nsamples == 8, NAME("model/%u/samples", P), "%u samples", t.nsamples);
    if (t.nsamples == 8) {
        const hs_etl_sample *s = t.samples;
        uint64_t w1[] = {0x401000, 0x402000};
        uint64_t w2[] = {K + 0x100100, K + 0x100200, 0x401500, 0x402000};
        uint64_t w3[] = {K + 0x100300, 0x401500, 0x402000};
        uint64_t w4[] = {K + 0x100400};
        uint64_t w8[] = {K + 0x100500, K + 0x100600};
        tap_check(s[0].pid == 100 && s[0].flags == HS_ETL_SAMPLE_STACK && stack_is(&t, &s[0], w1, 2) &&
                      s[0].process == 0 && s[0].cpu == 0,
                  NAME("model/%u/user-stack", P), "flags %x depth %u", s[0].flags, hs_etl_depth(&s[0]));
        tap_check(s[1].flags == (HS_ETL_SAMPLE_KERNEL | HS_ETL_SAMPLE_STACK) && stack_is(&t, &s[1], w2, 4) &&
                      s[1].stack.kern_depth == 2 && s[1].stack.user_depth == 2 && s[1].cpu == 1 &&
                      s[2].flags == (HS_ETL_SAMPLE_KERNEL | HS_ETL_SAMPLE_STACK) && stack_is(&t, &s[2], w3, 3) &&
                      s[1].stack.user_frames == s[2].stack.user_frames,
                  NAME("model/%u/deferred-user-part", P), "depths %u, %u", hs_etl_depth(&s[1]),
                  hs_etl_depth(&s[2]));
        tap_check(s[3].pid == 4 && s[3].flags == (HS_ETL_SAMPLE_KERNEL | HS_ETL_SAMPLE_STACK) &&
                      stack_is(&t, &s[3], w4, 1),
                  NAME("model/%u/pid4-kernel-only", P), "flags %x depth %u", s[3].flags, hs_etl_depth(&s[3]));
        const hs_etl_image *m5 = hs_etl_image_at(&t, s[4].pid, s[4].ip, s[4].ts);
        const hs_etl_image *m6 = hs_etl_image_at(&t, s[5].pid, s[5].ip, s[5].ts);
        tap_check(s[4].pid == 200 && s[4].flags == 0 && hs_etl_depth(&s[4]) == 0 && m5 == late && !m6 &&
                      s[4].process == 2,
                  NAME("model/%u/image-by-time", P), "pid %u, at 62 %s, at 64 %s", s[4].pid, m5 ? m5->name : "none",
                  m6 ? m6->name : "none");
        tap_check(s[6].pid == 100 && s[6].tid == 3000 && s[6].process == 0,
                  NAME("model/%u/pid-from-later-thread", P), "pid %u", s[6].pid);
        tap_check(s[7].flags == (HS_ETL_SAMPLE_KERNEL | HS_ETL_SAMPLE_STACK | HS_ETL_SAMPLE_USER_MISSING) &&
                      stack_is(&t, &s[7], w8, 2),
                  NAME("model/%u/user-part-missing", P), "flags %x depth %u", s[7].flags, hs_etl_depth(&s[7]));
        const hs_etl_image *k = hs_etl_image_at(&t, 100, s[1].ip, s[1].ts);
        const hs_etl_image *a = hs_etl_image_at(&t, 100, s[0].ip, s[0].ts);
        tap_check(k == nt && a == app && !hs_etl_image_at(&t, 200, s[0].ip, s[0].ts) &&
                      hs_etl_process_at(&t, 200, 70) == &t.procs[2] && !hs_etl_process_at(&t, 200, 59),
                  NAME("model/%u/lookups", P), "kernel %s, user %s", k ? k->name : "none", a ? a->name : "none");
        tap_check(t.stacks.stackwalks == 6 && t.stacks.orphans == 0, NAME("model/%u/stack-stats", P),
                  "stackwalks %llu orphans %llu", (unsigned long long)t.stacks.stackwalks,
                  (unsigned long long)t.stacks.orphans);
        tap_check(hs_etl_seconds(&t, 60) == 50 / 1e7, NAME("model/%u/seconds", P), "%g", hs_etl_seconds(&t, 60));
    }
    /* compressed buffers, and 16-bit processor indexes, give the same model */
    char *d0 = digest(&t);
    static const int hows[] = {ETLB_XPRESS, ETLB_LZNT1, ETLB_PLAIN};
    for (int h = 0; h < 3; h++) {
        etlb c;
        build_model(&c, P, hows[h], hows[h] == ETLB_PLAIN);
        hs_etl_trace u;
        int rc2 = hs_etl_read_mem(c.file.p, c.file.n, &u, &err);
        char *d1 = rc2 ? NULL : digest(&u);
        const char *what = hows[h] == ETLB_XPRESS ? "xpress" : hows[h] == ETLB_LZNT1 ? "lznt1" : "proc-index";
        tap_check(rc2 == 0 && !strcmp(d0, d1) && u.info.buffers_compressed == (hows[h] == ETLB_PLAIN ? 0u : 3u) &&
                      u.info.compression == (uint32_t)hows[h] && c.file.n < b.file.n + (hows[h] == ETLB_PLAIN ? 1 : 0),
                  NAME("model/%u/same-when-%s", P, what), "rc %d (%s), %zu bytes vs %zu plain", rc2, err.msg,
                  c.file.n, b.file.n);
        free(d1);
        hs_etl_trace_free(&u);
        etlb_free(&c);
    }
    free(d0);
    hs_etl_trace_free(&t);
    etlb_free(&b);
}

/* ---- stack keys --------------------------------------------------------------- */

static void test_stack_keys(unsigned P)
{
    etlb b;
    etlb_bytes pl = {0};
    uint64_t K = kbase(P);
    etlb_init(&b, P, 1, 8192);
    etlb_begin(&b, 0, 1);
#define SYS(g, ty, v, tid, pid, ts) (etlb_sys(&b, 0, g, ty, v, tid, pid, ts, &pl), pl.n = 0)
#define PERF(g, ty, ts) (etlb_perf(&b, g, ty, 2, ts, 0, 0, &pl), pl.n = 0)
#define SAMPLE(ip, tid, ts) (etlb_p_sample(&pl, P, ip, tid, 0), PERF(0x0F, 46, ts))
#define REF(kernel, ets, tid, key, ts) (etlb_p_keyref(&pl, P, ets, 0, tid, key), PERF(0x18, kernel ? 37 : 38, ts))
#define DEF(type, key, fr, n, ts) (etlb_p_keydef(&pl, P, key, fr, n), PERF(0x18, type, ts))
    etlb_p_process(&pl, P, 100, 4, 0, "keys.exe", "");
    SYS(0x03, 3, 4, 0, 100, 1);
    etlb_p_thread(&pl, P, 100, 1000);
    SYS(0x05, 3, 3, 1000, 100, 2);
    etlb_p_thread(&pl, P, 100, 1001);
    SYS(0x05, 3, 3, 1001, 100, 3);
    etlb_p_thread(&pl, P, 0, 0);
    SYS(0x05, 3, 3, 0, 0, 4);
    uint64_t K1 = K + 0xAA0, K2 = K + 0xAB0, K3 = K + 0xAC0, K4 = K + 0xAD0, U1 = K + 0xBA0, U2 = K + 0xBB0,
             U3 = K + 0xBC0;
    SAMPLE(K + 0x10, 1000, 20);                  /* A: kernel key K1, then user key U1 */
    REF(1, 20, 1000, K1, 20);
    REF(0, 20, 1000, U1, 21);
    SAMPLE(0x401000, 1001, 30);                  /* B: user key U1 (shared with A) */
    REF(0, 30, 1001, U1, 30);
    SAMPLE(K + 0x30, 1000, 40);                  /* C: kernel key K2; its user part is E's */
    REF(1, 40, 1000, K2, 40);
    SAMPLE(K + 0x10, 0, 50);                     /* D: idle, kernel key K1 only */
    REF(1, 50, 0, K1, 50);
    SAMPLE(K + 0x50, 1000, 60);                  /* E: kernel key K3 never defined, user key U2 */
    REF(1, 60, 1000, K3, 60);
    REF(0, 60, 1000, U2, 61);
    uint64_t fu3[2] = {0x500, 0x600};
    DEF(34, U3, fu3, 2, 70);                     /* a key created, then used */
    SAMPLE(0x500, 1001, 71);                     /* F: user key U3 */
    REF(0, 71, 1001, U3, 72);
    uint64_t fk1[2] = {K + 0x10, K + 0x20};
    DEF(35, K1, fk1, 2, 80);                     /* K1 deleted: A, D get their kernel frames */
    SAMPLE(K + 0x40, 1001, 85);                  /* G: kernel key K4; its thread never returns */
    REF(1, 85, 1001, K4, 85);
    uint64_t fu1[2] = {0x401000, 0x402000}, fk2[1] = {K + 0x30}, fu2[1] = {0x700}, fk4[1] = {K + 0x40};
    DEF(36, U1, fu1, 2, 90);                     /* the rundown of the rest */
    DEF(36, K2, fk2, 1, 90);
    DEF(36, U2, fu2, 1, 90);
    DEF(36, K4, fk4, 1, 90);
    etlb_end(&b, ETLB_PLAIN);
#undef SYS
#undef PERF
#undef SAMPLE
#undef REF
#undef DEF
    hs_etl_trace t;
    hs_etl_error err = {0};
    int rc = hs_etl_read_mem(b.file.p, b.file.n, &t, &err);
    tap_check(rc == 0 && t.nsamples == 7, NAME("keys/%u/read", P), "rc %d (%s), %u samples", rc, err.msg,
              t.nsamples);
    if (rc == 0 && t.nsamples == 7) {
        const hs_etl_sample *s = t.samples;
        uint64_t a[] = {K + 0x10, K + 0x20, 0x401000, 0x402000}, bb[] = {0x401000, 0x402000}, c[] = {K + 0x30, 0x700},
                 d[] = {K + 0x10, K + 0x20}, f[] = {0x500, 0x600}, g[] = {K + 0x40};
        tap_check(stack_is(&t, &s[0], a, 4) && s[0].stack.kern_depth == 2, NAME("keys/%u/kernel-and-user-key", P),
                  "depth %u", hs_etl_depth(&s[0]));
        tap_check(stack_is(&t, &s[1], bb, 2) && s[1].stack.user_frames == s[0].stack.user_frames,
                  NAME("keys/%u/user-key-shared", P), "depth %u", hs_etl_depth(&s[1]));
        tap_check(stack_is(&t, &s[2], c, 2), NAME("keys/%u/user-part-of-the-next-exit", P), "depth %u",
                  hs_etl_depth(&s[2]));
        tap_check(stack_is(&t, &s[3], d, 2) && s[3].pid == 0, NAME("keys/%u/idle-kernel-only", P), "depth %u",
                  hs_etl_depth(&s[3]));
        tap_check(!(s[4].flags & HS_ETL_SAMPLE_STACK) && hs_etl_depth(&s[4]) == 0,
                  NAME("keys/%u/kernel-key-never-defined", P), "flags %x depth %u", s[4].flags, hs_etl_depth(&s[4]));
        tap_check(stack_is(&t, &s[5], f, 2), NAME("keys/%u/created-key", P), "depth %u", hs_etl_depth(&s[5]));
        tap_check(stack_is(&t, &s[6], g, 1) && (s[6].flags & HS_ETL_SAMPLE_USER_MISSING),
                  NAME("keys/%u/user-part-never-came", P), "flags %x depth %u", s[6].flags, hs_etl_depth(&s[6]));
        tap_check(t.stacks.key_refs == 9 && t.stacks.key_defs == 6 && t.stacks.kernel_keys_unresolved == 1 &&
                      t.stacks.user_keys_unresolved == 0 && t.stacks.orphans == 0,
                  NAME("keys/%u/stats", P), "refs %llu defs %llu unresolved %llu/%llu orphans %llu",
                  (unsigned long long)t.stacks.key_refs, (unsigned long long)t.stacks.key_defs,
                  (unsigned long long)t.stacks.kernel_keys_unresolved,
                  (unsigned long long)t.stacks.user_keys_unresolved, (unsigned long long)t.stacks.orphans);
    }
    hs_etl_trace_free(&t);
    eb_free(&pl);
    etlb_free(&b);
}

/* ---- per-CPU merging -------------------------------------------------------------- */

static void marker(etlb *b, uint64_t ts)
{
    etlb_bytes pl = {0};
    eb_u64(&pl, ts);
    etlb_sys(b, 0, 0x40, 1, 2, 1, 1, ts, &pl);
    eb_free(&pl);
}

static void test_merge(void)
{
    etlb b;
    etlb_init(&b, 8, 4, 1024);
    /* written out of order: CPU 2 (seq 3), CPU 0 (seq 5, then seq 1), CPU 1 (seq 2), CPU 300 (seq 4) */
    b.proc_index = 1;
    etlb_begin(&b, 2, 3);
    marker(&b, 5), marker(&b, 40), marker(&b, 200);
    etlb_end(&b, ETLB_PLAIN);
    b.proc_index = 0;
    etlb_begin(&b, 0, 5);
    marker(&b, 100), marker(&b, 130);
    etlb_end(&b, ETLB_PLAIN);
    etlb_begin(&b, 0, 1);
    marker(&b, 10), marker(&b, 40), marker(&b, 70);
    etlb_end(&b, ETLB_PLAIN);
    etlb_begin(&b, 1, 2);
    marker(&b, 20), marker(&b, 40), marker(&b, 90);
    etlb_end(&b, ETLB_PLAIN);
    b.proc_index = 1;
    etlb_begin(&b, 300, 4);
    marker(&b, 150);
    etlb_end(&b, ETLB_PLAIN);
    rec r;
    hs_etl_error err = {0};
    int rc = decode_events(&b, &r, &err);
    static const struct { uint64_t ts; uint16_t cpu; } want[] = {
        {5, 2}, {10, 0}, {20, 1}, {40, 0}, {40, 1}, {40, 2}, {70, 0}, {90, 1}, {100, 0}, {130, 0}, {150, 300}, {200, 2},
    };
    int ok = rc == 0 && r.n == 12;
    char got[256] = "";
    size_t gn = 0;
    for (int i = 0; i < r.n && i < 12; i++) {
        ok &= r.ev[i].ts == want[i].ts && r.ev[i].cpu == want[i].cpu;
        gn += (size_t)snprintf(got + gn, sizeof got - gn, " %llu@%u", (unsigned long long)r.ev[i].ts, r.ev[i].cpu);
    }
    tap_check(ok, "merge/by-timestamp-then-cpu", "rc %d (%s), order:%s", rc, err.msg, got);
    hs_etl_file *f;
    if (hs_etl_open_mem(&f, b.file.p, b.file.n, &err) == 0) {
        const hs_etl_info *in = hs_etl_file_info(f);
        tap_check(in->buffers == 6 && in->cpus_seen == 4 && in->sequence_gaps == 0, "merge/index",
                  "buffers %u cpus %u gaps %u", in->buffers, in->cpus_seen, in->sequence_gaps);
        hs_etl_close(f);
    } else {
        tap_fail("merge/index", "%s", err.msg);
    }
    /* a buffer lost in the middle (sequence 6 missing) and flagged buffers */
    b.proc_index = 0;
    b.extra_flags = 0x0002 | 0x0004;
    etlb_begin(&b, 1, 7);
    marker(&b, 300);
    etlb_end(&b, ETLB_PLAIN);
    if (hs_etl_open_mem(&f, b.file.p, b.file.n, &err) == 0) {
        const hs_etl_info *in = hs_etl_file_info(f);
        tap_check(in->sequence_gaps == 1 && in->buffers_events_lost == 1 && in->buffers_buffer_lost == 1,
                  "merge/lost-buffers-counted", "gaps %u, events lost %u, buffer lost %u", in->sequence_gaps,
                  in->buffers_events_lost, in->buffers_buffer_lost);
        hs_etl_close(f);
    } else {
        tap_fail("merge/lost-buffers-counted", "%s", err.msg);
    }
    etlb_free(&b);
}

/* ---- errors ------------------------------------------------------------------------ */

static void check_error(const char *nm, const uint8_t *p, size_t n, const char *want, uint64_t want_offset)
{
    hs_etl_trace t;
    hs_etl_error err = {0};
    int rc = hs_etl_read_mem(p, n, &t, &err);
    /* want_offset: -1 none, -2 any (then want is the end of the message) */
    size_t wl = strlen(want), ml = strlen(err.msg);
    int ok = rc == -1 &&
             (want_offset == (uint64_t)-2 ? err.has_offset && ml >= wl && !strcmp(err.msg + ml - wl, want)
                                          : !strcmp(err.msg, want) &&
                                                (want_offset == (uint64_t)-1 ? !err.has_offset
                                                                             : err.has_offset && err.offset == want_offset));
    tap_check(ok, nm, "rc %d, \"%s\" (offset %llu)", rc, err.msg, (unsigned long long)err.offset);
    hs_etl_trace_free(&t);
}

static void test_errors(void)
{
    etlb b;
    build_model(&b, 8, ETLB_PLAIN, 0);
    uint8_t *p = malloc(b.file.n + 64);
    size_t n = b.file.n;
    check_error("errors/empty", p, 0, "the file is empty (not an ETL file)", (uint64_t)-1);
    check_error("errors/tiny", b.file.p, 10, "the file has 10 bytes, too few for an ETL buffer header (not an ETL file?)",
                (uint64_t)-1);
    check_error("errors/cut-in-buffer-header", b.file.p, 4096 + 50,
                "byte 4096 (0x1000): the file ends 50 bytes into a 72-byte buffer header (truncated)", 4096);
    check_error("errors/cut-in-buffer", b.file.p, 4096 + 100,
                "byte 4096 (0x1000): the file ends 100 bytes into this buffer of 4096 bytes (truncated)", 4096);
    check_error("errors/cut-in-header-buffer", b.file.p, 300,
                "byte 0 (0x0): the file ends 300 bytes into its header buffer of 4096 bytes (truncated)", 0);
    memcpy(p, b.file.p, n);
    p[4096] = 10, p[4097] = p[4098] = p[4099] = 0;
    check_error("errors/buffer-size-below-header", p, n,
                "byte 4096 (0x1000): buffer size 10 is smaller than its 72-byte header (corrupt buffer header)", 4096);
    memcpy(p, b.file.p, n);
    p[8192 + 4] = 0xF0, p[8192 + 5] = 0xFF;     /* SavedOffset past the buffer */
    check_error("errors/data-end-past-buffer", p, n,
                "byte 8192 (0x2000): the events of this buffer end at 65520, outside 72..4096 (corrupt buffer header)",
                8192);
    memcpy(p, b.file.p, n);
    p[4096 + 72 + 4] = 0xF0, p[4096 + 72 + 5] = 0x0F;   /* the first event's size */
    check_error("errors/event-past-data", p, n, "byte 4168 (0x1048): event runs past the buffer's data", 4168);
    memcpy(p, b.file.p, n);
    p[4096 + 72 + 3] = 0x40;                     /* no trace header marker */
    check_error("errors/bad-marker", p, n, "byte 4168 (0x1048): not an event header (no trace header marker)", 4168);
    memcpy(p, b.file.p, n);
    p[4096 + 72 + 2] = 0x30;                     /* an unknown header kind */
    check_error("errors/unknown-kind", p, n, "byte 4168 (0x1048): unknown trace header kind", 4168);
    memcpy(p, b.file.p, n);
    memset(p, 'A', 4096);
    check_error("errors/not-etl", p, n,
                "byte 0 (0x0): no valid ETL header buffer here (size 1094795585, data end 1094795585, flags 0x4141): "
                "not an ETL file?", 0);
    memcpy(p, b.file.p, n);
    p[72 + 7] = 0x03;                            /* the first event is not the logfile header */
    check_error("errors/no-logfile-header", p, n, "byte 72 (0x48): the first event is not a logfile header: not an "
                "ETL file?", 72);
    {
        /* the first event is a short "logfile header" */
        memcpy(p, b.file.p, n);
        p[72 + 4] = 40, p[72 + 5] = 0;
        check_error("errors/short-logfile-header", p, n, "byte 72 (0x48): the logfile header of 8 bytes is too short",
                    72);
    }
    etlb_free(&b);

    /* compression */
    build_model(&b, 8, ETLB_XPRESS, 0);
    n = b.file.n;
    uint32_t b1 = 4096;                          /* the first compressed buffer */
    memcpy(p, b.file.p, n);
    memcpy(p + b1 + 72, "\xff\xff\xff\xff\x00\x00", 6);
    check_error("errors/xpress-corrupt", p, n, "byte 4174 (0x104e): XPRESS data of the buffer at byte 4096: match "
                "reaches before the start of the output", 4096 + 78);
    memcpy(p, b.file.p, n);
    p[b1 + 4] = 0x00, p[b1 + 5] = 0x0F;          /* SavedOffset 3840: more than it holds */
    check_error("errors/xpress-shorter-than-said", p, n, "byte 4096 (0x1000): the buffer here decompresses to 1024 "
                "bytes, its header says 3768", 4096);
    memcpy(p, b.file.p, n);
    p[b1 + 4] = 0x00, p[b1 + 5] = 0x01;          /* SavedOffset 256: less than it holds */
    check_error("errors/xpress-longer-than-said", p, n, "XPRESS data of the buffer at byte 4096: output larger than "
                "expected", (uint64_t)-2);
    memcpy(p, b.file.p, n);
    p[b.header_state_at] = 4;                    /* XPRESS Huffman */
    check_error("errors/unsupported-format", p, n, "byte 4096 (0x1000): the buffers are compressed in format 4 "
                "(XPRESS Huffman), which hookscope cannot read (it reads XPRESS and LZNT1)", 4096);
    memcpy(p, b.file.p, n);
    p[b.logfile_mode_at + 3] &= (uint8_t)~0x04;  /* the header names no compression */
    check_error("errors/compressed-not-announced", p, n,
                "byte 4096 (0x1000): a compressed buffer in a file whose header names no compression", 4096);
    free(p);
    etlb_free(&b);

    hs_etl_trace t;
    hs_etl_error err = {0};
    int rc = hs_etl_read_file("/nonexistent/trace.etl", &t, &err);
    tap_check(rc == -1 && !strcmp(err.msg, "cannot open /nonexistent/trace.etl"), "errors/no-such-file", "%s",
              err.msg);
}

/* Each header kind's event whose size is exactly the data left is read,
 * one byte more is refused: in a buffer allocated to that size, so that
 * the sanitizer build also sees a read past it. (The whole-file errors
 * above only try a size far past the data.) */
static void test_event_size_edges(void)
{
    static const struct {
        const char *what;
        uint8_t kind, marker, size_at;
        uint32_t header;
    } kinds[] = {
        { "system64", HS_ETL_HDR_SYSTEM64, 0xC0, 4, 32 },
        { "compact64", HS_ETL_HDR_COMPACT64, 0xC0, 4, 24 },
        { "perfinfo64", HS_ETL_HDR_PERFINFO64, 0xC0, 4, 16 },
        { "full64", HS_ETL_HDR_FULL64, 0xC0, 0, 48 },
        { "instance64", HS_ETL_HDR_INSTANCE64, 0xC0, 0, 72 },
        { "event64", HS_ETL_HDR_EVENT64, 0xC0, 0, 80 },
        { "timed", HS_ETL_HDR_TIMED, 0xC0, 0, 4 },
        { "message", 0, 0x80, 0, 4 },
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        uint32_t size = kinds[k].header + 16;
        for (uint32_t avail = size; avail >= size - 1; avail--) {
            uint8_t *p = calloc(1, avail);
            p[kinds[k].size_at] = (uint8_t)size;
            p[2] = kinds[k].kind;
            p[3] = kinds[k].marker;
            hs_etl_event ev;
            int has_ts;
            const char *why = "";
            int rc = hs_etl_hdr_parse(p, avail, &ev, &has_ts, &why);
            if (avail == size)
                tap_check(rc == 0 && ev.total == size, NAME("edges/%s-fits", kinds[k].what),
                          "a %u-byte event in %u bytes: rc %d, total %u (%s)", size, avail, rc, rc ? 0 : ev.total,
                          why);
            else
                tap_check(rc == -1 && strstr(why, "runs past the buffer's data"),
                          NAME("edges/%s-one-byte-past", kinds[k].what), "a %u-byte event in %u bytes: rc %d (%s)",
                          size, avail, rc, why);
            free(p);
        }
    }
}

int main(void)
{
    test_header_kinds(8);
    test_header_kinds(4);
    test_model(8);
    test_model(4);
    test_stack_keys(8);
    test_stack_keys(4);
    test_merge();
    test_errors();
    test_event_size_edges();
    return tap_status();
}
