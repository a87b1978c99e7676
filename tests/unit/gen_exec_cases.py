#!/usr/bin/env python3
"""Generate tests/unit/exec_cases.h (x86-64) and tests/unit/exec_cases32.h
(32-bit code, --bits 32): the hand-written prologue cases of the
differential execution test (test_hook_exec.c, built once for each).

Each case is a few lines of Intel-syntax assembly, assembled with GNU as
(binutils) so that no byte is typed by hand; the expected outcome (patch
kind, window length, ...) is written next to it by hand, from the
instruction lengths noted in the comments. Labels: `start` is the entry,
`end` the end of the function (.pdata end); bytes before `start` are the
padding before it, bytes after `end` the padding after it. Addresses that
the harness provides (tests/unit/xrun.h): CALLPAD = start+0x8000 (int3;
ret), RD = start+0x10000 (data), landing pads = any other address (int3).
A 32-bit case also says how often its entry runs in one run (count): the
32-bit test enters through the counting stub and checks the count.

Run: python3 tests/unit/gen_exec_cases.py > tests/unit/exec_cases.h
     python3 tests/unit/gen_exec_cases.py --bits 32 > tests/unit/exec_cases32.h
"""
import os
import subprocess
import sys
import tempfile

XR_A = 0x3000000000
CALLPAD = XR_A + 0x8000
RD = XR_A + 0x10000
SCRATCH = 0x3200000000

REGS = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
        "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"]
CASES = []


def C(name, asm, win, kind="jmp32", tramp="near", reason="ok", tramp_fail="ok",
      flags=(), regs=None, pokes=(), nvar=3, vec=0, opts=(), patch=None, count=1, cases=None):
    """win: expected window length; patch: (patch_off, patch_len) if not the default;
    count: entries of the function in one run (32-bit cases)."""
    (CASES if cases is None else cases).append(
        dict(name=name, asm=asm, win=win, kind=kind, tramp=tramp, reason=reason,
             tramp_fail=tramp_fail, flags=flags, regs=regs or {}, pokes=pokes,
             nvar=nvar, vec=vec, opts=opts, patch=patch, count=count))


PAD5 = ".byte 0xcc,0xcc,0xcc,0xcc,0xcc,0xcc,0xcc,0xcc\n"
PAD16 = ".fill 16,1,0xcc\n"

# ---- plain prologues ------------------------------------------------------
C("push-sub", "start: push rbx\n sub rsp, 0x20\n mov rbx, rcx\n ret\nend:", 5)          # 1+4
C("push-rbp-mov-sub", "start: push rbp\n mov rbp, rsp\n sub rsp, 0x40\n ret\nend:", 8)  # 1+3+4
C("home-slot-spill", "start: mov [rsp+8], rcx\n mov [rsp+0x10], rdx\n push rdi\n ret\nend:", 5)
C("sub-rsp-imm32", "start: sub rsp, 0x128\n ret\nend:", 7)
C("push-r12-push-push", "start: push r12\n push rsi\n push rdi\n push rbx\n ret\nend:", 5)  # 2+1+1+1
C("mov-rax-rsp", "start: mov rax, rsp\n mov [rax+8], rbx\n mov [rax+0x10], rsi\n ret\nend:", 7)
C("mov-r11-rsp-sub", "start: mov r11, rsp\n sub rsp, 0x88\n ret\nend:", 10)   # 3+7
C("push-push-lea-rbp", "start: push rbp\n push rbx\n lea rbp, [rsp-0x27]\n ret\nend:", 7)
C("spill-rbx-rsi", "start: mov [rsp+8], rbx\n mov [rsp+0x10], rsi\n ret\nend:", 5)
C("sub-movaps-xmm6", "start: sub rsp, 0x48\n movaps [rsp+0x30], xmm6\n ret\nend:", 9, vec=0)
C("mov-eax-imm-ret", "start: mov eax, 1\n ret\nend:", 5)
C("lea-ret", "start: lea rax, [rcx+rdx]\n ret\nend:" + PAD16, 5, flags=("ENDS_IN_WINDOW",))
C("gs-teb-read", "start: mov rax, gs:[0x30]\n mov rax, [rax+8]\n ret\nend:", 9)
C("lock-xadd", "start: lock xadd [rcx], eax\n ret\nend:" + PAD16, 5, flags=("ENDS_IN_WINDOW",))  # 4+1

# ---- short functions and padding ------------------------------------------
C("xor-ret-pad", "start: xor eax, eax\n ret\nend:" + PAD16, 3,
  flags=("ENDS_IN_WINDOW", "USES_PADDING"))
C("ret-pad", "start: ret\nend:" + PAD16, 1, flags=("ENDS_IN_WINDOW", "USES_PADDING"))
C("ret-imm16-pad", "start: ret 8\nend:" + PAD16, 3, flags=("ENDS_IN_WINDOW", "USES_PADDING"))
C("ret-nop-pad", "start: xor eax, eax\n ret\nend:\n .byte 0x66, 0x0f, 0x1f, 0x44, 0, 0\n" + PAD16, 3,
  flags=("ENDS_IN_WINDOW", "USES_PADDING"))
