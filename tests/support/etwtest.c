/*
 * tests/support/etwtest.c - the live ETW layer (sampler/etw/etw_session_win.h) against
 * a fake of the system's ETW functions (etw_fake.h), under Wine: the calls
 * it makes and their order, the private session's settings (its name
 * records the interval to put back, its file is capped), the global
 * sampling interval read, set once the session runs and put back before
 * it stops on every way out, no foreign session touched; leftover sessions
 * of hookscopes that are gone stopped and their interval put back; a
 * failed stop tried again by name, and said when that fails too; a file
 * that reached its cap told; and the trace the fake writes at stop
 * decoded by hookscope's own reader and turned into a profile whose
 * frames are named (this program's own functions). Prints one tap line
 * per case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "injector/profile/from_etl.h"
#include "injector/profile/profile.h"
#include "injector/profile/resolve.h"
#include "sampler/etl/etl.h"
#include "sampler/etw/etw_session_win.h"
#include "tests/support/etw_fake.h"

static int failures;

static void check(int ok, const char *name, const char *fmt, ...)
{
    if (ok) {
        printf("ok - %s\n", name);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    printf("not ok - %s: ", name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

__attribute__((noinline)) int burn_a(int x) { return x * 3 + 1; }
__attribute__((noinline)) int burn_b(int x) { return x * 5 + 2; }

/* the calls as one line: "privilege query-interval set-interval:5000 ..." */
static void call_line(const etw_fake *f, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < f->ncalls && n < len; i++) {
        const fake_call *c = &f->calls[i];
        if (!strcmp(c->what, "set-interval") || !strcmp(c->what, "stack-tracing") || !strcmp(c->what, "stop") ||
            !strcmp(c->what, "stop-name"))
            n += (size_t)snprintf(buf + n, len - n, "%s%s:%lu", i ? " " : "", c->what, c->value);
        else
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "", c->what);
    }
}

static const wchar_t *etl_path(void)
{
    static wchar_t path[MAX_PATH];
    GetTempPathW(MAX_PATH, path);
    wcscat(path, L"hookscope-etwtest.etl");
    return path;
}

