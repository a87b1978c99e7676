/*
 * tests/support/etw_fake_dll.c - etw_fake.dll: the fake of the system's
 * ETW functions (etw_fake.h) as a DLL that hookscope itself loads when
 * HOOKSCOPE_ETW_API names it, so that a whole `hookscope run --sampler etw`
 * runs under Wine (tests/test_etw_run.py): the live layer, the backend,
 * the decode of the trace "the kernel" wrote, and the merge with the hooks.
 *
 * The kernel would record what the target really ran. The fake cannot see
 * that, so the test scripts it, in terms of the real target: when the
 * session starts (the target is created, injected and not yet resumed),
 * the fake finds the target (hookscope's child process, or HS_FAKE_ETW_PID),
 * its first thread, its exe's base, size, timestamp and NT path, and turns
 * the script's frames into addresses of that process.
 *
 * HS_FAKE_ETW_SCRIPT names a file of lines:
 *   fail STEP CODE          make a step fail: privilege, query, set, start, stack,
 *                           stop (by handle), stop-name (by name), enable; ERROR_MORE_DATA
 *                           (234) for a stop: it stops, and says so
 *   leftover NAME           a session NAME runs already ($SELF in it: hookscope's
 *                           pid): a hookscope's left by one that ended, or another's
 *   nosamples               the machine records no samples at all
 *   nosamples-after         a flush's trace has the samples, the final one none
 *   retune N                another tool sets the machine's interval to N (100 ns) at
 *                           a flush, while hookscope's session runs
 *   fill                    the file reaches its cap
 *   jit START SIZE NS NAME  the .NET runtime compiled method NS.NAME at START: its
 *                           MethodLoadVerbose is in the trace if the session enabled
 *                           the runtime's provider for JIT events (verbose)
 *   timed                   the samples at times of the real clock (QPC), spread
 *                           evenly from the session's start to the trace's writing
 *                           (not with switch lines: those count from the first event)
 *   sample COUNT FRAME...   COUNT samples of the target's first thread, leaf first
 *   foreign COUNT FRAME...  samples of another process (pid 4242, tid 4243)
 *   busy FRAME...           samples of the target's first thread as the kernel
 *                           takes them: one per sampling interval of the CPU
 *                           time the thread used (its thread times when the
 *                           session stops, over the interval then set)
 *   kernel                  a kernel image ntoskrnl.exe at 0xfffff80000000000
 *   switch MS IN OUT STATE FRAME...
 *                           a context switch MS ms after the trace's first
 *                           event (after the samples): thread IN replaces OUT,
 *                           which leaves in STATE (ready, waiting or
 *                           terminated), with the stack FRAME... walked for IN
 *                           (none: no stack); a thread is main (the target's
 *                           first) or idle
 *   readied MS THREAD       a ReadyThread for THREAD
 * with FRAME one of
 *   abs+0xADDRESS           that address (JIT-compiled code: in no image)
 *   exe+0xRVA               an address in the target's exe
 *   stub+0xRVA              where the hooked function at exe+RVA jumps to
 *                           (its first instruction, patched by the agent)
 *   kernel+0xOFF            an address in the kernel image
 * HS_FAKE_ETW_LOG names a file that gets, at stop and at unload, what
 * happened: every call, the machine's interval, whether a foreign session
 * was touched, the session's name, flags, file and cap, the sessions of
 * others still running, the classes of events whose stacks were asked
 * for, the addresses used.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <tlhelp32.h>
#include <winternl.h>

#include "tests/support/etw_fake.h"

#define KERNEL_BASE 0xfffff80000000000ull

static etw_fake fake;
static const hs_etw_api *inner;
static HANDLE target, first;          /* the target and its first thread */
static int busy[FAKE_MAX_SAMPLES];    /* sample lines counted from the CPU time */
static unsigned long long busy_cpu;   /* the first thread's CPU time at stop (100 ns) */
static double busy_samples;           /* the busy lines' samples so far */
static unsigned long long busy_last;  /* the first thread's CPU time when they were counted */


/* The first thread's CPU time (user + kernel, 100 ns) into *cpu; false when
 * it cannot be read. */
static bool thread_cpu(unsigned long long *cpu)
{
    FILETIME c, e, k, u;
    if (!first || !GetThreadTimes(first, &c, &e, &k, &u))
        return false;
    *cpu = ((unsigned long long)k.dwHighDateTime << 32 | k.dwLowDateTime) +
           ((unsigned long long)u.dwHighDateTime << 32 | u.dwLowDateTime);
    return true;
}
static uint64_t exe_base;
static char script_error[300];

