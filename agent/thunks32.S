/*
 * agent/thunks32.S - the 32-bit agent's thunks from a counting stub into
 * C (i686; the x86-64 thunks are thunks.S).
 *
 * A 32-bit counting stub (hook/engine/count32.h) calls hs_probe_slow when
 * the thread's TLS slot holds no counters yet, hs_probe_edge for a caller
 * it has not counted yet, hs_probe_stack to capture the entry stack. The
 * stub may interrupt any
 * function at its entry, including hand-written code that keeps values in
 * registers cdecl calls volatile, so the thunk keeps every register but
 * ecx (its result) and eax (the stub saved it), the flags, the whole x87,
 * MMX and SSE state (fxsave: the C code starts on an empty x87 stack,
 * whatever the function's caller left there) and the thread's LastError.
 * The stack is realigned to 16 bytes.
 *
 * Stub side:  push ecx; push eax; ...; mov eax, fidx; call hs_probe_slow
 *   [esp]     return into the stub
 *   [esp+4]   the stub's saved eax, [esp+8] its saved ecx
 *   [esp+12]  the hooked function's return address: its entry esp
 * (hs_probe_edge: the stub pushed edx and the flags too, the entry esp is
 * [esp+20])
 * C side (cdecl):
 *   uint64_t *hs_on_slow(uint32_t fidx, uint64_t entry_esp, const hs_saved_regs *regs)
 *   (and hs_on_edge) regs: ebx ebp esi edi as they were at the entry. Its
 *   result (the counters, or 0: the call goes uncounted) comes back in
 *   ecx.
 *
 * The ticks from a thunk's entry to its return are added to the
 * thread's `excluded` (in the region header of the counters the C side
 * returns), as thunks.S does: timed calls leave hookscope's time out.
 *
 * Also built natively with -m32 for tests/unit (no leading underscore on
 * ELF symbols, no COFF directives), where fs points at a test TEB.
 */
    .intel_syntax noprefix
    .text

#ifdef _WIN32
#define SYM(name) _##name
#else
#define SYM(name) name
#endif

    .set HDR_EXCLUDED, -4096 + 72   /* session.h: hs_region_hdr.excluded, from the counters */
    .set HDR_STACK_TICKS, -4096 + 80 /* hs_region_hdr.stack_ticks */
    .set TEB_LAST_ERROR, 0x34       /* the 32-bit TEB's LastErrorValue */

/* `pushed`: bytes the stub pushed above the thunk's return address;
 * `also`: another field of the region header the ticks are added to (0:
 * none) */
.macro PROBE_THUNK32 name, cfunc, pushed, also=0
    .globl \name
#ifdef _WIN32
    .def \name; .scl 2; .type 32; .endef
#endif
\name:
    push ebp
    mov ebp, esp
    /* [ebp+4] return into the stub, [ebp+8+pushed] the entry esp's return address */
    pushfd                        /* [ebp-4] */
    push edx                      /* [ebp-8] */
    push eax                      /* [ebp-12] fidx */
    rdtsc
    push edx                      /* [ebp-16] when the slow path began (high) */
    push eax                      /* [ebp-20] (low) */
    /* hs_saved_regs: ebx ebp esi edi */
    push edi
    push esi
    push dword ptr [ebp]
    push ebx                      /* [ebp-36] */
    mov edx, esp
    cld
    and esp, -16
    sub esp, 544                  /* arguments (16), LastError (16), fxsave (512) */
    fxsave [esp+32]
    fninit
    mov eax, fs:[TEB_LAST_ERROR]
    mov [esp+16], eax
    mov eax, [ebp-12]
    mov [esp], eax                /* fidx */
    lea eax, [ebp + 8 + \pushed]
    mov [esp+4], eax              /* entry esp (64 bits) */
    mov dword ptr [esp+8], 0
    mov [esp+12], edx             /* regs */
    call \cfunc
    mov ecx, eax
    mov eax, [esp+16]
    mov fs:[TEB_LAST_ERROR], eax
    fxrstor [esp+32]
    lea esp, [ebp-36]
    pop ebx
    add esp, 4
    pop esi
    pop edi
    jecxz 2f
    rdtsc
    sub eax, [ebp-20]
    sbb edx, [ebp-16]
    add [ecx + HDR_EXCLUDED], eax
    adc [ecx + HDR_EXCLUDED + 4], edx
    .if \also
    add [ecx + \also], eax
    adc [ecx + \also + 4], edx
    .endif
2:
    add esp, 12                   /* the start ticks, fidx */
    pop edx
    popfd
    pop ebp
    ret
.endm

/* no counters yet: get a region (or count in the overflow region) */
PROBE_THUNK32 SYM(hs_probe_slow), SYM(hs_on_slow), 8
/* a caller the function's block and the thread's edge table do not have
 * (the stub pushed ecx, eax, edx and the flags) */
PROBE_THUNK32 SYM(hs_probe_edge), SYM(hs_on_edge), 16
/* capture the entry stack (the ticks are the thread's stack_ticks too) */
PROBE_THUNK32 SYM(hs_probe_stack), SYM(hs_on_stack), 8, HDR_STACK_TICKS

#ifndef _WIN32
    .section .note.GNU-stack, "", @progbits   /* (ELF: no executable stack) */
#endif
