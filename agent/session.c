/*
 * agent/session.c - the agent's side of the session: map the section the
 * injector created for this process (handed over as a handle it
 * duplicated into this process), and grow the tables in it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "agent/agent.h"

hs_agent g_hs;

/* What this agent says about itself to the next hookscope (session.h). */
__declspec(dllexport) hs_agent_public hs_agent_public_state = { HS_PUBLIC_MAGIC, HS_SESSION_VERSION, 0, 0, 0, 0, 0 };

/* Sessions served before the current one, kept mapped while timed calls
 * that entered the wrapper then are still open (they return into it and
 * write into their thread's region of that session). */
#define MAX_RETIRED 32
static struct retired {
    HANDLE mapping;
    void *view;
    DWORD tls;                 /* its TLS index: still holds the old threads' counters */
} retired[MAX_RETIRED];
static size_t n_retired;

/* Map the session whose section handle (in this process) is `handle`; 0,
 * or -1 when it is no session for this process. The handle becomes ours
 * (closed when the session is released). */
static int map_session(uint64_t handle, HANDLE *mapping, void **view)
{
    HANDLE m = (HANDLE)(uintptr_t)handle;
    if (!m)
        return -1;
    void *v = MapViewOfFile(m, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, 0);
    if (!v)
        return -1;
    MEMORY_BASIC_INFORMATION mi;
    hs_session_header *h = v;
    if (!VirtualQuery(v, &mi, sizeof mi) || mi.RegionSize < sizeof *h || h->magic != HS_SESSION_MAGIC ||
        h->version != HS_SESSION_VERSION || h->header_size != sizeof(hs_session_header) ||
        h->target_pid != GetCurrentProcessId()) {
        UnmapViewOfFile(v);
        return -1;
    }
    *mapping = m;
    *view = v;
    return 0;
}

/* The function service's events of the session's injector (its own: a
 * reused agent serves a new hookscope), duplicated into this process by
 * the injector before the agent starts. */
static void take_fn_events(void)
{
    if (g_hs.fn_request)
        CloseHandle(g_hs.fn_request);
    if (g_hs.fn_answer)
        CloseHandle(g_hs.fn_answer);
    g_hs.fn_request = (HANDLE)(uintptr_t)g_hs.hdr->fn_request_event;
    g_hs.fn_answer = (HANDLE)(uintptr_t)g_hs.hdr->fn_answer_event;
}

static void publish(HANDLE mapping)
{
    hs_agent_public *p = &hs_agent_public_state;
    p->session_handle = (uint64_t)(uintptr_t)mapping;
    p->injector_pid = g_hs.hdr->injector_pid;
    p->sessions++;
    MemoryBarrier();
    p->state = HS_PUBLIC_ACTIVE;
}

void hs_session_describe_agent(hs_session_header *h)
{
    h->agent_base = (uint64_t)(uintptr_t)g_hs.self;
#if !HS_AGENT_X86   /* (the 32-bit agent has no timing wrapper: wrap_* stay 0) */
    h->wrap_begin = (uint64_t)(uintptr_t)hs_wrapper;
    h->wrap_rsi = (uint64_t)(uintptr_t)hs_wrapper_desc_rsi;
    h->wrap_gone = (uint64_t)(uintptr_t)hs_wrapper_desc_gone;
    h->wrap_end = (uint64_t)(uintptr_t)hs_wrapper_end;
    h->wrap_ret = (uint64_t)(uintptr_t)hs_wrapper_ret;
#endif
}

int hs_session_attach(uint64_t handle)
{
    if (map_session(handle, &g_hs.mapping, &g_hs.view) < 0)
        return -1;
    g_hs.hdr = g_hs.view;
    take_fn_events();
    publish(g_hs.mapping);
    return 0;
}

int hs_session_switch(uint64_t handle)
{
    HANDLE m;
    void *v;
    if (n_retired == MAX_RETIRED)
        return -2;
    if (map_session(handle, &m, &v) < 0)
        return -1;
    hs_session_header *h = v;
    DWORD tls = TlsAlloc();
    if (tls == TLS_OUT_OF_INDEXES) {
        UnmapViewOfFile(v);
        return -1;
    }
    /* the old session stays mapped (timed calls may still return into
     * it); its TLS index stays allocated, so the old threads' counters
     * can still be found (hs_retired_region) */
    retired[n_retired].mapping = g_hs.mapping;
    retired[n_retired].view = g_hs.view;
    retired[n_retired].tls = g_hs.tls;
    n_retired++;
    g_hs.mapping = m;
    g_hs.view = v;
    g_hs.hdr = h;
    g_hs.tls = tls;
    if (hs_sink_init() < 0)
        return -1;
    h->tls_index = tls;
    hs_session_describe_agent(h);
    /* modules may have come and gone since the last session: the stack
     * walk's plans of return addresses are not theirs any more */
    hs_stackwalk_forget(0);
    h->tsc_start = hs_rdtsc();
    take_fn_events();
    publish(m);
    return 0;
}

