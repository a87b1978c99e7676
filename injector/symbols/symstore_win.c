/*
 * injector/symbols/symstore_win.c - the symbol server client (see
 * symstore.h): WinHTTP for the requests, cabinet.dll's FDI for the
 * compressed form, up to MAX_WORKERS downloads at once.
 *
 * NAME (a PDB, or an image: symstore.h) of build KEY from URL: URL/NAME/KEY/NAME, else URL/NAME/KEY/NAM_
 * (a cabinet, expanded in memory), else URL/NAME/KEY/file.ptr (PATH: a
 * file copied from there; MSG: the server's reason, shown). What comes is
 * checked (all the bytes the server announced; a PDB opens with
 * hookscope's PDB reader and its GUID and age are KEY's, an image's
 * timestamp and size are), written next to its
 * place in the cache under a name of its own, then renamed to
 * CACHE/NAME/KEY/NAME. Every request of a run is made once: the answer,
 * the file or none, is kept (a negative cache); a server that timed out or
 * refused the connection is not asked again in the run. Each failure is
 * one line on stderr when it happens, and kept for the reports (message).
 * On a console each download shows a line when it starts and when it
 * ends; elsewhere nothing but failures is printed. Each download has a
 * deadline (past_deadline): the timeout bounds each pause of the server,
 * which a server dripping a byte now and then never makes. The worker
 * checks it as the file comes; while the headers come it waits inside
 * WinHttpReceiveResponse, which a server dripping its headers keeps
 * there for ever: the one waiting for the file gives up on it at the
 * same deadline, and the worker, should it ever come back, ends.
 *
 * Wine 8 (measured with a server that accepts and never answers):
 * WinHttpSetTimeouts, on the session or the request, does not bound the
 * wait for the response; the request's WINHTTP_OPTION_RECEIVE_RESPONSE_TIMEOUT
 * does, and the failure is then WSAETIMEDOUT (10060) rather than
 * ERROR_WINHTTP_TIMEOUT: both are a timeout here. Wine's cabinet.dll
 * expands MSZIP and LZX cabinets through these memory callbacks
 * (tests/test_symsrv.py: an MSZIP one, and an LZX one of uncompressed LZX
 * blocks; LZX's Huffman-coded blocks not tried).
 */
#include <windows.h>
#include <fdi.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <winhttp.h>

#include "hook/base/util.h"
#include "hook/pe/pe.h"
#include "injector/symbols/pdb.h"
#include "injector/symbols/rsds.h"
#include "injector/symbols/symstore.h"

#define MAX_WORKERS 4
#define DEFAULT_TIMEOUT_MS 10000
#define TIMEOUT_ENV "HOOKSCOPE_SYMSRV_TIMEOUT"

enum { QUEUED, RUNNING, DONE };

typedef struct job {
    char *url, *cache, *name, *key;
    int state;
    char *path;                 /* DONE: the file in the cache, or NULL */
    /* RUNNING: the request under way (under the lock, but answered) */
    ULONGLONG asked_at;         /* GetTickCount64 at its start */
    volatile LONG answered;     /* its headers came (or it failed) */
    char asking[64];            /* the file asked for */
    int given_up;               /* its headers never came: DONE, its worker gone */
} job;

static struct {
    int ready;
    CRITICAL_SECTION lock;
    CONDITION_VARIABLE changed;
    job **jobs;
    size_t njobs, jcap;
    char **dead;                /* servers that did not answer */
    size_t ndead, dcap;
    char **msgs;
    size_t nmsgs, mcap;
    int workers, idle;
    DWORD timeout_ms;
    HINTERNET session;
    int console;
} g;

/* ---- lines -------------------------------------------------------------- */

/* One line on stderr (written whole: one stdio call, a download's line
 * never cut by another thread's); a failure's kept for the reports too. */