C("jmp-rax-pad", "start: jmp rax\nend:" + PAD16, 2, flags=("ENDS_IN_WINDOW", "USES_PADDING"),
  regs={"rax": [CALLPAD] * 3})
C("jmp8-over-int3", "start: jmp short L\n int3\n int3\n int3\n .fill 0x20,1,0xcc\nL: ret\nend:", 2,
  flags=("ENDS_IN_WINDOW",))
C("endbr-ret", "start: endbr64\n ret\nend:" + PAD16, 5, flags=("ENDBR", "ENDS_IN_WINDOW"))
C("endbr-push-mov", "start: endbr64\n push rbp\n mov rbp, rsp\n ret\nend:", 5, flags=("ENDBR",))
C("mov-rax-rip-ret", "start: mov rax, [rip + RD + 0x18]\n ret\nend:", 7)

# ---- SHORT_PAD, INT3 ---------------------------------------------------------
# a loop back to offset 2 forbids a 5-byte patch; a 2-byte first instruction
# and padding before make it a hot-patch style short jump
C("hotpatch-xchg-loop", PAD5 + "start: xchg ax, ax\nL: dec rcx\n jnz L\n ret\nend:", 2,
  kind="short_pad", patch=(-5, 7), regs={"rcx": [3, 1, 2]})
C("hotpatch-mov-edi-edi", PAD5 + "start: mov edi, edi\nL: dec rcx\n jnz L\n ret\nend:", 2,
  kind="short_pad", patch=(-5, 7), regs={"rcx": [3, 1, 2]})
C("shortpad-3byte-first", PAD16 + "start: mov rax, rcx\nL: dec eax\n jnz L\n ret\nend:", 3,
  kind="short_pad", patch=(-5, 7))
C("shortpad-after", "start: mov eax, ecx\nL: dec rax\n jnz L\n ret\nend:" + PAD16, 2,
  kind="short_pad", patch=(0, 13), regs={"rcx": [3, 1, 2]})
C("shortpad-call-reg", PAD16 + "start: call rax\n mov ecx, eax\n ret\nend:", 2,
  kind="short_pad", patch=(-5, 7), regs={"rax": [CALLPAD] * 3}, flags=("HAS_CALL_IN_WINDOW",))
C("shortpad-ret-then-code", PAD16 + "start: xor eax, eax\n ret\n mov eax, 1\n ret\nend:", 2,
  kind="short_pad", patch=(-5, 7))
C("int3-fallback", "start: mov eax, ecx\nL: dec rax\n jnz L\n ret\nend:", 2,
  kind="int3", patch=(0, 1), opts=("ALLOW_INT3",))

# ---- RIP-relative operands -----------------------------------------------
C("rip-mov-load", "start: mov rax, [rip + RD + 0x40]\n ret\nend:", 7)
C("rip-mov-store", "start: mov [rip + RD + 0x80], rcx\n ret\nend:", 7)
C("rip-lea", "start: lea rax, [rip + RD]\n ret\nend:", 7)
C("rip-lea-far", "start: lea rax, [rip + RD + 0x10]\n ret\nend:", 7, tramp="far")
C("rip-lea32-far", "start: lea r9d, [rip + RD + 0x20]\n ret\nend:", 7, tramp="far")
C("rip-lea-neg", "start: lea rdx, [rip + start - 0x1000]\n ret\nend:", 7, tramp="neg")
C("rip-load-far-fails", "start: mov rax, [rip + RD]\n ret\nend:", 7, tramp="far",
  tramp_fail="out_of_range")