/* Timed calls still open in a session's regions. */
static uint64_t frames_in(void *view)
{
    const hs_session_header *h = view;
    if (!(h->options & HS_OPT_TIME))
        return 0;
    int32_t used = h->threads_used;
    uint32_t live = used < 0 ? 0 : (uint32_t)used < h->max_threads ? (uint32_t)used : h->max_threads;
    uint64_t n = 0;
    for (uint32_t k = 0; k < live; k++) {
        const hs_region_hdr *r = (const hs_region_hdr *)hs_session_region(view, k);
        /* a thread that ended inside timed calls never returns from them */
        if (hs_session_slot(view, k)->state == HS_SLOT_EXITED)
            continue;
        if (r->shadow_top > r->shadow_base)
            n += (r->shadow_top - r->shadow_base) / sizeof(hs_shadow_rec);
    }
    return n;
}

void hs_retired_thread_exit(void)
{
    for (size_t i = 0; i < n_retired; i++) {
        void *view;
        uint64_t *c = hs_retired_counters(i, &view);
        if (!c)
            continue;
        const hs_session_header *h = view;
        const hs_region_hdr *r = (const hs_region_hdr *)((char *)c - h->region_counters_off);
        /* (the old sink is private memory, not a region of the session) */
        if ((char *)r < (char *)view + h->regions_off || (char *)r >= (char *)view + h->total_size)
            continue;
        if (r->slot < h->max_threads)
            hs_session_slot(view, r->slot)->state = HS_SLOT_EXITED;
    }
}

uint64_t hs_retired_frames(void)
{
    uint64_t n = 0;
    for (size_t i = 0; i < n_retired; i++)
        if (retired[i].view)
            n += frames_in(retired[i].view);
    return n;
}

void hs_retired_release(void)
{
    for (size_t i = 0; i < n_retired; i++) {
        if (retired[i].view && frames_in(retired[i].view) == 0) {
            UnmapViewOfFile(retired[i].view);
            CloseHandle(retired[i].mapping);
            retired[i].view = NULL;
            retired[i].mapping = NULL;
        }
    }
}

void *hs_retired_counters(size_t i, void **view)
{
    if (i >= n_retired || !retired[i].view)
        return NULL;
    *view = retired[i].view;
    DWORD t = retired[i].tls;
    if (t < 64)
        return (void *)(uintptr_t)hs_teb_read(HS_TEB_TLS_SLOTS + t * sizeof(void *));
    void **exp = (void **)(uintptr_t)hs_teb_read(HS_TEB_TLS_EXPANSION);
    return exp ? exp[t - 64] : NULL;
}

size_t hs_retired_count(void)
{
    return n_retired;
}

/* A module's symbols (a PDB of a large DLL) can take the injector a few
 * seconds to read; beyond this, the agent finds the functions itself. */
#define FN_ANSWER_TIMEOUT_MS 60000

int32_t hs_session_request_functions(uint32_t module)
{
    hs_session_header *h = g_hs.hdr;
    if (!g_hs.fn_request || !g_hs.fn_answer || !h->fn_service)
        return -1;
    static uint32_t seq;
    uint32_t req = ++seq << 16 | ((module + 1) & 0xFFFF);
    h->fn_request = req;
    MemoryBarrier();
    if (!SetEvent(g_hs.fn_request))
        return -1;
    /* a late answer to an earlier request that timed out is passed over */
    ULONGLONG until = GetTickCount64() + FN_ANSWER_TIMEOUT_MS;
    for (;;) {
        ULONGLONG now = GetTickCount64();
        if (now >= until || WaitForSingleObject(g_hs.fn_answer, (DWORD)(until - now)) != WAIT_OBJECT_0)
            return -1;
        MemoryBarrier();
        if (h->fn_answered == req)
            return h->fn_count;
    }
}

/* Record a failure for the injector: a Win32 error and one line of text. */
void hs_agent_fail(int err, const char *fmt, ...)
{
    hs_session_header *h = g_hs.hdr;
    if (!h)
        return;
    if (h->error_text[0] == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(h->error_text, sizeof h->error_text, fmt, ap);
        va_end(ap);
        h->agent_error = err;
    }
}

/* Commit [p, p+len) of the session view. Committing pages that already
 * are is harmless. */
int hs_session_commit(void *p, uint64_t len)
{
    if (len == 0)
        return 0;
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(HS_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + len + HS_PAGE - 1) & ~(uintptr_t)(HS_PAGE - 1);
    return VirtualAlloc((void *)lo, hi - lo, MEM_COMMIT, PAGE_READWRITE) ? 0 : -1;
}

uint32_t hs_session_add_module(const wchar_t *path, uint64_t base, uint32_t size, uint32_t flags,
                               int pattern)
{
    hs_session_header *h = g_hs.hdr;
    uint32_t i = h->n_modules;
    if (i >= h->max_modules)
        return UINT32_MAX;
    hs_module_rec *m = hs_session_module(g_hs.view, i);
    if (hs_session_commit(m, sizeof *m) < 0)
        return UINT32_MAX;
    memset(m, 0, sizeof *m);
    m->base = base;
    m->size = size;
    m->flags = flags;
    m->pattern = pattern;
    m->first_func = h->n_functions;
    size_t len = wcslen(path);
    if (len >= HS_PATH_LEN)
        len = HS_PATH_LEN - 1;
    memcpy(m->path, path, len * sizeof(wchar_t));
    MemoryBarrier();
    h->n_modules = i + 1;
    return i;
}
