/*
 * agent/time32.S - return probes of the 32-bit agent (i686): a timed
 * call's entry and its return thunk, over a per-thread shadow return
 * stack. (x86-64 has a real wrapper frame instead: wrapper.S.)
 *
 * Why not a wrapper frame as on x64: a frame of our own would have to
 * copy the caller's stack arguments and pop them again, and on x86 a
 * callee pops its own arguments (stdcall, thiscall, fastcall) of a size
 * no table gives, nor do the conventions of hand-written code; x86 also
 * has no table-driven unwinding that a frame would keep whole. So the
 * entry moves the caller's return address into a shadow record and puts
 * the return thunk's address in its place; the function runs on the
 * caller's own stack, pops what it pops, and returns into the thunk,
 * which puts the true address back. That is safe where the x64 design
 * needs a frame: SEH finds its handlers through the fs:[0] chain of
 * registration records, not through return addresses, and MSVC's C++
 * exceptions, longjmp and RtlUnwind go by that chain too. (DWARF-2 C++
 * exceptions, g++'s for i686, do step by return address: one thrown out
 * of a timed function would find no unwind entry for the thunk, so the
 * functions of an image that uses them are not timed: install.c,
 * `dwarf-exceptions`.)
 *
 * Stack walkers: a timed call's slot holds the thunk while it is open;
 * the true address is its record's `ret`, newest record of that slot
 * first (hook/unwind/retshadow.h: hs_ret_shadow_true, which the entry
 * stacks and the callers of edges use). A sampler that stops the thread
 * can read the same records in the session; a walker outside hookscope
 * (ETW, another process's DbgHelp) sees the thunk.
 *
 * The shadow stack is the thread's region's (session.h: hs_shadow_rec,
 * as x64 keeps its open calls): desc, t0, child and excluded as the x64
 * wrapper keeps them; `frame` is the entry esp (where the return address
 * was), `ret` the true return address, `t1` the time it ended.
 *
 *   hs_time32_enter: the timed stub's last step before its trampoline,
 *     `push desc; call hs_time32_enter` (count32.h); returns with `ret 4`
 *     into the stub (call and return pair up, so the return predictions
 *     stay right). With the thread's counters (its TLS slot,
 *     hs_time32_tls) and room on its shadow stack: the open calls whose
 *     return address slot lies at or below the entry esp are over (see
 *     below), then a record is pushed and [entry esp] becomes
 *     hs_time32_return. Otherwise the call runs untimed (a full shadow
 *     stack is counted in time_dropped, as on x64).
 *   hs_time32_return: entered by the function's ret, with esp where the
 *     caller expects it. The top record whose slot the ret consumed ends
 *     here: its duration (rdtsc - t0, less the thread's `excluded` since
 *     entry), exits, sum, self, min, max, total (outermost activation
 *     only), the log2 histogram (filed at once: no `pending`), its time
 *     added to its parent record's children; with --timeline the call
 *     into the thread's ring as x64's wrapper writes it (an hs_tl_event,
 *     the same filters, a full ring waited for by the same C routine,
 *     hs_timeline_room, then dropped and counted); popped; back to `ret`.
 *
 * Calls that never return (an exception unwinding past them, longjmp, an
 * SEH handler resuming in an outer frame) leave their records: such a
 * record is found dead at the thread's next timed entry or return, by
 * where its return address was. At an entry with esp E, a record whose
 * slot is below E is dead (the stack there was given up), and so is one
 * at E unless [E] still holds the thunk (a timed function's tail jump
 * reuses its slot: that call is still open). At a return with esp S (the
 * slot was below S), the top record is dead when the record under it
 * also had its slot below S: an outer call cannot return before an inner
 * one, unless the top record's true return address is the thunk itself
 * (a timed function tail-jumped to another: both end now, one return
 * each). A top record whose slot lies at or above S is the one returning
 * (a helper such as MSVC's __SEH_prolog4 moves its return address down
 * the stack and returns there). A dead call is counted as the x64 unwind
 * handler counts one (exits and unwinds, sum, self, min, max, histogram,
 * its parent's children, its timeline event), its time ended when it was
 * found dead: the first moment this thread runs probe code after the
 * unwind.
 *
 * The thunk goes back by an indirect jump, not by `ret`: the function's
 * own ret already took the processor's prediction of the caller's return
 * address (mispredicted once: the thunk is not where it returns), and a
 * second `ret` would take the prediction of the caller's own return, so
 * that each return above it would be mispredicted in turn (45 ns a timed
 * call three frames deep natively, 24 with the jump). With no register
 * free, the jump goes through a TEB cell of the thread (the TLS slot
 * hs_time32_cell, an fs offset: the agent's second TLS index) and a tail
 * `jmp dword ptr fs:[cell]` made at run time (hs_time32_tail); without
 * a cell (an index of 64 or more), by `ret`. (Between the cell's write
 * and the jump are four instructions: a thread stopped there and made to
 * run a timed function meanwhile, as by an asynchronous APC, would find
 * that function's return address in its cell.)
 *
 * Registers: the entry keeps every register (the function is entered as
 * the caller left it); the thunk keeps eax:edx (integer and 64-bit
 * results), ecx (callers that see into a callee may keep it), ebx, esi,
 * edi and ebp; neither calls C nor touches x87, MMX, SSE or LastError,
 * so ST0 and xmm0 results pass. The arithmetic flags change, as in the
 * x64 wrapper: no convention keeps them across a call or reads them at
 * an entry (DF, the one that matters, is never touched); keeping them
 * cost 34 ns a call here, popfd being that slow. The wait for room in
 * a full timeline ring calls C (hs_timeline_room) as the orphan path
 * below does, keeping the same around it. A return with no
 * record of this thread's current region (a session switched meanwhile)
 * asks hs_time32_orphan (C, every register, the x87/SSE state and
 * LastError kept around it) for the true return address.
 *
 * Also built natively with -m32 for tests/unit (no leading underscore on
 * ELF symbols, no COFF directives), where fs points at a test TEB.
 */
    .intel_syntax noprefix
    .text
