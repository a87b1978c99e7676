/*
 * hook/base/x64.h - x86-64 general registers by their encoding number (as
 * in ModRM, REX, unwind codes and CONTEXT order): one numbering for the
 * code writer, the unwinder and the sampler.
 */
#ifndef HOOKSCOPE_BASE_X64_H
#define HOOKSCOPE_BASE_X64_H

enum hs_x64_reg {
    HS_RAX = 0, HS_RCX, HS_RDX, HS_RBX, HS_RSP, HS_RBP, HS_RSI, HS_RDI,
    HS_R8, HS_R9, HS_R10, HS_R11, HS_R12, HS_R13, HS_R14, HS_R15,
};

#endif
