/*
 * stress: hooks go in and out N times while two threads call a hooked
 * function in a loop.
 *
 *   stress.exe AGENT_DLL [CYCLES]
 *
 * The program plays the injector's part itself: it creates the session
 * for its own pid, loads the agent and calls its exports (hs_agent_init
 * hooks this exe; hs_agent_unhook / hs_agent_rehook take the patches out
 * and put them back, each under one freeze of the other threads).
 *
 * Each worker reads its own counter of target_fn (through the TLS slot
 * the stubs use) before and after every call, so it knows exactly which
 * of its calls went through the hook; it also checks every result. After
 * each unhook, once both workers have finished the call they were in, the
 * hooked count of the phase (the sum over all thread regions) must equal
 * what the workers saw counted in that phase. Prints one summary line and
 * exits 0 when every phase was exact and every result right.
 *
 * A watchdog thread ends the program with exit code 3 and one line saying
 * where it stood (cycle, step, the workers' progress, the agent's freeze
 * counts) when no step has finished for 60 s: a stall is a failure that
 * says something, never a hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <windows.h>
#include <tlhelp32.h>

#include "hookscope/session.h"

static void *view;
static hs_session_header *hdr;
static uint32_t fidx = UINT32_MAX;

static volatile LONG stop;
static volatile LONG64 seq[2], counted[2], calls[2];
static volatile LONG bad, bad_delta;

__attribute__((noinline)) unsigned long long target_fn(unsigned long long x)
{
    return (x ^ (x >> 7)) * 0x9E3779B97F4A7C15ull;
}

static unsigned long long expect(unsigned long long x)
{
    return (x ^ (x >> 7)) * 0x9E3779B97F4A7C15ull;
}

static DWORD WINAPI worker(void *arg)
{
    int id = (int)(uintptr_t)arg;
    unsigned long long x = (unsigned long long)id * 977 + 1;
    while (!stop) {
        uint64_t *c = TlsGetValue(hdr->tls_index);
        uint64_t before = c ? *hs_fblock_at(hdr, c, fidx) : 0;
        unsigned long long y = target_fn(x);
        c = TlsGetValue(hdr->tls_index);
        uint64_t after = c ? *hs_fblock_at(hdr, c, fidx) : 0;
        if (y != expect(x))
            InterlockedIncrement(&bad);
        if (after - before > 1)
            InterlockedIncrement(&bad_delta);
        counted[id] += (LONG64)(after - before);
        calls[id]++;
        x = y + 1;
        seq[id]++;
    }
    return 0;
}

/* calls of target_fn counted in every region */
static uint64_t hooked_total(void)
{
    uint64_t sum = 0;
    uint32_t used = (uint32_t)hdr->threads_used;
    if (used > hdr->max_threads)
        used = hdr->max_threads;
    for (uint32_t k = 0; k < used; k++)
        sum += *hs_fblock_at(hdr, hs_region_counters(view, k), fidx);
    return sum + *hs_fblock_at(hdr, hs_region_counters(view, hdr->max_threads), fidx);
}

/* where main stands, for the watchdog */
static volatile LONG cycle_now, step_now, steps_done;
static DWORD main_tid;
static const char *const step_names[] = { "start", "unhook", "wait for the workers", "rehook", "final unhook",
                                          "join" };

/* ---- what a stall looks like: every thread's stack, for the watchdog -------- */

/* "module+0xoff (export+0xoff)" for a code address. */
static void describe(uint64_t a, char *out, size_t n)
{
    HMODULE m = NULL;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (const wchar_t *)(uintptr_t)a, &m) || !m) {
        snprintf(out, n, "0x%llx", (unsigned long long)a);
        return;
    }
    char path[MAX_PATH];
    DWORD len = GetModuleFileNameA(m, path, sizeof path);
    const char *name = path;
    for (DWORD i = 0; i < len; i++)
        if (path[i] == '\\' || path[i] == '/')
            name = path + i + 1;
    const uint8_t *base = (const uint8_t *)m;
    uint32_t rva = (uint32_t)(a - (uint64_t)(uintptr_t)base);
    const IMAGE_NT_HEADERS64 *nt = (const IMAGE_NT_HEADERS64 *)(base + ((const IMAGE_DOS_HEADER *)base)->e_lfanew);
    const IMAGE_DATA_DIRECTORY *dd = &nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXPORT];
    const char *best = NULL;
    uint32_t best_rva = 0;
    if (dd->Size) {
        const IMAGE_EXPORT_DIRECTORY *ed = (const IMAGE_EXPORT_DIRECTORY *)(base + dd->VirtualAddress);
        const uint32_t *fns = (const uint32_t *)(base + ed->AddressOfFunctions);
        const uint32_t *names = (const uint32_t *)(base + ed->AddressOfNames);
        const uint16_t *ords = (const uint16_t *)(base + ed->AddressOfNameOrdinals);
        for (DWORD i = 0; i < ed->NumberOfNames; i++) {
            uint32_t f = fns[ords[i]];
            if (f <= rva && f >= best_rva) {
                best_rva = f;
                best = (const char *)(base + names[i]);
            }
        }
    }
    if (best)
        snprintf(out, n, "%s+0x%x (%s+0x%x)", name, rva, best, rva - best_rva);
    else
        snprintf(out, n, "%s+0x%x", name, rva);
}