C("rip-cmp-q-imm32", "start: cmp qword ptr [rip + RD + 8], 0x11223344\n ret\nend:", 11)
C("rip-add-d-imm32", "start: add dword ptr [rip + RD + 8], 0x12345678\n ret\nend:", 10)
C("rip-cmp-w-bx", "start: cmp word ptr [rip + RD], bx\n ret\nend:", 7)
C("rip-cmp-r15b", "start: cmp r15b, byte ptr [rip + RD + 3]\n ret\nend:", 7)
C("rip-mov-b-imm8", "start: mov byte ptr [rip + RD + 3], 0x7f\n ret\nend:", 7)
C("rip-test-b-imm8", "start: test byte ptr [rip + RD + 5], 1\n ret\nend:", 7)
C("rip-imul-imm32", "start: imul eax, dword ptr [rip + RD], 0x1234\n ret\nend:", 10)
C("rip-imul-imm8", "start: imul ecx, dword ptr [rip + RD + 4], 100\n ret\nend:", 7)
C("rip-movzx", "start: movzx eax, byte ptr [rip + RD + 9]\n ret\nend:", 7)
C("rip-movsxd", "start: movsxd rax, dword ptr [rip + RD + 12]\n ret\nend:", 7)
C("rip-lock-inc", "start: lock inc dword ptr [rip + RD]\n ret\nend:", 7)
C("rip-cmpxchg", "start: cmpxchg [rip + RD + 8], ecx\n ret\nend:", 7)
C("rip-bt-imm8", "start: bt dword ptr [rip + RD], 3\n ret\nend:", 8)
C("rip-shl-imm8", "start: shl dword ptr [rip + RD + 16], 3\n ret\nend:", 7)
C("rip-push-mem", "start: push qword ptr [rip + RD + 0x20]\n ret\nend:", 6)
C("rip-pop-mem", "start: pop qword ptr [rip + RD + 0x20]\n ret\nend:", 6)
C("rip-prefetch", "start: prefetcht0 [rip + RD]\n ret\nend:", 7)
C("rip-nop-mem", "start: nop dword ptr [rip + RD]\n ret\nend:", 7)
C("rip-xchg", "start: xchg [rip + RD + 0x30], rdx\n ret\nend:", 7)
C("rip-neg-tramp", "start: mov rcx, [rip + RD + 0x48]\n ret\nend:", 7, tramp="neg")
C("rip-movsd-xmm", "start: movsd xmm0, qword ptr [rip + RD + 8]\n ret\nend:", 8, vec=1)
C("rip-cvtsi2sd", "start: cvtsi2sd xmm1, qword ptr [rip + RD + 8]\n ret\nend:", 9, vec=1)
C("rip-pshufd-imm8", "start: pshufd xmm1, [rip + RD], 0x1b\n ret\nend:", 9, vec=1)
C("rip-palignr-imm8", "start: palignr xmm0, [rip + RD + 16], 4\n ret\nend:", 10, vec=1)
C("rip-vex2-vmovdqu", "start: vmovdqu ymm0, [rip + RD]\n ret\nend:", 8, vec=2)
C("rip-vex2-vpshufd-imm8", "start: vpshufd ymm2, [rip + RD + 32], 0x1b\n ret\nend:", 9, vec=2)
C("rip-vex3-vinsertf128", "start: vinsertf128 ymm0, ymm1, [rip + RD], 1\n ret\nend:", 10, vec=2)
C("rip-vex2-vpaddq-r12", "start: vpaddq ymm12, ymm13, [rip + RD + 64]\n ret\nend:", 8, vec=2)
C("rip-vex3-vpshufb", "start: vpshufb ymm0, ymm1, [rip + RD + 64]\n ret\nend:", 9, vec=2)
C("rip-evex-vmovdqu64", "start: vmovdqu64 zmm0, [rip + RD]\n ret\nend:", 10, vec=3)
C("rip-evex-vpshufd-imm8", "start: vpshufd zmm1, [rip + RD + 64], 0x1b\n ret\nend:", 11, vec=3)
C("rip-evex-bcst", "start: vpaddd zmm3, zmm4, dword ptr [rip + RD + 4]{1to16}\n ret\nend:", 10, vec=3)
C("rip-evex-mask", "start: vmovdqu32 zmm5{k1}{z}, [rip + RD]\n ret\nend:", 10, vec=3)

# ---- import thunks and indirect jumps ----------------------------------------
C("import-thunk", "start: jmp qword ptr [rip + RD + 0x28]\nend:" + PAD16, 6,
  flags=("IMPORT_THUNK", "ENDS_IN_WINDOW"), pokes=((RD + 0x28, CALLPAD),))
C("import-thunk-rexw", "start: rex.w jmp qword ptr [rip + RD + 0x28]\nend:" + PAD16, 7,
  flags=("IMPORT_THUNK", "ENDS_IN_WINDOW"), pokes=((RD + 0x28, CALLPAD),))
C("import-thunk-neg", "start: jmp qword ptr [rip + RD + 0x28]\nend:" + PAD16, 6, tramp="neg",
  flags=("IMPORT_THUNK",), pokes=((RD + 0x28, CALLPAD),))
C("jmp-mem-reg", "start: jmp qword ptr [rcx + 8]\nend:" + PAD16, 3, pokes=((SCRATCH + 0x1700 + 8, CALLPAD),),
  regs={"rcx": [SCRATCH + 0x1700] * 3})

# ---- relative jumps in the window ------------------------------------------
C("jmp32-thunk", "start: jmp start + 0x1000\nend:", 5, flags=("ENDS_IN_WINDOW",))
C("jmp32-thunk-far", "start: jmp start + 0x1000\nend:", 5, tramp="far")
C("jmp8-far", "start: jmp short L\n .fill 0x30,1,0xcc\nL: ret\nend:", 2, tramp="far")
C("test-jz8", "start: test rcx, rcx\n jz start + 0x40\n mov rax, [rcx]\n ret\n .fill 0x40,1,0xcc\nend:", 5,
  regs={"rcx": [0, SCRATCH + 0x100, 0]})
C("cmp-jne8", "start: cmp ecx, 5\n jne start + 0x30\n ret\n .fill 0x30,1,0xcc\nend:", 5,
  regs={"rcx": [5, 6, 5]})
C("test-jle32", "start: test edx, edx\n jle start + 0x200\n ret\nend:", 8,
  regs={"rdx": [0, 1, 0xFFFFFFFF]})
C("test-js8-back", PAD16 + "start: test ecx, ecx\n js start - 0x40\n ret\nend:", 5,
  regs={"rcx": [0x80000000, 1, 0]})