static void log_state(const char *when)
{
    const char *path = getenv("HS_FAKE_ETW_LOG");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, "when %s\n", when);
    if (script_error[0])
        fprintf(f, "script-error %s\n", script_error);
    for (int i = 0; i < fake.ncalls; i++)
        fprintf(f, "call %s %lu\n", fake.calls[i].what, fake.calls[i].value);
    fprintf(f, "interval %lu\nforeign %d\nrunning %d\nwrote %d\nmode 0x%lx\nflags 0x%lx\n",
            fake.machine_interval, fake.foreign_touched, fake.running, fake.wrote_trace, fake.log_file_mode,
            fake.enable_flags);
    fprintf(f, "session %ls\nfile %ls\npid %u\ntid %u\nexe %s\nbase 0x%llx\nmaxsize %lu\nbusy-cpu %llu\n",
            fake.session_name,
            fake.log_file, fake.pid, fake.tid, fake.image_path, (unsigned long long)exe_base, fake.max_file_mb,
            busy_cpu);
    for (int i = 0; i < fake.nothers; i++)
        if (fake.other_running[i])
            fprintf(f, "other-running %ls\n", fake.others[i]);
    for (int i = 0; i < fake.nstack_classes; i++)
        fprintf(f, "stack-class %s %u\n", fake.stack_classes[i].provider, fake.stack_classes[i].type);
    for (int i = 0; i < fake.nenables; i++)
        fprintf(f, "enabled %s %u 0x%llx %s\n", fake.enables[i].provider, fake.enables[i].level,
                fake.enables[i].keywords, fake.enables[i].pid == fake.pid ? "target" : fake.enables[i].pid ? "other" : "all");
    for (int i = 0; i < fake.nsamples; i++) {
        fprintf(f, "sample %u", fake.samples[i].count);
        for (uint32_t k = 0; k < fake.samples[i].nframes; k++)
            fprintf(f, " 0x%llx", (unsigned long long)fake.samples[i].frames[k]);
        fprintf(f, "\n");
    }
    fclose(f);
}

/* The process hookscope started (its only child), or HS_FAKE_ETW_PID. */
static uint32_t find_target(void)
{
    const char *pid = getenv("HS_FAKE_ETW_PID");
    if (pid && *pid)
        return (uint32_t)strtoul(pid, NULL, 10);
    HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
    PROCESSENTRY32W pe = { .dwSize = sizeof pe };
    uint32_t found = 0;
    for (BOOL ok = Process32FirstW(snap, &pe); ok; ok = Process32NextW(snap, &pe))
        if (pe.th32ParentProcessID == GetCurrentProcessId())
            found = pe.th32ProcessID;
    CloseHandle(snap);
    return found;
}

/* Its thread created first. */
static uint32_t first_thread(uint32_t pid)
{
    HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
    THREADENTRY32 te = { .dwSize = sizeof te };
    uint32_t best = 0;
    ULONGLONG best_t = ~0ull;
    for (BOOL ok = Thread32First(snap, &te); ok; ok = Thread32Next(snap, &te)) {
        if (te.th32OwnerProcessID != pid)
            continue;
        HANDLE h = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, te.th32ThreadID);
        FILETIME c, e, k, u;
        ULONGLONG t = ~0ull - 1;
        if (h && GetThreadTimes(h, &c, &e, &k, &u))
            t = (ULONGLONG)c.dwHighDateTime << 32 | c.dwLowDateTime;
        if (h)
            CloseHandle(h);
        if (t < best_t) {
            best_t = t;
            best = te.th32ThreadID;
        }
    }
    CloseHandle(snap);
    return best;
}

static int read_target(uint64_t addr, void *buf, size_t n)
{
    SIZE_T got = 0;
    return ReadProcessMemory(target, (void *)(uintptr_t)addr, buf, n, &got) && got == n ? 0 : -1;
}

/* The exe: base from the PEB, size and timestamp from its headers, and its
 * path as the kernel names files ("\Device\...": the drive's DOS device). */
