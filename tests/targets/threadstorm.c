/*
 * threadstorm: a program whose threads are created, run, wait and end in
 * every way it can think of, all the time, for attaching and detaching
 * many times in a row (scripts/attach_cycles.py) and for the suspend
 * tests. Every thread checks the results of the functions it calls, and
 * the long-lived ones count their progress, so that a thread left
 * suspended, a wrong result or a code byte not restored shows.
 *
 *   threadstorm.exe [SECONDS]     (default 3600; "stop" ends it earlier)
 *
 * Threads:
 *   spin0, spin1   call mix() in a tight loop
 *   waiter         waits on an event with a 1 ms timeout, calls mix()
 *   batcher        starts batches of 8 short threads (each 200 mix() calls)
 *                  and waits for them
 *   nester         starts a thread that starts a thread that starts a
 *                  thread (threads created by threads being created)
 *   exiter         starts threads that call ExitThread from 3 calls deep
 *   suspender      creates threads suspended and resumes them a moment
 *                  later; also suspends and resumes spin1 now and then
 *   pooler         submits thread pool work items
 *   loader         loads and frees latedll.dll (next to this exe) and
 *                  calls dll_poly in it
 *   held           created suspended at start and resumed only at "stop"
 *                  (its suspend count must stay 1 throughout)
 *
 * stdin, one command per line:
 *   status  ->  "status P0 P1 ... P7 held H bad B code-matches M"
 *               (progress of the eight long-lived kinds above, in that
 *               order; H: held's suspend count, 1 while it is held)
 *   stop    ->  "threads T calls C bad B code-matches M" and exit 0
 * Once every long-lived thread has started it prints "pid N code-matches 1".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "codecheck.h"

enum { SPIN0, SPIN1, WAITER, BATCHER, NESTER, EXITER, SUSPENDER, POOLER, LOADER, N_KINDS };

static volatile LONG stop, suspender_done;
static volatile LONG64 progress[N_KINDS];
static volatile LONG64 calls;
static volatile LONG threads;
/* wrong outcomes, by where they were seen */
enum { BAD_MIX, BAD_CREATE, BAD_EXIT_CODE, BAD_RESUME, BAD_SUSPEND, BAD_POOL, BAD_LOAD, BAD_HELD, BAD_REACHED,
       N_BAD };
static const char *const bad_names[N_BAD] = { "mix", "create", "exit-code", "resume", "suspend", "pool",
                                              "load", "held", "reached" };
static volatile LONG bad_at[N_BAD];
#define BAD(site) InterlockedIncrement(&bad_at[site])

static long bad_total(void)
{
    long n = 0;
    for (int i = 0; i < N_BAD; i++)
        n += bad_at[i];
    return n;
}
static HANDLE spin1_thread;

#define MIX(x) (((x) ^ ((x) >> 29)) * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull)

__attribute__((noinline)) unsigned long long mix(unsigned long long x)
{
    return MIX(x);
}

/* n calls of mix from x, each result checked; returns the last value */
__attribute__((noinline)) static unsigned long long run_mix(unsigned long long x, int n)
{
    for (int i = 0; i < n; i++) {
        unsigned long long y = mix(x);
        if (y != MIX(x))
            BAD(BAD_MIX);
        x = y;
    }
    InterlockedAdd64(&calls, n);
    return x;
}

static HANDLE start(LPTHREAD_START_ROUTINE fn, void *arg, DWORD flags)
{
    HANDLE h = CreateThread(NULL, 0, fn, arg, flags, NULL);
    if (!h)
        BAD(BAD_CREATE);
    else
        InterlockedIncrement(&threads);
    return h;
}

static void join(HANDLE h)
{
    if (h) {
        WaitForSingleObject(h, INFINITE);
        CloseHandle(h);
    }
}