static void say(int failure, const char *line)
{
    char *whole = hs_xasprintf("hookscope: %s\n", line);
    EnterCriticalSection(&g.lock);
    fflush(stdout);
    fputs(whole, stderr);
    fflush(stderr);
    free(whole);
    if (failure) {
        hs_xgrow(&g.msgs, &g.mcap, g.nmsgs + 1, sizeof *g.msgs);
        g.msgs[g.nmsgs++] = hs_xstrdup(line);
    }
    LeaveCriticalSection(&g.lock);
}

static void fail(const job *j, const char *fmt, ...) HS_PRINTF(2, 3);
static void fail(const job *j, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    char *line = hs_xasprintf("%s %s from %s: %s", j->name, j->key, j->url, why);
    say(1, line);
    free(line);
}

/* ---- HTTP --------------------------------------------------------------- */

typedef struct body {
    uint8_t *p;
    size_t n, cap;
} body;

enum { GOT, TIMED_OUT, NO_CONNECTION, BROKEN, CUT_SHORT, TOO_SLOW };

/* Whether a download that got n bytes in ms milliseconds is past its
 * deadline: twice the timeout, and the timeout again for each MB that
 * came (the timeout bounds each pause; a server that drips a byte now
 * and then would otherwise hold a download for ever). */
static int past_deadline(size_t n, ULONGLONG ms)
{
    return (double)ms > (double)g.timeout_ms * (2.0 + (double)n / 1048576.0);
}

/* GET path from the server: GOT with *status and the body, or why not
 * (err: the Windows error; CUT_SHORT: fewer bytes came than the *short_of
 * the server announced; TOO_SLOW: past its deadline, *ms after its start). */
static int http_get(const wchar_t *host, INTERNET_PORT port, int secure, const char *path, DWORD *status,
                    body *b, DWORD *err, unsigned long long *short_of, ULONGLONG *ms, volatile LONG *answered)
{
    int result = BROKEN;
    *err = 0;
    ULONGLONG start = GetTickCount64();
    wchar_t *wpath = hs_wide(path);
    HINTERNET c = WinHttpConnect(g.session, host, port, 0);
    HINTERNET r = c ? WinHttpOpenRequest(c, L"GET", wpath, NULL, WINHTTP_NO_REFERER, WINHTTP_DEFAULT_ACCEPT_TYPES,
                                         secure ? WINHTTP_FLAG_SECURE : 0)
                    : NULL;
    DWORD t = g.timeout_ms, len = sizeof *status;
    if (r) {
        WinHttpSetOption(r, WINHTTP_OPTION_RECEIVE_RESPONSE_TIMEOUT, &t, sizeof t);
        WinHttpSetOption(r, WINHTTP_OPTION_RECEIVE_TIMEOUT, &t, sizeof t);
        WinHttpSetOption(r, WINHTTP_OPTION_CONNECT_TIMEOUT, &t, sizeof t);
        WinHttpSetOption(r, WINHTTP_OPTION_SEND_TIMEOUT, &t, sizeof t);
    }
    BOOL came = r && WinHttpSendRequest(r, WINHTTP_NO_ADDITIONAL_HEADERS, 0, WINHTTP_NO_REQUEST_DATA, 0, 0, 0) &&
                WinHttpReceiveResponse(r, NULL);
    InterlockedExchange(answered, 1);
    if (came &&
        WinHttpQueryHeaders(r, WINHTTP_QUERY_STATUS_CODE | WINHTTP_QUERY_FLAG_NUMBER, WINHTTP_HEADER_NAME_BY_INDEX,
                            status, &len, WINHTTP_NO_HEADER_INDEX)) {
        result = GOT;
        /* as text: a PDB can pass 4 GB, the header's number form is 32-bit */
        wchar_t announced[32];
        len = sizeof announced;
        int sized = WinHttpQueryHeaders(r, WINHTTP_QUERY_CONTENT_LENGTH, WINHTTP_HEADER_NAME_BY_INDEX, announced,
                                        &len, WINHTTP_NO_HEADER_INDEX);
        unsigned long long want = sized ? wcstoull(announced, NULL, 10) : 0;
        /* what has come, as it comes (Wine's WinHttpReadData waits for
         * the whole buffer while bytes keep coming) */
        for (;;) {
            DWORD take = 0, got = 0;
            if (!WinHttpQueryDataAvailable(r, &take)) {
                result = BROKEN;
                break;
            }
            take = take < 65536 ? take : 65536;
            hs_xgrow(&b->p, &b->cap, b->n + take + 1, 1);
            if (take && !WinHttpReadData(r, b->p + b->n, take, &got)) {
                result = BROKEN;
                break;
            }
            if (!got)
                break;
            b->n += got;
            *ms = GetTickCount64() - start;
            if (past_deadline(b->n, *ms)) {
                result = TOO_SLOW;
                break;
            }
        }
        if (result == GOT && sized && b->n != want) {
            *short_of = want;
            result = CUT_SHORT;
        }
    }
    if (result != GOT && result != CUT_SHORT && result != TOO_SLOW) {
        *err = GetLastError();
        if (*err == ERROR_WINHTTP_TIMEOUT || *err == WSAETIMEDOUT)
            result = TIMED_OUT;
        else if (*err == ERROR_WINHTTP_CANNOT_CONNECT || *err == ERROR_WINHTTP_NAME_NOT_RESOLVED ||
                 *err == ERROR_WINHTTP_CONNECTION_ERROR)
            result = NO_CONNECTION;
    }
    if (r)
        WinHttpCloseHandle(r);
    if (c)
        WinHttpCloseHandle(c);
    free(wpath);
    return result;
}