/* Print thread tid's stack: walked while it is suspended, named and
 * printed once it runs again (naming takes the loader lock, printing the
 * CRT's, either of which it may hold). */
static void dump_thread(DWORD tid)
{
    HANDLE h = OpenThread(THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_QUERY_INFORMATION, FALSE, tid);
    if (!h)
        return;
    uint64_t pcs[24];
    int n = 0;
    SuspendThread(h);
    CONTEXT ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.ContextFlags = CONTEXT_FULL;
    BOOL got = GetThreadContext(h, &ctx);
    while (got && n < 24 && ctx.Rip) {
        pcs[n++] = ctx.Rip;
        DWORD64 image = 0;
        PRUNTIME_FUNCTION f = RtlLookupFunctionEntry(ctx.Rip, &image, NULL);
        if (!f) {
            ctx.Rip = *(DWORD64 *)(uintptr_t)ctx.Rsp;
            ctx.Rsp += 8;
            continue;
        }
        void *hd = NULL;
        DWORD64 frame = 0;
        RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, ctx.Rip, f, &ctx, &hd, &frame, NULL);
    }
    ResumeThread(h);
    CloseHandle(h);
    if (!got)
        return;
    fprintf(stderr, "  thread %lu:", (unsigned long)tid);
    for (int i = 0; i < n; i++) {
        char d[200];
        describe(pcs[i], d, sizeof d);
        fprintf(stderr, " %s%s", i ? "<- " : "", d);
    }
    fprintf(stderr, "\n");
}

static void dump_threads(void)
{
    HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
    THREADENTRY32 te;
    te.dwSize = sizeof te;
    for (BOOL ok = Thread32First(snap, &te); ok; ok = Thread32Next(snap, &te))
        if (te.th32OwnerProcessID == GetCurrentProcessId() && te.th32ThreadID != GetCurrentThreadId())
            dump_thread(te.th32ThreadID);
    CloseHandle(snap);
}

static DWORD WINAPI watchdog(void *arg)
{
    (void)arg;
    LONG last = -1;
    DWORD since = GetTickCount();
    for (;;) {
        Sleep(500);
        LONG now = steps_done;
        if (now != last) {
            last = now;
            since = GetTickCount();
            continue;
        }
        if (GetTickCount() - since < 60000)
            continue;
        fprintf(stderr, "stress: stalled for 60 s in cycle %ld at step '%s'; worker calls %lld %lld; "
                "freezes %u (rounds %u, context timeouts %u, failures %u, longest %u ms, total %u ms, "
                "last stuck thread %u)\n", (long)cycle_now, step_names[step_now], (long long)seq[0],
                (long long)seq[1], hdr->freezes, hdr->freeze_rounds, hdr->freeze_timeouts, hdr->freeze_failures,
                hdr->freeze_ms_max, hdr->freeze_ms_total, hdr->freeze_stuck_tid);
        LONG64 a0 = seq[0], a1 = seq[1];
        Sleep(1000);
        fprintf(stderr, "  main thread %lu; a second later the workers' calls grew by %lld and %lld; the threads:\n",
                (unsigned long)main_tid, (long long)(seq[0] - a0), (long long)(seq[1] - a1));
        dump_threads();
        fflush(stderr);
        TerminateProcess(GetCurrentProcess(), 3);
        return 3;
    }
}

static void step(int s)
{
    step_now = s;
    InterlockedIncrement(&steps_done);
}

