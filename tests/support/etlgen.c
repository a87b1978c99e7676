/*
 * tests/support/etlgen.c - build/native/tools/etlgen: writes the synthetic
 * ETW traces that tests read through `hookscope report --etl`
 * (tests/test_report_etl.py), built with tests/unit/etl_build.h to the
 * documented layouts. The test holds the report to figures it computes by
 * hand from the timeline below, never to what the code printed.
 *
 *   etlgen states OUT.etl           the timeline below
 *   etlgen states-noready OUT.etl   the same without its ReadyThread event
 *   etlgen jit OUT.etl              JIT-compiled methods, one range reused
 *                                   (the second timeline)
 *   etlgen images OUT.etl [--rounds N] NAME=KEY@RVA...
 *                                   images known only by their PDB's
 *                                   identity, or by timestamp and size
 *                                   (the third timeline, at the end)
 *
 * The timeline of "states": one CPU, a 10 MHz clock, the timer's interval
 * 1 ms (a CollectionStart), everything at ms after the first event (T0).
 * Process states.exe (pid 100) has threads A 11, B 12, C 13, D 14, E 15;
 * other.exe (pid 200) has thread 21; thread 0 is the idle thread.
 *
 *    ms    event                                         stack walked (for the thread in)
 *    1.0   CSwitch in A, out idle                        -
 *    2.0   SampledProfile A at exe+0x1010                -
 *    3.0   CSwitch in B, out A Waiting (UserRequest)     B: exe+0x1210 exe+0x1290
 *    4.5   CSwitch in C, out B Ready (preempted)         -
 *    5.0   CSwitch in D, out C Waiting                   -
 *    5.5   CSwitch in E, out D Waiting                   -
 *    6.0   CSwitch in idle, out E Waiting                -
 *    7.25  ReadyThread A, by other.exe's 21              (21's: kernel+0x500)
 *    8.0   CSwitch in B, out idle                        B: exe+0x1200 exe+0x1280
 *    9.6   CSwitch in A, out B Terminated                A: exe+0x1100 exe+0x1180
 *   10.0   SampledProfile A at exe+0x1020                -
 *   12.3   CSwitch in C, out A Terminated                C: exe+0x1400 exe+0x1480
 *   13.0   CSwitch in E, out C Terminated                none (no stack walk)
 *   15.0   CSwitch in idle, out E Terminated             -
 *   16.4   CSwitch in 21, out idle                       - (the trace's last event)
 *
 * So A waits, is readied, waits on the ready queue, runs; B is preempted;
 * C waits and nothing readies it; D's wait is still open at the end; E's
 * wait ends at a switch without a stack.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/etl_build.h"

#define T0 1000000ull             /* the first event, in 100 ns ticks */
#define MS(x) (T0 + (uint64_t)((x) * 10000.0 + 0.5))
#define EXE 0x140000000ull
#define KERNEL 0xfffff80000000000ull
#define P 8u

enum { WAITING = 5, READY = 1, TERMINATED = 4, USER_REQUEST = 6 };

static etlb b;
static etlb_bytes pl;

static void sys(uint8_t group, uint8_t type, uint16_t version, uint32_t tid, uint32_t pid, uint64_t ts)
{
    etlb_sys(&b, 0, group, type, version, tid, pid, ts, &pl);
    pl.n = 0;
}

static void perf(uint8_t group, uint8_t type, uint64_t ts)
{
    etlb_perf(&b, group, type, 2, ts, 0, 0, &pl);
    pl.n = 0;
}

static uint32_t pid_of(uint32_t tid)
{
    return tid == 0 ? 0 : tid == 21 ? 200 : 100;
}

/* A context switch at ts; a stack of n frames walked for the thread in. */
static void cswitch(uint64_t ts, uint32_t in, uint32_t out, uint8_t state, const uint64_t *frames, uint32_t n)
{
    etlb_p_cswitch(&pl, in, out, 8, 8, state == WAITING ? USER_REQUEST : 0, 1, state, 0, 0);
    sys(0x05, 36, 2, in, pid_of(in), ts);
    if (n) {
        etlb_p_stack(&pl, P, ts, pid_of(in), in, frames, n);
        perf(0x18, 32, ts);
    }
}

static void sample(uint64_t ts, uint32_t tid, uint64_t ip)
{
    etlb_p_sample(&pl, P, ip, tid, 0);
    perf(0x0F, 46, ts);
}

static int write_file(const char *path);

