/*
 * agent/backtrace.c - what a timed program captures of its own stack is
 * what it captures untimed: ntdll!RtlCaptureStackBackTrace (kernel32's
 * CaptureStackBackTrace forwards to it; crash reporters, leak checkers
 * and allocators' debug modes call it) is detoured under --time.
 *
 * Under --time hookscope's code stands in the stack of every open timed
 * call: on x64 the wrapper's frame, between the function and its caller
 * (a frame of its own, unwound through its registered unwind data); on
 * x86 the return thunk in the call's return address slot (agent/time32.S;
 * the true address is in the thread's shadow records). The detour:
 *   x64  asks the original for the frames from its own caller on, drops
 *        those in hookscope's code (its own frame first, then the
 *        wrappers'; each wrapper's caller is the next frame), then skips
 *        and counts as it was asked;
 *   x86  walks the ebp chain as the original does (Wine's
 *        RtlCaptureStackBackTrace and Windows' RtlWalkFrameChain: frames
 *        aligned, within the thread's stack, each above the last), from
 *        its own frame, whose return address is the caller's site, each
 *        return address read through hs_ret_shadow_true. Windows' first
 *        frame is that site; Wine's i386 one keeps no frame and starts at
 *        the caller's own return address: which of the two is found once,
 *        by a call of the original before the detour is in.
 * The hash, when asked for, is the sum of the frames returned (Windows'
 * and Wine's i386 rule; Wine 8's x86-64 one hashes otherwise: there a
 * timed program's hash is Windows'). LastError is not touched (the thread's counters are read
 * from its TEB).
 *
 * Not covered: DbgHelp's StackWalk64 and StackWalkEx, a program's own
 * RtlVirtualUnwind loop (x64: it sees the wrapper's frame),
 * RtlWalkFrameChain and RtlGetCallersAddress called directly; ETW's
 * kernel walk (the sampler's choice: sampler/backends.c).
 */
#include <string.h>

#include "agent/agent.h"
#include "hook/unwind/retshadow.h"

typedef USHORT(NTAPI *capture_fn)(ULONG, ULONG, void **, ULONG *);

static capture_fn orig_capture;
static volatile LONG busy;     /* threads in the detour */

#if HS_AGENT_X86
/* Whether the original's first frame is its caller's return address (as
 * Wine's, which keeps no frame of its own) rather than the return into
 * its caller (Windows'): found once, before the detour is in. */
static int skips_caller_site;

/* (a frame of its own, on ebp, which the original walks: gcc keeps one
 * where __builtin_frame_address is used) */
static __attribute__((noinline)) int first_frame_is_callers(void)
{
    void *f[1] = { NULL };
    void *const *frame = __builtin_frame_address(0);
    orig_capture(0, 1, f, NULL);
    return f[0] == frame[1];
}

static void calibrate(void)
{
    skips_caller_site = first_frame_is_callers();
}

/* (the frame pointer: __builtin_frame_address makes gcc keep one) */
static USHORT NTAPI on_capture(ULONG skip, ULONG count, void **out, ULONG *hash)
{
    InterlockedIncrement(&busy);
    hs_ret_shadow shadow;
    hs_time32_shadow(hs_tls_get(), &shadow);
    const uint32_t lo = (uint32_t)hs_teb_read(HS_TEB_STACK_LIMIT), hi = (uint32_t)hs_teb_read(HS_TEB_STACK_BASE);
    uint32_t frame = (uint32_t)(uintptr_t)__builtin_frame_address(0), last = 0;
    ULONG n = 0, sum = 0;
    skip += (ULONG)skips_caller_site;
    for (ULONG i = 0; n < count; i++) {
        if ((frame & 3) || frame < lo || frame + 8 > hi || frame <= last)
            break;
        const uint32_t *f = (const uint32_t *)(uintptr_t)frame;
        if (i >= skip) {
            uint32_t ret = hs_ret_shadow_true(&shadow, frame + 4, f[1]);
            out[n++] = (void *)(uintptr_t)ret;
            sum += ret;
        }
        last = frame;
        frame = f[0];
    }
    if (hash)
        *hash = sum;
    InterlockedDecrement(&busy);
    return (USHORT)n;
}
#else
static void calibrate(void)
{
}

#define FRAMES 256             /* the original's frames looked at, at most */

static USHORT NTAPI on_capture(ULONG skip, ULONG count, void **out, ULONG *hash)
{
    InterlockedIncrement(&busy);
    void *f[FRAMES];
    USHORT got = orig_capture(0, FRAMES, f, NULL);
    ULONG n = 0, sum = 0, skipped = 0;
    for (USHORT i = 0; i < got && n < count; i++) {
        if (hs_own_code((uint64_t)(uintptr_t)f[i]))
            continue;
        if (skipped < skip) {
            skipped++;
            continue;
        }
        out[n++] = f[i];
        sum += (ULONG)(uintptr_t)f[i];
    }
    if (hash)
        *hash = sum;
    InterlockedDecrement(&busy);
    return (USHORT)n;
}
#endif

static hs_detour capture = {
    .module = L"ntdll.dll", .name = "RtlCaptureStackBackTrace", .fn = (void *)on_capture,
    .orig = (void **)&orig_capture,
};

void hs_backtrace_install(void)
{
    hs_detour *list[] = { &capture };
    if (!capture.ready && hs_detour_prepare(&capture) == 0)
        calibrate();
    if (capture.ready)
        hs_detours_patch(list, 1, 1);
}

int hs_backtrace_remove(void)
{
    hs_detour *list[] = { &capture };
    hs_detours_patch(list, 1, 0);
    return capture.patched ? -1 : 0;
}

LONG hs_backtrace_busy(void)
{
    return busy;
}