static void test_success(void)
{
    etw_fake f;
    etw_fake_reset(&f);
    f.pid = GetCurrentProcessId();
    f.tid = 4242;
    snprintf(f.process_name, sizeof f.process_name, "etwtest.exe");
    wchar_t self[MAX_PATH];
    GetModuleFileNameW(NULL, self, MAX_PATH);
    char *self8 = hs_utf8(self);
    snprintf(f.image_path, sizeof f.image_path, "%s", self8);
    HMODULE me = GetModuleHandleW(NULL);
    IMAGE_NT_HEADERS *nt = (IMAGE_NT_HEADERS *)((char *)me + ((IMAGE_DOS_HEADER *)me)->e_lfanew);
    f.image_base = (uint64_t)(uintptr_t)me;
    f.image_size = nt->OptionalHeader.SizeOfImage;
    f.image_timestamp = nt->FileHeader.TimeDateStamp;
    uint64_t ret = (uint64_t)(uintptr_t)&test_success + 0x10;
    f.samples[0] = (fake_sample){ .ip = (uint64_t)(uintptr_t)&burn_a + 2, .ret = ret, .count = 30 };
    f.samples[1] = (fake_sample){ .ip = (uint64_t)(uintptr_t)&burn_b + 2, .ret = ret, .count = 70 };
    f.nsamples = 2;
    /* the thread runs from 1 ms, blocks at 2, is readied at 4.5 and runs
     * again at 6 where burn_b called it from test_success, is preempted at
     * 7 and runs again at 9.5 in burn_a. The trace's CollectionStart has
     * the 1 ms the machine sampled at when the session started (the run's
     * 0.5 ms comes after, as a SetInterval, before the first sample): the
     * reader takes the interval in force at the first sample, so even read
     * as a recorded trace it is the 0.5 ms grid: waiting [2, 4.5) 5
     * samples, ready [4.5, 6) 3 and [7, 9.5) 5 (the 1 ms of the
     * CollectionStart alone, TraceLog's rule, gave 3, 1 and 3) */
    uint64_t at_b[2] = { (uint64_t)(uintptr_t)&burn_b + 2, ret }, at_a[2] = { (uint64_t)(uintptr_t)&burn_a + 2, ret };
    f.sched[0] = (fake_sched){ .us = 1000, .in = FAKE_MAIN, .out = 0, .state = 1 };
    f.sched[1] = (fake_sched){ .us = 2000, .in = 0, .out = FAKE_MAIN, .state = 5 };
    f.sched[2] = (fake_sched){ .ready = 1, .us = 4500, .in = FAKE_MAIN };
    f.sched[3] = (fake_sched){ .us = 6000, .in = FAKE_MAIN, .out = 0, .state = 1, .nframes = 2 };
    memcpy(f.sched[3].frames, at_b, sizeof at_b);
    f.sched[4] = (fake_sched){ .us = 7000, .in = 0, .out = FAKE_MAIN, .state = 1 };
    f.sched[5] = (fake_sched){ .us = 9500, .in = FAKE_MAIN, .out = 0, .state = 1, .nframes = 2 };
    memcpy(f.sched[5].frames, at_a, sizeof at_a);
    f.nsched = 6;

    hs_etw_session s;
    int na = 0;
    char err[256] = "";
    int rc = hs_etw_start(&s, etw_fake_api(&f), etl_path(), 2000, HS_ETW_MAX_FILE_MB, &na, err, sizeof err);
    check(rc == 0, "start", "%s", err);
    wchar_t want[64];
    swprintf(want, 64, L"hookscope-%lu-", (unsigned long)GetCurrentProcessId());
    check(!wcsncmp(f.session_name, want, wcslen(want)) && wcsstr(f.session_name, L"-i10000"),
          "the session's name records the interval to put back", "%ls", f.session_name);
    check(f.max_file_mb == HS_ETW_MAX_FILE_MB, "the file is capped", "MaximumFileSize %lu", f.max_file_mb);
    check(f.machine_interval == 5000, "the machine's interval is set for 2000 Hz", "%lu", f.machine_interval);
    check(f.running && !wcsncmp(f.session_name, L"hookscope-", 10), "a session of hookscope's own name",
          "%ls", f.session_name);
    static const GUID system_trace = { 0x9e814aad, 0x3204, 0x11d2, { 0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39 } };
    check(memcmp(&f.session_guid, &system_trace, sizeof system_trace) != 0, "its own GUID, not SystemTraceControlGuid",
          "same GUID");
    check(f.log_file_mode == (EVENT_TRACE_SYSTEM_LOGGER_MODE | EVENT_TRACE_FILE_MODE_SEQUENTIAL),
          "a private system logger writing a file", "mode 0x%lx", f.log_file_mode);
    check(f.enable_flags == (EVENT_TRACE_FLAG_PROCESS | EVENT_TRACE_FLAG_THREAD | EVENT_TRACE_FLAG_IMAGE_LOAD |
                             EVENT_TRACE_FLAG_PROFILE | EVENT_TRACE_FLAG_CSWITCH | EVENT_TRACE_FLAG_DISPATCHER) &&
              f.enable_flags == 0x01000817,
          "process, thread, image, profile, context switch and dispatcher (ReadyThread) events", "flags 0x%lx",
          f.enable_flags);
    char classes[200] = "";
    for (int i = 0; i < f.nstack_classes; i++)
        snprintf(classes + strlen(classes), sizeof classes - strlen(classes), "%s%s:%u", i ? " " : "",
                 f.stack_classes[i].provider, f.stack_classes[i].type);
    check(!strcmp(classes, "perfinfo:46 thread:36 thread:50"),
          "stacks for SampledProfile, CSwitch and ReadyThread, in one list", "%s", classes);
    check(f.client_context == 1, "QPC timestamps", "ClientContext %lu", f.client_context);
    check(!wcscmp(f.log_file, etl_path()), "into the file asked for", "%ls", f.log_file);
    check(hs_etw_flush(&s) == 0 && f.wrote_trace && f.running, "a flush writes what there is, the session runs on",
          "wrote %d running %d", f.wrote_trace, f.running);
    check(hs_etw_stop(&s, err, sizeof err) == 0, "stopped", "%s", err);
    check(hs_etw_stop(&s, err, sizeof err) == 0, "a second stop does nothing", "%s", err);
    check(!hs_etw_file_full(&s), "a small file is not at its cap", "full");
    char calls[512];
    call_line(&f, calls, sizeof calls);
    check(!strcmp(calls, "privilege query-all query-interval start set-interval:5000 query-interval stack-tracing:3 "
                         "flush query-interval set-interval:10000 stop:1"),
          "the calls, in order (the interval put back before the session stops)", "%s", calls);
    check(f.machine_interval == 10000 && !f.foreign_touched, "the interval is put back, no foreign session touched",
          "interval %lu, foreign %d", f.machine_interval, f.foreign_touched);
    check(f.wrote_trace, "the trace was written at stop", "not written");

    /* what hookscope makes of the trace */
    hs_etl_trace t;
    hs_etl_error e;
    char *path8 = hs_utf8(etl_path());
    rc = hs_etl_read_file(path8, &t, &e);
    check(rc == 0, "the trace decodes", "%s", e.msg);
    if (rc != 0)
        return;
    uint32_t index = 0;
    char msg[256];
    check(hs_etl_pick_process(&t, f.pid, NULL, &index, NULL, msg, sizeof msg) == 0, "the process is in it", "%s", msg);
    hs_profile *p = hs_profile_new();
    hs_profile_from_etl(&t, index, path8, NULL, NULL, p);
    hs_profile_resolve(p, NULL);
    hs_profile_count_samples(p);
    check(p->sampling.samples == 100, "every sample decoded", "%llu", (unsigned long long)p->sampling.samples);
    const hs_prof_thread *th = p->nthreads_list == 1 ? &p->threads_list[0] : NULL;
    check(th && !p->sampling.off_cpu_unknown && p->sampling.wait_samples == 5 && p->sampling.ready_samples == 8 &&
              th->wait_samples == 5 && th->ready_samples == 8 && th->running_s == 0.0020 && th->wait_s == 0.0025 &&
              th->ready_s == 0.0040 && p->sampling.wait_no_stack == 0 && p->sampling.ready_no_stack == 0,
          "the context switches on the run's 0.5 ms grid: 5 wait and 8 ready samples, 2 ms running, 2.5 ms waiting, "
          "4 ms ready",
          "%zu threads, unknown %d, wait %llu ready %llu, running %g wait %g ready %g s, no stack %llu/%llu",
          p->nthreads_list, p->sampling.off_cpu_unknown, (unsigned long long)p->sampling.wait_samples,
          (unsigned long long)p->sampling.ready_samples, th ? th->running_s : -1, th ? th->wait_s : -1,
          th ? th->ready_s : -1, (unsigned long long)p->sampling.wait_no_stack,
          (unsigned long long)p->sampling.ready_no_stack);
    uint64_t a = 0, b = 0, caller = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        if (!strcmp(p->funcs[i].name, "burn_a"))
            a = p->funcs[i].cpu_self;
        if (!strcmp(p->funcs[i].name, "burn_b"))
            b = p->funcs[i].cpu_self;
        if (!strcmp(p->funcs[i].name, "test_success"))
            caller = p->funcs[i].cpu_total;
    }
    check(a == 30 && b == 70 && caller == 100, "samples named and counted: burn_a 30, burn_b 70, their caller 100",
          "burn_a %llu, burn_b %llu, caller %llu", (unsigned long long)a, (unsigned long long)b,
          (unsigned long long)caller);
    uint64_t wait_b = 0, ready_a = 0, ready_b = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        if (!strcmp(p->funcs[i].name, "burn_a"))
            ready_a = p->funcs[i].ready_self;
        if (!strcmp(p->funcs[i].name, "burn_b"))
            ready_b = p->funcs[i].ready_self, wait_b = p->funcs[i].wait_self;
    }
    check(wait_b == 5 && ready_b == 3 && ready_a == 5,
          "each stretch has the stack walked where it ended: burn_b 5 wait and 3 ready, burn_a 5 ready",
          "burn_b wait %llu ready %llu, burn_a ready %llu", (unsigned long long)wait_b, (unsigned long long)ready_b,
          (unsigned long long)ready_a);
    hs_profile_free(p);
    hs_etl_trace_free(&t);
    DeleteFileW(etl_path());
}