C("jz8-far", "start: test ecx, ecx\n jz start + 0x40\n ret\n .fill 0x40,1,0xcc\nend:", 5, tramp="far",
  regs={"rcx": [0, 1, 0]})
C("jnz32-far", "start: test ecx, ecx\n jnz start + 0x400\n ret\nend:", 8,
  tramp="far", regs={"rcx": [0, 1, 0]})
C("jz8-internal-fwd", "start: jz L\n nop\nL: mov eax, 1\n ret\nend:", 8)      # 2+1+5, jz -> 3
C("loop-back-to-entry", "start: dec ecx\n jnz start\n mov eax, ecx\n ret\nend:", 6,
  regs={"rcx": [3, 1, 2]})
C("loop-back-rel32", "start: dec ecx\n .byte 0x0f, 0x85\n .long start - (. + 4)\n ret\nend:", 8,
  regs={"rcx": [3, 1, 2]})
C("jrcxz", "start: jrcxz start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7,
  regs={"rcx": [0, 1, 0]})
C("jecxz", "start: jecxz start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 8,
  regs={"rcx": [0x100000000, 1, 0]})
C("jrcxz-far", "start: jrcxz start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7,
  tramp="far", regs={"rcx": [0, 1, 0]})
C("loop-out", "start: loop start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7,
  regs={"rcx": [1, 5, 2]})
C("loope-out", "start: loope start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7,
  regs={"rcx": [1, 5, 2]}, nvar=4)
C("loopne-out", "start: loopne start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7,
  regs={"rcx": [1, 5, 2, 7]}, nvar=4)
C("loop-internal", "start: inc eax\n loop start\n nop\n ret\nend:", 5, regs={"rcx": [3, 1, 2]})
C("loop-far", "start: loop start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7,
  tramp="far", regs={"rcx": [1, 5, 2]})

CC = ["o", "no", "b", "ae", "e", "ne", "be", "a", "s", "ns", "p", "np", "l", "ge", "le", "g"]


def jcc_cases(add):
    """Each condition as the first instruction, rel8 and rel32, the rel8
    again with the trampoline far away: the same bytes in either width."""
    for cc in CC:
        add("j%s8-first" % cc, "start: j%s start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:" % cc, 7, nvar=4)
    for cc in CC:
        # force the rel32 encoding with the raw opcode
        add("j%s32-first" % cc, "start: .byte 0x0f, 0x%x\n .long start + 0x400 - (. + 4)\n ret\n"
            "end:" % (0x80 + CC.index(cc)), 6, nvar=4)
    for cc in CC:
        add("j%s8-far" % cc, "start: j%s start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:" % cc, 7,
            tramp="far", nvar=4)


jcc_cases(C)

# ---- calls in the window -----------------------------------------------------
C("call32", "start: call CALLPAD\n ret\nend:", 5, flags=("HAS_CALL_IN_WINDOW",))
C("push-call32", "start: push rbx\n call CALLPAD\n pop rbx\n ret\nend:", 6, flags=("HAS_CALL_IN_WINDOW",))
C("sub-call32", "start: sub rsp, 0x28\n call CALLPAD\n add rsp, 0x28\n ret\nend:", 9,
  flags=("HAS_CALL_IN_WINDOW",))
C("call32-far", "start: push rbx\n call CALLPAD\n pop rbx\n ret\nend:", 6, tramp="far")
C("call32-neg", "start: push rbx\n call CALLPAD\n pop rbx\n ret\nend:", 6, tramp="neg")
C("call32-back", PAD16 + "start: call start - 0x100\n ret\nend:", 5)
C("call-next-pop", "start: call L\nL: pop rax\n ret\nend:", 5)
C("call-rip-mem", "start: call qword ptr [rip + RD + 0x38]\n ret\nend:", 6,
  pokes=((RD + 0x38, CALLPAD),), flags=("HAS_CALL_IN_WINDOW",))
C("call-rip-mem-neg", "start: call qword ptr [rip + RD + 0x38]\n ret\nend:", 6, tramp="neg",
  pokes=((RD + 0x38, CALLPAD),))
C("call-r11", "start: push rbx\n push rsi\n call r11\n ret\nend:", 5, regs={"r11": [CALLPAD] * 3},
  flags=("HAS_CALL_IN_WINDOW",))
C("call-mem-rax", "start: push rbx\n push rdi\n call qword ptr [rax + 0x10]\n ret\nend:", 5,
  pokes=((SCRATCH + 0x1000 + 0x10, CALLPAD),), regs={"rax": [SCRATCH + 0x1000] * 3})
C("call-mem-sib", "start: push rbx\n call qword ptr [rax + rcx*8]\n ret\nend:", 4 + 0, kind="short_pad",
  patch=None, reason="skip")  # placeholder, replaced below
CASES.pop()
C("call-mem-sib", "start: nop\n call qword ptr [rax + rcx*8 + 8]\n ret\nend:", 5,
  pokes=((SCRATCH + 0x1000 + 0x10 * 8 + 8, CALLPAD),), regs={"rax": [SCRATCH + 0x1000] * 3, "rcx": [0x10] * 3})
