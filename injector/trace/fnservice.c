/*
 * injector/trace/fnservice.c - see fnservice.h.
 */
#include "injector/trace/fnservice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "hook/engine/filter.h"
#include "injector/symbols/fnlist.h"
#include "injector/symbols/modsyms.h"

struct hs_fnservice {
    hs_session_host *s;
    HANDLE stop, thread;
    hs_filter flt;
    char *filters[HS_FILTER_MAX];
    hs_symconf conf;
    char **told;                 /* modules whose symbols' problem was said */
    size_t ntold;
};

/* Say a module's symbol problem (a PDB not found, of another build, no
 * symbols at all) once, as the module is hooked. */
static void tell(hs_fnservice *svc, const char *path, const char *msg)
{
    for (size_t i = 0; i < svc->ntold; i++)
        if (!strcmp(svc->told[i], path))
            return;
    svc->told = hs_xrealloc(svc->told, (svc->ntold + 1) * sizeof *svc->told);
    svc->told[svc->ntold++] = hs_xstrdup(path);
    hs_err("%s", msg);
}

/* Answer the agent's request for the functions of a module record. The
 * request, the record and its path are the target's to write: read as
 * untrusted (from_session.h); the list goes where and as far as
 * hookscope's own layout says. */
static void answer(hs_fnservice *svc)
{
    hs_session_header *h = svc->s->hdr;
    const hs_session_header *L = &svc->s->layout;
    hs_session_src src = hs_session_host_src(svc->s);
    uint32_t req = h->fn_request;
    uint32_t i = (req & 0xFFFF) - 1;
    hs_module_rec m;
    h->fn_count = -1;
    if (i < hs_session_modules(&src) && hs_session_module_at(&src, i, &m)) {
        char *path = hs_utf8_n(m.path, HS_PATH_LEN);
        hs_modsyms_status st;
        const char *why = NULL;
        hs_modsyms *t = hs_modsyms_open(path, m.base, m.size, m.timestamp, &svc->conf, &st, &why);
        if (t && hs_modsyms_message(t)[0])
            tell(svc, path, hs_modsyms_message(t));
        hs_fn_entry *list = (hs_fn_entry *)((char *)svc->s->view + L->fn_list_off);
        /* commit what a list of this module can need */
        if (t && st == HS_MODSYMS_OK && hs_session_commit_ok(list, (uint64_t)L->fn_list_cap * sizeof *list)) {
            svc->flt.matched = 0;
            long n = hs_fnlist_build(t, &svc->flt, hs_basename(path), list, L->fn_list_cap);
            if (n >= 0) {
                InterlockedOr((volatile LONG *)&h->filter_matched, (LONG)svc->flt.matched);
                h->fn_count = (int32_t)n;
            }
            hs_log("function list of %s: %ld functions", hs_basename(path), n);
        } else {
            hs_log("no function list for %s (%s): the agent reads the image", hs_basename(path),
                   why ? why : "not the file that was loaded");
        }
        hs_modsyms_close(t);
        free(path);
    }
    MemoryBarrier();
    h->fn_answered = req;
    MemoryBarrier();
    SetEvent(svc->s->fn_answer);
}

static DWORD WINAPI serve(void *arg)
{
    hs_fnservice *svc = arg;
    HANDLE wait[2] = { svc->stop, svc->s->fn_request };
    for (;;) {
        DWORD w = WaitForMultipleObjects(2, wait, FALSE, INFINITE);
        if (w != WAIT_OBJECT_0 + 1)
            return 0;
        answer(svc);
    }
}

hs_fnservice *hs_fnservice_start(hs_session_host *s, const hs_trace_config *o)
{
    hs_fnservice *svc = hs_xcalloc(1, sizeof *svc);
    svc->s = s;
    svc->stop = CreateEventW(NULL, TRUE, FALSE, NULL);
    for (int i = 0; i < o->nfilters && i < HS_FILTER_MAX; i++) {
        svc->filters[i] = hs_utf8(o->filters[i]);
        svc->flt.pattern[svc->flt.n] = svc->filters[i];
        svc->flt.exclude[svc->flt.n++] = o->filter_exclude[i];
    }
    svc->conf = o->symbols;
    if (!svc->stop ||
        !(svc->thread = CreateThread(NULL, 0, serve, svc, 0, NULL))) {
        hs_err("cannot start the function service: %s", hs_win_error(GetLastError()));
        hs_fnservice_stop(svc);
        return NULL;
    }
    s->hdr->fn_service = 1;
    return svc;
}

void hs_fnservice_stop(hs_fnservice *svc)
{
    if (!svc)
        return;
    if (svc->s && svc->s->hdr)
        svc->s->hdr->fn_service = 0;
    if (svc->thread) {
        SetEvent(svc->stop);
        WaitForSingleObject(svc->thread, INFINITE);
        CloseHandle(svc->thread);
    }
    if (svc->stop)
        CloseHandle(svc->stop);
    for (int i = 0; i < HS_FILTER_MAX; i++)
        free(svc->filters[i]);
    for (size_t i = 0; i < svc->ntold; i++)
        free(svc->told[i]);
    free(svc->told);
    free(svc);
}
