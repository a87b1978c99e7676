/*
 * injector/trace/session_host.c - create the session (see session_host.h).
 */
#include "injector/trace/session_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "hook/base/util.h"

static int create(hs_session_host *s, DWORD pid, const hs_trace_config *o, uint32_t options, const wchar_t *name);

int hs_session_create(hs_session_host *s, DWORD pid, const hs_trace_config *o, uint32_t options)
{
    wchar_t name[64];
    swprintf(name, 64, HS_SESSION_NAME_FMT, (unsigned long)pid);
    return create(s, pid, o, options, name);
}

int hs_session_create_unique(hs_session_host *s, DWORD pid, const hs_trace_config *o, uint32_t options)
{
    static unsigned serial;
    wchar_t name[64];
    swprintf(name, 64, HS_SESSION_NAME_FMT L"-%lu-%u", (unsigned long)pid, (unsigned long)GetCurrentProcessId(),
             ++serial);
    return create(s, pid, o, options, name);
}

int hs_session_open(hs_session_host *s, const wchar_t *name)
{
    memset(s, 0, sizeof *s);
    s->mapping = OpenFileMappingW(FILE_MAP_READ | FILE_MAP_WRITE, FALSE, name);
    if (!s->mapping)
        return -1;
    s->view = MapViewOfFile(s->mapping, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, 0);
    s->hdr = s->view;
    if (!s->view || s->hdr->magic != HS_SESSION_MAGIC || s->hdr->version != HS_SESSION_VERSION ||
        s->hdr->header_size != sizeof(hs_session_header)) {
        hs_session_close(s);
        return -1;
    }
    wcsncpy(s->name, name, 63);
    return 0;
}

static int create(hs_session_host *s, DWORD pid, const hs_trace_config *o, uint32_t options, const wchar_t *name)
{
    if (o->edges)
        options |= HS_OPT_EDGES;
    if (o->stacks)
        options |= HS_OPT_STACKS;
    if (o->time)
        options |= HS_OPT_TIME;
    wchar_t test[8];
    if (GetEnvironmentVariableW(L"HOOKSCOPE_TEST_STUCK_FREEZE", test, 8) && !wcscmp(test, L"1"))
        options |= HS_OPT_TEST_STUCK_FREEZE;
    memset(s, 0, sizeof *s);
    hs_session_header layout;
    memset(&layout, 0, sizeof layout);
    hs_capacity cap = hs_default_capacity(o->max_functions, o->max_threads, options);
    uint64_t total = hs_session_layout(&layout, &cap);

    wcsncpy(s->name, name, 63);
    s->mapping = CreateFileMappingW(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE | SEC_RESERVE,
                                    (DWORD)(total >> 32), (DWORD)total, name);
    if (!s->mapping) {
        hs_err("cannot create the session (%llu bytes reserved): %s", (unsigned long long)total,
               hs_win_error(GetLastError()));
        return -1;
    }
    if (GetLastError() == ERROR_ALREADY_EXISTS) {
        hs_err("process %lu already has a hookscope session: another hookscope is attaching to it",
               (unsigned long)pid);
        CloseHandle(s->mapping);
        s->mapping = NULL;
        return -1;
    }
    s->view = MapViewOfFile(s->mapping, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, 0);
    if (!s->view ||
        !VirtualAlloc(s->view, layout.modules_off, MEM_COMMIT, PAGE_READWRITE)) {
        hs_err("cannot map the session: %s", hs_win_error(GetLastError()));
        hs_session_close(s);
        return -1;
    }
    hs_session_header *h = s->hdr = s->view;
    *h = layout;
    h->magic = HS_SESSION_MAGIC;
    h->version = HS_SESSION_VERSION;
    h->options = options;
    h->stack_depth = o->stacks;
    h->stack_every = o->stack_every;
    for (int i = 0; i < o->nfilters; i++) {
        char *f = hs_utf8(o->filters[i]);
        snprintf(h->filters[i], sizeof h->filters[i], "%s", f);
        free(f);
        if (o->filter_exclude[i])
            h->filter_exclude |= 1u << i;
    }
    h->n_filters = (uint32_t)o->nfilters;
    h->n_patterns = (uint32_t)o->nmodules;
    for (int i = 0; i < o->nmodules; i++) {
        size_t len = wcslen(o->modules[i]);
        memcpy(h->patterns[i], o->modules[i], len * sizeof(wchar_t));
    }
    h->injector_pid = GetCurrentProcessId();
    h->target_pid = pid;
    h->agent_state = HS_AGENT_NONE;
    return 0;
}

void hs_session_close(hs_session_host *s)
{
    if (s->view)
        UnmapViewOfFile(s->view);
    if (s->mapping)
        CloseHandle(s->mapping);
    memset(s, 0, sizeof *s);
}

int hs_session_commit_ok(void *p, uint64_t len)
{
    if (!len)
        return 1;
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(HS_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + len + HS_PAGE - 1) & ~(uintptr_t)(HS_PAGE - 1);
    return VirtualAlloc((void *)lo, hi - lo, MEM_COMMIT, PAGE_READWRITE) != NULL;
}

void hs_session_commit(void *p, uint64_t len)
{
    hs_session_commit_ok(p, len);
}