/* One failing step: nothing is left changed. */
static void test_failure(const char *name, int step, ULONG code, int expect_na, const char *expect_calls)
{
    etw_fake f;
    etw_fake_reset(&f);
    if (step == 0)
        f.fail_privilege = code;
    else if (step == 1)
        f.fail_query = code;
    else if (step == 2)
        f.fail_set_interval = code;
    else if (step == 3)
        f.fail_start = code;
    else
        f.fail_stack = code;
    hs_etw_session s;
    int na = 0;
    char err[256] = "";
    int rc = hs_etw_start(&s, etw_fake_api(&f), etl_path(), 1000, HS_ETW_MAX_FILE_MB, &na, err, sizeof err);
    hs_etw_stop(&s, NULL, 0);   /* what a run does on every way out */
    char calls[512], tname[128];
    call_line(&f, calls, sizeof calls);
    snprintf(tname, sizeof tname, "%s: refused, nothing left changed", name);
    check(rc < 0 && na == expect_na && !f.running && f.machine_interval == 10000 && !f.foreign_touched &&
              !strcmp(calls, expect_calls) && err[0],
          tname, "rc %d, not_available %d, running %d, interval %lu, foreign %d, calls '%s', error '%s'", rc, na,
          f.running, f.machine_interval, f.foreign_touched, calls, err);
    printf("# %s: %s\n", name, err);
}

