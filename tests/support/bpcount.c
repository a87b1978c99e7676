/*
 * tests/support/bpcount.c - count calls with a debugger's breakpoints: an
 * independent truth for programs without sources to instrument (Wine's
 * cmd.exe, Debian's hmac256.exe), whose hookscope counts are compared
 * with it (tests/test_real_programs.py).
 *
 *   bpcount.exe LIST PROGRAM [ARGS...]
 *
 * LIST is a file of hexadecimal RVAs of the program's exe, one a line.
 * PROGRAM runs under the Windows debugging API (DEBUG_ONLY_THIS_PROCESS)
 * with this program's stdin, stdout and stderr. When it starts, an int3 is
 * written at each RVA; a thread that reaches one is counted, the original
 * byte is put back, the thread steps over the instruction alone (the
 * others suspended, so none passes the entry uncounted) and the int3 goes
 * back. At the end one line per RVA is written to LIST.out:
 *
 *   RVA COUNT
 *
 * and bpcount exits with the program's exit code (125 when the debugging
 * itself fails, with one line on stderr). Every exception other than our
 * breakpoints and steps is passed to the program unhandled, as it would
 * see it undebugged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <windows.h>

#define MAX_BP 65536
#define MAX_THREADS 256

static struct bp {
    uint64_t addr;
    uint8_t orig;
    unsigned long long count;
} bps[MAX_BP];
static size_t nbp;

static struct thr {
    DWORD tid;
    HANDLE h;
    uint64_t pending;              /* the breakpoint it is stepping over (0: none) */
} thr[MAX_THREADS];
static size_t nthr;
static HANDLE process;

static int die(const char *what)
{
    fprintf(stderr, "bpcount: %s (error %lu)\n", what, GetLastError());
    exit(125);
}

static int cmp_addr(const void *a, const void *b)
{
    uint64_t x = ((const struct bp *)a)->addr, y = ((const struct bp *)b)->addr;
    return x < y ? -1 : x > y;
}

