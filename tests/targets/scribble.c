/*
 * scribble.c - a target that turns against hookscope: it finds its
 * session in its own address space (a mapped view whose first bytes are
 * the session's magic and whose target pid is its own) and overwrites it
 * with random and adversarial values while it runs, at random moments,
 * and once more at the end. hookscope.exe must neither fault, nor hang,
 * nor allocate by a size written here, nor write outside its output
 * directory; its report has what could be trusted and one line saying the
 * session was corrupted (tests/test_session_guard.py).
 *
 *   scribble SEED SCRIBBLES [MODE]
 *
 * MODE "end" (default) ends the run with counts no agent writes, also
 * when it crashes, printing "blow" first (so that the line must appear);
 * "wait" prints "ready PID", waits for an agent to be loaded and to have
 * hooked, maps the session itself (through the handle the agent
 * publishes: its view outlives the agent's) and scribbles until stdin
 * closes (for attach: during and after the detach); "none" only works (a
 * control run).
 *
 * The fields it aims at are the session's own (hookscope/session.h): the
 * header's counts and layout, module and function records, thread
 * regions and their tables; a quarter of the scribbles land anywhere.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hookscope/session.h"

static uint64_t state;

static uint64_t next(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

/* A few functions for the hooks to count. */
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int middle(int x) { return leaf(x) + leaf(x + 1); }
__attribute__((noinline)) int work(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += middle(i);
    return s;
}

/* The session's view in this process, or NULL. */
static uint8_t *find_session(uint64_t *size)
{
    MEMORY_BASIC_INFORMATION mi;
    for (uint8_t *p = NULL; VirtualQuery(p, &mi, sizeof mi); p = (uint8_t *)mi.BaseAddress + mi.RegionSize) {
        if (mi.Type != MEM_MAPPED || mi.State != MEM_COMMIT || mi.BaseAddress != mi.AllocationBase ||
            mi.RegionSize < sizeof(hs_session_header))
            continue;
        const hs_session_header *h = mi.BaseAddress;
        if (h->magic == HS_SESSION_MAGIC && h->target_pid == GetCurrentProcessId()) {
            *size = h->total_size;
            return mi.BaseAddress;
        }
    }
    return NULL;
}

static void write_at(uint8_t *view, uint64_t size, uint64_t off, const void *v, size_t n)
{
    if (off >= size || n > size - off)
        return;
    /* (the view is reserved and committed as it fills: commit first) */
    if (!VirtualAlloc(view + (off & ~(uint64_t)4095), ((off & 4095) + n + 4095) & ~(uint64_t)4095, MEM_COMMIT,
                      PAGE_READWRITE))
        return;
    memcpy(view + off, v, n);
}

static uint64_t adversarial(uint64_t size)
{
    static const uint64_t values[] = { 0, 1, 2, 7, 8, 255, 256, 257, 0x7FFF, 0xFFFF, 0x10000, 0x7FFFFFFF,
                                       0x80000000, 0xFFFFFFFF, 0x100000000ull, 0x7FFFFFFFFFFFFFFFull,
                                       0x8000000000000000ull, ~0ull, 0x4141414141414141ull };
    uint64_t r = next();
    if (r % 5 == 0)
        return size + next() % 4096;
    if (r % 5 == 1)
        return next();
    return values[next() % (sizeof values / sizeof *values)];
}

/* One scribble: an adversarial value at a field that matters, or random
 * bytes somewhere. The layout is read from the header before anything is
 * changed (the target knows it as well as hookscope does). */
static void scribble(uint8_t *view, uint64_t size, const hs_session_header *L)
{
    uint64_t mod = L->modules_off, fn = L->funcs_off, reg = L->regions_off, rsz = L->region_size;
    uint32_t k = (uint32_t)(next() % (L->max_threads + 1));
    uint32_t m = (uint32_t)(next() % 4), f = (uint32_t)(next() % 64);
    uint64_t r = reg + k * rsz;
    const uint64_t fields[] = {
        offsetof(hs_session_header, n_modules), offsetof(hs_session_header, n_functions),
        offsetof(hs_session_header, threads_used), offsetof(hs_session_header, modules_off),
        offsetof(hs_session_header, regions_off), offsetof(hs_session_header, region_size),
        offsetof(hs_session_header, max_functions), offsetof(hs_session_header, region_stacks_cap),
        offsetof(hs_session_header, error_text) + HS_ERROR_LEN - 8, offsetof(hs_session_header, fn_list_off),
        offsetof(hs_session_header, fn_list_cap), offsetof(hs_session_header, injector_tids),
        mod + m * sizeof(hs_module_rec) + offsetof(hs_module_rec, first_func),
        mod + m * sizeof(hs_module_rec) + offsetof(hs_module_rec, n_funcs),
        mod + m * sizeof(hs_module_rec) + offsetof(hs_module_rec, base),
        mod + m * sizeof(hs_module_rec) + offsetof(hs_module_rec, size),
        mod + m * sizeof(hs_module_rec) + offsetof(hs_module_rec, path) + 2 * (next() % HS_PATH_LEN),
        mod + m * sizeof(hs_module_rec) + offsetof(hs_module_rec, arena_size),
        mod + m * sizeof(hs_module_rec) + offsetof(hs_module_rec, unwind_count),
        fn + f * sizeof(hs_func_rec) + offsetof(hs_func_rec, module),
        fn + f * sizeof(hs_func_rec) + offsetof(hs_func_rec, skip_reason),
        fn + f * sizeof(hs_func_rec) + offsetof(hs_func_rec, slot_off),
        r + offsetof(hs_region_hdr, committed_funcs), r + offsetof(hs_region_hdr, edges_used),
        r + offsetof(hs_region_hdr, stacks_used), r + offsetof(hs_region_hdr, shadow_top),
        r + L->region_counters_off + 8 * (next() % 64),
        r + L->region_edges_off + 32 * (next() % 64) + 8,
        r + L->region_stacks_off + 32 * (next() % 64) + 8 + 4 * (next() % 4),
        r + L->region_shadow_off + 48,
    };
    uint64_t at = next() % 4 ? fields[next() % (sizeof fields / sizeof *fields)] : next() % size;
    if (next() % 8 == 0) {
        /* a run of random bytes (an unterminated string, a scribbled table) */
        uint8_t junk[1040];
        size_t n = 1 + next() % sizeof junk;
        for (size_t i = 0; i < n; i++)
            junk[i] = (uint8_t)next();
        write_at(view, size, at, junk, n);
        return;
    }
    uint64_t v = adversarial(size);
    write_at(view, size, at, &v, 1u << (next() % 4));
}