C("call-then-ret-addr-in-patch", PAD16 + "start: xor eax, eax\n call rax\n ret\nend:", 2,
  kind="short_pad", patch=(-5, 7))
C("call-rsp-mem-skip", "start: call qword ptr [rsp + 8]\n ret\nend:" + PAD16, 0, kind="none",
  reason="unrelocatable")
C("xbegin-skip", "start: xbegin start + 0x40\n ret\n .fill 0x40,1,0xcc\nend:", 0, kind="none",
  reason="unrelocatable")

# ---- what must be refused ------------------------------------------------------
C("too-short-no-pad", "start: xor eax, eax\n ret\nend:", 0, kind="none", reason="too_short")
C("branch-into-patch", "start: mov eax, ecx\nL: dec rax\n jnz L\n ret\nend:", 0, kind="none",
  reason="branch_into_patch")
C("int3-first-skip", "start: int3\n ret\nend:" + PAD16, 0, kind="none", reason="unrelocatable")
C("no-patch-no-padding-opt", "start: xor eax, eax\n ret\nend:" + PAD16, 0, kind="none",
  reason="too_short", opts=("NO_PADDING",))


# ==== 32-bit code (--bits 32; addresses as tests/unit/xrun.h has them for -m32) ====
A32 = 0x41000000
CALLPAD32 = A32 + 0x8000
RD32 = A32 + 0x10000
SCRATCH32 = 0x43000000
TEB32 = 0x45000000
REGS32 = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"]
CASES32 = []


def C32(name, asm, win, **kw):
    C(name, asm, win, cases=CASES32, **kw)


PAD5_32 = ".fill 5,1,0x90\n"
PADGCC32 = ".byte 0x8d,0xb4,0x26,0,0,0,0, 0x8d,0xb4,0x26,0,0,0,0\n"   # i686 gcc's padding (2 x lea esi,[esi+eiz*1+0])   # the hot-patch area of a system DLL: 5 nops before the entry

# ---- plain prologues, absolute operands ------------------------------------------
C32("push-ebp-mov-sub", "start: push ebp\n mov ebp, esp\n sub esp, 0x10\n ret\nend:", 6)   # 1+2+3
C32("push-mov-push-push", "start: push ebp\n mov ebp, esp\n push esi\n push edi\n ret\nend:", 5)
C32("stack-args", "start: mov eax, [esp+4]\n add eax, [esp+8]\n ret 8\nend:", 8)
C32("sub-esp-imm32", "start: sub esp, 0x200\n ret\nend:", 6)
C32("abs-load-moffs", "start: mov eax, dword ptr [RD + 0x40]\n ret\nend:", 5)
C32("abs-store-imm", "start: mov dword ptr [RD + 0x44], 0x12345678\n ret\nend:", 10)
C32("abs-cmp-imm8", "start: cmp dword ptr [RD + 8], 0\n ret\nend:", 7)
C32("abs-inc-indexed", "start: inc dword ptr [RD + 0x100 + ecx*4]\n ret\nend:", 7,
    regs={"ecx": [0, 3, 9]})
C32("push-abs-imm", "start: push offset RD + 0x20\n pop eax\n ret\nend:", 5)
C32("lea-abs", "start: lea eax, [RD + 0x18]\n ret\nend:", 6)
C32("fs-teb-self", "start: mov eax, fs:[0x18]\n mov eax, [eax+4]\n ret\nend:", 6)
C32("fs-lasterror-write", "start: mov dword ptr fs:[0x34], 5\n ret\nend:", 11)
C32("lock-xadd", "start: lock xadd [ecx], eax\n ret\nend:" + PAD16, 5, flags=("ENDS_IN_WINDOW",))
C32("x87-in-window", "start: fld1\n faddp st(1), st\n fstp st(0)\n ret\nend:", 6)
C32("sse-in-window", "start: movaps xmm1, xmm0\n addps xmm1, xmm2\n ret\nend:", 6)

# ---- short functions, padding, hot-patch entries ----------------------------
C32("xor-ret-pad", "start: xor eax, eax\n ret\nend:" + PAD16, 3, flags=("ENDS_IN_WINDOW", "USES_PADDING"))
C32("ret-pad", "start: ret\nend:" + PAD16, 1, flags=("ENDS_IN_WINDOW", "USES_PADDING"))
C32("stdcall-ret-pad", "start: ret 12\nend:" + PAD16, 3, flags=("ENDS_IN_WINDOW", "USES_PADDING"))
# i686 gcc pads functions with no-op lea/mov forms, not 0x90/0xcc: a
# 1-byte function of it (`ret`, then `lea esi,[esi+eiz*1+0]`) is hooked
# through that padding (gas's 7-, 4-, 3- and 6-byte fillers, and mov esi,esi)
C32("ret-gccpad7", "start: ret\nend:" + PADGCC32, 1, flags=("ENDS_IN_WINDOW", "USES_PADDING"))
C32("ret-gccpad4", "start: ret\nend: .byte 0x8d,0x74,0x26,0x00, 0x8d,0x76,0x00\n" + PAD16, 1,
    flags=("ENDS_IN_WINDOW", "USES_PADDING"))