#include "agent/time_layout.inc"

#ifdef _WIN32
#define SYM(name) _##name
#else
#define SYM(name) name
#endif

    /* the 32-bit TEB */
    .set TEB_LAST_ERROR, 0x34
    .set TEB_TLS_SLOTS, 0xE10
    .set TEB_TLS_EXPANSION, 0xF94

/* every general register but esp, pushed (28 bytes) and popped */
.macro PUSH_REGS
    push eax
    push ecx
    push edx
    push ebx
    push esi
    push edi
    push ebp
.endm

.macro POP_REGS
    pop ebp
    pop edi
    pop esi
    pop ebx
    pop edx
    pop ecx
    pop eax
.endm

/* ebx = the thread's counters (its slot of TLS index hs_time32_tls), or
 * 0; eax changes */
.macro LOAD_COUNTERS
    mov eax, [SYM(hs_time32_tls)]
    cmp eax, 64
    jae 91f
    mov ebx, fs:[TEB_TLS_SLOTS + eax*4]
    jmp 92f
91:
    mov ebx, fs:[TEB_TLS_EXPANSION]
    test ebx, ebx
    jz 92f
    mov ebx, [ebx + eax*4 - 256]
92:
.endm

/* End the dead call of the record below the top (ecx = the top), at
 * edi:esi, and pop it; ecx = the new top. */
.macro END_DEAD
    sub ecx, SH_SIZE
    mov [ecx + SH_T1], esi
    mov [ecx + SH_T1 + 4], edi
    push edi
    push esi
    mov eax, 1
    call end_call
    pop esi
    pop edi
    mov [ebx + HDR_SHADOW_TOP], ecx
.endm

    .globl SYM(hs_time32_enter)
#ifdef _WIN32
    .def SYM(hs_time32_enter); .scl 2; .type 32; .endef
#endif
SYM(hs_time32_enter):
    PUSH_REGS
    /* [esp+28] into the stub, [esp+32] the descriptor, [esp+36] the
     * caller's return address: its address is the entry esp */
    LOAD_COUNTERS
    test ebx, ebx
    jz .Lenter_out
    rdtsc
    mov esi, eax
    mov edi, edx                 /* edi:esi = now: the dead calls' end, this one's start */
    lea ebp, [esp + 36]
