/*
 * seh32.c - a 32-bit (i686) test program: Windows structured exceptions
 * through hooked functions. No compiler here builds __try for i686
 * mingw (gcc has none, clang's fails to assemble), so the frames are
 * x86's own, by hand: guarded() links an EXCEPTION_REGISTRATION record
 * (next, handler) at fs:[0], with the exception code it handles; its
 * handler declines the others (ExceptionContinueSearch), and for its own
 * unwinds the records below it (RtlUnwind) and resumes in guarded()'s
 * frame (__builtin_longjmp), which unlinks the record and returns -1.
 *
 *   av       av_mid -> av_leaf, which writes to address 0 (in the bytes
 *            the hook displaces: the fault is in the relocated copy),
 *            handled two frames up, 10 times
 *   raise    raiser: RaiseException(0xE0000001), handled by its caller, 10
 *   nested   declining guards 0xE0000001 around raiser2, which raises
 *            0xE0000002: the inner handler declines, the outer handles
 *
 * Calls (exact): main 1, guarded 22, av_mid 10, av_leaf 10, raiser 10,
 * declining 1, raiser2 1
 *
 * Edges (exact): main->guarded 21, declining->guarded 1,
 * guarded->av_mid 10, av_mid->av_leaf 10, guarded->raiser 10,
 * guarded->declining 1, guarded->raiser2 1
 *
 * Output (exact, checked by tests/test_wow64_hard.py), exit code 0, no args:
 *   av handled 10
 *   raise handled 10
 *   nested handled 1 by the outer frame, 0 by the inner
 *   records linked after: 0
 */
#include <stdio.h>
#include <windows.h>

#define NOINLINE __attribute__((noinline, noclone))

typedef struct guard {
    struct guard *next;   /* the EXCEPTION_REGISTRATION record: next, handler */
    void *handler;
    DWORD code;           /* the exception this frame handles */
    int level;            /* the guards around this one */
    void *resume[5];      /* __builtin_setjmp's buffer */
} guard;

static volatile int handled_by[2];   /* [0]: an inner guard, [1]: an outer one */
static volatile int depth;

static guard *seh_head(void)
{
    guard *g;
    __asm__ volatile("movl %%fs:0, %0" : "=r"(g));
    return g;
}

static void seh_link(guard *g)
{
    __asm__ volatile("movl %0, %%fs:0" : : "r"(g) : "memory");
}

static EXCEPTION_DISPOSITION __cdecl guard_handler(EXCEPTION_RECORD *rec, void *frame, CONTEXT *ctx, void *disp)
{
    (void)ctx, (void)disp;
    guard *g = frame;
    if (rec->ExceptionFlags & (EXCEPTION_UNWINDING | EXCEPTION_EXIT_UNWIND) || rec->ExceptionCode != g->code)
        return ExceptionContinueSearch;
    RtlUnwind(frame, NULL, rec, NULL);   /* the records below this one run their unwinds, then go */
    __builtin_longjmp(g->resume, 1);
}

NOINLINE int guarded(DWORD code, int (*fn)(int), int arg)
{
    volatile guard g;
    g.code = code;
    g.handler = (void *)guard_handler;
    g.next = seh_head();
    g.level = depth;
    if (__builtin_setjmp((void **)g.resume)) {
        seh_link(g.next);
        handled_by[g.level == 0]++;
        depth = g.level;   /* the guards below went with the unwind */
        return -1;
    }
    depth++;
    seh_link((guard *)&g);
    int v = fn(arg);
    seh_link(g.next);
    depth--;
    return v;
}

NOINLINE int av_leaf(int v)
{
    *(volatile int *)(INT_PTR)(v - v) = v;   /* a write to address 0 */
    return v;
}

NOINLINE int av_mid(int v)
{
    return av_leaf(v) + 1;
}

NOINLINE int raiser(int v)
{
    RaiseException(0xE0000001, 0, 0, NULL);
    return v;
}

NOINLINE int raiser2(int v)
{
    RaiseException(0xE0000002, 0, 0, NULL);
    return v;
}

NOINLINE int declining(int v)
{
    return guarded(0xE0000001, raiser2, v);
}

int main(void)
{
    guard *before = seh_head();
    int n = 0;
    for (int i = 0; i < 10; i++)
        n += guarded(EXCEPTION_ACCESS_VIOLATION, av_mid, i) == -1;
    printf("av handled %d\n", n);
    n = 0;
    for (int i = 0; i < 10; i++)
        n += guarded(0xE0000001, raiser, i) == -1;
    printf("raise handled %d\n", n);
    handled_by[0] = handled_by[1] = 0;
    guarded(0xE0000002, declining, 0);
    printf("nested handled %d by the outer frame, %d by the inner\n", handled_by[1], handled_by[0]);
    printf("records linked after: %d\n", seh_head() != before);
    return 0;
}
