/*
 * tests/unit/test_pprof.c - the pprof writer (output/pprof.c) on a
 * profile made here: the gzip header it promises (no time, OS unknown),
 * the same bytes twice, and, read back with zlib and a walk of the wire
 * format, the values of its samples: calls and self time shared out over
 * entry stacks and caller edges so that each function's add up to its
 * own exactly.
 *
 * `go tool pprof` reading whole runs' files is tests/test_pprof.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "injector/output/writers.h"
#include "injector/profile/profile.h"
#include "tests/unit/tap.h"

/* ---- reading the writer's output back ---------------------------------------- */

typedef struct field {
    uint32_t num;
    int wire;
    uint64_t v;                  /* wire 0 */
    const uint8_t *data;         /* wire 2 */
    size_t len;
} field;

static int next_field(const uint8_t **p, const uint8_t *end, field *f)
{
    uint64_t key = 0, v = 0;
    int shift = 0;
    const uint8_t *s = *p;
    if (s >= end)
        return 0;
    while (s < end && (*s & 0x80))
        key |= (uint64_t)(*s++ & 0x7f) << shift, shift += 7;
    if (s >= end)
        return -1;
    key |= (uint64_t)*s++ << shift;
    shift = 0;
    while (s < end && (*s & 0x80))
        v |= (uint64_t)(*s++ & 0x7f) << shift, shift += 7;
    if (s >= end)
        return -1;
    v |= (uint64_t)*s++ << shift;
    f->num = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    f->v = v;
    if (f->wire == 2) {
        if (v > (uint64_t)(end - s))
            return -1;
        f->data = s;
        f->len = (size_t)v;
        s += v;
    } else if (f->wire != 0) {
        return -1;
    }
    *p = s;
    return 1;
}

/* The packed varints of a field's bytes. */
static size_t unpack(const field *f, uint64_t *out, size_t max)
{
    size_t n = 0;
    uint64_t v = 0;
    int shift = 0;
    for (size_t i = 0; i < f->len && n < max; i++) {
        v |= (uint64_t)(f->data[i] & 0x7f) << shift;
        shift += 7;
        if (!(f->data[i] & 0x80)) {
            out[n++] = v;
            v = 0;
            shift = 0;
        }
    }
    return n;
}