.Lenter_sweep:
    mov ecx, [ebx + HDR_SHADOW_TOP]
    cmp ecx, [ebx + HDR_SHADOW_BASE]
    jbe .Lenter_push
    mov eax, [ecx - SH_SIZE + SH_FRAME]
    cmp eax, ebp
    ja .Lenter_push              /* its slot is above ours: still open */
    jb .Lenter_dead
    cmp dword ptr [ebp], OFFSET SYM(hs_time32_return)
    je .Lenter_push              /* our slot, hijacked still: a tail jump from that call */
.Lenter_dead:
    END_DEAD
    jmp .Lenter_sweep
.Lenter_push:
    cmp ecx, [ebx + HDR_SHADOW_LIMIT]
    jae .Lenter_full
    mov [ecx + SH_T0], esi
    mov [ecx + SH_T0 + 4], edi
    mov edx, [esp + 32]
    mov [ecx + SH_DESC], edx
    mov eax, [ebx + HDR_EXCLUDED]
    mov [ecx + SH_EXCLUDED], eax
    mov eax, [ebx + HDR_EXCLUDED + 4]
    mov [ecx + SH_EXCLUDED + 4], eax
    xor eax, eax
    mov [ecx + SH_CHILD], eax
    mov [ecx + SH_CHILD + 4], eax
    mov [ecx + SH_FRAME], ebp
    mov eax, [ebp]
    mov [ecx + SH_RET], eax
    mov eax, [edx + DESC_FIDX]
    mov [ecx + SH_FUNC], eax
    mov eax, [edx + DESC_TIMEREL]
    add dword ptr [ebx + eax + T_ACTIVE], 1
    adc dword ptr [ebx + eax + T_ACTIVE + 4], 0
    add ecx, SH_SIZE
    /* the record is on the stack before its slot holds the thunk: a
     * walker that meets the thunk always finds the true address */
    mov [ebx + HDR_SHADOW_TOP], ecx
    mov dword ptr [ebp], OFFSET SYM(hs_time32_return)
    jmp .Lenter_out
.Lenter_full:
    add dword ptr [ebx + HDR_TIME_DROPPED], 1
    adc dword ptr [ebx + HDR_TIME_DROPPED + 4], 0
.Lenter_out:
    POP_REGS
    ret 4

    .globl SYM(hs_time32_return)
#ifdef _WIN32
    .def SYM(hs_time32_return); .scl 2; .type 32; .endef
#endif
SYM(hs_time32_return):
    push eax                     /* the place of the true return address */
    PUSH_REGS
    /* [esp+28] the true return address's place; esp + 32: the caller's esp */
    rdtsc
    mov esi, eax
    mov edi, edx                 /* edi:esi = now */
    LOAD_COUNTERS
    test ebx, ebx
    jz .Lreturn_orphan
.Lreturn_find:
    mov ecx, [ebx + HDR_SHADOW_TOP]
    cmp ecx, [ebx + HDR_SHADOW_BASE]
    jbe .Lreturn_orphan
    lea edx, [esp + 32]
    cmp [ecx - SH_SIZE + SH_FRAME], edx
    jae .Lreturn_this            /* it returned below its slot: it moved its own return
                                    address (an SEH prologue helper does) */
    cmp dword ptr [ecx - SH_SIZE + SH_RET], OFFSET SYM(hs_time32_return)
    je .Lreturn_this             /* a tail-jumped call: it ends first */
    lea eax, [ecx - SH_SIZE]
    cmp eax, [ebx + HDR_SHADOW_BASE]
    jbe .Lreturn_this
    cmp [ecx - 2 * SH_SIZE + SH_FRAME], edx
    jae .Lreturn_this            /* the call under it is open: this one returns */
    END_DEAD
    jmp .Lreturn_find
.Lreturn_this:
    sub ecx, SH_SIZE
    mov [ecx + SH_T1], esi
    mov [ecx + SH_T1 + 4], edi
    push edi
    push esi
    xor eax, eax
    call end_call
    add esp, 8
    mov eax, [ecx + SH_RET]
    mov [esp + 28], eax
    mov [ebx + HDR_SHADOW_TOP], ecx
    /* to the true address by an indirect jump through this thread's cell
     * (a `ret` would take the return prediction of the caller's own
     * return, and every return above would be mispredicted after it) */
    mov ecx, [SYM(hs_time32_cell)]
    test ecx, ecx
    jz .Lreturn_out
    pop ebp                      /* (POP_REGS, the cell written as late as it can be) */
    pop edi
    pop esi
    pop ebx
    pop edx
    mov fs:[ecx], eax
    pop ecx
    pop eax
    lea esp, [esp + 4]           /* (the place of the true return address) */
    jmp dword ptr [SYM(hs_time32_tail)]   /* jmp dword ptr fs:[cell] */
