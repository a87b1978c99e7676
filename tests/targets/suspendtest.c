/*
 * suspendtest: drives hook/suspend/threads_win.c in tight loops, for
 * tests/test_suspend.py. The victim is another process (threadstorm.exe,
 * which counts the progress of every kind of thread it has, so a thread
 * left suspended shows there) or this process itself.
 *
 *   suspendtest.exe one PID SECONDS [MIN_OK]
 *                                      suspend each thread of PID in turn,
 *                                      read its context and 256 bytes of
 *                                      its stack, resume it (the sampler's
 *                                      way), again and again; for SECONDS,
 *                                      and on until MIN_OK threads were
 *                                      read (a busy machine is slower), at
 *                                      most 60 s more
 *   suspendtest.exe all PID SECONDS    suspend every thread of PID at once,
 *                                      resume them all, again and again
 *   suspendtest.exe self SECONDS       the same on this process, whose own
 *                                      threads keep creating threads and
 *                                      check their progress
 *   suspendtest.exe bench N            N times: suspend a busy thread of
 *                                      this process, read its context,
 *                                      resume it, through hs_suspend_one and
 *                                      directly (SuspendThread,
 *                                      GetThreadContext, ResumeThread);
 *                                      prints "bench one-us X direct-us Y"
 *   suspendtest.exe hold PID           suspend every thread of PID, print
 *                                      "holding N", and wait: a Ctrl+C
 *                                      resumes them through
 *                                      hs_suspend_release_all, then "released N"
 *
 * Output, one line at the end:
 *   one|all|self ok N gone N timeout N noworker N denied N stack-reads N rounds N max-ms N
 * and for self also " progress-ok 1" when every thread of this process
 * advanced after the last resume.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/suspend/threads_win.h"

typedef LONG (NTAPI *next_thread_fn)(HANDLE, HANDLE, ACCESS_MASK, ULONG, ULONG, HANDLE *);

static long counts[5];
static long stack_reads, rounds, max_ms;

static void report(const char *mode, const char *extra)
{
    printf("%s ok %ld gone %ld timeout %ld noworker %ld denied %ld stack-reads %ld rounds %ld max-ms %ld%s\n",
           mode, counts[HS_SUSPEND_OK], counts[HS_SUSPEND_GONE], counts[HS_SUSPEND_TIMEOUT],
           counts[HS_SUSPEND_NO_WORKER], counts[HS_SUSPEND_DENIED], stack_reads, rounds, max_ms, extra);
    fflush(stdout);
}

static HANDLE open_victim(DWORD pid)
{
    HANDLE p = OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ | SYNCHRONIZE, FALSE, pid);
    if (!p) {
        fprintf(stderr, "suspendtest: cannot open process %lu (%lu)\n", pid, GetLastError());
        exit(2);
    }
    return p;
}

/* ---- one: the sampler's loop ------------------------------------------------------ */

/* thread ids whose context was read once (ids are multiples of 4) */
static uint8_t read_once[1 << 17];

static void one(DWORD pid, DWORD seconds, long min_ok)
{
    HANDLE process = open_victim(pid);
    next_thread_fn next_thread = (next_thread_fn)(void (*)(void))GetProcAddress(
        GetModuleHandleW(L"ntdll.dll"), "NtGetNextThread");
    const ACCESS_MASK access = THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_QUERY_LIMITED_INFORMATION |
                               SYNCHRONIZE;
    DWORD t0 = GetTickCount();
    for (;;) {
        DWORD spent = GetTickCount() - t0;
        if ((spent >= seconds * 1000 && counts[HS_SUSPEND_OK] >= min_ok) || spent >= seconds * 1000 + 60000 ||
            WaitForSingleObject(process, 0) != WAIT_TIMEOUT)
            break;
        HANDLE cur = NULL, next;
        rounds++;
        while (next_thread(process, cur, access, 0, 0, &next) == 0) {
            if (cur)
                CloseHandle(cur);
            cur = next;
            CONTEXT ctx __attribute__((aligned(16)));
            memset(&ctx, 0, sizeof ctx);
            ctx.ContextFlags = CONTEXT_FULL;
            DWORD s0 = GetTickCount();
            /* as the sampler does: a thread never read before is read by a
             * worker (it may be under creation) */
            DWORD tid = GetThreadId(next);
            int seen = tid && (read_once[(tid >> 2) / 8 % sizeof read_once] >> ((tid >> 2) % 8)) & 1;
            hs_suspend_status st = hs_suspend_one(next, &ctx, 100, seen ? 0 : HS_SUSPEND_NEW);
            if (st == HS_SUSPEND_OK && tid)
                read_once[(tid >> 2) / 8 % sizeof read_once] |= (uint8_t)(1u << ((tid >> 2) % 8));
            counts[st]++;
            if (st == HS_SUSPEND_OK) {
                unsigned char stack[256];
                SIZE_T got = 0;
                if (ctx.Rsp && ReadProcessMemory(process, (void *)(uintptr_t)ctx.Rsp, stack, sizeof stack, &got))
                    stack_reads++;
                hs_resume_one(next);
            }
            long ms = (long)(GetTickCount() - s0);
            if (ms > max_ms)
                max_ms = ms;
        }
        if (cur)
            CloseHandle(cur);
    }
    report("one", "");
}