/* ---- cabinets, expanded in memory ---------------------------------------- */

typedef struct memfile {
    const uint8_t *in;          /* the cabinet (read), or NULL (the file written) */
    size_t size, pos;
    body *out;
} memfile;

static FNALLOC(cab_alloc) { return malloc(cb); }
static FNFREE(cab_free) { free(pv); }

static FNOPEN(cab_open)
{
    (void)oflag;
    (void)pmode;
    void *p = NULL;
    return sscanf(pszFile, "mem:%p", &p) == 1 && p ? (INT_PTR)p : -1;
}

static FNREAD(cab_read)
{
    memfile *f = (memfile *)hf;
    size_t n = f->in && f->pos < f->size ? f->size - f->pos : 0;
    if (n > cb)
        n = cb;
    memcpy(pv, f->in + f->pos, n);
    f->pos += n;
    return (UINT)n;
}

static FNWRITE(cab_write)
{
    memfile *f = (memfile *)hf;
    if (!f->out)
        return (UINT)-1;
    hs_xgrow(&f->out->p, &f->out->cap, f->out->n + cb, 1);
    memcpy(f->out->p + f->out->n, pv, cb);
    f->out->n += cb;
    return cb;
}

static FNCLOSE(cab_close)
{
    (void)hf;
    return 0;
}

static FNSEEK(cab_seek)
{
    memfile *f = (memfile *)hf;
    long long at = seektype == SEEK_SET ? dist : seektype == SEEK_CUR ? (long long)f->pos + dist
                                                                       : (long long)f->size + dist;
    if (at < 0 || (size_t)at > f->size)
        return -1;
    f->pos = (size_t)at;
    return (__LONG32)at;
}

typedef struct expand {
    memfile out;
    int files;
} expand;

static FNFDINOTIFY(cab_notify)
{
    expand *x = pfdin->pv;
    switch (fdint) {
    case fdintCOPY_FILE:
        if (x->files++)          /* the first file is the PDB; a second is not taken */
            return 0;
        return (INT_PTR)&x->out;
    case fdintCLOSE_FILE_INFO:
        return TRUE;
    case fdintNEXT_CABINET:
        return -1;
    default:
        return 0;
    }
}

/* The first file of the cabinet cab into out; 0, or -1 (not a cabinet,
 * or one that does not expand). */
