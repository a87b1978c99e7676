/*
 * resident: a program to attach to with --time while one of its calls is
 * open, so that the agent must stay after the detach, and then to attach
 * to again. Commands on stdin, one per line:
 *
 *   enter     a thread calls held_call(), which prints "entered" and waits
 *             until "release"
 *   enter-jump  the same, but held_call leaves by longjmp (an unwind
 *             through hookscope's wrapper frame) to its caller, which
 *             then prints "returned 8"
 *   release   held_call returns its argument + 1 (or jumps); the thread
 *             prints "returned N" (N must be 8)
 *   work      work() is called 1000 times; prints "worked"
 *   stop      prints "bad B code-matches M" and exits 0
 *
 * At start it prints "pid N code-matches 1".
 */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "codecheck.h"

static HANDLE release_ev;
static volatile LONG bad;
static jmp_buf *volatile jump_to;

__attribute__((noinline)) long long held_call(long long x)
{
    printf("entered\n");
    fflush(stdout);
    WaitForSingleObject(release_ev, INFINITE);
    if (jump_to)
        longjmp(*jump_to, (int)(x + 1));
    return x + 1;
}

__attribute__((noinline)) unsigned long long work(unsigned long long x)
{
    return x * 2862933555777941757ull + 3037000493ull;
}

/* Started before any attach, so that its own frame is not a hooked one:
 * a longjmp from held_call lands here, past hookscope's wrapper frame only. */
static HANDLE enter_ev;
static volatile LONG enter_jump;

static DWORD WINAPI holder(void *arg)
{
    for (;;) {
        WaitForSingleObject(enter_ev, INFINITE);
        jmp_buf jb;
        volatile long long r;
        if (enter_jump) {
            jump_to = &jb;
            r = setjmp(jb);
            if (r == 0)
                r = held_call(7);
        } else {
            jump_to = NULL;
            r = held_call(7);
        }
        printf("returned %lld\n", r);
        fflush(stdout);
    }
    return 0;
}

int main(void)
{
    release_ev = CreateEventW(NULL, TRUE, FALSE, NULL);
    enter_ev = CreateEventW(NULL, FALSE, FALSE, NULL);
    CreateThread(NULL, 0, holder, NULL, 0, NULL);
    printf("pid %lu code-matches %d\n", GetCurrentProcessId(), code_matches_file());
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "enter-jump", 10)) {
            enter_jump = 1;
            SetEvent(enter_ev);
        } else if (!strncmp(line, "enter", 5)) {
            enter_jump = 0;
            SetEvent(enter_ev);
        } else if (!strncmp(line, "release", 7)) {
            SetEvent(release_ev);
        } else if (!strncmp(line, "work", 4)) {
            unsigned long long x = 1;
            for (int i = 0; i < 1000; i++) {
                unsigned long long y = work(x);
                if (y != x * 2862933555777941757ull + 3037000493ull)
                    InterlockedIncrement(&bad);
                x = y;
            }
            printf("worked\n");
            fflush(stdout);
        } else if (!strncmp(line, "stop", 4)) {
            break;
        }
    }
    printf("bad %ld code-matches %d\n", bad, code_matches_file());
    fflush(stdout);
    return 0;
}