/* ---- all: the freeze, from outside ---------------------------------------------------- */

static void all(DWORD pid, DWORD seconds)
{
    HANDLE process = open_victim(pid);
    DWORD t0 = GetTickCount();
    while (GetTickCount() - t0 < seconds * 1000 && WaitForSingleObject(process, 0) == WAIT_TIMEOUT) {
        hs_suspend_set s;
        hs_suspend_opts o = { 0, 5000, NULL, NULL };
        int n = hs_suspend_all(&s, process, &o);
        rounds++;
        counts[n >= 0 ? HS_SUSPEND_OK : s.why]++;
        counts[HS_SUSPEND_GONE] += s.stats.gone;
        counts[HS_SUSPEND_TIMEOUT] += s.stats.timeouts;
        if ((long)s.stats.ms > max_ms)
            max_ms = (long)s.stats.ms;
        for (int i = 0; i < n; i++)
            if (s.t[i].ctx.Rip)
                stack_reads++;   /* (a context with an instruction pointer) */
        hs_resume_all(&s);
    }
    report("all", "");
}

/* ---- self: this process's own threads --------------------------------------------------- */

#define SPINNERS 3
static volatile LONG64 spin_progress[SPINNERS];
static volatile LONG64 made, creator_progress;
static volatile LONG stop_self;

static DWORD WINAPI spinner(void *arg)
{
    int i = (int)(uintptr_t)arg;
    while (!stop_self)
        spin_progress[i]++;
    return 0;
}

static DWORD WINAPI tiny(void *arg)
{
    InterlockedIncrement64(&made);
    return 0;
}

static DWORD WINAPI creator(void *arg)
{
    while (!stop_self) {
        HANDLE h[4];
        for (int i = 0; i < 4; i++)
            h[i] = CreateThread(NULL, 0, tiny, NULL, 0, NULL);
        for (int i = 0; i < 4; i++)
            if (h[i]) {
                WaitForSingleObject(h[i], INFINITE);
                CloseHandle(h[i]);
            }
        creator_progress++;
    }
    return 0;
}

static void self(DWORD seconds)
{
    HANDLE t[SPINNERS + 2];
    for (int i = 0; i < SPINNERS; i++)
        t[i] = CreateThread(NULL, 0, spinner, (void *)(uintptr_t)i, 0, NULL);
    t[SPINNERS] = CreateThread(NULL, 0, creator, NULL, 0, NULL);
    t[SPINNERS + 1] = CreateThread(NULL, 0, creator, NULL, 0, NULL);
    DWORD t0 = GetTickCount();
    while (GetTickCount() - t0 < seconds * 1000) {
        hs_suspend_set s;
        hs_suspend_opts o = { 0, 5000, NULL, NULL };
        int n = hs_suspend_all(&s, GetCurrentProcess(), &o);
        rounds++;
        counts[n >= 0 ? HS_SUSPEND_OK : s.why]++;
        counts[HS_SUSPEND_GONE] += s.stats.gone;
        counts[HS_SUSPEND_TIMEOUT] += s.stats.timeouts;
        if ((long)s.stats.ms > max_ms)
            max_ms = (long)s.stats.ms;
        if (n >= 0) {
            /* while they are held, nothing they count may move */
            LONG64 before = spin_progress[0];
            Sleep(2);
            if (spin_progress[0] != before)
                counts[HS_SUSPEND_DENIED]++;
        }
        hs_resume_all(&s);
    }
    /* after the last resume, every thread moves on */
    LONG64 sp[SPINNERS], cp = creator_progress;
    for (int i = 0; i < SPINNERS; i++)
        sp[i] = spin_progress[i];
    /* (a loaded machine may take a while to run them all: up to 15 s) */
    int ok = 0;
    for (DWORD w0 = GetTickCount(); !ok && GetTickCount() - w0 < 15000;) {
        Sleep(20);
        ok = creator_progress > cp;
        for (int i = 0; i < SPINNERS; i++)
            ok &= spin_progress[i] > sp[i];
    }
    stop_self = 1;
    WaitForMultipleObjects(SPINNERS + 2, t, TRUE, 10000);
    report("self", ok ? " progress-ok 1" : " progress-ok 0");
}