static int find_exe(void)
{
    PROCESS_BASIC_INFORMATION pbi;
    ULONG len = 0;
    if (NtQueryInformationProcess(target, ProcessBasicInformation, &pbi, sizeof pbi, &len) != 0)
        return -1;
    if (read_target((uint64_t)(uintptr_t)pbi.PebBaseAddress + 0x10, &exe_base, 8) < 0)
        return -1;
    IMAGE_DOS_HEADER dos;
    IMAGE_NT_HEADERS64 nt;
    if (read_target(exe_base, &dos, sizeof dos) < 0 || read_target(exe_base + (uint64_t)dos.e_lfanew, &nt, sizeof nt) < 0)
        return -1;
    fake.image_base = exe_base;
    fake.image_size = nt.OptionalHeader.SizeOfImage;
    fake.image_timestamp = nt.FileHeader.TimeDateStamp;
    wchar_t dos_path[MAX_PATH], device[MAX_PATH];
    DWORD n = MAX_PATH;
    if (!QueryFullProcessImageNameW(target, 0, dos_path, &n))
        return -1;
    wchar_t drive[3] = { dos_path[0], L':', 0 };
    if (dos_path[1] == L':' && QueryDosDeviceW(drive, device, MAX_PATH))
        snprintf(fake.image_path, sizeof fake.image_path, "%ls%ls", device, dos_path + 2);
    else
        snprintf(fake.image_path, sizeof fake.image_path, "%ls", dos_path);
    char *slash = strrchr(fake.image_path, '\\');
    snprintf(fake.process_name, sizeof fake.process_name, "%s", slash ? slash + 1 : fake.image_path);
    return 0;
}

/* Where the patched first instruction at addr jumps to (jmp rel32, or
 * jmp [rip+disp32]); 0 when it is not patched. */
static uint64_t jump_target(uint64_t addr)
{
    uint8_t c[6];
    if (read_target(addr, c, sizeof c) < 0)
        return 0;
    if (c[0] == 0xE9)
        return addr + 5 + (uint64_t)(int64_t)(int32_t)(c[1] | c[2] << 8 | c[3] << 16 | (uint32_t)c[4] << 24);
    if (c[0] == 0xFF && c[1] == 0x25) {
        int32_t d = (int32_t)(c[2] | c[3] << 8 | c[4] << 16 | (uint32_t)c[5] << 24);
        uint64_t to = 0;
        return read_target(addr + 6 + (uint64_t)(int64_t)d, &to, 8) < 0 ? 0 : to;
    }
    return 0;
}

static int parse_frame(const char *w, uint64_t *out)
{
    const char *plus = strchr(w, '+');
    if (!plus)
        return -1;
    uint64_t off = strtoull(plus + 1, NULL, 0);
    if (!strncmp(w, "exe+", 4))
        *out = exe_base + off;
    else if (!strncmp(w, "kernel+", 7))
        *out = KERNEL_BASE + off;
    else if (!strncmp(w, "stub+", 5))
        *out = jump_target(exe_base + off);
    else if (!strncmp(w, "abs+", 4))
        *out = off;
    else
        return -1;
    return *out ? 0 : -1;
}

static void fail(const char *fmt, const char *arg)
{
    if (!script_error[0])
        snprintf(script_error, sizeof script_error, fmt, arg);
}

static int parse_thread(const char *w, uint32_t *tid)
{
    if (w && !strcmp(w, "main"))
        *tid = FAKE_MAIN;
    else if (w && !strcmp(w, "idle"))
        *tid = 0;
    else
        return -1;
    return 0;
}

/* switch MS IN OUT STATE FRAME..., readied MS THREAD (after the directive) */
static void read_sched(int ready)
{
    if (fake.nsched >= FAKE_MAX_SCHED) {
        fail("more than %s switch and readied lines", "32");
        return;
    }
    fake_sched *e = &fake.sched[fake.nsched];
    memset(e, 0, sizeof *e);
    e->ready = ready;
    const char *ms = strtok(NULL, " \t\r\n");
    e->us = ms ? (uint32_t)(strtod(ms, NULL) * 1000 + 0.5) : 0;
    if (parse_thread(strtok(NULL, " \t\r\n"), &e->in) < 0) {
        fail("a %s line names no thread (main or idle)", ready ? "readied" : "switch");
        return;
    }
    if (!ready) {
        const char *state = NULL;
        if (parse_thread(strtok(NULL, " \t\r\n"), &e->out) < 0 || !(state = strtok(NULL, " \t\r\n"))) {
            fail("a switch line needs MS IN OUT STATE%s", "");
            return;
        }
        e->state = !strcmp(state, "ready") ? 1 : !strcmp(state, "terminated") ? 4 : !strcmp(state, "waiting") ? 5 : 0;
        if (!e->state) {
            fail("no such thread state: %s", state);
            return;
        }
        for (char *fr; (fr = strtok(NULL, " \t\r\n")) && e->nframes < FAKE_MAX_FRAMES;)
            if (parse_frame(fr, &e->frames[e->nframes++]) < 0)
                fail("bad frame %s", fr);
    }
    fake.nsched++;
}