static int states(const char *path, int with_ready)
{
    etlb_init(&b, P, 1, 64 * 1024);
    etlb_begin(&b, 0, 1);
    etlb_p_interval(&pl, 0, 10000, 10000);          /* CollectionStart: the timer at 1 ms */
    sys(0x0F, 73, 2, 0, 0, T0);
    etlb_p_process(&pl, P, 100, 4, 1, "states.exe", "states.exe");
    sys(0x03, 3, 4, 0, 100, T0);
    etlb_p_process(&pl, P, 200, 4, 1, "other.exe", "other.exe");
    sys(0x03, 3, 4, 0, 200, T0);
    for (uint32_t tid = 11; tid <= 15; tid++) {
        etlb_p_thread(&pl, P, 100, tid);
        sys(0x05, 3, 3, tid, 100, T0);
    }
    etlb_p_thread(&pl, P, 200, 21);
    sys(0x05, 3, 3, 21, 200, T0);
    etlb_p_image(&pl, P, EXE, 0x10000, 100, 0, 0x5000, "\\Device\\HarddiskVolume2\\t\\states.exe");
    sys(0x14, 3, 3, 0, 100, T0);
    etlb_p_image(&pl, P, KERNEL, 0x800000, 0, 0, 0x6000, "\\SystemRoot\\system32\\ntoskrnl.exe");
    sys(0x14, 3, 3, 0, 0, T0);

    static const uint64_t b0[] = { EXE + 0x1210, EXE + 0x1290 }, b1[] = { EXE + 0x1200, EXE + 0x1280 },
                          a1[] = { EXE + 0x1100, EXE + 0x1180 }, c1[] = { EXE + 0x1400, EXE + 0x1480 },
                          r[] = { KERNEL + 0x500 };
    cswitch(MS(1.0), 11, 0, READY, NULL, 0);
    sample(MS(2.0), 11, EXE + 0x1010);
    cswitch(MS(3.0), 12, 11, WAITING, b0, 2);
    cswitch(MS(4.5), 13, 12, READY, NULL, 0);
    cswitch(MS(5.0), 14, 13, WAITING, NULL, 0);
    cswitch(MS(5.5), 15, 14, WAITING, NULL, 0);
    cswitch(MS(6.0), 0, 15, WAITING, NULL, 0);
    if (with_ready) {
        etlb_p_ready(&pl, 11, 1, 0, 0);
        sys(0x05, 50, 2, 21, 200, MS(7.25));
        etlb_p_stack(&pl, P, MS(7.25), 200, 21, r, 1);
        perf(0x18, 32, MS(7.25));
    }
    cswitch(MS(8.0), 12, 0, READY, b1, 2);
    cswitch(MS(9.6), 11, 12, TERMINATED, a1, 2);
    sample(MS(10.0), 11, EXE + 0x1020);
    cswitch(MS(12.3), 13, 11, TERMINATED, c1, 2);
    cswitch(MS(13.0), 15, 13, TERMINATED, NULL, 0);
    cswitch(MS(15.0), 0, 15, TERMINATED, NULL, 0);
    cswitch(MS(16.4), 21, 0, READY, NULL, 0);
    etlb_end(&b, ETLB_PLAIN);
    return write_file(path);
}

/* Write the trace built, and free it. */
static int write_file(const char *path)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(b.file.p, 1, b.file.n, f) == b.file.n;
    if (f && fclose(f) != 0)
        ok = 0;
    eb_free(&pl);
    etlb_free(&b);
    if (!ok)
        fprintf(stderr, "etlgen: cannot write %s\n", path);
    return ok ? 0 : 1;
}

/* The timeline of "jit": process jit.exe (pid 300, thread 31, its exe
 * at EXE), assembly App.dll (ModuleID 7), its JIT code at JIT; each sample
 * has the stack [leaf, JIT+0x10020 (in Parse), EXE+0x1010].
 *
 *    ms    event
 *    0.5   ModuleLoad App.dll
 *    1.0   MethodLoadVerbose V2 App.Cache.Fill    [JIT+0x30000, +0x40)
 *    1.1   MethodLoadVerbose V1 App.Parser.Parse  [JIT+0x10000, +0x100)
 *    2.0   sample at JIT+0x30010                  Fill
 *    3.0   MethodUnloadVerbose V2 App.Cache.Fill
 *    4.0   sample at JIT+0x30010                  no method there
 *    5.0   MethodLoadVerbose V0 App.Cache.Reused  [JIT+0x30000, +0x40)
 *    6.0   sample at JIT+0x30010                  Reused
 *    7.0   sample at JIT+0x30010                  Reused
 *    8.0   MethodLoadVerbose V1 App.Far.Away      [JIT+0x100030000, +0x10): 4 GiB
 *          past the others, in a module of its own (a function's rva is 32-bit)
 *    9.0   sample at JIT+0x100030004              Away
 */