.Lreturn_out:
    POP_REGS
    ret
.Lreturn_orphan:
    /* hs_time32_orphan(caller's esp) in C, as the thunks32.S call C */
    lea eax, [esp + 32]
    mov ebp, esp
    cld
    and esp, -16
    sub esp, 528                 /* arguments and LastError (16), fxsave (512) */
    fxsave [esp + 16]
    mov [esp], eax
    mov eax, fs:[TEB_LAST_ERROR]
    mov [esp + 4], eax
    call SYM(hs_time32_orphan)
    mov ecx, [esp + 4]
    mov fs:[TEB_LAST_ERROR], ecx
    fxrstor [esp + 16]
    mov esp, ebp
    test eax, eax
    jz .Lreturn_lost
    mov [esp + 28], eax
    jmp .Lreturn_out
.Lreturn_lost:
    ud2                          /* no true return address anywhere: nowhere to go */

/* The end of the call of record ecx at its t1 (eax 1: by unwind), ebx =
 * the counters: into its time record, and with --timeline into the
 * thread's ring. The caller pushes its `now` (the t1 of this call and of
 * any it ends after it, the t0 of a call it starts) as a 64-bit value
 * just before the call: a wait for room in the ring advances it by the
 * ticks waited, which hs_timeline_room adds to `excluded`, so that the
 * calls ended or begun after the wait at that same moment leave the wait
 * out as the calls around it do (one rdtsc serves them all). Keeps ebx,
 * ecx, ebp; eax, edx, esi, edi and the flags change. */
end_call:
    push ebp
    mov ebp, eax
    mov esi, [ecx + SH_DESC]
    mov esi, [esi + DESC_TIMEREL]
    add esi, ebx                 /* esi = the time record */
    /* edx:eax = t1 - t0, less hookscope's slow paths meanwhile */
    mov eax, [ecx + SH_T1]
    mov edx, [ecx + SH_T1 + 4]
    sub eax, [ecx + SH_T0]
    sbb edx, [ecx + SH_T0 + 4]
    sub eax, [ebx + HDR_EXCLUDED]
    sbb edx, [ebx + HDR_EXCLUDED + 4]
    add eax, [ecx + SH_EXCLUDED]
    adc edx, [ecx + SH_EXCLUDED + 4]
    add dword ptr [esi + T_EXITS], 1
    adc dword ptr [esi + T_EXITS + 4], 0
    add [esi + T_UNWINDS], ebp
    adc dword ptr [esi + T_UNWINDS + 4], 0
    /* --timeline (the region's tl_base set): the call into the ring as
     * wrapper.S writes it on x64, unless a filter leaves it out, decided
     * now that its duration (edx:eax) is known; ebp and edi are free */
    cmp dword ptr [ebx + HDR_TL_BASE], 0
    je .Ltl_done
    cmp eax, [ebx + HDR_TL_MIN_TICKS]
    mov edi, edx
    sbb edi, [ebx + HDR_TL_MIN_TICKS + 4]
    jb .Ltl_filtered             /* shorter than --timeline-min-duration */
    mov edi, ecx
    sub edi, [ebx + HDR_SHADOW_BASE]
    shr edi, 6                   /* edi = the depth: the timed calls open around it */
    cmp dword ptr [ebx + HDR_TL_DEPTHS + 4], 0
    jne .Ltl_write
    cmp edi, [ebx + HDR_TL_DEPTHS]
    jae .Ltl_filtered            /* at --timeline-depth or deeper */