static void wait_workers_advance(void)
{
    LONG64 s0 = seq[0], s1 = seq[1];
    while (seq[0] < s0 + 2 || seq[1] < s1 + 2)
        Sleep(0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: stress AGENT_DLL [CYCLES]\n");
        return 2;
    }
    int cycles = argc > 2 ? atoi(argv[2]) : 1000;

    /* the session, as the injector would make it */
    hs_session_header layout;
    memset(&layout, 0, sizeof layout);
    hs_capacity cap = hs_default_capacity(1u << 14, 16, 0);
    uint64_t total = hs_session_layout(&layout, &cap);
    HANDLE m = CreateFileMappingW(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE | SEC_RESERVE,
                                  (DWORD)(total >> 32), (DWORD)total, NULL);
    view = m ? MapViewOfFile(m, FILE_MAP_ALL_ACCESS, 0, 0, 0) : NULL;
    if (!view || !VirtualAlloc(view, layout.modules_off, MEM_COMMIT, PAGE_READWRITE)) {
        fprintf(stderr, "stress: no session\n");
        return 1;
    }
    hdr = view;
    *hdr = layout;
    hdr->magic = HS_SESSION_MAGIC;
    hdr->version = HS_SESSION_VERSION;
    hdr->target_pid = GetCurrentProcessId();   /* the agent serves only a session for its process */

    HMODULE agent = LoadLibraryA(argv[1]);
    if (!agent) {
        fprintf(stderr, "stress: cannot load %s (%lu)\n", argv[1], GetLastError());
        return 1;
    }
    typedef DWORD (WINAPI *agent_fn)(void *);
    agent_fn init = (agent_fn)(void (*)(void))GetProcAddress(agent, "hs_agent_init");
    agent_fn unhook = (agent_fn)(void (*)(void))GetProcAddress(agent, "hs_agent_unhook");
    agent_fn rehook = (agent_fn)(void (*)(void))GetProcAddress(agent, "hs_agent_rehook");
    /* the agent gets its session as a handle, as the injector hands it over */
    if (!init || !unhook || !rehook || init(m) != 0) {
        fprintf(stderr, "stress: agent init failed: %s\n", hdr->error_text);
        return 1;
    }
    uint64_t base = (uint64_t)(uintptr_t)GetModuleHandleW(NULL);
    uint32_t rva = (uint32_t)((uint64_t)(uintptr_t)target_fn - base);
    for (uint32_t i = 0; i < hdr->n_functions; i++) {
        hs_func_rec *f = hs_session_func(view, i);
        if (f->rva == rva && (f->flags & HS_FUNC_HOOKED))
            fidx = i;
    }
    if (fidx == UINT32_MAX) {
        fprintf(stderr, "stress: target_fn is not hooked\n");
        return 1;
    }

    main_tid = GetCurrentThreadId();
    CloseHandle(CreateThread(NULL, 0, watchdog, NULL, 0, NULL));
    HANDLE t[2];
    for (int i = 0; i < 2; i++)
        t[i] = CreateThread(NULL, 0, worker, (void *)(uintptr_t)i, 0, NULL);

    int exact = 0, empty = 0;
    uint64_t prev_hooked = 0;
    LONG64 prev_seen = 0;
    unsigned rnd = 12345;
    for (int c = 0; c < cycles; c++) {
        cycle_now = c;
        rnd = rnd * 1103515245u + 12345u;
        if ((rnd >> 16) & 1)
            Sleep(0);
        else
            Sleep(1);
        step(1);
        if (unhook(NULL) != 0) {
            fprintf(stderr, "stress: unhook failed in cycle %d: %s\n", c, hdr->error_text);
            return 1;
        }
        step(2);
        wait_workers_advance();
        uint64_t h = hooked_total();
        LONG64 seen = counted[0] + counted[1];
        if (h - prev_hooked == (uint64_t)(seen - prev_seen))
            exact++;
        else
            fprintf(stderr, "phase %d: hooked %llu, workers saw %lld\n", c,
                    (unsigned long long)(h - prev_hooked), (long long)(seen - prev_seen));
        if (h == prev_hooked)
            empty++;
        prev_hooked = h;
        prev_seen = seen;
        step(3);
        if (rehook(NULL) != 0) {
            fprintf(stderr, "stress: rehook failed in cycle %d: %s\n", c, hdr->error_text);
            return 1;
        }
    }
    step(4);
    unhook(NULL);
    stop = 1;
    step(5);
    WaitForMultipleObjects(2, t, TRUE, INFINITE);
    printf("cycles %d exact %d empty %d bad %ld bad_delta %ld calls %lld counted %lld "
           "freezes %u moved %u\n", cycles, exact, empty, bad, bad_delta,
           (long long)(calls[0] + calls[1]), (long long)(counted[0] + counted[1]), hdr->freezes,
           hdr->threads_moved);
    return exact == cycles && bad == 0 && bad_delta == 0 ? 0 : 1;
}
