/*
 * tests/unit/test_etl_fixtures.c - the ETL reader on two real traces
 * recorded on Windows (tests/fixtures/etl/README.md; `make fixtures`
 * extracts them into build/fixtures/etl/).
 *
 * Where the figures come from:
 *   - perfview-win10-x86: TraceEvent's own parse of the same file
 *     (microsoft/perfview src/TraceEvent/TraceEvent.Tests/inputs/
 *     net.4.5.2.x86.baseline.txt): its logfile header line, its event
 *     counts ("COUNT Windows Kernel/PerfInfo/Sample:6810" counts the samples
 *     TraceLog keeps: all but those of the idle thread outside DPCs and
 *     ISRs), its first five samples and its ImageID/DbgID_RSDS/Image lines.
 *   - both: tests/etl_reference.py, an independent decoder in Python, gives
 *     the same per-process and per-module counts and stacks
 *     (tests/test_etl.py compares them line by line).
 *
 * Issue 12 gives other figures for pid 5100 of ppt-win7-x64 (1546 samples,
 * all with a stack; GdiPlus.dll 958, WindowsCodecs.dll 352, ntoskrnl.exe
 * 214, msvcrt.dll 9) and pid 3988 of perfview-win10-x86 (268 samples, 267
 * with a stack; ntoskrnl.exe 62, clrjit.dll 52, clr.dll 30, hal.dll 29).
 * They are what a decoder gets that takes an EVENT_HEADER record's size
 * from offset 4 (its Flags) and so loses the rest of each buffer after the
 * first such record: the reference decoder with --misread-event-headers
 * gives every one of the ppt figures and the four perfview module figures
 * (tests/test_etl.py). Every buffer of both files parses to exactly its
 * SavedOffset, and TraceEvent keeps 6810 samples of perfview-win10-x86
 * where such a decoder sees a tenth of them: the full decode is the right
 * one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/etl/etl.h"
#include "sampler/etl/reader.h"
#include "tests/unit/tap.h"

#define PPT "build/fixtures/etl/ppt-win7-x64.etl"
#define PV "build/fixtures/etl/perfview-win10-x86.etl"

static char name[160];
#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)

/* Self samples of pid by module name. */
static uint64_t self_samples(const hs_etl_trace *t, uint32_t pid, const char *module, uint64_t *total,
                             uint64_t *with_stack)
{
    uint64_t n = 0;
    *total = *with_stack = 0;
    for (uint32_t i = 0; i < t->nsamples; i++) {
        const hs_etl_sample *s = &t->samples[i];
        if (s->pid != pid)
            continue;
        ++*total;
        *with_stack += (s->flags & HS_ETL_SAMPLE_STACK) != 0;
        const hs_etl_image *m = hs_etl_image_at(t, pid, s->ip, s->ts);
        if (module ? m && !strcmp(m->name, module) : !m)
            n++;
    }
    return n;
}

static uint64_t counts[256][256];

static int count_event(void *ctx, const hs_etl_event *ev)
{
    (void)ctx;
    counts[ev->group][ev->type]++;
    return 0;
}

static int count_events(const char *path)
{
    hs_etl_file *f;
    hs_etl_error err;
    memset(counts, 0, sizeof counts);
    if (hs_etl_open_file(&f, path, &err) < 0)
        return -1;
    hs_etl_observer o = {.event = count_event};
    int rc = hs_etl_decode(f, &o, &err);
    hs_etl_close(f);
    return rc;
}

/* The frames of a sample as "module+0xoff" (or "0x..." without a module). */
static void frame_text(const hs_etl_trace *t, const hs_etl_sample *s, uint32_t i, char *out, size_t cap)
{
    uint64_t a = hs_etl_frame(t, s, i);
    const hs_etl_image *m = hs_etl_image_at(t, s->pid, a, s->ts);
    if (m)
        snprintf(out, cap, "%s+0x%llx", m->name, (unsigned long long)(a - m->base));
    else
        snprintf(out, cap, "0x%llx", (unsigned long long)a);
}

static int find_image(const hs_etl_trace *t, uint32_t pid, uint64_t base)
{
    for (uint32_t i = 0; i < t->nimages; i++)
        if (t->images[i].pid == pid && t->images[i].base == base)
            return (int)i;
    return -1;
}

