/*
 * bench/walkbench.c - the unwinder the sampler uses (hook/unwind/unwinder.c)
 * against DbgHelp's StackWalk64, on the same samples.
 *
 * Starts build/bench/spin.exe (argv[1], default 2 threads), takes 400
 * samples of its threads with the sampler's own step (suspend, context,
 * one stack copy, resume: grab_win.c), then unwinds every sample's copy
 * both ways, each 20 times over, with target memory served the same way
 * to both: the copied stack, and image memory through the code map's page
 * cache (filled before timing). StackWalk64 gets that memory from its
 * ReadMemoryRoutine, the function entries from its
 * FunctionTableAccessRoutine (the code map's .pdata), module bases from
 * GetModuleBaseRoutine.
 *
 * Prints "own_us X", "dbghelp_us Y" (per stack), "frames_own N",
 * "frames_dbghelp N" (on average) and "agree P" (the share of samples
 * whose frame lists are equal).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <dbghelp.h>

#include "hook/unwind/unwinder.h"
#include "sampler/codemap.h"
#include "sampler/suspend/grab_win.h"
#include "sampler/suspend/modules_win.h"

#define SAMPLES 400
#define REPEAT 20
#define MAX_FRAMES 256

typedef struct snap {
    uint64_t regs[HS_GRAB_REGS];   /* hs_grab's */
    uint8_t *stack;
    uint64_t lo;
    size_t len;
    bool complete;
} snap;

static HANDLE process;
static hs_codemap *map;
static const snap *cur;

static int read_target(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    SIZE_T got = 0;
    return ReadProcessMemory(process, (const void *)(uintptr_t)addr, buf, len, &got) && got == len ? 0 : -1;
}

static double now_s(void)
{
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
}

/* ---- DbgHelp's callbacks ---- */

static BOOL CALLBACK rd(HANDLE h, DWORD64 addr, PVOID buf, DWORD len, LPDWORD got)
{
    (void)h;
    if (addr >= cur->lo && addr - cur->lo <= cur->len && cur->len - (addr - cur->lo) >= len) {
        memcpy(buf, cur->stack + (addr - cur->lo), len);
        *got = len;
        return TRUE;
    }
    if (hs_codemap_read(map, addr, buf, len) == 0) {
        *got = len;
        return TRUE;
    }
    *got = 0;
    return FALSE;
}

static RUNTIME_FUNCTION rf_buf;

static PVOID CALLBACK fta(HANDLE h, DWORD64 addr)
{
    (void)h;
    hs_uw_env env = hs_codemap_env(map);
    hs_uw_entry e;
    if (env.lookup(env.ctx, addr, &e) != HS_UW_TABLE)
        return NULL;
    rf_buf.BeginAddress = e.begin;
    rf_buf.EndAddress = e.end;
    rf_buf.UnwindData = e.unwind;
    return &rf_buf;
}

static DWORD64 CALLBACK gmb(HANDLE h, DWORD64 addr)
{
    (void)h;
    const hs_image *ims;
    size_t n = hs_codemap_images(map, &ims);
    for (size_t i = 0; i < n; i++)
        if (!ims[i].unloaded && addr >= ims[i].base && addr - ims[i].base < ims[i].size)
            return ims[i].base;
    return 0;
}

static int walk_dbghelp(const snap *s, uint64_t *frames)
{
    cur = s;
    CONTEXT c;
    memset(&c, 0, sizeof c);
    c.ContextFlags = CONTEXT_CONTROL | CONTEXT_INTEGER;
    DWORD64 *gp[16] = { &c.Rax, &c.Rcx, &c.Rdx, &c.Rbx, &c.Rsp, &c.Rbp, &c.Rsi, &c.Rdi,
                        &c.R8, &c.R9, &c.R10, &c.R11, &c.R12, &c.R13, &c.R14, &c.R15 };
    for (int i = 0; i < 16; i++)
        *gp[i] = s->regs[i];
    c.Rip = s->regs[HS_GRAB_PC];
    c.EFlags = (DWORD)s->regs[HS_GRAB_FLAGS];
    STACKFRAME64 f;
    memset(&f, 0, sizeof f);
    f.AddrPC.Offset = c.Rip;
    f.AddrPC.Mode = AddrModeFlat;
    f.AddrStack.Offset = c.Rsp;
    f.AddrStack.Mode = AddrModeFlat;
    f.AddrFrame.Offset = c.Rbp;
    f.AddrFrame.Mode = AddrModeFlat;
    int n = 0;
    while (n < MAX_FRAMES &&
           StackWalk64(IMAGE_FILE_MACHINE_AMD64, process, NULL, &f, &c, rd, fta, gmb, NULL) && f.AddrPC.Offset) {
        frames[n++] = f.AddrPC.Offset;
    }
    if (getenv("WALK_DEBUG") && n < 2)
        fprintf(stderr, "dbghelp: %d frames, error %lu, rip %llx\n", n, GetLastError(), (unsigned long long)s->regs[HS_GRAB_PC]);
    return n;
}

