/*
 * relaydll: relay(fn) calls fn() and returns; built twice
 * (tests/targets/targets.mk) at one image base, where the same code
 * address is relay's return address from fn in both, behind frames of
 * different sizes:
 *   relay1.dll  sub rsp, 40 (and a 2-byte nop)   the return address at rsp+40
 *   relay2.dll  push rbx, push rsi, sub rsp, 40  the return address at rsp+56
 * relayload.exe loads one, calls it, frees it and loads the other: a stack
 * walker that kept what it learned of relay1's frame at that address walks
 * relay2's wrong.
 */
#ifndef RELAY_VARIANT
#error "RELAY_VARIANT (1 or 2) is set by the build"
#endif

#if RELAY_VARIANT == 1
#define RELAY_PROLOGUE                                                              \
    "subq $40, %rsp\n\t.seh_stackalloc 40\n\t"                                      \
    "xchg %ax, %ax\n\t"
#define RELAY_EPILOGUE "addq $40, %rsp\n\t"
#else
#define RELAY_PROLOGUE                                                              \
    "pushq %rbx\n\t.seh_pushreg %rbx\n\t"                                           \
    "pushq %rsi\n\t.seh_pushreg %rsi\n\t"                                           \
    "subq $40, %rsp\n\t.seh_stackalloc 40\n\t"
#define RELAY_EPILOGUE "addq $40, %rsp\n\tpopq %rsi\n\tpopq %rbx\n\t"
#endif

__asm__(".text\n\t"
        ".globl relay\n\t"
        ".def relay; .scl 2; .type 32; .endef\n\t"
        ".seh_proc relay\n"
        "relay:\n\t"
        RELAY_PROLOGUE
        ".seh_endprologue\n\t"
        "call *%rcx\n\t"
        "nop\n\t"
        RELAY_EPILOGUE
        "ret\n\t"
        ".seh_endproc\n\t"
        ".section .drectve\n\t"
        ".ascii \" -export:relay\"\n\t"
        ".text");
