/*
 * tests/unit/test_etl_fuzz.c - the ETL reader on thousands of damaged
 * traces, with a fixed seed: each must give a model or a one-line error,
 * never a crash or a hang, and a model it gives must hold together (every
 * stack inside the frame pool, every index inside its table, a stack flag
 * exactly when there are frames).
 *
 * The traces: small real ones cut from the fixtures (the header buffer and
 * the first 60 KiB of events of one buffer of ppt-win7-x64; the header
 * buffer and the first 16 compressed buffers of perfview-win10-x86) and
 * synthetic ones (etl_build.c: plain, XPRESS and LZNT1 buffers, 32- and
 * 64-bit, stack keys), damaged by truncation (zero length included), bit
 * flips, runs of random, zero or 0xFF bytes, random values in buffer
 * header fields and event sizes, and copied blocks; plus truncations and a
 * few bit flips of the whole fixtures.
 *
 * HS_ETL_FUZZ_SEED and HS_ETL_FUZZ_SCALE (a multiplier of the case counts)
 * change the run for a longer search by hand; the test runs the default;
 * HS_FUZZ_SECONDS goes on for that long (fuzztime.h: the sanitizer run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/etl/etl.h"
#include "tests/unit/etl_build.h"
#include "tests/unit/fuzztime.h"
#include "tests/unit/tap.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static size_t below(size_t n)
{
    return n ? (size_t)(rnd() % n) : 0;
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*n ? *n : 1);
    if (fread(p, 1, *n, f) != *n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    return p;
}

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static void wr32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }

/* The header buffer shrunk to its data, and the first ~60 KiB of events of
 * the buffer after it, cut at an event boundary. */
static uint8_t *mini_ppt(size_t *n)
{
    size_t fn;
    uint8_t *f = slurp("build/fixtures/etl/ppt-win7-x64.etl", &fn);
    if (!f || fn < 0x200000)
        return NULL;
    uint32_t hend = (rd32(f + 0x30) + 7) & ~7u;  /* the header buffer's events end at Offset */
    const uint8_t *b = f + rd32(f);
    size_t at = 72;
    while (at < 60000) {
        uint8_t kind = b[at + 2];
        uint32_t size = kind <= 4 || kind == 0x10 || kind == 0x11 ? (uint32_t)(b[at + 4] | b[at + 5] << 8)
                                                                  : (uint32_t)(b[at] | b[at + 1] << 8);
        at += (size + 7) & ~7u;
    }
    uint8_t *m = malloc(hend + at);
    memcpy(m, f, hend);
    wr32(m, hend);
    memcpy(m + hend, b, at);
    wr32(m + hend, (uint32_t)at);
    wr32(m + hend + 4, (uint32_t)at);
    wr32(m + hend + 0x30, (uint32_t)at);
    free(f);
    *n = hend + at;
    return m;
}

/* The header buffer and the first 16 compressed buffers. */
static uint8_t *mini_perfview(size_t *n)
{
    size_t fn;
    uint8_t *f = slurp("build/fixtures/etl/perfview-win10-x86.etl", &fn);
    if (!f)
        return NULL;
    size_t at = 0;
    for (int i = 0; i < 17 && at + 72 <= fn; i++)
        at += rd32(f + at);
    *n = at;
    return f;
}

static void synthetic(etlb *b, unsigned P, int how)
{
    etlb_bytes pl = {0};
    uint64_t K = P == 8 ? 0xFFFFF80000000000ull : 0x80000000ull;
    etlb_init(b, P, 2, 2048);
    if (how != ETLB_PLAIN)
        etlb_set_compression(b, (uint32_t)how);
    for (int buf = 0; buf < 3; buf++) {
        etlb_begin(b, (uint16_t)(buf & 1), (uint64_t)buf + 1);
        uint64_t t0 = 100 * (uint64_t)buf + 10;
        etlb_p_process(&pl, P, 100 + buf, 4, buf & 1, "fuzz.exe", "fuzz.exe -a");
        etlb_sys(b, 0, 0x03, 3, 4, 0, 100, t0, &pl), pl.n = 0;
        etlb_p_thread(&pl, P, 100 + buf, 1000 + buf);
        etlb_sys(b, buf == 1, 0x05, 3, 3, 1000, 100, t0 + 1, &pl), pl.n = 0;
        etlb_p_image(&pl, P, 0x400000, 0x10000, 100 + buf, 1, 2, "\\Device\\HarddiskVolume1\\fuzz.exe");
        etlb_sys(b, 0, 0x14, 3, 3, 0, 100, t0 + 2, &pl), pl.n = 0;
        etlb_p_imageid(&pl, P, 0x400000, 0x10000, 2, "FUZZ.EXE");
        etlb_classic(b, buf == 2, etlb_guid_imageid, 0, 2, 0, 100, t0 + 2, &pl), pl.n = 0;
        for (int s = 0; s < 4; s++) {
            uint64_t ts = t0 + 3 + 2 * (uint64_t)s, fr[3] = {K + 0x100 * (uint64_t)s, K + 0x200, 0x401000};
            etlb_p_sample(&pl, P, fr[0], 1000 + buf, (uint8_t)s);
            etlb_perf(b, 0x0F, 46, 2, ts, s == 1, s, &pl), pl.n = 0;
            if (s == 2) {
                etlb_p_keyref(&pl, P, ts, 100, 1000 + buf, K + 0x77);
                etlb_perf(b, 0x18, 37, 2, ts, 0, 0, &pl), pl.n = 0;
                etlb_p_keydef(&pl, P, K + 0x77, fr, 2);
                etlb_perf(b, 0x18, 36, 2, ts + 1, 0, 0, &pl), pl.n = 0;
            } else {
                etlb_p_stack(&pl, P, ts, 100, 1000 + buf, fr, s == 3 ? 2 : 3);
                etlb_perf(b, 0x18, 32, 2, ts, 0, 0, &pl), pl.n = 0;
            }
        }
        eb_put(&pl, "payload", 7);
        etlb_evh(b, etlb_guid_other, 1, 2, 0, 1000, 100, t0 + 20, NULL, 0, &pl), pl.n = 0;
        etlb_end(b, how);
    }
    eb_free(&pl);
}

