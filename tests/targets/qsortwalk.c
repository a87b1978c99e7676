/*
 * qsortwalk.c - a stack whose frames are mostly in a system DLL: main ->
 * sort_words -> msvcrt's qsort -> ... -> by_length, the comparison
 * function. The first call of by_length walks its own stack with
 * RtlCaptureContext and RtlLookupFunctionEntry/RtlVirtualUnwind and prints
 * one line per frame: the module's file name, and for this exe's
 * functions "!name" (frame 0, by_length itself, is left out). Then the
 * sorted words; exit 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

int by_length(const void *a, const void *b);
void sort_words(void);
int main(void);

static const struct {
    void *fn;
    const char *name;
} known[] = {
    { (void *)by_length, "by_length" }, { (void *)sort_words, "sort_words" }, { (void *)main, "main" },
};

static void print_frame(ULONG64 pc)
{
    HMODULE m = NULL;
    char path[MAX_PATH] = "?";
    if (GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCSTR)(ULONG_PTR)pc, &m))
        GetModuleFileNameA(m, path, sizeof path);
    const char *base = strrchr(path, '\\');
    base = base ? base + 1 : path;
    const char *name = "";
    if (m == GetModuleHandleA(NULL)) {
        DWORD64 image = 0;
        PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(pc - 1, &image, NULL);
        for (size_t k = 0; rf && k < sizeof known / sizeof *known; k++)
            if ((ULONG64)(ULONG_PTR)known[k].fn == image + rf->BeginAddress)
                name = known[k].name;
    }
    printf("frame %s%s%s\n", base, *name ? "!" : "", name);
}

static int walked;

__attribute__((noinline)) int by_length(const void *a, const void *b)
{
    if (!walked++) {
        CONTEXT ctx;
        RtlCaptureContext(&ctx);
        for (int i = 0; i < 64 && ctx.Rip; i++) {
            if (i)
                print_frame(ctx.Rip);
            DWORD64 image = 0;
            PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(ctx.Rip, &image, NULL);
            if (rf) {
                PVOID handler_data;
                DWORD64 establisher;
                RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, ctx.Rip, rf, &ctx, &handler_data, &establisher, NULL);
            } else {
                ctx.Rip = *(DWORD64 *)ctx.Rsp;
                ctx.Rsp += 8;
            }
        }
    }
    size_t x = strlen(*(char *const *)a), y = strlen(*(char *const *)b);
    return x < y ? -1 : x > y ? 1 : strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *words[] = { "unwind", "a", "stack", "of", "frames", "walked", "by", "hookscope", "and",
                               "by", "the", "program", "itself" };

__attribute__((noinline)) void sort_words(void)
{
    qsort(words, sizeof words / sizeof *words, sizeof *words, by_length);
}

int main(void)
{
    sort_words();
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        printf("%s%s", i ? " " : "", words[i]);
    printf("\n");
    return 0;
}