static void test_ppt(void)
{
    hs_etl_trace t;
    hs_etl_error err = {0};
    if (hs_etl_read_file(PPT, &t, &err) < 0) {
        tap_fail("ppt/read", "%s (run make fixtures)", err.msg);
        return;
    }
    const hs_etl_info *in = &t.info;
    tap_check(in->pointer_size == 8 && in->ncpus == 8 && in->clock == HS_ETL_CLOCK_QPC && in->clock_hz == 2143632 &&
                  in->cpu_mhz == 2195 && in->buffers == 32 && in->buffers_written == 32 &&
                  in->buffer_size == 1048576 && in->log_file_mode == 0x00010000 && !in->compressed &&
                  in->provider_version == 7601 && in->events_lost == 0 && in->buffers_lost == 0 &&
                  in->sequence_gaps == 0 && in->cpus_seen == 8 && in->events == 505714 &&
                  !strcmp(in->logger_name, "Relogger") && !strcmp(in->log_file_name, "[multiple files]"),
              "ppt/logfile-header", "ptr %u cpus %u clock %u hz %llu buffers %u/%u size %u mode %x events %llu",
              in->pointer_size, in->ncpus, in->clock, (unsigned long long)in->clock_hz, in->buffers,
              in->buffers_written, in->buffer_size, in->log_file_mode, (unsigned long long)in->events);
    uint64_t with = 0;
    for (uint32_t i = 0; i < t.nsamples; i++)
        with += (t.samples[i].flags & HS_ETL_SAMPLE_STACK) != 0;
    tap_check(t.nprocs == 89 && t.nthreads == 1004 && t.nimages == 4690 && t.nsamples == 136370 && with == 136360 &&
                  t.stacks.stackwalks == 138474 && t.stacks.orphans == 0 && t.stacks.key_refs == 0,
              "ppt/counts", "processes %u threads %u images %u samples %u (%llu with a stack) stackwalks %llu "
              "orphans %llu", t.nprocs, t.nthreads, t.nimages, t.nsamples, (unsigned long long)with,
              (unsigned long long)t.stacks.stackwalks, (unsigned long long)t.stacks.orphans);

    uint64_t total, stacked;
    static const struct { const char *module; uint64_t n; } want[] = {
        {"WindowsCodecs.dll", 3790}, {"GdiPlus.dll", 2929}, {"ntoskrnl.exe", 1468}, {"msvcrt.dll", 161}, {NULL, 0},
    };
    for (int i = 0; i < 5; i++) {
        uint64_t n = self_samples(&t, 5100, want[i].module, &total, &stacked);
        tap_check(n == want[i].n && total == 8754 && stacked == 8750,
                  NAME("ppt/powerpnt/self/%s", want[i].module ? want[i].module : "no-module"),
                  "%llu self samples (want %llu), %llu samples, %llu with a stack", (unsigned long long)n,
                  (unsigned long long)want[i].n, (unsigned long long)total, (unsigned long long)stacked);
    }
    const hs_etl_process *p = hs_etl_process_at(&t, 5100, t.info.first_ts);
    tap_check(p && !strcmp(p->name, "POWERPNT.EXE") && p->ppid == 2640 &&
                  p->flags == (HS_ETL_SEEN_RUNDOWN_START | HS_ETL_SEEN_RUNDOWN_END) &&
                  !strcmp(p->cmdline, "\"C:\\Program Files (x86)\\Microsoft Office\\Office14\\POWERPNT.EXE\" "),
              "ppt/powerpnt/process", "%s ppid %u flags %x cmdline %s", p ? p->name : "none", p ? p->ppid : 0,
              p ? p->flags : 0, p ? p->cmdline : "");
    int gi = find_image(&t, 5100, 0x73ed0000);
    const hs_etl_image *g = gi >= 0 ? &t.images[gi] : NULL;
    tap_check(g && g->size == 0x190000 && g->checksum == 0x191664 && !strcmp(g->name, "GdiPlus.dll") &&
                  !strcmp(g->path, "\\Device\\HarddiskVolume3\\Windows\\winsxs\\x86_microsoft.windows.gdiplus_"
                                   "6595b64144ccf1df_1.1.7601.17514_none_72d18a4386696c80\\GdiPlus.dll") &&
                  g->pdb_name && !strcmp(g->pdb_name, "MicrosoftWindowsGdiPlus-1.1.7601.17514-gdiplus.pdb") &&
                  g->pdb_age == 1 && g->orig_name && !strcmp(g->orig_name, "GdiPlus.dll"),
              "ppt/powerpnt/gdiplus-image", "%s", g ? g->path : "not found");

    /* one kernel sample of POWERPNT's thread 5984: 7 kernel frames from its
     * StackWalk, 21 user frames from the thread's deferred user StackWalk */
    static const char *const stack[] = {
        "ntoskrnl.exe+0x81f54", "ntoskrnl.exe+0x8474f", "ntoskrnl.exe+0x5d872", "ntoskrnl.exe+0x82b6c",
        "ntoskrnl.exe+0x867f3", "win32k.sys+0xc2e01", "ntoskrnl.exe+0x7bed3", "wow64win.dll+0x3fdea",
        "wow64win.dll+0x1adb3", "wow64.dll+0xcf87", "wow64cpu.dll+0x2776", "wow64.dll+0xd07e", "wow64.dll+0xc549",
        "ntdll.dll+0x44956", "ntdll.dll+0x41a17", "ntdll.dll+0x2c32e", "user32.dll+0x20735", "user32.dll+0x206eb",
        "user32.dll+0x20751", "MSO.DLL+0xaa323", "PPCORE.DLL+0x13175", "PPCORE.DLL+0x15f7c", "PPCORE.DLL+0x12eaf",
        "PPCORE.DLL+0x6ee9", "POWERPNT.EXE+0x15ae", "kernel32.dll+0x1339a", "ntdll.dll+0x39ed2",
        "ntdll.dll+0x39ea5",
    };
    const hs_etl_sample *s = t.nsamples > 3890 ? &t.samples[3890] : NULL;
    int ok = s && s->ts == 1321742005579ull && s->tid == 5984 && s->pid == 5100 && s->stack.kern_depth == 7 &&
             s->stack.user_depth == 21 && s->flags == (HS_ETL_SAMPLE_KERNEL | HS_ETL_SAMPLE_STACK);
    char got[64] = "";
    for (uint32_t i = 0; ok && i < 28; i++) {
        frame_text(&t, s, i, got, sizeof got);
        ok = !strcmp(got, stack[i]);
    }
    tap_check(ok, "ppt/powerpnt/joined-stack", "sample 3890: ts %llu tid %u depth %u+%u, frame \"%s\"",
              s ? (unsigned long long)s->ts : 0, s ? s->tid : 0, s ? s->stack.kern_depth : 0,
              s ? s->stack.user_depth : 0, got);
    hs_etl_trace_free(&t);

    if (count_events(PPT) < 0) {
        tap_fail("ppt/event-counts", "decode failed");
        return;
    }
    tap_check(counts[0x14][3] == 4550 && counts[0x14][4] == 4558 && counts[0x03][10] == 137 &&
                  counts[0x14][2] == 132 && counts[0x03][3] == 85 && counts[0x05][3] == 978 &&
                  counts[0x0F][46] == 136370 && counts[0x18][32] == 138474 &&
                  counts[HS_ETL_GROUP_IMAGEID][0] == 9371 && counts[HS_ETL_GROUP_IMAGEID][36] == 9207,
              "ppt/event-counts", "image DCStart %llu DCEnd %llu load %llu unload %llu",
              (unsigned long long)counts[0x14][3], (unsigned long long)counts[0x14][4],
              (unsigned long long)counts[0x03][10], (unsigned long long)counts[0x14][2]);
}