.Ltl_write:
    /* full when head - tail >= cap, on the low halves: the injector's
     * 64-bit store of tl_tail may be seen half done by two 32-bit reads,
     * its low half never, and head - tail <= cap < 2^32 */
    mov ebp, [ebx + HDR_TL_HEAD]
    sub ebp, [ebx + HDR_TL_TAIL]
    cmp ebp, [ebx + HDR_TL_CAP]
    jae .Ltl_full
    mov ebp, [ebx + HDR_TL_CAP]
    dec ebp
    and ebp, [ebx + HDR_TL_HEAD]
    shl ebp, 5
    add ebp, [ebx + HDR_TL_BASE] /* ebp = the event (session.h: hs_tl_event) */
    mov [ebp + 16], eax          /* ticks */
    mov [ebp + 20], edx
    mov [ebp + 28], edi          /* depth */
    mov edi, [ecx + SH_T0]
    mov [ebp], edi
    mov edi, [ecx + SH_T0 + 4]
    mov [ebp + 4], edi
    mov edi, [ecx + SH_T1]
    mov [ebp + 8], edi
    mov edi, [ecx + SH_T1 + 4]
    mov [ebp + 12], edi
    mov edi, [ecx + SH_FUNC]
    mov [ebp + 24], edi
    /* the event before the head that publishes it (x86 keeps stores in
     * order); the head in one store, so that the injector never reads it
     * half written: its low half alone, or at its carry (once in 2^32
     * events) all of it at once */
    cmp dword ptr [ebx + HDR_TL_HEAD], -1
    je .Ltl_head_carry
    add dword ptr [ebx + HDR_TL_HEAD], 1
    jmp .Ltl_done
.Ltl_head_carry:
    push eax
    push edx
    push ecx
    push ebx
    mov ebp, ebx
    mov eax, [ebp + HDR_TL_HEAD]
    mov edx, [ebp + HDR_TL_HEAD + 4]
    xor ebx, ebx
    lea ecx, [edx + 1]
    lock cmpxchg8b [ebp + HDR_TL_HEAD]   /* (only this thread writes it: never fails) */
    pop ebx
    pop ecx
    pop edx
    pop eax
    jmp .Ltl_done
.Ltl_filtered:
    add dword ptr [ebx + HDR_TL_FILTERED], 1
    adc dword ptr [ebx + HDR_TL_FILTERED + 4], 0
    jmp .Ltl_done
.Ltl_full:
    mov ebp, [ebx + HDR_TL_WAIT_LIMIT]
    or ebp, [ebx + HDR_TL_WAIT_LIMIT + 4]
    jz .Ltl_drop
    /* wait for room in C (probes.c: hs_timeline_room, as x64's wrapper
     * does): every general register the function's caller or callee may
     * still read is on the stack already (PUSH_REGS); kept around the
     * call are ours (eax, ecx, edx: edi and ebx are C's to keep), the
     * x87, MMX and SSE state (a result in ST0 or xmm0, vectorcall
     * arguments at an entry; the x87 registers marked empty meanwhile,
     * as C expects them), LastError, and `excluded` before the wait */
    push eax
    push edx
    push ecx
    push dword ptr [ebx + HDR_EXCLUDED + 4]
    push dword ptr [ebx + HDR_EXCLUDED]
    mov ebp, esp
    cld
    and esp, -16
    sub esp, 528                 /* the argument and LastError (16), fxsave (512) */
    fxsave [esp + 16]
    emms
    lea eax, [ebx - 4096]
    mov [esp], eax
    mov eax, fs:[TEB_LAST_ERROR]
    mov [esp + 4], eax
    call SYM(hs_timeline_room)
    mov [esp + 8], eax
    mov ecx, [esp + 4]
    mov fs:[TEB_LAST_ERROR], ecx
    fxrstor [esp + 16]
    mov eax, [esp + 8]
    mov esp, ebp
    mov ebp, eax                 /* ebp = 1: room */
    /* the caller's now advanced by the ticks waited (above the saved
     * excluded, ecx, edx, eax and ebp: end_call's return address at
     * esp+24, the now at esp+28) */
    mov ecx, [ebx + HDR_EXCLUDED]
    mov edx, [ebx + HDR_EXCLUDED + 4]
    sub ecx, [esp]
    sbb edx, [esp + 4]
    add [esp + 28], ecx
    adc [esp + 32], edx
    add esp, 8
    pop ecx
    pop edx
    pop eax
    test ebp, ebp
    jnz .Ltl_write