/* Sessions left running: a dead hookscope's (named with the interval it
 * found), an older one's (no interval in its name), this process's own
 * (alive), another tool's. */
static void test_leftovers(void)
{
    etw_fake f;
    etw_fake_reset(&f);
    f.machine_interval = 2500;   /* as the dead hookscope set it */
    wchar_t self[64];
    swprintf(self, 64, L"hookscope-%lu-7-i1221", (unsigned long)GetCurrentProcessId());
    etw_fake_other(&f, L"hookscope-999999-3-i10000");
    etw_fake_other(&f, self);
    etw_fake_other(&f, L"hookscope-888888-1");
    etw_fake_other(&f, L"NT Kernel Logger");
    int n = hs_etw_clean_leftovers(etw_fake_api(&f));
    char calls[512];
    call_line(&f, calls, sizeof calls);
    check(n == 2 && !f.other_running[0] && f.other_running[1] && !f.other_running[2] && f.other_running[3] &&
              !f.foreign_touched,
          "leftovers of hookscopes that are gone are stopped, nothing else", "%d stopped, running %d %d %d %d, "
          "foreign %d", n, f.other_running[0], f.other_running[1], f.other_running[2], f.other_running[3],
          f.foreign_touched);
    check(f.machine_interval == 10000, "the interval the dead one found is put back", "%lu", f.machine_interval);
    check(!strcmp(calls, "query-all stop-leftover:999999-3-i10000 stop-leftover:888888-1 set-interval:10000"),
          "the calls of the clean-up", "%s", calls);
}