C32("ret-gccpad-cs", "start: ret\nend: .byte 0x2e,0x8d,0xb4,0x26,0,0,0,0, 0x89,0xf6\n" + PAD16, 1,
    flags=("ENDS_IN_WINDOW", "USES_PADDING"))
C32("ret-gccpad6", "start: ret\nend: .byte 0x8d,0xbf,0,0,0,0\n" + PAD16, 1, flags=("ENDS_IN_WINDOW", "USES_PADDING"))
# ... but a lea that computes something is code, not padding
C32("ret-lea-not-pad", "start: ret\nend: .byte 0x8d,0x76,0x01\n", 0, kind="none", reason="too_short")
C32("jmp-eax-pad", "start: jmp eax\nend:" + PAD16, 2, flags=("ENDS_IN_WINDOW", "USES_PADDING"),
    regs={"eax": [CALLPAD32] * 3})
# the hot-patch form: 5 nops, mov edi,edi; a function too short for a 5-byte
# jmp (nothing after it) gets `jmp short -7` at its entry and the jmp rel32
# in the nops
C32("hotpatch-short", PAD5_32 + "start: mov edi, edi\n ret\nend:", 2, kind="short_pad", patch=(-5, 7))
C32("hotpatch-short-int3", ".fill 5,1,0xcc\nstart: mov edi, edi\n xor eax, eax\nend:", 2, kind="short_pad",
    patch=(-5, 7))
C32("hotpatch-loop", PAD5_32 + "start: mov edi, edi\nL: mov eax, ecx\n dec ecx\n jnz L\n ret\nend:", 2,
    kind="short_pad", patch=(-5, 7), regs={"ecx": [3, 1, 2]})
C32("hotpatch-full", PAD5_32 + "start: mov edi, edi\n push ebp\n mov ebp, esp\n pop ebp\n ret\nend:", 5)
# (in 32-bit code `dec eax` is one byte: two nops keep `jnz L` out of the
# 5 bytes, a branch from past them into them)
C32("shortpad-after", "start: mov eax, ecx\nL: dec eax\n nop\n nop\n jnz L\n ret\nend:" + PAD16, 2,
    kind="short_pad", patch=(0, 13), regs={"ecx": [3, 1, 2]})
C32("int3-fallback", "start: mov eax, ecx\nL: dec eax\n nop\n nop\n jnz L\n ret\nend:", 2,
    kind="int3", patch=(0, 1), opts=("ALLOW_INT3",))

# ---- rel8/rel32 jumps ------------------------------------------------------------
C32("jmp32-thunk", "start: jmp start + 0x1000\nend:", 5, flags=("ENDS_IN_WINDOW",))
C32("jmp32-thunk-far", "start: jmp start + 0x1000\nend:", 5, tramp="far")
C32("jmp8-far", "start: jmp short L\n .fill 0x30,1,0xcc\nL: ret\nend:", 2, tramp="far")
C32("test-jz8", "start: test ecx, ecx\n jz start + 0x40\n mov eax, [ecx]\n ret\n .fill 0x40,1,0xcc\nend:", 6,
    regs={"ecx": [0, SCRATCH32 + 0x100, 0]})
C32("cmp-jne8", "start: cmp ecx, 5\n jne start + 0x30\n ret\n .fill 0x30,1,0xcc\nend:", 5,
    regs={"ecx": [5, 6, 5]})
C32("test-jle32", "start: test edx, edx\n jle start + 0x200\n ret\nend:", 8, regs={"edx": [0, 1, 0xFFFFFFFF]})
C32("test-js8-back", PAD16 + "start: test ecx, ecx\n js start - 0x40\n ret\nend:", 5,
    regs={"ecx": [0x80000000, 1, 0]})
C32("jz8-far", "start: test ecx, ecx\n jz start + 0x40\n ret\n .fill 0x40,1,0xcc\nend:", 5, tramp="far",
    regs={"ecx": [0, 1, 0]})
C32("jnz32-far", "start: test ecx, ecx\n jnz start + 0x400\n ret\nend:", 8, tramp="far", regs={"ecx": [0, 1, 0]})
C32("jz8-internal-fwd", "start: jz L\n nop\nL: mov eax, 1\n ret\nend:", 8)
C32("loop-back-to-window", "start: dec ecx\n jnz start\n mov eax, ecx\n ret\nend:", 5, regs={"ecx": [3, 1, 2]})
C32("loop-back-rel32", "start: dec ecx\n .byte 0x0f, 0x85\n .long start - (. + 4)\n ret\nend:", 7,
    regs={"ecx": [3, 1, 2]})
# a branch from past the patched bytes to the entry itself enters the hook
# again each time: exact counts (a case of count > 1 runs whole, not only
# its window)
C32("reenter-entry-3", "start: mov edx, 0x11223344\n dec ecx\n jnz start\n ret\nend:", 5,
    regs={"ecx": [3, 3, 3]}, count=3)
