/*
 * tests/support/etwtest.c - the live ETW layer (sampler/etw/etw_session_win.h) against
 * a fake of the system's ETW functions (etw_fake.h), under Wine: the calls
 * it makes and their order, the private session's settings, the global
 * sampling interval read, set and put back on every way out, no foreign
 * session touched; and the trace the fake writes at stop decoded by
 * hookscope's own reader and turned into a profile whose frames are named
 * (this program's own functions). Prints one tap line per case.
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
        if (!strcmp(c->what, "set-interval") || !strcmp(c->what, "stack-tracing") || !strcmp(c->what, "stop"))
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

    hs_etw_session s;
    int na = 0;
    char err[256] = "";
    int rc = hs_etw_start(&s, etw_fake_api(&f), etl_path(), 2000, &na, err, sizeof err);
    check(rc == 0, "start", "%s", err);
    check(f.machine_interval == 5000, "the machine's interval is set for 2000 Hz", "%lu", f.machine_interval);
    check(f.running && !wcsncmp(f.session_name, L"hookscope-", 10), "a session of hookscope's own name",
          "%ls", f.session_name);
    static const GUID system_trace = { 0x9e814aad, 0x3204, 0x11d2, { 0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39 } };
    check(memcmp(&f.session_guid, &system_trace, sizeof system_trace) != 0, "its own GUID, not SystemTraceControlGuid",
          "same GUID");
    check(f.log_file_mode == (EVENT_TRACE_SYSTEM_LOGGER_MODE | EVENT_TRACE_FILE_MODE_SEQUENTIAL),
          "a private system logger writing a file", "mode 0x%lx", f.log_file_mode);
    check(f.enable_flags == (EVENT_TRACE_FLAG_PROCESS | EVENT_TRACE_FLAG_THREAD | EVENT_TRACE_FLAG_IMAGE_LOAD |
                             EVENT_TRACE_FLAG_PROFILE),
          "process, thread, image and profile events", "flags 0x%lx", f.enable_flags);
    check(f.client_context == 1, "QPC timestamps", "ClientContext %lu", f.client_context);
    check(!wcscmp(f.log_file, etl_path()), "into the file asked for", "%ls", f.log_file);
    hs_etw_stop(&s);
    hs_etw_stop(&s);   /* a second stop does nothing */
    char calls[512];
    call_line(&f, calls, sizeof calls);
    check(!strcmp(calls, "privilege query-interval set-interval:5000 start stack-tracing:46 stop:1 "
                         "set-interval:10000"),
          "the calls, in order", "%s", calls);
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
    check(hs_etl_pick_process(&t, f.pid, NULL, &index, msg, sizeof msg) == 0, "the process is in it", "%s", msg);
    hs_profile *p = hs_profile_new();
    hs_profile_from_etl(&t, index, path8, NULL, NULL, p);
    hs_profile_resolve(p, NULL);
    hs_profile_count_samples(p);
    check(p->sampling.samples == 100, "every sample decoded", "%llu", (unsigned long long)p->sampling.samples);
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
    int rc = hs_etw_start(&s, etw_fake_api(&f), etl_path(), 1000, &na, err, sizeof err);
    hs_etw_stop(&s);   /* what a run does on every way out */
    char calls[512], tname[128];
    call_line(&f, calls, sizeof calls);
    snprintf(tname, sizeof tname, "%s: refused, nothing left changed", name);
    check(rc < 0 && na == expect_na && !f.running && f.machine_interval == 10000 && !f.foreign_touched &&
              !strcmp(calls, expect_calls) && err[0],
          tname, "rc %d, not_available %d, running %d, interval %lu, foreign %d, calls '%s', error '%s'", rc, na,
          f.running, f.machine_interval, f.foreign_touched, calls, err);
    printf("# %s: %s\n", name, err);
}

int main(void)
{
    test_success();
    test_failure("no privilege", 0, ERROR_NOT_ALL_ASSIGNED, 1, "privilege");
    test_failure("interval not readable (Wine)", 1, ERROR_CALL_NOT_IMPLEMENTED, 1, "privilege query-interval");
    test_failure("interval not settable", 2, ERROR_ACCESS_DENIED, 0, "privilege query-interval set-interval:10000");
    test_failure("session refused", 3, ERROR_NO_SYSTEM_RESOURCES, 0,
                 "privilege query-interval set-interval:10000 start set-interval:10000");
    test_failure("no stack walks", 4, ERROR_INVALID_PARAMETER, 0,
                 "privilege query-interval set-interval:10000 start stack-tracing:46 stop:1 set-interval:10000");
    return failures ? 1 : 0;
}