/* Decode one damaged trace; returns NULL or what is wrong. */
static const char *one(const uint8_t *p, size_t n, int *decoded)
{
    static char why[300];
    hs_etl_trace t;
    hs_etl_error err;
    memset(&err, 0, sizeof err);
    int rc = hs_etl_read_mem(p, n, &t, &err);
    *decoded = rc == 0;
    if (rc != 0) {
        hs_etl_trace_free(&t);
        if (rc != -1)
            return "returned neither 0 nor -1";
        if (!err.msg[0] || strchr(err.msg, '\n'))
            return "an error without a one-line message";
        return NULL;
    }
    const char *bad = NULL;
    for (uint32_t i = 0; i < t.nsamples && !bad; i++) {
        const hs_etl_sample *s = &t.samples[i];
        if ((uint64_t)s->stack.kern_frames + s->stack.kern_depth > t.nframes || (uint64_t)s->stack.user_frames + s->stack.user_depth > t.nframes)
            bad = "a stack outside the frame pool";
        else if (s->process != HS_ETL_NONE && s->process >= t.nprocs)
            bad = "a sample's process index out of range";
        else if (!!(s->flags & HS_ETL_SAMPLE_STACK) != (hs_etl_depth(s) > 0))
            bad = "the stack flag disagrees with the depth";
        else if (hs_etl_depth(s))
            (void)hs_etl_frame(&t, s, hs_etl_depth(s) - 1);
        if (!bad)
            (void)hs_etl_image_at(&t, s->pid, s->ip, s->ts);
    }
    for (uint32_t i = 0; i < t.nimages && !bad; i++)
        if (!t.images[i].path || !t.images[i].name || (t.images[i].process != HS_ETL_NONE && t.images[i].process >= t.nprocs))
            bad = "an image without a path or with a bad process index";
    for (uint32_t i = 0; i < t.nthreads && !bad; i++)
        if (t.threads[i].process != HS_ETL_NONE && t.threads[i].process >= t.nprocs)
            bad = "a thread's process index out of range";
    for (uint32_t i = 0; i < t.nprocs && !bad; i++)
        if (!t.procs[i].name || !t.procs[i].cmdline)
            bad = "a process without a name";
    if (bad)
        snprintf(why, sizeof why, "%s", bad);
    hs_etl_trace_free(&t);
    return bad ? why : NULL;
}

enum { TRUNCATE, FLIP, RUN, FIELD, COPY, NKINDS };
static const char *const kind_name[NKINDS] = {"truncate", "bit-flips", "byte-runs", "fields", "copies"};

static void damage(uint8_t *p, size_t *n, int kind)
{
    switch (kind) {
    case TRUNCATE:
        *n = below(*n + 1);
        break;
    case FLIP:
        for (int k = 1 + (int)below(16); k > 0; k--) {
            size_t at = below(*n);
            p[at] ^= (uint8_t)(1u << below(8));
        }
        break;
    case RUN: {
        size_t at = below(*n), len = 1 + below(16);
        int how = (int)below(3);
        for (size_t i = at; i < at + len && i < *n; i++)
            p[i] = how == 0 ? (uint8_t)rnd() : how == 1 ? 0 : 0xFF;
        break;
    }
    case FIELD: {
        /* a 16- or 32-bit field at an 8-byte boundary near the start of a
         * buffer or an event: sizes, offsets, flags, hook ids, CPUs */
        size_t at = below(*n) & ~(size_t)7;
        at += below(8) & ~(size_t)1;
        static const uint32_t vals[] = {0, 1, 7, 8, 71, 72, 0xFF, 0xFFFF, 0x10000, 0x7FFFFFFF, 0xFFFFFFFF};
        uint32_t v = below(2) ? vals[below(sizeof vals / sizeof vals[0])] : (uint32_t)rnd();
        if (at + 4 <= *n && below(2))
            wr32(p + at, v);
        else if (at + 2 <= *n)
            p[at] = (uint8_t)v, p[at + 1] = (uint8_t)(v >> 8);
        break;
    }
    default: {
        size_t len = 1 + below(4096), from = below(*n), to = below(*n);
        if (from + len > *n)
            len = *n - from;
        if (to + len > *n)
            len = *n - to;
        memmove(p + to, p + from, len);
    }
    }
}