static DWORD WINAPI spinner(void *arg)
{
    int kind = (int)(uintptr_t)arg;
    unsigned long long x = (unsigned long long)kind + 1;
    /* spin1 runs until the suspender is done with it */
    while (!stop || (kind == SPIN1 && !suspender_done)) {
        x = run_mix(x, 64);
        progress[kind]++;
    }
    return 0;
}

static DWORD WINAPI waiter(void *arg)
{
    HANDLE ev = CreateEventW(NULL, FALSE, FALSE, NULL);
    unsigned long long x = 7;
    while (!stop) {
        WaitForSingleObject(ev, 1);
        x = run_mix(x, 16);
        progress[WAITER]++;
    }
    CloseHandle(ev);
    return 0;
}

static DWORD WINAPI short_thread(void *arg)
{
    run_mix((unsigned long long)(uintptr_t)arg, 200);
    return 0;
}

static DWORD WINAPI batcher(void *arg)
{
    uintptr_t seed = 1;
    while (!stop) {
        HANDLE t[8];
        for (int i = 0; i < 8; i++)
            t[i] = start(short_thread, (void *)seed++, 0);
        for (int i = 0; i < 8; i++)
            join(t[i]);
        progress[BATCHER]++;
    }
    return 0;
}

static DWORD WINAPI nested(void *arg)
{
    uintptr_t depth = (uintptr_t)arg;
    HANDLE child = depth ? start(nested, (void *)(depth - 1), 0) : NULL;
    run_mix(depth + 100, 50);
    join(child);
    return 0;
}

static DWORD WINAPI nester(void *arg)
{
    while (!stop) {
        join(start(nested, (void *)3, 0));
        progress[NESTER]++;
    }
    return 0;
}

static volatile int exit_at_bottom = 1;

__attribute__((noinline)) static int exit_deep(int depth)
{
    run_mix((unsigned long long)depth, 20);
    if (depth > 0)
        return exit_deep(depth - 1) + 1;
    if (exit_at_bottom)
        ExitThread(0);
    return 0;
}

static DWORD WINAPI exiting(void *arg)
{
    exit_deep(3);
    BAD(BAD_REACHED);   /* not reached */
    return 1;
}

static DWORD WINAPI exiter(void *arg)
{
    while (!stop) {
        HANDLE h = start(exiting, NULL, 0);
        DWORD code = 1;
        WaitForSingleObject(h, INFINITE);
        if (h && (!GetExitCodeThread(h, &code) || code != 0))
            BAD(BAD_EXIT_CODE);
        if (h)
            CloseHandle(h);
        progress[EXITER]++;
    }
    return 0;
}

static DWORD WINAPI suspender(void *arg)
{
    while (!stop) {
        HANDLE h = start(short_thread, (void *)99, CREATE_SUSPENDED);
        Sleep(1);
        /* 1, or 2 while a tracer's freeze holds it too (the freeze's own
         * resume then lets it go) */
        DWORD was = h ? ResumeThread(h) : 1;
        if (was != 1 && was != 2)
            BAD(BAD_RESUME);
        join(h);
        /* spin1 stopped and started again by the program itself */
        if (SuspendThread(spin1_thread) == (DWORD)-1)
            BAD(BAD_SUSPEND);
        Sleep(1);
        if (ResumeThread(spin1_thread) == (DWORD)-1)
            BAD(BAD_SUSPEND);
        progress[SUSPENDER]++;
    }
    suspender_done = 1;
    return 0;
}

static volatile LONG pool_pending;

static VOID CALLBACK pool_work(PTP_CALLBACK_INSTANCE inst, void *arg)
{
    run_mix((unsigned long long)(uintptr_t)arg, 100);
    InterlockedDecrement(&pool_pending);
}

static DWORD WINAPI pooler(void *arg)
{
    uintptr_t seed = 1000;
    while (!stop) {
        for (int i = 0; i < 4; i++) {
            InterlockedIncrement(&pool_pending);
            if (!TrySubmitThreadpoolCallback(pool_work, (void *)seed++, NULL)) {
                InterlockedDecrement(&pool_pending);
                BAD(BAD_POOL);
            }
        }
        while (pool_pending > 0)
            Sleep(1);
        progress[POOLER]++;
    }
    return 0;
}