static int walk_own(const snap *s, uint64_t *frames)
{
    hs_uw_regs r;
    memcpy(r.r, s->regs, sizeof r.r);
    r.rip = s->regs[HS_GRAB_PC];
    hs_uw_stack st = { s->lo, s->stack, s->len, s->complete };
    hs_uw_env env = hs_codemap_env(map);
    return (int)hs_unwind_walk(&env, &st, &r, frames, MAX_FRAMES).n;
}

int main(int argc, char **argv)
{
    const char *threads = argc > 1 ? argv[1] : "2";
    char cmd[256];
    snprintf(cmd, sizeof cmd, "build\\bench\\spin.exe %s 4000", threads);
    STARTUPINFOA si;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    PROCESS_INFORMATION pi;
    if (!CreateProcessA(NULL, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi)) {
        fprintf(stderr, "walkbench: cannot start %s\n", cmd);
        return 1;
    }
    process = pi.hProcess;
    Sleep(300);
    map = hs_codemap_new(read_target, NULL);
    hs_target_modules(process, 64, map, 0);
    hs_grabber *g = hs_grabber_new(64 * 1024, 64);
    typedef LONG(NTAPI * gnt_fn)(HANDLE, HANDLE, ACCESS_MASK, ULONG, ULONG, HANDLE *);
    gnt_fn gnt = (gnt_fn)(void (*)(void))GetProcAddress(GetModuleHandleW(L"ntdll.dll"), "NtGetNextThread");
    typedef LONG(NTAPI * qit_fn)(HANDLE, int, void *, ULONG, ULONG *);
    qit_fn qit = (qit_fn)(void (*)(void))GetProcAddress(GetModuleHandleW(L"ntdll.dll"), "NtQueryInformationThread");
    HANDLE th[16];
    uint64_t base[16];
    int nth = 0;
    for (HANDLE c = NULL, n; nth < 16 && gnt(process, c, THREAD_ALL_ACCESS, 0, 0, &n) == 0; c = n) {
        struct { LONG st; void *teb; void *p, *t; ULONG_PTR aff; LONG pri, bpri; } tbi;
        ULONG l;
        base[nth] = 0;
        if (qit(n, 0, &tbi, sizeof tbi, &l) == 0)
            read_target(NULL, (uint64_t)(uintptr_t)tbi.teb + 8, &base[nth], 8);
        th[nth++] = n;
    }
    static snap snaps[SAMPLES];
    int ns = 0;
    for (int i = 0; ns < SAMPLES && i < SAMPLES * 4; i++) {
        hs_grab gr;
        if (hs_grab_thread(g, process, th[i % nth], base[i % nth], NULL, &gr) != HS_GRAB_OK || !gr.stack_len)
            continue;
        snap *s = &snaps[ns++];
        memcpy(s->regs, gr.regs, sizeof s->regs);
        s->stack = malloc(gr.stack_len);
        memcpy(s->stack, gr.stack, gr.stack_len);
        s->lo = gr.stack_lo;
        s->len = gr.stack_len;
        s->complete = gr.complete;
        Sleep(1);
    }
    if (!ns) {
        fprintf(stderr, "walkbench: no samples\n");
        return 1;
    }
    SymInitialize(process, NULL, TRUE);
    uint64_t a[MAX_FRAMES], b[MAX_FRAMES];
    long fa = 0, fb = 0, agree = 0;
    for (int i = 0; i < ns; i++) {   /* warm the page cache; compare */
        int na = walk_own(&snaps[i], a), nb = walk_dbghelp(&snaps[i], b);
        fa += na;
        fb += nb;
        agree += na == nb && !memcmp(a, b, (size_t)na * 8);
    }
    double t0 = now_s();
    for (int r = 0; r < REPEAT; r++)
        for (int i = 0; i < ns; i++)
            walk_own(&snaps[i], a);
    double t1 = now_s();
    for (int r = 0; r < REPEAT; r++)
        for (int i = 0; i < ns; i++)
            walk_dbghelp(&snaps[i], b);
    double t2 = now_s();
    TerminateProcess(process, 0);
    WaitForSingleObject(process, 5000);
    printf("samples %d\nown_us %.3f\ndbghelp_us %.3f\nframes_own %.2f\nframes_dbghelp %.2f\nagree %.3f\n", ns,
           (t1 - t0) * 1e6 / (REPEAT * ns), (t2 - t1) * 1e6 / (REPEAT * ns), (double)fa / ns, (double)fb / ns,
           (double)agree / ns);
    return 0;
}
