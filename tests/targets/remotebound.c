/*
 * remotebound.c - drives hook/base/remote_win.c (built into it): a call
 * into another process that never returns (as Wine's cross-process calls
 * can, when the target dies while its system APC is pending) is given up
 * on when the target ends or the time limit passes, and the real calls
 * answer as the Windows calls do. Prints one line per case, "ok NAME" or
 * "FAIL NAME: why", then "done N failed".
 *
 *   remotebound            the cases
 *   remotebound linger MS  (the child: sleeps MS milliseconds and exits)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/remote_win.h"

static int failed;
static HANDLE never;               /* an event nobody sets until the end */
static volatile LONG late_dropped, late_returned;

static void check(int ok, const char *name, const char *why)
{
    printf(ok ? "ok %s\n" : "FAIL %s: %s\n", name, why);
    failed += !ok;
}

/* A call that waits for `never`, then counts its return. */
typedef struct stuck_call {
    int result;
} stuck_call;

static void stuck(HANDLE process, void *arg)
{
    (void)process;
    WaitForSingleObject(never, INFINITE);
    ((stuck_call *)arg)->result = 42;
    InterlockedIncrement(&late_returned);
}

static void drop_stuck(void *arg)
{
    if (((stuck_call *)arg)->result == 42)
        InterlockedIncrement(&late_dropped);
}

static void quick(HANDLE process, void *arg)
{
    ((stuck_call *)arg)->result = (int)GetProcessId(process);
}

/* A child that lives for ms milliseconds. */
static HANDLE child(int ms, PROCESS_INFORMATION *pi)
{
    wchar_t self[MAX_PATH], cmd[MAX_PATH + 40];
    GetModuleFileNameW(NULL, self, MAX_PATH);
    swprintf(cmd, sizeof cmd / sizeof *cmd, L"\"%ls\" linger %d", self, ms);
    STARTUPINFOW si = { sizeof si };
    if (!CreateProcessW(NULL, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, pi)) {
        printf("FAIL child: cannot start: %lu\n", GetLastError());
        exit(1);
    }
    CloseHandle(pi->hThread);
    return pi->hProcess;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 3 && !strcmp(argv[1], "linger")) {
        Sleep((DWORD)atoi(argv[2]));
        return 0;
    }
    never = CreateEventW(NULL, TRUE, FALSE, NULL);
    PROCESS_INFORMATION pi;

    /* a call that returns: its results come back */
    HANDLE p = child(60000, &pi);
    stuck_call c = { 0 };
    int ok = hs_remote_run(p, 5000, quick, NULL, &c, sizeof c) && c.result == (int)pi.dwProcessId;
    check(ok, "returned", "the call's result did not come back");

    /* the target ends while the call waits: given up on at its end */
    HANDLE q = child(300, &pi);
    c.result = 0;
    DWORD t0 = GetTickCount();
    ok = !hs_remote_run(q, 60000, stuck, drop_stuck, &c, sizeof c);
    DWORD err = GetLastError(), took = GetTickCount() - t0;
    char why[120];
    snprintf(why, sizeof why, "returned %d after %lu ms, error %lu, result %d", !ok, took, err, c.result);
    check(ok && err == ERROR_PROCESS_ABORTED && took < 30000 && c.result == 0, "target-ended", why);
    CloseHandle(q);

    /* the target lives on: given up on at the time limit */
    t0 = GetTickCount();
    ok = !hs_remote_run(p, 200, stuck, drop_stuck, &c, sizeof c);
    err = GetLastError();
    took = GetTickCount() - t0;
    snprintf(why, sizeof why, "returned %d after %lu ms, error %lu", !ok, took, err);
    check(ok && err == WAIT_TIMEOUT && took >= 150, "timed-out", why);

    /* the calls given up on return late: their results are dropped, not
     * written into the caller's (long gone) arguments */
    SetEvent(never);
    for (int i = 0; i < 500 && late_dropped < 2; i++)
        Sleep(10);
    snprintf(why, sizeof why, "%ld returned late, %ld dropped", late_returned, late_dropped);
    check(late_returned == 2 && late_dropped == 2 && c.result == 0, "late-dropped", why);

    /* the real calls, as Windows answers them */
    void *at = hs_remote_alloc(p, 8192, PAGE_READWRITE);
    MEMORY_BASIC_INFORMATION direct;
    ok = at && VirtualQueryEx(p, at, &direct, sizeof direct) == sizeof direct && direct.RegionSize == 8192 &&
         direct.State == MEM_COMMIT && direct.Protect == PAGE_READWRITE;
    check(ok, "alloc-query", "the allocation is not what VirtualQueryEx sees");
    ok = at && hs_remote_free(p, at) && VirtualQueryEx(p, at, &direct, sizeof direct) == sizeof direct &&
         direct.State == MEM_FREE;
    check(ok, "free", "the region was not freed");
    SetLastError(0);
    ok = !hs_remote_free(p, (void *)(uintptr_t)0x10) && GetLastError() != 0;
    check(ok, "free-error", "a bad free did not fail with its error");

    /* a remote thread: ExitThread(7) in the child */
    DWORD tid = 0;
    FARPROC exit_thread = GetProcAddress(GetModuleHandleW(L"kernel32.dll"), "ExitThread");
    HANDLE th = hs_remote_thread(p, (LPTHREAD_START_ROUTINE)(void (*)(void))exit_thread, (void *)7, 0, &tid);
    DWORD code = 0;
    ok = th && tid && WaitForSingleObject(th, 10000) == WAIT_OBJECT_0 && GetExitCodeThread(th, &code) && code == 7;
    check(ok, "thread", "the remote thread did not run ExitThread(7)");

    /* once the target has ended, every call gives up at once */
    TerminateProcess(p, 0);
    WaitForSingleObject(p, 10000);
    t0 = GetTickCount();
    ok = !hs_remote_alloc(p, 4096, PAGE_READWRITE) && !hs_remote_thread(p, (LPTHREAD_START_ROUTINE)(void (*)(void))exit_thread, NULL, 0, NULL);
    snprintf(why, sizeof why, "took %lu ms", GetTickCount() - t0);
    check(ok && GetTickCount() - t0 < 20000, "ended", why);
    printf("done %d failed\n", failed);
    return failed != 0;
}