.Ltl_drop:
    /* dropped: counted, with the time range the drops cover */
    add dword ptr [ebx + HDR_TL_DROPPED], 1
    adc dword ptr [ebx + HDR_TL_DROPPED + 4], 0
    cmp dword ptr [ebx + HDR_TL_DROPPED], 1
    jne 11f
    cmp dword ptr [ebx + HDR_TL_DROPPED + 4], 0
    je 12f                       /* the first drop */
11:
    mov ebp, [ecx + SH_T0]
    cmp ebp, [ebx + HDR_TL_DROP_FIRST]
    mov ebp, [ecx + SH_T0 + 4]
    sbb ebp, [ebx + HDR_TL_DROP_FIRST + 4]
    jae 13f
12:
    mov ebp, [ecx + SH_T0]
    mov [ebx + HDR_TL_DROP_FIRST], ebp
    mov ebp, [ecx + SH_T0 + 4]
    mov [ebx + HDR_TL_DROP_FIRST + 4], ebp
13:
    mov ebp, [ebx + HDR_TL_DROP_LAST]
    cmp ebp, [ecx + SH_T1]
    mov ebp, [ebx + HDR_TL_DROP_LAST + 4]
    sbb ebp, [ecx + SH_T1 + 4]
    jae .Ltl_done                /* drop_last >= t1 */
    mov ebp, [ecx + SH_T1]
    mov [ebx + HDR_TL_DROP_LAST], ebp
    mov ebp, [ecx + SH_T1 + 4]
    mov [ebx + HDR_TL_DROP_LAST + 4], ebp
.Ltl_done:
    add [esi + T_SUM], eax
    adc [esi + T_SUM + 4], edx
    /* inclusive time: the outermost activation only */
    sub dword ptr [esi + T_ACTIVE], 1
    sbb dword ptr [esi + T_ACTIVE + 4], 0
    mov edi, [esi + T_ACTIVE]
    or edi, [esi + T_ACTIVE + 4]
    jnz 1f
    add [esi + T_TOTAL], eax
    adc [esi + T_TOTAL + 4], edx
1:
    mov edi, eax
    mov ebp, edx
    sub edi, [ecx + SH_CHILD]
    sbb ebp, [ecx + SH_CHILD + 4]
    add [esi + T_SELF], edi
    adc [esi + T_SELF + 4], ebp
    cmp ecx, [ebx + HDR_SHADOW_BASE]
    jbe 2f
    add [ecx - SH_SIZE + SH_CHILD], eax
    adc [ecx - SH_SIZE + SH_CHILD + 4], edx
2:
    mov edi, [esi + T_MAX]
    cmp edi, eax
    mov edi, [esi + T_MAX + 4]
    sbb edi, edx
    jae 3f                       /* max >= this one */
    mov [esi + T_MAX], eax
    mov [esi + T_MAX + 4], edx
3:
    mov edi, [esi + T_MIN]
    or edi, [esi + T_MIN + 4]
    jz 4f                        /* (no minimum yet) */
    cmp eax, [esi + T_MIN]
    mov edi, edx
    sbb edi, [esi + T_MIN + 4]
    jae 5f
4:
    mov [esi + T_MIN], eax
    mov [esi + T_MIN + 4], edx
5:
    /* histogram: floor(log2(ns)), ns = ticks * mult >> 32 (mult below
     * 2^32: a clock of 1 GHz or more), as hs_hist_bucket */
    mov edi, edx
    mul dword ptr [SYM(hs_tsc_ns_mult)]
    mov eax, edi
    mov edi, edx                 /* the low half's product >> 32 */
    mul dword ptr [SYM(hs_tsc_ns_mult)]
    add eax, edi
    adc edx, 0                   /* edx:eax = ns */
    test edx, edx
    jnz 6f
    or eax, 1
    bsr eax, eax
    jmp 7f
6:
    bsr eax, edx
    add eax, 32
7:
    cmp eax, HIST_LAST
    jbe 8f
    mov eax, HIST_LAST
8:
    add dword ptr [esi + T_HIST + eax*8], 1
    adc dword ptr [esi + T_HIST + eax*8 + 4], 0
    pop ebp
    ret

#ifndef _WIN32
    .section .note.GNU-stack, "", @progbits   /* (ELF: no executable stack) */
#endif