static void test_perfview(void)
{
    hs_etl_trace t;
    hs_etl_error err = {0};
    if (hs_etl_read_file(PV, &t, &err) < 0) {
        tap_fail("perfview/read", "%s (run make fixtures)", err.msg);
        return;
    }
    /* TraceEvent: "BufferSize=65,536; ProviderVersion=9,200; NumberOfProcessors=8;
     * EndTime=20/07/29 00:06:31.08...; TimerResolution=156,250; MaxFileSize=500;
     * LogFileMode=67,174,401; BuffersWritten=276; PointerSize=8; EventsLost=0;
     * CPUSpeed=3,592; BootTime=20/07/29 00:03:46.48...; PerfFreq=10,000,000;
     * StartTime=20/07/29 00:06:19.79...; ReservedFlags=1; BuffersLost=0;
     * SessionName=Relogger; LogFileName=[multiple files]" (times in UTC) */
    const hs_etl_info *in = &t.info;
    tap_check(in->buffer_size == 65536 && in->provider_version == 9200 && in->ncpus == 8 &&
                  in->end_time >= 132404547910800000ull && in->end_time < 132404547910900000ull &&
                  in->timer_resolution == 156250 && in->max_file_size == 500 && in->log_file_mode == 67174401 &&
                  in->buffers_written == 276 && in->pointer_size == 8 && in->events_lost == 0 && in->cpu_mhz == 3592 &&
                  in->boot_time >= 132404546264800000ull && in->boot_time < 132404546264900000ull &&
                  in->perf_freq == 10000000 && in->start_time >= 132404547797900000ull &&
                  in->start_time < 132404547798000000ull && in->clock == HS_ETL_CLOCK_QPC &&
                  in->clock_hz == 10000000 && in->buffers_lost == 0 && !strcmp(in->logger_name, "Relogger") &&
                  !strcmp(in->log_file_name, "[multiple files]"),
              "perfview/logfile-header-as-traceevent", "size %u build %u cpus %u res %u max %u mode %u written %u "
              "mhz %u freq %llu", in->buffer_size, in->provider_version, in->ncpus, in->timer_resolution,
              in->max_file_size, in->log_file_mode, in->buffers_written, in->cpu_mhz,
              (unsigned long long)in->perf_freq);
    tap_check(in->compressed && in->compression == HS_ETL_COMP_XPRESS && in->buffers == 276 &&
                  in->buffers_compressed == 275 && in->sequence_gaps == 0 && in->events == 168297,
              "perfview/xpress-buffers", "compressed %d format %u buffers %u (%u compressed) events %llu",
              in->compressed, in->compression, in->buffers, in->buffers_compressed, (unsigned long long)in->events);

    /* the samples TraceLog keeps, and its first five */
    uint64_t kept = 0;
    const hs_etl_sample *first[5];
    int nf = 0;
    for (uint32_t i = 0; i < t.nsamples; i++) {
        const hs_etl_sample *s = &t.samples[i];
        if (s->tid == 0 && !(s->flags & (HS_ETL_SAMPLE_DPC | HS_ETL_SAMPLE_ISR)))
            continue;
        kept++;
        if (nf < 5)
            first[nf++] = s;
    }
    tap_check(t.nsamples == 88809 && kept == 6810, "perfview/samples-as-traceevent", "%u samples, %llu kept (want 6810)",
              t.nsamples, (unsigned long long)kept);
    static const struct { uint32_t pid, tid; uint64_t ip; uint16_t cpu; uint8_t prio; } want5[5] = {
        {3988, 2784, 0xfffff80021561f43ull, 7, 11}, {3988, 2784, 0xfffff880016b39c5ull, 7, 11},
        {3988, 2784, 0xfffff800215beb8eull, 7, 11}, {3988, 2784, 0xfffff8002153adc5ull, 7, 11},
        {4, 52, 0xfffff80021434313ull, 4, 13},
    };
    for (int i = 0; i < 5 && i < nf; i++)
        tap_check(first[i]->pid == want5[i].pid && first[i]->tid == want5[i].tid && first[i]->ip == want5[i].ip &&
                      first[i]->cpu == want5[i].cpu && first[i]->priority == want5[i].prio,
                  NAME("perfview/traceevent-sample-%d", i + 1), "pid %u tid %u ip 0x%llx cpu %u priority %u",
                  first[i]->pid, first[i]->tid, (unsigned long long)first[i]->ip, first[i]->cpu,
                  first[i]->priority);

    /* images as TraceEvent shows them (ImageID, DbgID_RSDS, Image/DCStart, Image/Load) */
    int ki = find_image(&t, 0, 0xfffff80021489000ull), hi = find_image(&t, 0, 0xfffff8002141d000ull),
        xi = find_image(&t, 3644, 0x7c0000);
    const hs_etl_image *nt = ki >= 0 ? &t.images[ki] : NULL, *hal = hi >= 0 ? &t.images[hi] : NULL,
                       *x86 = xi >= 0 ? &t.images[xi] : NULL;
    static const uint8_t nt_guid[16] = {0x00, 0x21, 0x48, 0x72, 0x1c, 0x1c, 0x03, 0x4a,
                                        0xae, 0xd8, 0xc4, 0xc7, 0x1c, 0x2e, 0x8d, 0x1d};
    tap_check(nt && nt->size == 7634944 && nt->checksum == 6989512 && nt->timestamp == 1343269963 &&
                  (nt->flags & HS_ETL_IMAGE_KERNEL) && !strcmp(nt->name, "ntoskrnl.exe") && nt->orig_name &&
                  !strcmp(nt->orig_name, "ntkrnlmp.exe") && nt->pdb_name && !strcmp(nt->pdb_name, "ntkrnlmp.pdb") &&
                  nt->pdb_age == 2 && !memcmp(nt->pdb_guid, nt_guid, 16),
              "perfview/ntoskrnl-image", "%s", nt ? nt->path : "not found");
    tap_check(hal && hal->size == 442368 && hal->checksum == 446114 && hal->timestamp == 1343269864 &&
                  hal->pdb_name && !strcmp(hal->pdb_name, "hal.pdb") && hal->pdb_age == 2 &&
                  hal->pdb_guid[0] == 0x86 && hal->pdb_guid[3] == 0xfb,
              "perfview/hal-image", "%s", hal ? hal->path : "not found");
    tap_check(x86 && x86->size == 32768 && x86->checksum == 0 && (int32_t)x86->timestamp == -1726546814 &&
                  (x86->flags & HS_ETL_SEEN_START) && (x86->flags & HS_ETL_SEEN_END) &&
                  !strcmp(x86->path, "\\Device\\Mup\\DfsClient\\;Z:0000000000020d40\\clrmain\\public\\"
                                     "PerfInvestigations\\20-07-28.TestTraces\\Test.x86.exe") &&
                  !strcmp(x86->name, "Test.x86.exe"),
              "perfview/loaded-image", "%s", x86 ? x86->path : "not found");

    uint64_t total, stacked;
    static const struct { const char *module; uint64_t n; } want[] = {
        {"clr.dll", 156}, {"ntoskrnl.exe", 103}, {"clrjit.dll", 102}, {"hal.dll", 61}, {NULL, 77},
    };
    for (int i = 0; i < 5; i++) {
        uint64_t n = self_samples(&t, 3988, want[i].module, &total, &stacked);
        tap_check(n == want[i].n && total == 637 && stacked == 635,
                  NAME("perfview/perfview-exe/self/%s", want[i].module ? want[i].module : "jit-code"),
                  "%llu self samples (want %llu), %llu samples, %llu with a stack", (unsigned long long)n,
                  (unsigned long long)want[i].n, (unsigned long long)total, (unsigned long long)stacked);
    }
    tap_check(t.stacks.key_refs == 12172 && t.stacks.key_defs == 4073 && t.stacks.stackwalks == 229 &&
                  t.stacks.kernel_keys_unresolved == 0 && t.stacks.user_keys_unresolved == 0,
              "perfview/stack-keys", "refs %llu defs %llu stackwalks %llu unresolved %llu/%llu",
              (unsigned long long)t.stacks.key_refs, (unsigned long long)t.stacks.key_defs,
              (unsigned long long)t.stacks.stackwalks, (unsigned long long)t.stacks.kernel_keys_unresolved,
              (unsigned long long)t.stacks.user_keys_unresolved);
    /* TraceEvent's first sample: a kernel key (15 frames) and a user key
     * (40 frames of a WOW64 thread: 64-bit ntdll, wow64, 32-bit code) */
    const hs_etl_sample *s = nf ? first[0] : NULL;
    static const struct { uint32_t i; const char *text; } fr[] = {
        {0, "ntoskrnl.exe+0xd8f43"}, {1, "fltmgr.sys+0x6e43"}, {14, "ntoskrnl.exe+0x7a053"},
        {15, "ntdll.dll+0x455b"}, {16, "wow64.dll+0x2aeb9"}, {26, "KernelTraceControl.dll+0x4a76"},
        {27, "0xa58abba"}, {42, "clr.dll+0xf237"}, {52, "kernel32.dll+0x28543"}, {54, "ntdll.dll+0x5ac3c"},
    };
    int ok = s && s->stack.kern_depth == 15 && s->stack.user_depth == 40;
    char got[64] = "";
    for (size_t i = 0; ok && i < sizeof fr / sizeof fr[0]; i++) {
        frame_text(&t, s, fr[i].i, got, sizeof got);
        ok = !strcmp(got, fr[i].text);
    }
    tap_check(ok, "perfview/joined-key-stack", "depth %u+%u, frame \"%s\"", s ? s->stack.kern_depth : 0,
              s ? s->stack.user_depth : 0, got);

    /* the same from memory */
    FILE *fp = fopen(PV, "rb");
    uint8_t *mem = NULL;
    size_t n = 0;
    if (fp) {
        fseek(fp, 0, SEEK_END);
        n = (size_t)ftell(fp);
        fseek(fp, 0, SEEK_SET);
        mem = malloc(n);
        if (fread(mem, 1, n, fp) != n)
            n = 0;
        fclose(fp);
    }
    hs_etl_trace u;
    int rc = hs_etl_read_mem(mem, n, &u, &err);
    int same = rc == 0 && u.nsamples == t.nsamples && u.nframes == t.nframes && u.nimages == t.nimages &&
               !memcmp(u.samples, t.samples, (size_t)t.nsamples * sizeof *t.samples) &&
               !memcmp(u.frames, t.frames, (size_t)t.nframes * sizeof *t.frames);
    tap_check(same, "perfview/file-and-memory-agree", "rc %d (%s)", rc, err.msg);
    hs_etl_trace_free(&u);
    free(mem);
    fp = fopen(PV, "rb");
    rc = fp ? hs_etl_read_fp(fp, &u, &err) : -1;
    same = rc == 0 && u.nsamples == t.nsamples && u.nframes == t.nframes &&
           !memcmp(u.frames, t.frames, (size_t)t.nframes * sizeof *t.frames);
    tap_check(same, "perfview/file-and-stream-agree", "rc %d (%s)", rc, err.msg);
    if (fp)
        fclose(fp);
    hs_etl_trace_free(&u);
    hs_etl_trace_free(&t);

    if (count_events(PV) < 0) {
        tap_fail("perfview/event-counts-as-traceevent", "decode failed");
        return;
    }
    /* TraceEvent: Image/DCStart:1810, Image/DCStop:1820, Image/Load:57,
     * Image/Unload:47, Process/DCStart:35, Process/DCStop:35, Process/Start:1,
     * Process/Stop:1, Process/Defunct:2, Thread/Start:16, Thread/Stop:29,
     * KernelTraceControl/ImageID:3728, ImageID/DbgID_RSDS:3680 */
    tap_check(counts[0x14][3] == 1810 && counts[0x14][4] == 1820 && counts[0x03][10] == 57 && counts[0x14][2] == 47 &&
                  counts[0x03][3] == 35 && counts[0x03][4] == 35 && counts[0x03][1] == 1 && counts[0x03][2] == 1 &&
                  counts[0x03][39] == 2 && counts[0x05][1] == 16 && counts[0x05][2] == 29 &&
                  counts[HS_ETL_GROUP_IMAGEID][0] == 3728 && counts[HS_ETL_GROUP_IMAGEID][36] == 3680,
              "perfview/event-counts-as-traceevent", "image %llu/%llu/%llu/%llu process %llu/%llu thread %llu/%llu",
              (unsigned long long)counts[0x14][3], (unsigned long long)counts[0x14][4],
              (unsigned long long)counts[0x03][10], (unsigned long long)counts[0x14][2],
              (unsigned long long)counts[0x03][3], (unsigned long long)counts[0x03][4],
              (unsigned long long)counts[0x05][1], (unsigned long long)counts[0x05][2]);
}

int main(void)
{
    test_ppt();
    test_perfview();
    return tap_status();
}
