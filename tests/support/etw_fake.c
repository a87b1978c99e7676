/*
 * tests/support/etw_fake.c - see etw_fake.h.
 */
#include "tests/support/etw_fake.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/etl_build.h"

static etw_fake *fake;
#define FAKE_HANDLE 0x51u

static void record(const char *what, unsigned long value)
{
    if (fake->ncalls >= FAKE_MAX_CALLS)
        return;
    fake_call *c = &fake->calls[fake->ncalls++];
    snprintf(c->what, sizeof c->what, "%s", what);
    c->value = value;
}

static DWORD fake_privilege(void)
{
    record("privilege", fake->fail_privilege);
    return fake->fail_privilege;
}

static ULONG WINAPI fake_query(TRACEHANDLE h, int cls, void *info, ULONG len, ULONG *ret)
{
    record("query-interval", (unsigned long)cls);
    if (h != 0 || cls != HS_ETW_INFO_PROFILE_INTERVAL || len < 8)
        return ERROR_INVALID_PARAMETER;
    if (fake->fail_query)
        return fake->fail_query;
    ((ULONG *)info)[1] = fake->machine_interval;
    if (ret)
        *ret = 8;
    return ERROR_SUCCESS;
}

static ULONG WINAPI fake_set(TRACEHANDLE h, int cls, void *info, ULONG len)
{
    if (h == 0 && cls == HS_ETW_INFO_PROFILE_INTERVAL && len >= 8) {
        record("set-interval", ((ULONG *)info)[1]);
        if (fake->fail_set_interval)
            return fake->fail_set_interval;
        fake->machine_interval = ((ULONG *)info)[1];
        if (fake->running && !fake->session_interval)
            fake->session_interval = fake->machine_interval;
        return ERROR_SUCCESS;
    }
    if (cls == HS_ETW_INFO_STACK_TRACING) {
        if (h != FAKE_HANDLE || !fake->running) {
            fake->foreign_touched = 1;
            record("foreign", (unsigned long)h);
            return ERROR_INVALID_HANDLE;
        }
        /* CLASSIC_EVENT_ID[]: a GUID, the event type, 7 reserved bytes */
        static const GUID perfinfo = { 0xce1dbfb4, 0x137e, 0x4da6, { 0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc } };
        static const GUID thread = { 0x3d6fa8d1, 0xfe05, 0x11d0, { 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c } };
        record("stack-tracing", len / 24);   /* the number of classes */
        if (len == 0 || len % 24 || len / 24 > FAKE_MAX_STACK_CLASSES)
            return ERROR_INVALID_PARAMETER;
        fake->nstack_classes = 0;
        for (const uint8_t *id = info; id < (const uint8_t *)info + len; id += 24) {
            fake_stack_class *c = &fake->stack_classes[fake->nstack_classes++];
            snprintf(c->provider, sizeof c->provider, "%s",
                     !memcmp(id, &perfinfo, 16) ? "perfinfo" : !memcmp(id, &thread, 16) ? "thread" : "other");
            c->type = id[16];
        }
        return fake->fail_stack;
    }
    record("set-other", (unsigned long)cls);
    return ERROR_INVALID_PARAMETER;
}

static ULONG WINAPI fake_start(TRACEHANDLE *h, LPCWSTR name, EVENT_TRACE_PROPERTIES *p)
{
    record("start", p->LogFileMode);
    if (!wcscmp(name, L"NT Kernel Logger") || !wcscmp(name, L"Circular Kernel Context Logger")) {
        fake->foreign_touched = 1;
        return ERROR_ALREADY_EXISTS;
    }
    if (fake->fail_start)
        return fake->fail_start;
    wcsncpy(fake->session_name, name, 63);
    fake->session_guid = p->Wnode.Guid;
    fake->log_file_mode = p->LogFileMode;
    fake->enable_flags = p->EnableFlags;
    fake->client_context = p->Wnode.ClientContext;
    LARGE_INTEGER q;
    QueryPerformanceCounter(&q);
    fake->qpc_start = q.QuadPart;
    wcsncpy(fake->log_file, (const wchar_t *)((const char *)p + p->LogFileNameOffset), 519);
    fake->max_file_mb = p->MaximumFileSize;
    fake->running = 1;
    fake->start_interval = fake->machine_interval;
    fake->session_interval = 0;
    *h = FAKE_HANDLE;
    return ERROR_SUCCESS;
}