/* What no agent writes: the line must appear. */
static void final_blow(uint8_t *view, uint64_t size, const hs_session_header *L)
{
    uint32_t huge = 0xFFFFFFFFu;
    write_at(view, size, offsetof(hs_session_header, n_functions), &huge, 4);
    uint16_t a[HS_PATH_LEN];
    for (int i = 0; i < HS_PATH_LEN; i++)
        a[i] = 'A';
    write_at(view, size, L->modules_off + offsetof(hs_module_rec, path), a, sizeof a);
}

/* The last scribble also comes when the target crashes (often, as its
 * own agent reads what it scribbled): from the unhandled-exception
 * filter, before the process ends. */
static uint8_t *g_view;
static uint64_t g_size;
static hs_session_header g_layout;
static volatile LONG blown;

static void blow(void)
{
    if (InterlockedExchange(&blown, 1))
        return;
    printf("blow\n");
    final_blow(g_view, g_size, &g_layout);
}

static LONG WINAPI on_crash(EXCEPTION_POINTERS *x)
{
    (void)x;
    blow();
    return EXCEPTION_CONTINUE_SEARCH;
}

/* attach: the session of the agent hookscope loads into this process, as
 * a view of our own (it stays mapped after the agent leaves). */
static uint8_t *wait_session(uint64_t *size)
{
    for (;;) {
        HMODULE agent = GetModuleHandleW(L"hookscope-agent.dll");
        const hs_agent_public *pub = agent ? (const void *)GetProcAddress(agent, "hs_agent_public_state") : NULL;
        HANDLE mine = NULL;
        if (pub && pub->session_handle &&
            DuplicateHandle(GetCurrentProcess(), (HANDLE)(uintptr_t)pub->session_handle, GetCurrentProcess(), &mine,
                            0, FALSE, DUPLICATE_SAME_ACCESS)) {
            const hs_session_header *h = MapViewOfFile(mine, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, 0);
            /* (from the moment the modules are hooked: before, hookscope
             * would only say that the agent failed) */
            while (h && h->magic == HS_SESSION_MAGIC && h->agent_state < HS_AGENT_READY)
                Sleep(1);
            if (h && h->magic == HS_SESSION_MAGIC) {
                *size = h->total_size;
                return (uint8_t *)h;
            }
        }
        Sleep(5);
    }
}

static int stdin_open(void)
{
    DWORD avail = 0;
    return PeekNamedPipe(GetStdHandle(STD_INPUT_HANDLE), NULL, 0, NULL, &avail, NULL);
}

int main(int argc, char **argv)
{
    state = argc > 1 ? strtoull(argv[1], NULL, 0) * 0x9E3779B97F4A7C15ull + 1 : 1;
    long scribbles = argc > 2 ? atol(argv[2]) : 1000;
    const char *mode = argc > 3 ? argv[3] : "end";
    int wait = !strcmp(mode, "wait");
    setvbuf(stdout, NULL, _IONBF, 0);
    uint64_t size = 0;
    uint8_t *view = NULL;
    if (wait) {
        printf("ready %lu\n", GetCurrentProcessId());
        view = wait_session(&size);
    } else {
        view = find_session(&size);
    }
    if (!view) {
        fprintf(stderr, "scribble: no session found\n");
        return 3;
    }
    hs_session_header L = *(const hs_session_header *)view;   /* the layout, before any change */
    g_view = view;
    g_size = size;
    g_layout = L;
    if (!strcmp(mode, "end"))
        SetUnhandledExceptionFilter(on_crash);
    int sum = 0;
    for (long i = 0; strcmp(mode, "none"); i++) {
        if (wait ? (i % 32 == 0 && !stdin_open()) : i >= scribbles)
            break;
        sum += work(10 + (int)(next() % 50));
        scribble(view, size, &L);
        if (next() % 16 == 0)
            Sleep((DWORD)(next() % 3));
    }
    sum += work(100);
    if (!strcmp(mode, "end"))
        blow();
    printf("done %d\n", sum & 1);
    return 0;
}
