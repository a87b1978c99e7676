/*
 * agent/session.c - the agent's side of the session: find the section the
 * injector created for this process, and grow the tables in it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "agent.h"

hs_agent g_hs;

int hs_session_attach(void)
{
    wchar_t name[64];
    swprintf(name, 64, HS_SESSION_NAME_FMT, (unsigned long)GetCurrentProcessId());
    HANDLE m = OpenFileMappingW(FILE_MAP_READ | FILE_MAP_WRITE, FALSE, name);
    if (!m)
        return -1;
    void *v = MapViewOfFile(m, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, 0);
    if (!v) {
        CloseHandle(m);
        return -1;
    }
    hs_session_header *h = v;
    if (h->magic != HS_SESSION_MAGIC || h->version != HS_SESSION_VERSION ||
        h->header_size != sizeof(hs_session_header)) {
        UnmapViewOfFile(v);
        CloseHandle(m);
        return -1;
    }
    g_hs.mapping = m;
    g_hs.view = v;
    g_hs.hdr = h;
    swprintf(name, 64, HS_FN_REQUEST_EVENT_FMT, (unsigned long)GetCurrentProcessId());
    g_hs.fn_request = OpenEventW(EVENT_MODIFY_STATE, FALSE, name);
    swprintf(name, 64, HS_FN_ANSWER_EVENT_FMT, (unsigned long)GetCurrentProcessId());
    g_hs.fn_answer = OpenEventW(SYNCHRONIZE, FALSE, name);
    return 0;
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