/* The trace the kernel would have written: the timer's interval, the
 * scripted process, its thread and exe, each sample with its stack (the
 * instruction and one return address), then the context switches and
 * readies, as a system logger writes them (64-bit, QPC clock at 10 MHz). */
static int jit_events_on(void);

static void write_trace(void)
{
    etlb b;
    etlb_bytes pl = { 0 };
    const unsigned P = 8;
    /* timed: the events at the session's start on the real clock (QPC, as
     * hookscope's session asks), the samples spread evenly up to now */
    LARGE_INTEGER now;
    QueryPerformanceCounter(&now);
    uint64_t ts = fake->timed ? (uint64_t)fake->qpc_start : 100;
    uint64_t nall = 0, at = 0;
    for (int i = 0; i < fake->nsamples; i++)
        nall += fake->samples[i].count;
    etlb_init(&b, P, 1, 1024 * 1024);
    etlb_begin(&b, 0, 1);
    /* the timer's interval as the kernel records it: in force when the
     * session started (CollectionStart), then set for the run (SetInterval) */
    etlb_p_interval(&pl, 0, fake->start_interval, fake->start_interval);
    etlb_sys(&b, 0, 0x0F, 73, 2, 0, 0, ts, &pl), pl.n = 0;
    const uint64_t first = ts;
    if (fake->session_interval) {
        etlb_p_interval(&pl, 0, fake->session_interval, fake->start_interval);
        etlb_sys(&b, 0, 0x0F, 72, 2, 0, 0, ts, &pl), pl.n = 0;
    }
    etlb_p_process(&pl, P, fake->pid, 1, 1, fake->process_name, fake->process_name);
    etlb_sys(&b, 0, 0x03, 3, 4, 0, fake->pid, ts++, &pl), pl.n = 0;
    etlb_p_thread(&pl, P, fake->pid, fake->tid);
    etlb_sys(&b, 0, 0x05, 3, 3, fake->tid, fake->pid, ts++, &pl), pl.n = 0;
    etlb_p_image(&pl, P, fake->image_base, fake->image_size, fake->pid, 0, fake->image_timestamp, fake->image_path);
    etlb_sys(&b, 0, 0x14, 3, 3, 0, fake->pid, ts++, &pl), pl.n = 0;
    for (int i = 0; i < fake->nimages; i++) {
        const fake_image *im = &fake->images[i];
        etlb_p_image(&pl, P, im->base, im->size, im->pid, 0, im->timestamp, im->path);
        etlb_sys(&b, 0, 0x14, 3, 3, 0, im->pid, ts++, &pl), pl.n = 0;
    }
    /* the runtime's MethodLoadVerbose (event 143, version 1), as it compiles */
    for (int i = 0; i < fake->njits && jit_events_on(); i++) {
        const fake_jit *j = &fake->jits[i];
        etlb_p_clr_method(&pl, 1, 0x1000 + (uint64_t)i, 0, j->start, j->size, j->ns, j->name, "void  ()", 0);
        etlb_evh(&b, etlb_guid_clr_runtime, 143, 37, 1, fake->tid, fake->pid, ts++, NULL, 0, &pl), pl.n = 0;
    }
    for (int i = 0; i < fake->nsamples && !fake->no_samples && !(fake->no_samples_after && !fake->running); i++) {
        const fake_sample *smp = &fake->samples[i];
        uint32_t pid = smp->pid ? smp->pid : fake->pid, tid = smp->tid ? smp->tid : fake->tid;
        if (pid != fake->pid) {
            etlb_p_process(&pl, P, pid, 1, 1, "other.exe", "other.exe");
            etlb_sys(&b, 0, 0x03, 3, 4, 0, pid, ts++, &pl), pl.n = 0;
            etlb_p_thread(&pl, P, pid, tid);
            etlb_sys(&b, 0, 0x05, 3, 3, tid, pid, ts++, &pl), pl.n = 0;
        }
        uint64_t two[2] = { smp->ip, smp->ret };
        const uint64_t *frames = smp->nframes ? smp->frames : two;
        uint32_t n = smp->nframes ? smp->nframes : 2;
        for (uint32_t k = 0; k < smp->count; k++) {
            uint64_t t = ts++;
            if (fake->timed) {
                uint64_t due = (uint64_t)fake->qpc_start +
                               (uint64_t)(now.QuadPart - fake->qpc_start) * ++at / (nall + 1);
                t = due > t ? due : t;
                ts = t + 1;
            }
            etlb_p_sample(&pl, P, frames[0], tid, 0);
            etlb_perf(&b, 0x0F, 46, 2, t, 0, 0, &pl), pl.n = 0;
            etlb_p_stack(&pl, P, t, pid, tid, frames, n);
            etlb_perf(&b, 0x18, 32, 2, t, 0, 0, &pl), pl.n = 0;
        }
    }
    for (int i = 0; i < fake->nsched; i++) {
        const fake_sched *e = &fake->sched[i];
        uint64_t t = first + (uint64_t)e->us * 10;
        if (t < ts) {
            t = ts;   /* after the samples: the trace stays in time order */
        }
        ts = t + 1;
        uint32_t in = e->in == FAKE_MAIN ? fake->tid : e->in, out = e->out == FAKE_MAIN ? fake->tid : e->out;
        uint32_t pid_in = in ? fake->pid : 0;
        if (e->ready) {
            etlb_p_ready(&pl, in, 1, 0, 0);
            etlb_sys(&b, 0, 0x05, 50, 2, 0, 0, t, &pl), pl.n = 0;   /* readied from a DPC: no thread */
            continue;
        }
        etlb_p_cswitch(&pl, in, out, 8, 8, e->state == 5 ? 6 : 0, 1, e->state, 0, 0);
        etlb_sys(&b, 0, 0x05, 36, 2, in, pid_in, t, &pl), pl.n = 0;
        if (e->nframes) {
            etlb_p_stack(&pl, P, t, pid_in, in, e->frames, e->nframes);
            etlb_perf(&b, 0x18, 32, 2, t, 0, 0, &pl), pl.n = 0;
        }
    }
    etlb_end(&b, ETLB_PLAIN);
    FILE *out = _wfopen(fake->log_file, L"wb");
    if (out) {
        fwrite(b.file.p, 1, b.file.n, out);
        fake->wrote_trace = fclose(out) == 0;
    }
    if (fake->fill && fake->max_file_mb) {
        /* as far as the cap, the rest of the file as the kernel leaves
         * a buffer it did not fill */
        HANDLE h = CreateFileW(fake->log_file, GENERIC_WRITE, 0, NULL, OPEN_EXISTING, 0, NULL);
        LARGE_INTEGER at;
        at.QuadPart = (LONGLONG)fake->max_file_mb << 20;
        if (h != INVALID_HANDLE_VALUE) {
            SetFilePointerEx(h, at, NULL, FILE_BEGIN);
            SetEndOfFile(h);
            CloseHandle(h);
        }
    }
    eb_free(&pl);
    etlb_free(&b);
}