/* A stop that fails by handle: again by name; ERROR_MORE_DATA is a stop;
 * both failing is said. */
static void test_stop(const char *name, ULONG by_handle, ULONG by_name, int expect_rc, const char *expect_calls)
{
    etw_fake f;
    etw_fake_reset(&f);
    f.fail_stop = by_handle;
    f.fail_stop_name = by_name;
    hs_etw_session s;
    int na = 0;
    char err[400] = "";
    hs_etw_start(&s, etw_fake_api(&f), etl_path(), 1000, HS_ETW_MAX_FILE_MB, &na, err, sizeof err);
    err[0] = 0;
    int rc = hs_etw_stop(&s, err, sizeof err);
    char calls[512], tname[160];
    call_line(&f, calls, sizeof calls);
    snprintf(tname, sizeof tname, "stop %s", name);
    check(rc == expect_rc && !strcmp(calls, expect_calls) && f.machine_interval == 10000 &&
              (rc == 0 ? !err[0] && !f.running : strstr(err, "did not stop") && strstr(err, "logman stop") != NULL),
          tname, "rc %d, calls '%s', interval %lu, running %d, error '%s'", rc, calls, f.machine_interval, f.running,
          err);
    if (rc)
        printf("# %s\n", err);
    if (f.running)
        f.fail_stop = f.fail_stop_name = 0, hs_etw_stop(&s, NULL, 0);
    DeleteFileW(etl_path());
}

/* A file at its cap is told. */
static void test_cap(void)
{
    etw_fake f;
    etw_fake_reset(&f);
    f.fill = 1;
    hs_etw_session s;
    int na = 0;
    char err[256] = "";
    int rc = hs_etw_start(&s, etw_fake_api(&f), etl_path(), 1000, 3, &na, err, sizeof err);
    hs_etw_stop(&s, NULL, 0);
    check(rc == 0 && f.max_file_mb == 3 && hs_etw_file_full(&s), "a file at its cap is told",
          "rc %d, cap %lu, full %d", rc, f.max_file_mb, hs_etw_file_full(&s));
    DeleteFileW(etl_path());
}

int main(void)
{
    test_success();
    test_failure("no privilege", 0, ERROR_NOT_ALL_ASSIGNED, 1, "privilege");
    test_failure("interval not readable (Wine)", 1, ERROR_CALL_NOT_IMPLEMENTED, 1,
                 "privilege query-all query-interval");
    test_failure("interval not settable", 2, ERROR_ACCESS_DENIED, 0,
                 "privilege query-all query-interval start set-interval:10000 stop:1");
    test_failure("session refused", 3, ERROR_NO_SYSTEM_RESOURCES, 0, "privilege query-all query-interval start");
    test_failure("no stack walks", 4, ERROR_INVALID_PARAMETER, 0,
                 "privilege query-all query-interval start set-interval:10000 query-interval stack-tracing:3 query-interval set-interval:10000 "
                 "stop:1");
    test_leftovers();
    test_stop("by handle", 0, 0, 0,
              "privilege query-all query-interval start set-interval:10000 query-interval stack-tracing:3 query-interval set-interval:10000 stop:1");
    test_stop("says more data: stopped", ERROR_MORE_DATA, 0, 0,
              "privilege query-all query-interval start set-interval:10000 query-interval stack-tracing:3 query-interval set-interval:10000 stop:1");
    test_stop("fails, then by name", ERROR_INVALID_HANDLE, 0, 0,
              "privilege query-all query-interval start set-interval:10000 query-interval stack-tracing:3 query-interval set-interval:10000 stop:1 "
              "stop-name:1");
    test_stop("fails both ways", ERROR_INVALID_HANDLE, ERROR_ACCESS_DENIED, -1,
              "privilege query-all query-interval start set-interval:10000 query-interval stack-tracing:3 query-interval set-interval:10000 stop:1 "
              "stop-name:1");
    test_cap();
    return failures ? 1 : 0;
}