C32("reenter-entry-7", "start: mov edx, 0x11223344\n dec ecx\n jnz start\n ret\nend:", 5,
    regs={"ecx": [7, 7, 7]}, count=7, tramp="far")
jcc_cases(C32)

# ---- jecxz, jcxz, loop*: rel8 only, rewritten through a short island -----------
C32("jecxz", "start: jecxz start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7, regs={"ecx": [0, 1, 0]})
C32("jcxz", "start: jcxz start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 8,
    regs={"ecx": [0x10000, 1, 0]})
C32("jecxz-far", "start: jecxz start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7, tramp="far",
    regs={"ecx": [0, 1, 0]})
C32("jecxz-neg", "start: jecxz start - 0x40\n mov eax, 1\n ret\nend:", 7, tramp="neg", regs={"ecx": [0, 1, 0]})
C32("loop-out", "start: loop start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7,
    regs={"ecx": [1, 5, 2]})
C32("loope-out", "start: loope start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7,
    regs={"ecx": [1, 5, 2]}, nvar=4)
C32("loopne-out", "start: loopne start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7,
    regs={"ecx": [1, 5, 2, 7]}, nvar=4)
C32("loop-internal", "start: inc eax\n loop start\n nop\n ret\nend:", 5, regs={"ecx": [3, 1, 2]},
    flags=("ENDS_IN_WINDOW",))
C32("loop-far", "start: loop start + 0x40\n mov eax, 1\n ret\n .fill 0x40,1,0xcc\nend:", 7, tramp="far",
    regs={"ecx": [1, 5, 2]})

# ---- calls, and position-dependent code ---------------------------------------
C32("call32", "start: call CALLPAD\n ret\nend:", 5, flags=("HAS_CALL_IN_WINDOW",))
C32("push-call32", "start: push ebx\n call CALLPAD\n pop ebx\n ret\nend:", 6, flags=("HAS_CALL_IN_WINDOW",))
C32("call32-far", "start: push ebx\n call CALLPAD\n pop ebx\n ret\nend:", 6, tramp="far")
C32("call32-neg", "start: push ebx\n call CALLPAD\n pop ebx\n ret\nend:", 6, tramp="neg")
C32("call-abs-mem", "start: call dword ptr [RD + 0x38]\n ret\nend:", 6, pokes=((RD32 + 0x38, CALLPAD32),),
    flags=("HAS_CALL_IN_WINDOW",))
C32("call-eax", "start: push ebx\n push esi\n push edi\n call eax\n ret\nend:", 5, regs={"eax": [CALLPAD32] * 3},
    flags=("HAS_CALL_IN_WINDOW",))
C32("call-mem-eax", "start: push ebx\n push edi\n call dword ptr [eax + 0x10]\n ret\nend:", 5,
    pokes=((SCRATCH32 + 0x1000 + 0x10, CALLPAD32),), regs={"eax": [SCRATCH32 + 0x1000] * 3})
# call/pop: eax gets the original address, as the code expects
C32("call-next-pop", "start: call L\nL: pop eax\n ret\nend:", 5)
C32("call-pop-got", "start: call L\nL: pop ebx\n add ebx, offset RD - L\n mov eax, [ebx + 0x40]\n ret\nend:", 5)
# __x86.get_pc_thunk.bx (before the entry, in the bytes both runs have): ebx
# is the address after the call in the original function
C32("get-pc-thunk-call", "THUNK: mov ebx, [esp]\n ret\n .fill 12,1,0xcc\n"
    "start: push ebx\n call THUNK\n add ebx, offset RD - .\n ret\nend:", 6, flags=("HAS_CALL_IN_WINDOW",))
C32("get-pc-thunk-itself", "start: mov ebx, [esp]\n ret\nend:" + PAD16, 4, flags=("ENDS_IN_WINDOW", "USES_PADDING"))
# the WOW64 system call gate of Windows 7's 32-bit ntdll: call through the TEB
C32("call-fs-wow64-gate", "start: call dword ptr fs:[0xc0]\n ret 8\nend:", 7, pokes=((TEB32 + 0xC0, CALLPAD32),),
    flags=("HAS_CALL_IN_WINDOW",))
C32("import-thunk", "start: jmp dword ptr [RD + 0x28]\nend:" + PAD16, 6,
    flags=("IMPORT_THUNK", "ENDS_IN_WINDOW"), pokes=((RD32 + 0x28, CALLPAD32),))

# ---- what must be refused, each with its reason ---------------------------------------
C32("branch-into-patch", "start: mov eax, ecx\nL: dec eax\n nop\n nop\n jnz L\n ret\nend:", 0, kind="none",
    reason="branch_into_patch")
C32("loop-into-patch", "start: mov eax, ecx\nL: inc edx\n nop\n nop\n loop L\n ret\nend:", 0, kind="none",
    reason="branch_into_patch")
C32("jump-table-into-patch", "start: mov eax, ecx\nL: inc edx\n cmp eax, 1\n ja X\n"
    " jmp dword ptr [TABLE + eax*4]\nX: ret\nend:\nTABLE: .long L, X\n", 0, kind="none",
    reason="branch_into_patch")
C32("jump-table-elsewhere", "start: push ebx\n mov eax, ecx\n cmp eax, 1\n ja X\n"
    " jmp dword ptr [TABLE + eax*4]\nY: inc edx\nX: pop ebx\n ret\nend:\nTABLE: .long Y, X\n", 6,
    flags=("JUMP_TABLE",), opts=("FULL",), regs={"ecx": [0, 1, 2]})
C32("call-esp-mem", "start: call dword ptr [esp + 8]\n ret\nend:" + PAD16, 0, kind="none", reason="unrelocatable")
C32("too-short-no-pad", "start: xor eax, eax\n ret\nend:", 0, kind="none", reason="too_short")
C32("int3-first", "start: int3\n ret\nend:" + PAD16, 0, kind="none", reason="unrelocatable")


def assemble(asm, bits):
    src = ".intel_syntax noprefix\n.text\n.set RD, start+0x10000\n.set CALLPAD, start+0x8000\n" + asm + "\n"
    with tempfile.TemporaryDirectory() as d:
        s, o, b = (os.path.join(d, x) for x in ("a.s", "a.o", "a.bin"))
        open(s, "w").write(src)
        subprocess.run(["as", "--%d" % bits, s, "-o", o], check=True)
        syms = {}
        for line in subprocess.run(["nm", o], check=True, capture_output=True, text=True).stdout.splitlines():
            parts = line.split()
            if len(parts) == 3:
                syms[parts[2]] = int(parts[0], 16)
        if bits == 32:
            # absolute addresses (operands, jump tables) as at the harness's
            # entry: linked with `start` at A32
            e = os.path.join(d, "a.elf")
            subprocess.run(["ld", "-m", "elf_i386", "-Ttext=0x%x" % (A32 - syms["start"]), "-e", "0", o,
                            "-o", e], check=True)
            o = e
        subprocess.run(["objcopy", "-O", "binary", "-j", ".text", o, b], check=True)
        data = open(b, "rb").read()
    return data, syms["start"], syms["end"]


def main():
    bits = 32 if sys.argv[1:] == ["--bits", "32"] else 64
    cases, regs_of = (CASES32, REGS32) if bits == 32 else (CASES, REGS)
    out = sys.stdout
    out.write("/* Generated by tests/unit/gen_exec_cases.py%s - do not edit. */\n" % (" --bits 32" * (bits == 32)))
    out.write("#include <stdint.h>\n\n")
    rows = []
    names = set()
    for i, c in enumerate(cases):
        assert c["name"] not in names, c["name"]
        names.add(c["name"])
        data, st, en = assemble(c["asm"], bits)
        out.write("static const uint8_t ec_bytes_%d[] = {" % i)
        out.write(",".join("0x%02x" % x for x in data))
        out.write("};\n")
        regs = list(c["regs"].items())
        assert len(regs) <= 2
        reg_idx = [regs_of.index(r) for r, _ in regs] + [-1] * (2 - len(regs))
        reg_vals = [(v + [v[-1]] * 4)[:4] for _, v in regs] + [[0] * 4] * (2 - len(regs))
        pokes = list(c["pokes"]) + [(0, 0)] * (2 - len(c["pokes"]))
        patch = c["patch"]
        if patch is None:
            patch = {"jmp32": (0, 5), "int3": (0, 1)}.get(c["kind"], (0, 0))
        flags = "|".join("HS_FN_" + f for f in c["flags"]) or "0"
        opts = "|".join("HS_ANALYZE_" + f for f in c["opts"]) or "0"
        asm_text = c["asm"].replace("\\", "\\\\").replace('"', '\\"').replace("\n", "; ")
        rows.append(
            '    { "%s", "%s", ec_bytes_%d, %d, %d, %d, %s, %s, HS_%s, HS_PATCH_%s, %d, %d, %d, %s, %s, '
            '%d, %d, {%d, %d}, {{%s}, {%s}}, %d, {0x%xull, 0x%xull}, {0x%xull, 0x%xull}, %d },\n'
            % (c["name"], asm_text, i, st, en - st, len(data) - en,
               {"near": "XR_T_NEAR", "neg": "XR_T_NEG", "far": "XR_T_FAR"}[c["tramp"]], opts,
               "OK" if c["reason"] == "ok" else "SKIP_" + c["reason"].upper(),
               c["kind"].upper(), c["win"], patch[0], patch[1],
               "HS_OK" if c["tramp_fail"] == "ok" else "HS_SKIP_" + c["tramp_fail"].upper(),
               flags, c["nvar"], c["vec"], reg_idx[0], reg_idx[1],
               ", ".join("0x%xull" % v for v in reg_vals[0]), ", ".join("0x%xull" % v for v in reg_vals[1]),
               len(c["pokes"]), pokes[0][0], pokes[1][0], pokes[0][1], pokes[1][1], c["count"]))
    out.write("\nstatic const struct exec_case exec_cases[] = {\n")
    out.writelines(rows)
    out.write("};\n")


if __name__ == "__main__":
    main()