#define JIT 0x7ff000000000ull

/* A trace of one process, pid with one thread tid, started: its timer at
 * 1 ms, the process and its thread (rundown). */
static void one_process(uint32_t pid, uint32_t tid, const char *name)
{
    etlb_init(&b, P, 1, 64 * 1024);
    etlb_begin(&b, 0, 1);
    etlb_p_interval(&pl, 0, 10000, 10000);
    sys(0x0F, 73, 2, 0, 0, T0);
    etlb_p_process(&pl, P, pid, 4, 1, name, name);
    sys(0x03, 3, 4, 0, pid, T0);
    etlb_p_thread(&pl, P, pid, tid);
    sys(0x05, 3, 3, tid, pid, T0);
}

static void jit_method(uint16_t id, unsigned version, double ms, uint64_t mid, uint64_t start, uint32_t size,
                       const char *ns, const char *name)
{
    etlb_p_clr_method(&pl, version, mid, 7, start, size, ns, name, "void  ()", 0);
    etlb_evh(&b, etlb_guid_clr_runtime, id, id == 143 ? 37 : 38, (uint8_t)version, 31, 300, MS(ms), NULL, 0, &pl);
    pl.n = 0;
}

static void jit_sample(double ms, uint64_t ip)
{
    const uint64_t frames[] = { ip, JIT + 0x10020, EXE + 0x1010 };
    sample(MS(ms), 31, ip);
    etlb_p_stack(&pl, P, MS(ms), 300, 31, frames, 3);
    perf(0x18, 32, MS(ms));
}

static int jit(const char *path)
{
    one_process(300, 31, "jit.exe");
    etlb_p_image(&pl, P, EXE, 0x10000, 300, 0, 0x5000, "\\Device\\HarddiskVolume2\\t\\jit.exe");
    sys(0x14, 3, 3, 0, 300, T0);
    etlb_p_clr_module(&pl, 2, 7, "C:\\app\\App.dll", "");
    etlb_evh(&b, etlb_guid_clr_runtime, 152, 33, 2, 31, 300, MS(0.5), NULL, 0, &pl);
    pl.n = 0;
    jit_method(143, 2, 1.0, 3, JIT + 0x30000, 0x40, "App.Cache", "Fill");
    jit_method(143, 1, 1.1, 1, JIT + 0x10000, 0x100, "App.Parser", "Parse");
    jit_sample(2.0, JIT + 0x30010);
    jit_method(144, 2, 3.0, 3, JIT + 0x30000, 0x40, "App.Cache", "Fill");
    jit_sample(4.0, JIT + 0x30010);
    jit_method(143, 0, 5.0, 4, JIT + 0x30000, 0x40, "App.Cache", "Reused");
    jit_sample(6.0, JIT + 0x30010);
    jit_sample(7.0, JIT + 0x30010);
    jit_method(143, 1, 8.0, 5, JIT + 0x100030000ull, 0x10, "App.Far", "Away");
    jit_sample(9.0, JIT + 0x100030004ull);
    etlb_end(&b, ETLB_PLAIN);
    return write_file(path);
}

/* The timeline of "images": process images.exe (pid 400, thread 41);
 * image i of the command line, NAME=KEY@RVA, loaded at IMAGES + i * 16 MiB
 * from a folder that does not exist; KEY is a symbol store's:
 *   <GUID><age>   the GUID's 32 hex digits as Windows prints it, then the
 *                 age in hex: the image has ImageID and DbgID_RSDS records
 *                 (the PDB named NAME with .pdb), timestamp 0x5000, size 1 MiB
 *   <TIMESTAMP><SIZE>  8 hex digits, then hex: the image has that
 *                 TimeDateStamp and SizeOfImage, and no such records;
 * then, at ms 1 + i, one sample at the image's RVA (RVA,RVA,...: one at
 * each, a ms apart, after the others' samples); --rounds N first: all
 * that N times over (a trace of any size). */
