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
#include "hook/pe/functions.h"
#include "injector/symbols/fnlist.h"
#include "injector/symbols/modsyms.h"
#include "injector/trace/fnframes.h"

struct hs_fnservice {
    hs_session_host *s;
    HANDLE stop, thread;
    hs_filter flt;
    char *filters[HS_FILTER_MAX];
    hs_symconf conf;
    uint32_t max_functions;      /* --max-functions: the exe's list is made to hold what it allows */
    bool wow64;                  /* a 32-bit target: its system DLLs' files are SysWOW64's */
    char **told;                 /* modules whose symbols' problem was said */
    size_t ntold;
    struct {                     /* the exe's list, made while the target starts */
        HANDLE thread;
        char *path;              /* UTF-8 */
        hs_modsyms *syms;        /* NULL: not readable */
        hs_modsyms_status st;
        hs_fn_entry *list;
        long n;                  /* -1: did not fit */
        long made;               /* n as made (n is -1 once the list was used) */
        long functions;          /* its entries that are functions (not fragments), -1: no list */
        HANDLE warm;             /* warm_session */
        uint32_t matched;        /* the filters that matched */
        size_t cap;
    } pre;
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

/* Read the pages of [p, p + len) of the session, committed first. */
static void touch(char *p, uint64_t len)
{
    if (!hs_session_commit_ok(p, len))
        return;
    for (uint64_t off = 0; off < len; off += HS_PAGE)
        (void)*(volatile char *)(p + off);
    (void)*(volatile char *)(p + len - 1);
}

/* Under Wine a section is a file, and the first touch of its pages reads
 * them in, with the disk's readahead (8 MB with this machine's
 * read_ahead_kb): a few ms per range, paid by whichever process touches
 * it first. Touched here, while the target starts, the ranges the agent
 * writes first are in memory when it does: the overflow region's first
 * page, which the install sets up as the function table first grows, the
 * first page of region 0, which the first thread to call a hooked
 * function (the target's main thread) sets up in that call, and, once the
 * list made early is there, the records of its functions. A thread of its
 * own, which nothing but hs_fnservice_stop waits for. */
static DWORD WINAPI warm_session(void *arg)
{
    hs_fnservice *svc = arg;
    const hs_session_header *L = &svc->s->layout;
    char *view = svc->s->view;
    touch(view + L->regions_off + (uint64_t)L->max_threads * L->region_size, HS_PAGE);
    touch(view + L->regions_off, HS_PAGE);
    WaitForSingleObject(svc->pre.thread, INFINITE);
    long n = svc->pre.made;
    if (n > 0 && (uint64_t)n <= L->max_functions)
        touch(view + L->funcs_off, (uint64_t)n * L->func_rec_size);
    return 0;
}

/* The exe's list, built while the target is being started and the agent
 * injected (some 200 ms in which this thread would idle), so that the
 * agent's first request, the largest, is a copy (hs_fnservice_prefetch). */
static DWORD WINAPI prefetch(void *arg)
{
    hs_fnservice *svc = arg;
    const char *why = NULL;
    svc->pre.syms = hs_modsyms_open(svc->pre.path, 0, 0, 0, &svc->conf, &svc->pre.st, &why);
    svc->pre.n = -1;
    if (svc->pre.syms && svc->pre.st == HS_MODSYMS_OK) {
        hs_filter flt = svc->flt;
        flt.matched = 0;
        svc->pre.list = hs_xcalloc(svc->pre.cap ? svc->pre.cap : 1, sizeof *svc->pre.list);
        svc->pre.n = hs_fnlist_build(svc->pre.syms, &flt, hs_basename(svc->pre.path), svc->pre.list, svc->pre.cap);
        svc->pre.matched = flt.matched;
    }
    svc->pre.made = svc->pre.n;
    svc->pre.functions = -1;
    if (svc->pre.n >= 0) {
        svc->pre.functions = 0;
        for (long i = 0; i < svc->pre.n; i++)
            svc->pre.functions += !(svc->pre.list[i].src & HS_SRC_FRAGMENT);
    }
    return 0;
}

void hs_fnservice_prefetch(hs_fnservice *svc, const wchar_t *exe)
{
    if (!svc || svc->pre.thread)
        return;
    svc->pre.path = hs_utf8(exe);
    svc->pre.cap = hs_fn_list_cap(svc->max_functions);
    svc->pre.thread = CreateThread(NULL, 0, prefetch, svc, 0, NULL);
}

long hs_fnservice_exe_functions(hs_fnservice *svc)
{
    if (!svc || !svc->pre.thread)
        return -1;
    WaitForSingleObject(svc->pre.thread, INFINITE);
    return svc->pre.functions;
}

/* The list made in advance, when the record is of that file as it is
 * still (same path, size and time stamp): copied to list. Returns its
 * length, or -1 (build it now). */
static long prefetched(hs_fnservice *svc, const char *path, const hs_module_rec *m, hs_fn_entry *list, size_t cap)
{
    if (!svc->pre.syms || svc->pre.n < 0 || (size_t)svc->pre.n > cap || _stricmp(path, svc->pre.path) != 0)
        return -1;
    const hs_pe *pe = hs_modsyms_pe(svc->pre.syms);
    if (pe->size_of_image != m->size || pe->timestamp != m->timestamp)
        return -1;
    memcpy(list, svc->pre.list, (size_t)svc->pre.n * sizeof *list);
    svc->flt.matched = svc->pre.matched;
    if (hs_modsyms_message(svc->pre.syms)[0])
        tell(svc, path, hs_modsyms_message(svc->pre.syms));
    long n = svc->pre.n;
    svc->pre.n = -1;   /* once */
    return n;
}

/* The frame data of a 32-bit module (fnframes.h), where hookscope's own
 * layout puts it, when the session has room for it (--stacks). */
static void send_frames(hs_fnservice *svc, const hs_pe *pe, const char *path)
{
    hs_session_header *h = svc->s->hdr;
    const hs_session_header *L = &svc->s->layout;
    hs_frame32_entry *out = (hs_frame32_entry *)((char *)svc->s->view + L->fn_frames_off);
    int32_t npdb = 0, ncfi = 0;
    if (L->fn_frames_cap && hs_session_commit_ok(out, (uint64_t)L->fn_frames_cap * sizeof *out))
        hs_fnframes_build(pe, path, &svc->conf, out, L->fn_frames_cap, &npdb, &ncfi);
    h->fn_frames_pdb = npdb;
    h->fn_frames_cfi = ncfi;
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
    h->fn_frames_pdb = h->fn_frames_cfi = 0;
    if (i < hs_session_modules(&src) && hs_session_module_at(&src, i, &m)) {
        char *path = hs_utf8_n(m.path, HS_PATH_LEN);
        /* a 32-bit target names its system DLLs in the system directory,
         * whose files are the 64-bit ones for hookscope (not redirected) */
        wchar_t *wpath = svc->wow64 ? hs_wide(path) : NULL;
        wchar_t *wow = wpath ? hs_wow64_file(wpath) : NULL;
        if (wow) {
            free(path);
            path = hs_utf8(wow);
        }
        free(wow);
        free(wpath);
        hs_fn_entry *list = (hs_fn_entry *)((char *)svc->s->view + L->fn_list_off);
        /* commit what a list of this module can need */
        bool room = hs_session_commit_ok(list, (uint64_t)L->fn_list_cap * sizeof *list);
        long n = room ? prefetched(svc, path, &m, list, L->fn_list_cap) : -1;
        if (n >= 0) {
            hs_log("function list of %s: %ld functions (made while the target started)", hs_basename(path), n);
            send_frames(svc, hs_modsyms_pe(svc->pre.syms), path);
        } else {
            hs_modsyms_status st;
            const char *why = NULL;
            hs_modsyms *t = hs_modsyms_open(path, m.base, m.size, m.timestamp, &svc->conf, &st, &why);
            if (t && hs_modsyms_message(t)[0])
                tell(svc, path, hs_modsyms_message(t));
            if (t && st == HS_MODSYMS_OK && room) {
                svc->flt.matched = 0;
                n = hs_fnlist_build(t, &svc->flt, hs_basename(path), list, L->fn_list_cap);
                hs_log("function list of %s: %ld functions", hs_basename(path), n);
                if (n >= 0)
                    send_frames(svc, hs_modsyms_pe(t), path);
            } else {
                hs_log("no function list for %s (%s): the agent reads the image", hs_basename(path),
                       why ? why : "not the file that was loaded");
            }
            hs_modsyms_close(t);
        }
        if (n >= 0) {
            InterlockedOr((volatile LONG *)&h->filter_matched, (LONG)svc->flt.matched);
            h->fn_count = (int32_t)n;
        }
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
        if (svc->pre.thread)
            WaitForSingleObject(svc->pre.thread, INFINITE);   /* its list may be the one asked for */
        answer(svc);
    }
}

hs_fnservice *hs_fnservice_new(const hs_trace_config *o)
{
    hs_fnservice *svc = hs_xcalloc(1, sizeof *svc);
    svc->stop = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (!svc->stop) {
        hs_err("cannot start the function service: %s", hs_win_error(GetLastError()));
        free(svc);
        return NULL;
    }
    for (int i = 0; i < o->nfilters && i < HS_FILTER_MAX; i++) {
        svc->filters[i] = hs_utf8(o->filters[i]);
        svc->flt.pattern[svc->flt.n] = svc->filters[i];
        svc->flt.exclude[svc->flt.n++] = o->filter_exclude[i];
    }
    svc->conf = o->symbols;
    svc->max_functions = o->max_functions;
    svc->wow64 = o->target_bits == 32;
    return svc;
}

int hs_fnservice_serve(hs_fnservice *svc, hs_session_host *s)
{
    svc->s = s;
    if (!(svc->thread = CreateThread(NULL, 0, serve, svc, 0, NULL))) {
        hs_err("cannot start the function service: %s", hs_win_error(GetLastError()));
        return -1;
    }
    if (svc->pre.thread)
        svc->pre.warm = CreateThread(NULL, 0, warm_session, svc, 0, NULL);
    s->hdr->fn_service = 1;
    return 0;
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
    if (svc->pre.warm) {
        WaitForSingleObject(svc->pre.warm, INFINITE);
        CloseHandle(svc->pre.warm);
    }
    if (svc->pre.thread) {
        WaitForSingleObject(svc->pre.thread, INFINITE);
        CloseHandle(svc->pre.thread);
    }
    hs_modsyms_close(svc->pre.syms);
    free(svc->pre.list);
    free(svc->pre.path);
    if (svc->stop)
        CloseHandle(svc->stop);
    for (int i = 0; i < HS_FILTER_MAX; i++)
        free(svc->filters[i]);
    for (size_t i = 0; i < svc->ntold; i++)
        free(svc->told[i]);
    free(svc->told);
    free(svc);
}