static DWORD WINAPI loader(void *arg)
{
    wchar_t path[MAX_PATH];
    DWORD n = GetModuleFileNameW(NULL, path, MAX_PATH);
    while (n && path[n - 1] != L'\\')
        n--;
    wcscpy(path + n, L"latedll.dll");
    while (!stop) {
        HMODULE m = LoadLibraryW(path);
        long long (*poly)(long long) = m ? (long long (*)(long long))(void (*)(void))
                                               GetProcAddress(m, "dll_poly") : NULL;
        if (!poly || poly(5) != 40)
            BAD(BAD_LOAD);
        if (m)
            FreeLibrary(m);
        progress[LOADER]++;
        Sleep(2);
    }
    return 0;
}

static DWORD WINAPI held(void *arg)
{
    run_mix(4242, 10);
    return 0;
}

static DWORD WINAPI read_stdin(void *arg)
{
    HANDLE held_thread = arg;
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "status", 6)) {
            DWORD count = SuspendThread(held_thread);
            ResumeThread(held_thread);
            char buf[512];
            int len = snprintf(buf, sizeof buf, "status");
            for (int k = 0; k < N_KINDS; k++)
                len += snprintf(buf + len, sizeof buf - len, " %lld", (long long)progress[k]);
            len += snprintf(buf + len, sizeof buf - len, " held %ld bad %ld code-matches %d", (long)count,
                            bad_total(), code_matches_file());
            for (int i = 0; i < N_BAD; i++)
                if (bad_at[i])
                    len += snprintf(buf + len, sizeof buf - len, " %s:%ld", bad_names[i], bad_at[i]);
            snprintf(buf + len, sizeof buf - len, "\n");
            fputs(buf, stdout);
            fflush(stdout);
        } else if (!strncmp(line, "stop", 4)) {
            break;
        }
    }
    stop = 1;
    return 0;
}

int main(int argc, char **argv)
{
    DWORD seconds = argc > 1 ? (DWORD)atoi(argv[1]) : 3600;
    HANDLE held_thread = start(held, NULL, CREATE_SUSPENDED);
    HANDLE t[N_KINDS];
    t[SPIN0] = start(spinner, (void *)SPIN0, 0);
    t[SPIN1] = spin1_thread = start(spinner, (void *)SPIN1, 0);
    t[WAITER] = start(waiter, NULL, 0);
    t[BATCHER] = start(batcher, NULL, 0);
    t[NESTER] = start(nester, NULL, 0);
    t[EXITER] = start(exiter, NULL, 0);
    t[SUSPENDER] = start(suspender, NULL, 0);
    t[POOLER] = start(pooler, NULL, 0);
    t[LOADER] = start(loader, NULL, 0);
    HANDLE reader = CreateThread(NULL, 0, read_stdin, held_thread, 0, NULL);
    /* every long-lived thread exists now (a test that holds them all counts them) */
    printf("pid %lu code-matches %d\n", GetCurrentProcessId(), code_matches_file());
    fflush(stdout);
    if (WaitForSingleObject(reader, seconds * 1000) != WAIT_OBJECT_0)
        stop = 1;
    for (int k = 0; k < N_KINDS; k++)
        WaitForSingleObject(t[k], INFINITE);
    if (ResumeThread(held_thread) != 1)
        BAD(BAD_HELD);
    WaitForSingleObject(held_thread, INFINITE);
    printf("threads %ld calls %lld bad %ld code-matches %d", threads, (long long)calls, bad_total(),
           code_matches_file());
    for (int i = 0; i < N_BAD; i++)
        if (bad_at[i])
            printf(" %s:%ld", bad_names[i], bad_at[i]);
    printf("\n");
    fflush(stdout);
    return 0;
}
