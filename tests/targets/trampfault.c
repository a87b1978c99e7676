/*
 * trampfault: a fault inside a hooked function's first instructions (so,
 * when hooked, inside its trampoline), after the prologue pushed a
 * register. A vectored handler walks the stack from the faulting context
 * with RtlLookupFunctionEntry/RtlVirtualUnwind and checks that the frame
 * above the faulting one is its caller and that the walk reaches main
 * (so the trampoline needs unwind info that knows of the push); then it repairs
 * rcx and resumes. Prints one line per fault.
 */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

int deref_after_push(int *p);
/* push rbx; mov eax,[rcx]; pop rbx; ret; (padding) -- with unwind info */
__asm__(".text\n"
        ".globl deref_after_push\n"
        ".def deref_after_push; .scl 2; .type 32; .endef\n"
        ".seh_proc deref_after_push\n"
        "deref_after_push:\n"
        "    push %rbx\n"
        "    .seh_pushreg %rbx\n"
        "    .seh_endprologue\n"
        "    movl (%rcx), %eax\n"
        "    nop\n"
        "    nop\n"
        "    nop\n"
        "    popq %rbx\n"
        "    ret\n"
        ".seh_endproc\n");

static int good = 42;
static volatile int faults, reached_main;

__attribute__((noinline)) int caller(int *p)
{
    return deref_after_push(p) + 1;
}

static void *main_begin, *main_end, *caller_begin, *caller_end;
static volatile int first_is_caller;

static LONG CALLBACK on_fault(EXCEPTION_POINTERS *ep)
{
    if (ep->ExceptionRecord->ExceptionCode != EXCEPTION_ACCESS_VIOLATION)
        return EXCEPTION_CONTINUE_SEARCH;
    CONTEXT ctx = *ep->ContextRecord;
    if (getenv("TF_DEBUG"))
        fprintf(stderr, "fault rip %p (function %p) rbx %llx\n", (void *)ctx.Rip, (void *)deref_after_push,
                (unsigned long long)ctx.Rbx);
    int depth = 0, found = 0;
    while (ctx.Rip && depth < 32) {
        if ((void *)ctx.Rip >= main_begin && (void *)ctx.Rip < main_end)
            found = 1;
        if (depth == 1 && (void *)ctx.Rip >= caller_begin && (void *)ctx.Rip < caller_end)
            first_is_caller++;
        DWORD64 base;
        PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry(ctx.Rip, &base, NULL);
        if (!rf) {
            ctx.Rip = *(DWORD64 *)ctx.Rsp;
            ctx.Rsp += 8;
        } else {
            void *hd;
            DWORD64 est;
            RtlVirtualUnwind(UNW_FLAG_NHANDLER, base, ctx.Rip, rf, &ctx, &hd, &est, NULL);
        }
        depth++;
    }
    faults++;
    reached_main += found;
    ep->ContextRecord->Rcx = (DWORD64)&good;   /* retry the load with a good pointer */
    return EXCEPTION_CONTINUE_EXECUTION;
}

int main(void)
{
    DWORD64 base;
    PRUNTIME_FUNCTION rf = RtlLookupFunctionEntry((DWORD64)main, &base, NULL);
    main_begin = (char *)base + rf->BeginAddress;
    main_end = (char *)base + rf->EndAddress;
    rf = RtlLookupFunctionEntry((DWORD64)caller, &base, NULL);
    caller_begin = (char *)base + rf->BeginAddress;
    caller_end = (char *)base + rf->EndAddress;
    AddVectoredExceptionHandler(1, on_fault);
    int sum = 0;
    for (int i = 0; i < 3; i++)
        sum += caller(NULL);
    printf("faults %d next-frame-is-caller %d walks-reached-main %d sum %d\n", faults, first_is_caller,
           reached_main, sum);
    return 0;
}