static int cab_expand(const body *cab, body *out)
{
    ERF erf;
    memfile in = { cab->p, cab->n, 0, NULL };
    expand x = { { NULL, 0, 0, out }, 0 };
    HFDI h = FDICreate(cab_alloc, cab_free, cab_open, cab_read, cab_write, cab_close, cab_seek, cpuUNKNOWN, &erf);
    if (!h)
        return -1;
    FDICABINETINFO info;
    int ok = FDIIsCabinet(h, (INT_PTR)&in, &info);
    char name[40];
    snprintf(name, sizeof name, "mem:%p", (void *)&in);
    in.pos = 0;
    ok = ok && FDICopy(h, name, "", 0, cab_notify, NULL, &x) && x.files;
    FDIDestroy(h);
    return ok ? 0 : -1;
}

/* ---- the cache ------------------------------------------------------------ */

/* Every folder of path up to its last separator. */
static void make_dirs(const wchar_t *path)
{
    wchar_t *p = _wcsdup(path);
    if (!p)
        return;
    for (wchar_t *q = p + 1; *q; q++)
        if ((*q == L'\\' || *q == L'/') && q[-1] != L':') {
            wchar_t c = *q;
            *q = 0;
            CreateDirectoryW(p, NULL);
            *q = c;
        }
    free(p);
}

/* data into dest (under a name of its own first, then renamed): 0 or -1. */
static int keep(const job *j, const char *dest, const uint8_t *data, size_t n)
{
    char *tmp = hs_xasprintf("%s.%lu.%lu.tmp", dest, GetCurrentProcessId(), GetCurrentThreadId());
    wchar_t *wd = hs_wide(dest), *wt = hs_wide(tmp);
    make_dirs(wd);
    int rc = -1;
    HANDLE h = CreateFileW(wt, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h != INVALID_HANDLE_VALUE) {
        size_t off = 0;
        DWORD put = 0;
        while (off < n && WriteFile(h, data + off, n - off > (1u << 30) ? 1u << 30 : (DWORD)(n - off), &put, NULL) &&
               put)
            off += put;
        CloseHandle(h);
        if (off == n && MoveFileExW(wt, wd, MOVEFILE_REPLACE_EXISTING))
            rc = 0;
        else
            DeleteFileW(wt);
    }
    if (rc)
        fail(j, "cannot write %s (error %lu)", dest, GetLastError());
    free(wd);
    free(wt);
    free(tmp);
    return rc;
}

/* The build key of b as a store names it: a PDB's GUID and age (by j's
 * name), an image's timestamp and size. 0, or -1 after its failure line. */
static int key_of(const job *j, const body *b, const char *what, char key[42])
{
    size_t n = strlen(j->name);
    if (n > 4 && !_stricmp(j->name + n - 4, ".pdb")) {
        hs_pdb pdb;
        char err[256];
        if (hs_pdb_open(&pdb, b->p, b->n, err, sizeof err)) {
            fail(j, "bad file (%s: %s)", what, err);
            return -1;
        }
        hs_guid_age_key(pdb.guid, pdb.age, key);
        hs_pdb_close(&pdb);
        return 0;
    }
    hs_pe pe;
    if (hs_pe_load_file(&pe, b->p, b->n) != HS_PE_OK) {
        fail(j, "bad file (%s is not a PE image)", what);
        return -1;
    }
    hs_symstore_image_key(pe.timestamp, pe.size_of_image, key);
    hs_pe_close(&pe);
    return 0;
}

/* Whether b is the file of j's build; else its failure line. */
static int right_file(const job *j, const body *b, const char *what)
{
    char key[42];
    if (key_of(j, b, what, key))
        return 0;
    if (_stricmp(key, j->key)) {
        fail(j, "bad file (%s is another build, %s)", what, key);
        return 0;
    }
    return 1;
}

/* ---- one file --------------------------------------------------------------- */

static int server_dead(const char *url)
{
    int dead = 0;
    EnterCriticalSection(&g.lock);
    for (size_t i = 0; i < g.ndead && !dead; i++)
        dead = !strcmp(g.dead[i], url);
    LeaveCriticalSection(&g.lock);
    return dead;
}