static void stop_ours(void)
{
    fake->running = 0;
    write_trace();
}

static ULONG WINAPI fake_control(TRACEHANDLE h, LPCWSTR name, EVENT_TRACE_PROPERTIES *p, ULONG code)
{
    (void)p;
    if (h == 0 && name) {
        /* by name: a session of others (a leftover), or ours */
        for (int i = 0; i < fake->nothers; i++)
            if (!wcscmp(name, fake->others[i]) && fake->other_running[i]) {
                char n8[64];
                snprintf(n8, sizeof n8, "%ls", name);
                record("stop-leftover", code);
                snprintf(fake->calls[fake->ncalls - 1].what, sizeof fake->calls[0].what, "stop-leftover:%.16s",
                         n8 + 10);
                if (wcsncmp(name, L"hookscope-", 10) != 0)
                    fake->foreign_touched = 1;
                if (code == EVENT_TRACE_CONTROL_STOP)
                    fake->other_running[i] = 0;
                return ERROR_SUCCESS;
            }
        if (!fake->running || wcscmp(name, fake->session_name) != 0) {
            record("foreign", 0);
            fake->foreign_touched = 1;
            return ERROR_WMI_INSTANCE_NOT_FOUND;
        }
        record("stop-name", code);
        if (fake->fail_stop_name && fake->fail_stop_name != ERROR_MORE_DATA)
            return fake->fail_stop_name;
        stop_ours();
        return fake->fail_stop_name;
    }
    if (h != FAKE_HANDLE || name || !fake->running) {
        fake->foreign_touched = 1;
        record("foreign", (unsigned long)h);
        return ERROR_WMI_INSTANCE_NOT_FOUND;
    }
    if (code == HS_ETW_CONTROL_FLUSH) {
        record("flush", code);
        fake->flushes++;
        if (fake->retune)
            fake->machine_interval = fake->retune;   /* another tool, while hookscope's session runs */
        write_trace();
        return ERROR_SUCCESS;
    }
    record("stop", code);
    if (code != EVENT_TRACE_CONTROL_STOP)
        return ERROR_SUCCESS;
    if (fake->fail_stop && fake->fail_stop != ERROR_MORE_DATA)
        return fake->fail_stop;
    stop_ours();
    return fake->fail_stop;   /* (ERROR_MORE_DATA: stopped, the properties did not fit) */
}