static uint8_t *gunzip(const uint8_t *in, size_t n, size_t *out_len)
{
    size_t cap = 1 << 20;
    uint8_t *out = malloc(cap);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return NULL;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = inflate(&z, Z_FINISH);
    *out_len = cap - z.avail_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

static char *render(const hs_profile *p, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    int rc = hs_write_pprof(p, f);
    fclose(f);
    if (rc) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A program of three functions: main calls f 7 times and g 5 times (edges),
 * f captured on two entry stacks (1 and 2 captures: 2 and 5 calls of
 * its 7), g on none (its edge from main holds 4 of its 5 calls, the
 * fifth on g alone), main called once from nowhere known; f's self time
 * 1000 ns (333 and 667 on its stacks), g's 10 ns (8 and 2); 3 CPU
 * samples at 1000 Hz. */
static hs_profile *made(void)
{
    hs_profile *p = hs_profile_new();
    uint32_t m = hs_profile_add_module(p, "C:\\made\\prog.exe", 0x140000000ull, 0x10000);
    p->modules[m].timestamp = 0x5f000000;
    uint32_t fmain = hs_profile_add_func(p, m, 0x1000, 0x40, "main");
    uint32_t f = hs_profile_add_func(p, m, 0x1100, 0x40, "f");
    uint32_t g = hs_profile_add_func(p, m, 0x1200, 0x40, "g");
    for (uint32_t i = 0; i < 3; i++)
        p->funcs[i].hooked = p->funcs[i].in_plan = true;
    p->funcs[fmain].calls = 1;
    p->funcs[f].calls = 7;
    p->funcs[g].calls = 5;
    p->time_on = true;
    hs_prof_time_of(p, f)->self_ns = 1000;
    hs_prof_time_of(p, g)->self_ns = 10;
    p->edges_on = true;
    hs_profile_add_edge(p, (hs_loc){ (int32_t)fmain, -1, 0 }, g, 4, 0);
    p->stack_depth = 4;
    hs_prof_stack *st = hs_profile_add_stack(p, HS_STACK_ENTRY, f, 1, 2);
    st->frames[0] = (hs_loc){ (int32_t)f, -1, 0 };
    st->frames[1] = (hs_loc){ (int32_t)fmain, -1, 0x10 };
    st = hs_profile_add_stack(p, HS_STACK_ENTRY, f, 2, 2);
    st->frames[0] = (hs_loc){ (int32_t)f, -1, 0 };
    st->frames[1] = (hs_loc){ (int32_t)g, -1, 0x20 };
    /* one more through main at another return address: the same
     * locations as the first (a location is a function), one sample */
    st = hs_profile_add_stack(p, HS_STACK_ENTRY, f, 0, 2);
    st->frames[0] = (hs_loc){ (int32_t)f, -1, 0 };
    st->frames[1] = (hs_loc){ (int32_t)fmain, -1, 0x30 };
    p->sampling.on = true;
    p->sampling.rate_hz = 1000;
    strcpy(p->sampling.backend, "suspend");
    st = hs_profile_add_stack(p, HS_STACK_CPU, 0, 3, 1);
    st->tid = 77;
    st->frames[0] = (hs_loc){ (int32_t)f, -1, 0x8 };
    p->wall_s = 0.25;
    return p;
}

static void test_writer(void)
{
    hs_profile *p = made();
    size_t n1 = 0, n2 = 0;
    char *a = render(p, &n1), *b = render(p, &n2);
    tap_check(a && b && n1 == n2 && !memcmp(a, b, n1), "pprof: the same bytes twice", "%zu and %zu bytes", n1, n2);
    static const uint8_t header[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff };   /* XFL 4: fastest */
    tap_check(a && n1 > 10 && !memcmp(a, header, 10), "pprof: gzip header without a time, OS unknown",
              "%02x %02x ... %02x %02x", a ? (uint8_t)a[0] : 0, a ? (uint8_t)a[1] : 0, a ? (uint8_t)a[8] : 0,
              a ? (uint8_t)a[9] : 0);
    size_t len = 0;
    uint8_t *msg = a ? gunzip((const uint8_t *)a, n1, &len) : NULL;
    tap_check(msg != NULL, "pprof: gunzips", "zlib refused it");
    if (!msg) {
        free(a);
        free(b);
        hs_profile_free(p);
        return;
    }
    /* the strings, the sample types, each sample's locations and values */
    const char *strings[64];
    size_t slen[64], nstr = 0, ntypes = 0, nsamples = 0, nloc = 0, nfunc = 0, nmap = 0;
    uint64_t vals[16][8], ids[16][4], nids[16], period = 0, duration = 0;
    int bad = 0;
    field f;
    const uint8_t *s = msg, *end = msg + len;
    int r;
    while ((r = next_field(&s, end, &f)) > 0) {
        if (f.num == 6 && nstr < 64) {
            strings[nstr] = (const char *)f.data;
            slen[nstr++] = f.len;
        } else if (f.num == 1) {
            ntypes++;
        } else if (f.num == 2 && nsamples < 16) {
            const uint8_t *q = f.data;
            field g;
            while (next_field(&q, f.data + f.len, &g) > 0)
                if (g.num == 1)
                    nids[nsamples] = unpack(&g, ids[nsamples], 4);
                else if (g.num == 2)
                    bad |= unpack(&g, vals[nsamples], 8) != 5;
            nsamples++;
        } else if (f.num == 3) {
            nmap++;
        } else if (f.num == 4) {
            nloc++;
        } else if (f.num == 5) {
            nfunc++;
        } else if (f.num == 10) {
            duration = f.v;
        } else if (f.num == 12) {
            period = f.v;
        }
    }
    tap_check(r == 0 && !bad, "pprof: the wire format walks to its end", "a bad field");
    tap_check(nstr > 0 && slen[0] == 0, "pprof: string 0 is \"\"", "%zu strings", nstr);
    bool named = false;
    for (size_t i = 0; i < nstr; i++)
        named |= slen[i] == 10 && !memcmp(strings[i], "prog.exe!f", 10);
    tap_check(named, "pprof: functions named module!function", "no \"prog.exe!f\"");
    tap_check(ntypes == 5 && period == 1000000 && duration == 250000000,
              "pprof: five sample types, a period of 1 ms, the wall time", "%zu types, period %llu, duration %llu",
              ntypes, (unsigned long long)period, (unsigned long long)duration);
    /* samples, in order: the CPU stack; main alone (no stack, no caller);
     * f's two entry stacks (by frames: f <- g with 2 captures, then
     * f <- main with 1, its two return addresses one location); g's edge
     * and g alone */
    static const uint64_t want[6][5] = {
        { 3, 3000000, 0, 0, 0 }, { 0, 0, 0, 1, 0 }, { 0, 0, 0, 4, 666 },
        { 0, 0, 0, 3, 334 },     { 0, 0, 0, 4, 8 }, { 0, 0, 0, 1, 2 },
    };
    static const uint64_t want_depth[6] = { 1, 1, 2, 2, 2, 1 };
    int wrong = -1;
    for (size_t i = 0; i < 6 && i < nsamples; i++)
        if (memcmp(vals[i], want[i], sizeof want[i]) || nids[i] != want_depth[i])
            wrong = (int)i;
    tap_check(nsamples == 6 && wrong < 0, "pprof: calls and self time shared out exactly over stacks and edges",
              "%zu samples; sample %d: %llu %llu %llu %llu %llu", nsamples, wrong,
              wrong >= 0 ? (unsigned long long)vals[wrong][0] : 0, wrong >= 0 ? (unsigned long long)vals[wrong][1] : 0,
              wrong >= 0 ? (unsigned long long)vals[wrong][2] : 0, wrong >= 0 ? (unsigned long long)vals[wrong][3] : 0,
              wrong >= 0 ? (unsigned long long)vals[wrong][4] : 0);
    /* locations: one per function (no lines here): f, main, g;
     * functions: f, main, g; one mapping */
    tap_check(nloc == 3 && nfunc == 3 && nmap == 1, "pprof: locations, functions and the mapping",
              "%zu locations, %zu functions, %zu mappings", nloc, nfunc, nmap);
    free(msg);
    free(a);
    free(b);
    hs_profile_free(p);
}

int main(void)
{
    test_writer();
    return tap_status();
}