static void mark_dead(const char *url)
{
    EnterCriticalSection(&g.lock);
    hs_xgrow(&g.dead, &g.dcap, g.ndead + 1, sizeof *g.dead);
    g.dead[g.ndead++] = hs_xstrdup(url);
    LeaveCriticalSection(&g.lock);
}

/* A download past its deadline (past_deadline): `what` came in ms. */
static void fail_too_slow(const job *j, const char *file, const char *what, ULONGLONG ms)
{
    fail(j, "too slow (%s: %s in %.1f s; a download has %.3g s, and %.3g s more per MB that comes)", file, what,
         ms / 1000.0, 2 * g.timeout_ms / 1000.0, g.timeout_ms / 1000.0);
}

/* One request's failure line; 1 when the answer ends the search (anything
 * but "not here"). */
static int request_failed(const job *j, int how, DWORD status, DWORD err, unsigned long long short_of,
                          const body *b, const char *file, ULONGLONG ms)
{
    if (how == TIMED_OUT) {
        fail(j, "timed out (nothing came for %.3g s)", g.timeout_ms / 1000.0);
        mark_dead(j->url);
    } else if (how == TOO_SLOW) {
        char came[32];
        snprintf(came, sizeof came, "%zu bytes", b->n);
        fail_too_slow(j, file, came, ms);
        mark_dead(j->url);
    } else if (how == NO_CONNECTION) {
        fail(j, "cannot connect (error %lu)", err);
        mark_dead(j->url);
    } else if (how == BROKEN) {
        fail(j, "request for %s failed (error %lu)", file, err);
    } else if (how == CUT_SHORT && status == 200) {
        fail(j, "bad file (%s: %zu of the %llu bytes announced came)", file, b->n, short_of);
    } else if (status != 404 && status != 200) {
        fail(j, "server error %lu (%s)", status, file);
    } else {
        return 0;
    }
    return 1;
}