static void campaign(const char *label, const uint8_t *orig, size_t n, int cases)
{
    uint8_t *p = malloc(n ? n : 1);
    int ok = 1, decoded = 0, errors = 0, d;
    char name[96];
    const char *why = one(orig, n, &d);
    snprintf(name, sizeof name, "fuzz/%s/undamaged", label);
    tap_check(!why && d, name, "%s", why ? why : "the undamaged trace does not decode");
    for (int kind = 0; kind < NKINDS; kind++) {
        ok = 1;
        decoded = errors = 0;
        double deadline = fuzz_time_slice();
        int c;
        for (c = 0; ok && fuzz_time_more(c, cases, deadline); c++) {
            size_t m = n;
            memcpy(p, orig, n);
            damage(p, &m, kind);
            why = one(p, m, &d);
            if (why) {
                snprintf(name, sizeof name, "fuzz/%s/%s", label, kind_name[kind]);
                tap_fail(name, "case %d (%zu bytes): %s", c, m, why);
                ok = 0;
            }
            decoded += d;
            errors += !d;
        }
        if (ok) {
            snprintf(name, sizeof name, "fuzz/%s/%s", label, kind_name[kind]);
            tap_ok(name);
            tap_diag("%s %s: %d cases, %d decoded, %d errors", label, kind_name[kind], c, decoded, errors);
        }
    }
    free(p);
}

int main(void)
{
    size_t n;
    int scale = getenv("HS_ETL_FUZZ_SCALE") ? atoi(getenv("HS_ETL_FUZZ_SCALE")) : 1;
    if (getenv("HS_ETL_FUZZ_SEED"))
        rng = strtoull(getenv("HS_ETL_FUZZ_SEED"), NULL, 0) | 1;
    if (scale < 1)
        scale = 1;
    fuzz_time_begin(6 * NKINDS);
    uint8_t *m = mini_ppt(&n);
    if (m) {
        campaign("ppt-mini", m, n, 300 * scale);
        free(m);
    } else {
        tap_fail("fuzz/ppt-mini", "build/fixtures/etl/ppt-win7-x64.etl is missing (run make fixtures)");
    }
    m = mini_perfview(&n);
    if (m) {
        campaign("perfview-mini", m, n, 300 * scale);
        free(m);
    } else {
        tap_fail("fuzz/perfview-mini", "build/fixtures/etl/perfview-win10-x86.etl is missing (run make fixtures)");
    }
    static const struct { unsigned ptr; int how; const char *label; } syn[] = {
        {8, ETLB_PLAIN, "synthetic-64"}, {4, ETLB_PLAIN, "synthetic-32"},
        {8, ETLB_XPRESS, "synthetic-xpress"}, {4, ETLB_LZNT1, "synthetic-lznt1"},
    };
    for (size_t i = 0; i < sizeof syn / sizeof syn[0]; i++) {
        etlb b;
        synthetic(&b, syn[i].ptr, syn[i].how);
        campaign(syn[i].label, b.file.p, b.file.n, 400 * scale);
        etlb_free(&b);
    }
    /* the whole fixtures: truncations (found when the buffers are indexed)
     * and a few bit flips */
    static const char *const full[] = {"build/fixtures/etl/ppt-win7-x64.etl", "build/fixtures/etl/perfview-win10-x86.etl"};
    for (int f = 0; f < 2; f++) {
        uint8_t *orig = slurp(full[f], &n);
        if (!orig) {
            tap_fail("fuzz/full", "%s is missing (run make fixtures)", full[f]);
            continue;
        }
        uint8_t *p = malloc(n);
        int bad = 0, d;
        for (int c = 0; c < 60 && !bad; c++) {
            size_t k = n;
            memcpy(p, orig, n);
            damage(p, &k, c < 50 ? TRUNCATE : FLIP);
            const char *why = one(p, k, &d);
            if (why) {
                tap_fail(f ? "fuzz/perfview-full" : "fuzz/ppt-full", "case %d (%zu bytes): %s", c, k, why);
                bad = 1;
            }
        }
        if (!bad)
            tap_ok(f ? "fuzz/perfview-full" : "fuzz/ppt-full");
        free(p);
        free(orig);
    }
    return tap_status();
}