static struct bp *find(uint64_t addr)
{
    size_t lo = 0, hi = nbp;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (bps[mid].addr == addr)
            return &bps[mid];
        if (bps[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static struct thr *thread_of(DWORD tid)
{
    for (size_t i = 0; i < nthr; i++)
        if (thr[i].tid == tid)
            return &thr[i];
    return NULL;
}

static void poke(uint64_t addr, uint8_t byte)
{
    SIZE_T n = 0;
    if (!WriteProcessMemory(process, (void *)(uintptr_t)addr, &byte, 1, &n) || n != 1)
        die("cannot write the program's code");
    FlushInstructionCache(process, (void *)(uintptr_t)addr, 1);
}

static void others(DWORD tid, int suspend)
{
    for (size_t i = 0; i < nthr; i++)
        if (thr[i].tid != tid && thr[i].h)
            suspend ? SuspendThread(thr[i].h) : ResumeThread(thr[i].h);
}

static void arm(uint64_t base)
{
    for (size_t i = 0; i < nbp; i++) {
        bps[i].addr += base;
        SIZE_T n = 0;
        if (!ReadProcessMemory(process, (void *)(uintptr_t)bps[i].addr, &bps[i].orig, 1, &n) || n != 1)
            die("cannot read the program's code");
        poke(bps[i].addr, 0xCC);
    }
}

/* Returns the continue status for an exception event. */
static DWORD on_exception(const DEBUG_EVENT *ev)
{
    const EXCEPTION_RECORD *x = &ev->u.Exception.ExceptionRecord;
    struct thr *t = thread_of(ev->dwThreadId);
    if (x->ExceptionCode == EXCEPTION_BREAKPOINT) {
        struct bp *b = find((uint64_t)(uintptr_t)x->ExceptionAddress);
        if (!b || !t)
            return DBG_CONTINUE;   /* the loader's initial breakpoint */
        b->count++;
        poke(b->addr, b->orig);
        CONTEXT c = { .ContextFlags = CONTEXT_CONTROL };
        if (!GetThreadContext(t->h, &c))
            die("cannot read a thread's context");
        c.Rip = b->addr;
        c.EFlags |= 0x100;   /* trap after one instruction */
        if (!SetThreadContext(t->h, &c))
            die("cannot set a thread's context");
        t->pending = b->addr;
        others(t->tid, 1);
        return DBG_CONTINUE;
    }
    if (x->ExceptionCode == EXCEPTION_SINGLE_STEP && t && t->pending) {
        poke(t->pending, 0xCC);
        t->pending = 0;
        others(t->tid, 0);
        return DBG_CONTINUE;
    }
    return DBG_EXCEPTION_NOT_HANDLED;
}

int wmain(int argc, wchar_t **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bpcount.exe LIST PROGRAM [ARGS...]\n");
        return 125;
    }
    FILE *f = _wfopen(argv[1], L"r");
    if (!f)
        die("cannot open the list");
    char line[64];
    while (fgets(line, sizeof line, f) && nbp < MAX_BP)
        if (line[0] != '#' && line[0] != '\n')
            bps[nbp++].addr = strtoull(line, NULL, 16);
    fclose(f);
    qsort(bps, nbp, sizeof *bps, cmp_addr);
    uint64_t *rvas = malloc((nbp ? nbp : 1) * sizeof *rvas);
    for (size_t i = 0; i < nbp; i++)
        rvas[i] = bps[i].addr;

    /* the program's command line: this one's, from PROGRAM on */
    const wchar_t *cmd = GetCommandLineW();
    int quoted = 0, skip = 2;
    while (*cmd && skip) {
        while (*cmd == L' ' || *cmd == L'\t')
            cmd++;
        while (*cmd && (quoted || (*cmd != L' ' && *cmd != L'\t'))) {
            if (*cmd == L'"')
                quoted = !quoted;
            cmd++;
        }
        skip--;
    }
    while (*cmd == L' ' || *cmd == L'\t')
        cmd++;
    wchar_t *line_w = _wcsdup(cmd);
    STARTUPINFOW si = { .cb = sizeof si };
    PROCESS_INFORMATION pi;
    if (!CreateProcessW(NULL, line_w, NULL, NULL, TRUE, DEBUG_ONLY_THIS_PROCESS, NULL, NULL, &si, &pi))
        die("cannot start the program");
    process = pi.hProcess;

    DWORD exit_code = 125;
    for (;;) {
        DEBUG_EVENT ev;
        if (!WaitForDebugEvent(&ev, INFINITE))
            die("WaitForDebugEvent failed");
        DWORD status = DBG_CONTINUE;
        switch (ev.dwDebugEventCode) {
        case CREATE_PROCESS_DEBUG_EVENT:
            thr[nthr++] = (struct thr){ ev.dwThreadId, ev.u.CreateProcessInfo.hThread, 0 };
            arm((uint64_t)(uintptr_t)ev.u.CreateProcessInfo.lpBaseOfImage);
            if (ev.u.CreateProcessInfo.hFile)
                CloseHandle(ev.u.CreateProcessInfo.hFile);
            break;
        case CREATE_THREAD_DEBUG_EVENT:
            if (nthr == MAX_THREADS)
                die("too many threads");
            thr[nthr++] = (struct thr){ ev.dwThreadId, ev.u.CreateThread.hThread, 0 };
            /* a thread started while another steps over a breakpoint waits too */
            for (size_t i = 0; i < nthr - 1; i++)
                if (thr[i].pending)
                    SuspendThread(ev.u.CreateThread.hThread);
            break;
        case EXIT_THREAD_DEBUG_EVENT: {
            struct thr *t = thread_of(ev.dwThreadId);
            if (t) {
                if (t->pending) {   /* it ended stepping: let the others go */
                    poke(t->pending, 0xCC);
                    t->pending = 0;
                    others(t->tid, 0);
                }
                t->h = NULL;
                t->tid = 0;
            }
            break;
        }
        case LOAD_DLL_DEBUG_EVENT:
            if (ev.u.LoadDll.hFile)
                CloseHandle(ev.u.LoadDll.hFile);
            break;
        case EXCEPTION_DEBUG_EVENT:
            status = on_exception(&ev);
            break;
        case EXIT_PROCESS_DEBUG_EVENT:
            exit_code = ev.u.ExitProcess.dwExitCode;
            break;
        default:
            break;
        }
        ContinueDebugEvent(ev.dwProcessId, ev.dwThreadId, status);
        if (ev.dwDebugEventCode == EXIT_PROCESS_DEBUG_EVENT)
            break;
    }

    wchar_t out[MAX_PATH];
    swprintf(out, MAX_PATH, L"%ls.out", argv[1]);
    f = _wfopen(out, L"w");
    if (!f)
        die("cannot write the counts");
    for (size_t i = 0; i < nbp; i++)
        fprintf(f, "%llx %llu\n", (unsigned long long)rvas[i], bps[i].count);
    fclose(f);
    return (int)exit_code;
}