/* The script's fail lines (early: before the steps they fail), or the
 * rest (at start, when the target is known). */
static void read_script(int early)
{
    const char *path = getenv("HS_FAKE_ETW_SCRIPT");
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *w = strtok(line, " \t\r\n");
        if (!w || w[0] == '#')
            continue;
        int is_early = !strcmp(w, "fail") || !strcmp(w, "leftover") || !strcmp(w, "nosamples") ||
                       !strcmp(w, "nosamples-after") || !strcmp(w, "fill");
        if (is_early != early)
            continue;
        if (!strcmp(w, "fail")) {
            const char *step = strtok(NULL, " \t\r\n"), *code = strtok(NULL, " \t\r\n");
            ULONG c = code ? (ULONG)strtoul(code, NULL, 0) : ERROR_ACCESS_DENIED;
            if (step && !strcmp(step, "privilege"))
                fake.fail_privilege = c;
            else if (step && !strcmp(step, "query"))
                fake.fail_query = c;
            else if (step && !strcmp(step, "set"))
                fake.fail_set_interval = c;
            else if (step && !strcmp(step, "start"))
                fake.fail_start = c;
            else if (step && !strcmp(step, "stack"))
                fake.fail_stack = c;
            else if (step && !strcmp(step, "stop"))
                fake.fail_stop = c;
            else if (step && !strcmp(step, "stop-name"))
                fake.fail_stop_name = c;
            else if (step && !strcmp(step, "enable"))
                fake.fail_enable = c;
            else
                fail("no such step: %s", step ? step : "");
        } else if (!strcmp(w, "leftover")) {
            const char *name = strtok(NULL, " \t\r\n");
            char buf[64];
            const char *self = name ? strstr(name, "$SELF") : NULL;
            if (self)
                snprintf(buf, sizeof buf, "%.*s%lu%s", (int)(self - name), name, (unsigned long)GetCurrentProcessId(),
                         self + 5);
            else
                snprintf(buf, sizeof buf, "%s", name ? name : "");
            wchar_t wname[64];
            MultiByteToWideChar(CP_UTF8, 0, buf, -1, wname, 64);
            etw_fake_other(&fake, wname);
        } else if (!strcmp(w, "nosamples")) {
            fake.no_samples = 1;
        } else if (!strcmp(w, "nosamples-after")) {
            fake.no_samples_after = 1;
        } else if (!strcmp(w, "fill")) {
            fake.fill = 1;
        } else if (!strcmp(w, "timed")) {
            fake.timed = 1;
        } else if (!strcmp(w, "jit")) {
            const char *start = strtok(NULL, " \t\r\n"), *size = strtok(NULL, " \t\r\n");
            const char *ns = strtok(NULL, " \t\r\n"), *name = strtok(NULL, " \t\r\n");
            if (!name || fake.njits >= FAKE_MAX_JITS) {
                fail("a jit line wants START SIZE NAMESPACE NAME (at most 4): %s", name ? "too many" : "too short");
                continue;
            }
            fake_jit *j = &fake.jits[fake.njits++];
            j->start = strtoull(start, NULL, 0);
            j->size = (uint32_t)strtoul(size, NULL, 0);
            snprintf(j->ns, sizeof j->ns, "%s", ns);
            snprintf(j->name, sizeof j->name, "%s", name);
        } else if (!strcmp(w, "retune")) {
            const char *n = strtok(NULL, " \t\r\n");
            fake.retune = n ? strtoul(n, NULL, 0) : 0;
        } else if (!strcmp(w, "kernel")) {
            fake_image *im = &fake.images[fake.nimages++];
            im->pid = 0;
            im->base = KERNEL_BASE;
            im->size = 0x800000;
            im->timestamp = 0x5f000000;
            snprintf(im->path, sizeof im->path, "\\SystemRoot\\system32\\ntoskrnl.exe");
        } else if (!strcmp(w, "switch") || !strcmp(w, "readied")) {
            read_sched(!strcmp(w, "readied"));
        } else if (!strcmp(w, "sample") || !strcmp(w, "foreign") || !strcmp(w, "busy")) {
            if (fake.nsamples >= FAKE_MAX_SAMPLES) {
                fail("more than %s sample lines", "16");
                continue;
            }
            fake_sample *smp = &fake.samples[fake.nsamples];
            memset(smp, 0, sizeof *smp);
            if (!strcmp(w, "foreign"))
                smp->pid = 4242, smp->tid = 4243;
            busy[fake.nsamples] = !strcmp(w, "busy");
            const char *count = busy[fake.nsamples] ? "0" : strtok(NULL, " \t\r\n");
            smp->count = count ? (uint32_t)strtoul(count, NULL, 0) : 0;
            for (char *fr; (fr = strtok(NULL, " \t\r\n")) && smp->nframes < FAKE_MAX_FRAMES;)
                if (parse_frame(fr, &smp->frames[smp->nframes++]) < 0)
                    fail("bad frame %s", fr);
            if (smp->nframes)
                smp->ip = smp->frames[0];
            fake.nsamples++;
        } else {
            fail("no such directive: %s", w);
        }
    }
    fclose(f);
}