static char *fetch(job *j)
{
    if (!j->cache) {
        fail(j, "no folder to keep it in (give srv*DIR*%s, or cache*DIR before the entry)", j->url);
        return NULL;
    }
    if (server_dead(j->url))
        return NULL;             /* its line was printed once */
    wchar_t *wurl = hs_wide(j->url), host[256];
    URL_COMPONENTS u;
    memset(&u, 0, sizeof u);
    u.dwStructSize = sizeof u;
    u.lpszHostName = host;
    u.dwHostNameLength = sizeof host / sizeof *host;
    u.dwUrlPathLength = (DWORD)-1;
    int cracked = WinHttpCrackUrl(wurl, 0, 0, &u);
    char *base = cracked ? hs_utf8_n((const uint16_t *)u.lpszUrlPath, u.dwUrlPathLength) : NULL;
    free(wurl);
    if (!cracked) {
        fail(j, "not a URL WinHTTP can use (error %lu)", GetLastError());
        return NULL;
    }
    int secure = u.nScheme == INTERNET_SCHEME_HTTPS;
    char *d1 = hs_path_join(j->cache, j->name), *d2 = hs_path_join(d1, j->key), *dest = hs_path_join(d2, j->name);
    free(d1);
    free(d2);
    char *packed = hs_symstore_compressed_name(j->name);
    if (!packed)
        hs_out_of_memory();
    const char *files[3] = { j->name, packed, "file.ptr" };
    body b = { 0 }, expanded = { 0 };
    int got = 0, ended = 0;
    size_t kept = 0;
    DWORD t0 = GetTickCount();
    char line[600];
    snprintf(line, sizeof line, "downloading %s from %s", j->name, j->url);
    if (g.console)
        say(0, line);
    for (int k = 0; k < 3 && !got && !ended; k++) {
        char *path = hs_symstore_url_path(base, j->name, j->key, files[k]);
        if (!path)
            hs_out_of_memory();
        DWORD status = 0, err = 0;
        unsigned long long short_of = 0;
        ULONGLONG ms = 0;
        b.n = 0;
        EnterCriticalSection(&g.lock);
        j->asked_at = GetTickCount64();
        j->answered = 0;
        snprintf(j->asking, sizeof j->asking, "%s", files[k]);
        LeaveCriticalSection(&g.lock);
        int how = http_get(host, u.nPort, secure, path, &status, &b, &err, &short_of, &ms, &j->answered);
        free(path);
        ended = request_failed(j, how, status, err, short_of, &b, files[k], ms);
        if (ended || status != 200)
            continue;
        ended = 1;
        const body *file = NULL;
        if (k == 0) {
            file = right_file(j, &b, files[k]) ? &b : NULL;
        } else if (k == 1) {
            if (cab_expand(&b, &expanded))
                fail(j, "bad file (%s is not a cabinet that expands)", files[k]);
            else if (right_file(j, &expanded, files[k]))
                file = &expanded;
        } else {
            char text[1024];
            int kind = hs_symstore_parse_ptr((const char *)b.p, b.n, text, sizeof text);
            size_t n = 0;
            const char *why = NULL;
            uint8_t *data = kind == 1 ? hs_load_file(text, &n, &why) : NULL;
            body f = { data, n, n };
            if (kind == 2)
                fail(j, "not given: the server says \"%s\"", text);
            else if (kind == 0)
                fail(j, "bad file (file.ptr holds neither PATH: nor MSG:)");
            else if (!data)
                fail(j, "not found (file.ptr points at %s: %s)", text, why ? why : "cannot read");
            else if (right_file(j, &f, text))
                got = keep(j, dest, data, n) == 0;
            kept = n;
            free(data);
        }
        if (file) {
            got = keep(j, dest, file->p, file->n) == 0;
            kept = file->n;
        }
    }
    if (!got && !ended)
        fail(j, "not found (nor %s, nor file.ptr)", packed);
    snprintf(line, sizeof line, "%s: %.1f MB in %.1f s", j->name, kept / 1048576.0, (GetTickCount() - t0) / 1000.0);
    if (got && g.console)
        say(0, line);
    free(b.p);
    free(expanded.p);
    free(packed);
    free(base);
    if (!got) {
        free(dest);
        return NULL;
    }
    return dest;
}

/* ---- the workers and the interface ----------------------------------------- */

/* Do job j (called and returning with the lock held); false when it was
 * given up on meanwhile (its worker no longer counted). */
static bool run_job(job *j)
{
    j->state = RUNNING;
    j->asked_at = GetTickCount64();   /* (its first request starts now) */
    j->answered = 0;
    LeaveCriticalSection(&g.lock);
    char *path = fetch(j);
    EnterCriticalSection(&g.lock);
    if (j->given_up) {
        free(path);   /* (a file it kept is in the cache for the next run) */
        return false;
    }
    j->path = path;
    j->state = DONE;
    WakeAllConditionVariable(&g.changed);
    return true;
}

/* Job j's request got no headers by its deadline (the lock held): done,
 * with no file, and its worker, waiting inside WinHTTP, no longer one. */
static void give_up(job *j, ULONGLONG ms)
{
    j->given_up = 1;
    j->state = DONE;
    j->path = NULL;
    g.workers--;
    fail_too_slow(j, j->asking, "no answer", ms);
    mark_dead(j->url);
    WakeAllConditionVariable(&g.changed);
}

static DWORD WINAPI worker(void *arg)
{
    (void)arg;
    EnterCriticalSection(&g.lock);
    for (;;) {
        job *j = NULL;
        for (size_t i = 0; i < g.njobs && !j; i++)
            if (g.jobs[i]->state == QUEUED)
                j = g.jobs[i];
        if (!j) {
            g.idle++;
            SleepConditionVariableCS(&g.changed, &g.lock, INFINITE);
            g.idle--;
            continue;
        }
        if (!run_job(j))
            break;
    }
    LeaveCriticalSection(&g.lock);
    return 0;
}

