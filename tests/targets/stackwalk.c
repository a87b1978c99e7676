/*
 * stackwalk.c - walk the stack from inside a hooked function, the two
 * ways Windows programs do it, and print every frame:
 *
 *   capture   RtlCaptureStackBackTrace
 *   unwind    RtlCaptureContext, then RtlLookupFunctionEntry/RtlVirtualUnwind
 *             (a frame without unwind info is a leaf: pop the return address)
 *
 * main -> walk_a -> walk_b -> walk_c -> do_walks, and walk_c also through a
 * function pointer. Each frame prints as "module" for a DLL, and as
 * "stackwalk.exe!0xRVA name" for this exe, where RVA is the start of the
 * function containing the call (from its .pdata entry) and name is known
 * for the functions of this file ("?" otherwise), so traced and untraced
 * runs print the same lines except for the frames hookscope adds.
 * Under Wine the walks can return junk after the last frame: both stop at
 * the first null return address.
 */
#include <stdio.h>
#include <string.h>
#include <windows.h>

void do_walks(int tag);
void walk_a(int tag);
void walk_b(int tag);
void walk_c(int tag);
int main(void);

static const struct {
    void *fn;
    const char *name;
} known[] = {
    { (void *)do_walks, "do_walks" }, { (void *)walk_a, "walk_a" }, { (void *)walk_b, "walk_b" },
    { (void *)walk_c, "walk_c" }, { (void *)main, "main" },
};

static void print_frame(int i, ULONG64 pc)
{
    HMODULE m = NULL;
    char path[MAX_PATH] = "?";
    if (GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                               GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCSTR)(ULONG_PTR)pc, &m))
        GetModuleFileNameA(m, path, sizeof path);
    const char *base = strrchr(path, '\\');
    base = base ? base + 1 : path;
    if (m != GetModuleHandleA(NULL)) {
        printf("  %2d %s\n", i, base);
        return;
    }
    /* a return address follows the call: look up the call's function */
    DWORD64 image = 0;
    PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(pc - 1, &image, NULL);
    if (!rf) {
        printf("  %2d %s!? (no unwind info)\n", i, base);
        return;
    }
    ULONG64 start = image + rf->BeginAddress;
    const char *name = "?";
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
        if ((ULONG64)(ULONG_PTR)known[k].fn == start)
            name = known[k].name;
    printf("  %2d %s!0x%lx %s\n", i, base, (unsigned long)rf->BeginAddress, name);
}

__attribute__((noinline)) void do_walks(int tag)
{
    void *frames[64];
    USHORT n = RtlCaptureStackBackTrace(0, 64, frames, NULL);
    printf("capture %d:\n", tag);
    for (USHORT i = 0; i < n && frames[i]; i++)
        print_frame(i, (ULONG64)(ULONG_PTR)frames[i]);

    CONTEXT ctx;
    RtlCaptureContext(&ctx);
    printf("unwind %d:\n", tag);
    for (int i = 0; i < 64 && ctx.Rip; i++) {
        print_frame(i, ctx.Rip);
        DWORD64 image = 0;
        PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(ctx.Rip, &image, NULL);
        if (rf) {
            PVOID handler_data;
            DWORD64 establisher;
            RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, ctx.Rip, rf, &ctx, &handler_data, &establisher,
                             NULL);
        } else {
            ctx.Rip = *(DWORD64 *)ctx.Rsp;
            ctx.Rsp += 8;
        }
    }
}

__attribute__((noinline)) void walk_c(int tag) { do_walks(tag); }
__attribute__((noinline)) void walk_b(int tag) { walk_c(tag); }
__attribute__((noinline)) void walk_a(int tag) { walk_b(tag); }

static void (*volatile indirect)(int) = walk_c;

int main(void)
{
    walk_a(1);
    indirect(2);
    fflush(stdout);
    return 0;
}