static ULONG WINAPI dll_start(TRACEHANDLE *h, LPCWSTR name, EVENT_TRACE_PROPERTIES *p)
{
    uint32_t pid = find_target();
    target = pid ? OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, FALSE, pid) : NULL;
    if (!target) {
        fail("no target process%s", "");
    } else {
        fake.pid = pid;
        fake.tid = first_thread(pid);
        first = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, fake.tid);
        /* the CPU the thread used before the session began is in no trace
         * (Wine's start-up of a process held suspended runs on its first
         * thread: 9 ms of it on a loaded machine, counted at the old
         * interval, gave 50 samples where 41 were due) */
        thread_cpu(&busy_last);
        if (find_exe() < 0)
            fail("cannot read the target's exe%s", "");
        else
            read_script(0);
    }
    return inner->start_trace(h, name, p);
}

/* The busy lines' counts: the first thread's CPU time, each stretch of it
 * over the interval the machine sampled at then (hookscope sets the run's
 * interval once the session runs and puts the old one back before it
 * stops the session: each change closes a stretch). */

static void count_busy(void)
{
    if (!fake.machine_interval || !thread_cpu(&busy_cpu))
        return;
    busy_samples += (double)(busy_cpu - busy_last) / fake.machine_interval;
    busy_last = busy_cpu;
    for (int i = 0; i < fake.nsamples; i++)
        if (busy[i])
            fake.samples[i].count = (uint32_t)busy_samples;
}

static ULONG WINAPI dll_control(TRACEHANDLE h, LPCWSTR name, EVENT_TRACE_PROPERTIES *p, ULONG code)
{
    if (code == EVENT_TRACE_CONTROL_STOP && fake.running)
        count_busy();
    ULONG rc = inner->control_trace(h, name, p, code);
    if (code == EVENT_TRACE_CONTROL_STOP)
        log_state("stop");
    return rc;
}

static ULONG WINAPI dll_query_all(EVENT_TRACE_PROPERTIES **props, ULONG count, ULONG *returned)
{
    return inner->query_all_traces(props, count, returned);
}

static ULONG WINAPI dll_set(TRACEHANDLE h, int cls, void *info, ULONG len)
{
    if (fake.running)
        count_busy();   /* a change of the interval ends a stretch */
    return inner->set_information(h, cls, info, len);
}

static ULONG WINAPI dll_query(TRACEHANDLE h, int cls, void *info, ULONG len, ULONG *ret)
{
    return inner->query_information(h, cls, info, len, ret);
}

static DWORD dll_privilege(void)
{
    return inner->enable_profile_privilege();
}

static ULONG WINAPI dll_enable(TRACEHANDLE h, LPCGUID provider, ULONG code, UCHAR level, ULONGLONG any, ULONGLONG all,
                               ULONG timeout, PENABLE_TRACE_PARAMETERS params)
{
    return inner->enable_trace_ex2(h, provider, code, level, any, all, timeout, params);
}

__declspec(dllexport) const hs_etw_api *hs_etw_test_api(void)
{
    static hs_etw_api api = { dll_start, dll_control, dll_set, dll_query, dll_privilege, dll_query_all, dll_enable };
    if (!inner) {
        etw_fake_reset(&fake);
        const char *interval = getenv("HS_FAKE_ETW_INTERVAL");
        if (interval && *interval)
            fake.machine_interval = (ULONG)strtoul(interval, NULL, 0);
        inner = etw_fake_api(&fake);
        read_script(1);
    }
    return &api;
}

BOOL WINAPI DllMain(HINSTANCE dll, DWORD reason, void *reserved)
{
    (void)dll, (void)reserved;
    if (reason == DLL_PROCESS_DETACH)
        log_state("unload");
    return TRUE;
}