/* The job for this file, queued if new (the lock held). */
static job *job_of(const char *url, const char *cache, const char *name, const char *key)
{
    for (size_t i = 0; i < g.njobs; i++) {
        job *j = g.jobs[i];
        if (!strcmp(j->url, url) && !_stricmp(j->name, name) && !_stricmp(j->key, key))
            return j;
    }
    job *j = hs_xcalloc(1, sizeof *j);
    j->url = hs_xstrdup(url);
    j->cache = cache ? hs_xstrdup(cache) : NULL;
    j->name = hs_xstrdup(name);
    j->key = hs_xstrdup(key);
    hs_xgrow(&g.jobs, &g.jcap, g.njobs + 1, sizeof *g.jobs);
    g.jobs[g.njobs++] = j;
    if (!g.session) {
        g.session = WinHttpOpen(L"hookscope-symsrv", WINHTTP_ACCESS_TYPE_DEFAULT_PROXY,
                                WINHTTP_NO_PROXY_NAME, WINHTTP_NO_PROXY_BYPASS, 0);
        if (g.session)
            WinHttpSetTimeouts(g.session, (int)g.timeout_ms, (int)g.timeout_ms, (int)g.timeout_ms,
                               (int)g.timeout_ms);
    }
    if (!g.idle && g.workers < MAX_WORKERS) {
        HANDLE t = CreateThread(NULL, 0, worker, NULL, 0, NULL);
        if (t) {
            g.workers++;
            CloseHandle(t);
        }
    }
    WakeAllConditionVariable(&g.changed);
    return j;
}

static void fetch_start(void *ctx, const char *url, const char *cache, const char *name, const char *key)
{
    (void)ctx;
    EnterCriticalSection(&g.lock);
    job_of(url, cache, name, key);
    LeaveCriticalSection(&g.lock);
}

static char *fetch_get(void *ctx, const char *url, const char *cache, const char *name, const char *key)
{
    (void)ctx;
    EnterCriticalSection(&g.lock);
    job *j = job_of(url, cache, name, key);
    if (!g.workers && j->state == QUEUED)   /* no thread could be made: here, then */
        run_job(j);
    while (j->state != DONE) {
        SleepConditionVariableCS(&g.changed, &g.lock, 250);
        ULONGLONG ms = GetTickCount64() - j->asked_at;
        if (j->state == RUNNING && !j->answered && past_deadline(0, ms))
            give_up(j, ms);
    }
    char *path = j->path ? hs_xstrdup(j->path) : NULL;
    LeaveCriticalSection(&g.lock);
    return path;
}

static char *fetch_message(void *ctx, size_t i)
{
    (void)ctx;
    EnterCriticalSection(&g.lock);
    char *m = i < g.nmsgs ? hs_xstrdup(g.msgs[i]) : NULL;
    LeaveCriticalSection(&g.lock);
    return m;
}

static const hs_symfetch client = { fetch_get, fetch_start, fetch_message, NULL };

const hs_symfetch *hs_symfetch_host(void)
{
    if (g.ready)
        return &client;
    g.timeout_ms = DEFAULT_TIMEOUT_MS;
    const char *t = getenv(TIMEOUT_ENV);
    if (t && *t) {
        char *end;
        double s = strtod(t, &end);
        if (*end || !(s > 0 && s <= 3600)) {
            hs_err("%s=%s: not a number of seconds above 0 and at most 3600", TIMEOUT_ENV, t);
            exit(HS_EXIT_USAGE);
        }
        g.timeout_ms = (DWORD)(s * 1000 + 0.5) ? (DWORD)(s * 1000 + 0.5) : 1;
    }
    DWORD mode;
    g.console = GetConsoleMode(GetStdHandle(STD_ERROR_HANDLE), &mode) != 0;
    InitializeCriticalSection(&g.lock);
    InitializeConditionVariable(&g.changed);
    g.ready = 1;
    return &client;
}