#define IMAGES 0x180000000ull

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* KEY's GUID (Data1-3 little-endian) and age; 0, or -1 when malformed */
static int parse_key(const char *key, size_t n, uint8_t guid[16], uint32_t *age)
{
    static const int order[16] = { 3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15 };
    if (n < 33 || n > 40)
        return -1;
    for (int i = 0; i < 16; i++) {
        int h = hexval(key[2 * i]), l = hexval(key[2 * i + 1]);
        if (h < 0 || l < 0)
            return -1;
        guid[order[i]] = (uint8_t)(h << 4 | l);
    }
    *age = 0;
    for (size_t i = 32; i < n; i++) {
        if (hexval(key[i]) < 0)
            return -1;
        *age = *age << 4 | (uint32_t)hexval(key[i]);
    }
    return 0;
}

static int images(const char *path, int n, char **specs)
{
    long rounds = 1;
    if (n >= 2 && !strcmp(specs[0], "--rounds")) {
        rounds = strtol(specs[1], NULL, 10);
        specs += 2;
        n -= 2;
    }
    one_process(400, 41, "images.exe");
    uint64_t ips[64], more[64];
    int nmore = 0;
    for (int i = 0; i < n && i < 64; i++) {
        char name[64], pdb[80], image[128];
        const char *eq = strchr(specs[i], '='), *at = eq ? strchr(eq, '@') : NULL;
        uint8_t guid[16];
        uint32_t age = 0, timestamp = 0x5000, size = 0x100000;
        size_t keylen = at ? (size_t)(at - eq - 1) : 0;
        int by_pdb = keylen > 16, bad = !at || eq - specs[i] >= (ptrdiff_t)sizeof name - 1;
        if (!bad && by_pdb) {
            bad = parse_key(eq + 1, keylen, guid, &age) != 0;
        } else if (!bad) {
            char ts[9] = "", *end = NULL;
            bad = keylen < 9;
            snprintf(ts, sizeof ts, "%.8s", eq + 1);
            timestamp = (uint32_t)strtoul(ts, NULL, 16);
            size = (uint32_t)strtoul(eq + 9, &end, 16);
            bad = bad || end != at;
        }
        if (bad) {
            fprintf(stderr, "etlgen: %s: not NAME=KEY@RVA\n", specs[i]);
            return 2;
        }
        snprintf(name, sizeof name, "%.*s", (int)(eq - specs[i]), specs[i]);
        const char *dot = strrchr(name, '.');
        snprintf(pdb, sizeof pdb, "%.*s.pdb", (int)(dot ? dot - name : (ptrdiff_t)strlen(name)), name);
        snprintf(image, sizeof image, "\\Device\\HarddiskVolume9\\absent\\%s", name);
        uint64_t base = IMAGES + (uint64_t)i * 0x1000000;
        char *next = NULL;
        ips[i] = base + strtoull(at + 1, &next, 0);
        while (next && *next == ',' && nmore < 64)
            more[nmore++] = base + strtoull(next + 1, &next, 0);
        if (by_pdb) {
            etlb_p_imageid(&pl, P, base, size, timestamp, name);
            etlb_classic(&b, 0, etlb_guid_imageid, 0, 2, 0, 400, T0, &pl);
            pl.n = 0;
            etlb_p_dbgid(&pl, P, base, guid, age, pdb);
            etlb_classic(&b, 0, etlb_guid_imageid, 36, 2, 0, 400, T0, &pl);
            pl.n = 0;
        }
        etlb_p_image(&pl, P, base, size, 400, 0, timestamp, image);
        sys(0x14, 3, 3, 0, 400, T0);
    }
    /* the samples, rounds times over (a ms apart), in buffers of 64 KB */
    uint64_t seq = 1, at = 0;
    for (long r = 0; r < rounds; r++)
        for (int i = 0; i < (n < 64 ? n : 64) + nmore; i++) {
            sample(MS(1.0 + (double)at++), 41, i < n && i < 64 ? ips[i] : more[i - (n < 64 ? n : 64)]);
            if (b.buf.n > 60 * 1024) {
                etlb_end(&b, ETLB_PLAIN);
                etlb_begin(&b, 0, ++seq);
            }
        }
    etlb_end(&b, ETLB_PLAIN);
    return write_file(path);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "images"))
        return images(argv[2], argc - 3, argv + 3);
    if (argc == 3 && !strcmp(argv[1], "states"))
        return states(argv[2], 1);
    if (argc == 3 && !strcmp(argv[1], "states-noready"))
        return states(argv[2], 0);
    if (argc == 3 && !strcmp(argv[1], "jit"))
        return jit(argv[2]);
    fprintf(stderr, "usage: etlgen states|states-noready|jit OUT.etl | etlgen images OUT.etl [--rounds N] NAME=KEY@RVA...\n");
    return 2;
}