/* ---- bench: the cost of one sample ---------------------------------------------------- */

static volatile LONG bench_stop;

static DWORD WINAPI busy(void *arg)
{
    volatile unsigned long long x = 0;
    while (!bench_stop)
        x++;
    return 0;
}

static void bench(int n)
{
    HANDLE t = CreateThread(NULL, 0, busy, NULL, 0, NULL);
    Sleep(50);
    LARGE_INTEGER f, a, b;
    QueryPerformanceFrequency(&f);
    CONTEXT ctx __attribute__((aligned(16)));
    QueryPerformanceCounter(&a);
    for (int i = 0; i < n; i++) {
        memset(&ctx, 0, sizeof ctx);
        ctx.ContextFlags = CONTEXT_FULL;
        if (hs_suspend_one(t, &ctx, 1000, 0) == HS_SUSPEND_OK)
            hs_resume_one(t);
        else
            counts[HS_SUSPEND_TIMEOUT]++;
    }
    QueryPerformanceCounter(&b);
    double one = (double)(b.QuadPart - a.QuadPart) * 1e6 / (double)f.QuadPart / n;
    QueryPerformanceCounter(&a);
    for (int i = 0; i < n; i++) {
        memset(&ctx, 0, sizeof ctx);
        ctx.ContextFlags = CONTEXT_FULL;
        SuspendThread(t);
        GetThreadContext(t, &ctx);
        ResumeThread(t);
    }
    QueryPerformanceCounter(&b);
    double direct = (double)(b.QuadPart - a.QuadPart) * 1e6 / (double)f.QuadPart / n;
    bench_stop = 1;
    WaitForSingleObject(t, 10000);
    printf("bench one-us %.1f direct-us %.1f failed %ld\n", one, direct, counts[HS_SUSPEND_TIMEOUT]);
}

/* ---- hold: released by Ctrl+C ------------------------------------------------------------- */

static BOOL WINAPI on_ctrl(DWORD type)
{
    int n = hs_suspend_release_all();
    printf("released %d\n", n);
    fflush(stdout);
    ExitProcess(0);
    return TRUE;
}

static void hold(DWORD pid)
{
    HANDLE process = open_victim(pid);
    hs_suspend_set s;
    hs_suspend_opts o = { 0, 10000, NULL, NULL };
    int n = hs_suspend_all(&s, process, &o);
    SetConsoleCtrlHandler(on_ctrl, TRUE);
    printf("holding %d\n", n);
    fflush(stdout);
    Sleep(120000);
    hs_resume_all(&s);
    printf("timed out\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || hs_suspend_init(NULL) < 0) {
        fprintf(stderr, "usage: suspendtest one PID SECONDS [MIN_OK] | all PID SECONDS | self SECONDS | hold PID | bench N\n");
        return 2;
    }
    if (!strcmp(argv[1], "one") && (argc == 4 || argc == 5))
        one((DWORD)atol(argv[2]), (DWORD)atol(argv[3]), argc == 5 ? atol(argv[4]) : 0);
    else if (!strcmp(argv[1], "all") && argc == 4)
        all((DWORD)atol(argv[2]), (DWORD)atol(argv[3]));
    else if (!strcmp(argv[1], "self") && argc == 3)
        self((DWORD)atol(argv[2]));
    else if (!strcmp(argv[1], "hold") && argc == 3)
        hold((DWORD)atol(argv[2]));
    else if (!strcmp(argv[1], "bench") && argc == 3)
        bench(atoi(argv[2]));
    else
        return 2;
    return 0;
}