static ULONG WINAPI fake_query_all(EVENT_TRACE_PROPERTIES **props, ULONG count, ULONG *returned)
{
    record("query-all", 0);
    ULONG n = 0;
    for (int i = 0; i < fake->nothers && n < count; i++) {
        if (!fake->other_running[i])
            continue;
        wchar_t *name = (wchar_t *)((char *)props[n] + props[n]->LoggerNameOffset);
        wcscpy(name, fake->others[i]);
        n++;
    }
    if (fake->running && n < count) {
        wchar_t *name = (wchar_t *)((char *)props[n] + props[n]->LoggerNameOffset);
        wcscpy(name, fake->session_name);
        n++;
    }
    *returned = n;
    return ERROR_SUCCESS;
}

void etw_fake_reset(etw_fake *f)
{
    memset(f, 0, sizeof *f);
    f->machine_interval = 10000;
}

void etw_fake_other(etw_fake *f, const wchar_t *name)
{
    if (f->nothers < 4) {
        wcsncpy(f->others[f->nothers], name, 63);
        f->other_running[f->nothers++] = 1;
    }
}

static ULONG WINAPI fake_enable_ex2(TRACEHANDLE h, LPCGUID provider, ULONG code, UCHAR level, ULONGLONG any,
                                    ULONGLONG all, ULONG timeout, PENABLE_TRACE_PARAMETERS params)
{
    (void)all, (void)timeout;
    record("enable", (unsigned long)code);
    if (h != FAKE_HANDLE || !fake->running || code != EVENT_CONTROL_CODE_ENABLE_PROVIDER)
        return ERROR_INVALID_PARAMETER;
    if (fake->fail_enable)
        return fake->fail_enable;
    if (fake->nenables >= FAKE_MAX_ENABLES)
        return ERROR_NO_SYSTEM_RESOURCES;
    fake_enable *e = &fake->enables[fake->nenables++];
    snprintf(e->provider, sizeof e->provider, "%s",
             !memcmp(provider, etlb_guid_clr_runtime, 16) ? "clr-runtime"   /* (a GUID's bytes as a trace has them) */
             : !memcmp(provider, etlb_guid_clr_rundown, 16) ? "clr-rundown" : "other");
    e->level = level;
    e->keywords = any;
    e->pid = 0;
    if (params && params->FilterDescCount == 1 && params->EnableFilterDesc &&
        params->EnableFilterDesc->Type == 0x80000004u && params->EnableFilterDesc->Size == 4)
        e->pid = *(const ULONG *)(uintptr_t)params->EnableFilterDesc->Ptr;
    return ERROR_SUCCESS;
}

/* The runtime's JIT events reach the trace: its provider enabled with
 * JITKeyword at the verbose level (the names), for the target. */
static int jit_events_on(void)
{
    for (int i = 0; i < fake->nenables; i++) {
        const fake_enable *e = &fake->enables[i];
        if (!strcmp(e->provider, "clr-runtime") && (e->keywords & 0x10) && e->level >= 5 &&
            (!e->pid || e->pid == fake->pid))
            return 1;
    }
    return 0;
}

const hs_etw_api *etw_fake_api(etw_fake *f)
{
    static hs_etw_api api = { fake_start, fake_control, fake_set, fake_query, fake_privilege, fake_query_all,
                              fake_enable_ex2 };
    fake = f;
    return &api;
}
