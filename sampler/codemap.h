/*
 * sampler/codemap.h - the target's code as a sampler needs it: the images
 * loaded in it (headers and .pdata read once from its memory), hookscope's
 * own code in it (the arenas of stubs and trampolines with their unwind
 * tables, the agent), and a cache of its memory by page. It answers the
 * unwinder's questions (what code is at an address, the bytes there) and
 * turns an unwound stack into what the profile shows: frames of the agent
 * dropped, stub and trampoline frames replaced by the hooked function
 * they serve.
 *
 * Target memory is read through a callback (ReadProcessMemory in the
 * backend, a synthetic image in the unit tests). Plain C.
 */
#ifndef HOOKSCOPE_SAMPLER_CODEMAP_H
#define HOOKSCOPE_SAMPLER_CODEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook/unwind/cfi32.h"
#include "hook/unwind/fpo32.h"
#include "hook/unwind/unwind32.h"
#include "hook/unwind/unwinder.h"
#include "sampler/sampler.h"

/* Read len bytes of the target at addr: 0, or -1. */
typedef int (*hs_mem_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

typedef struct hs_image {
    uint64_t base;
    uint32_t size, timestamp;
    char *path;                /* UTF-8 */
    uint32_t *pdata;           /* RUNTIME_FUNCTION triples, sorted by begin */
    size_t npdata;
    bool unloaded, agent;
    bool seen;                 /* the last enumeration listed it */
    hs_cfi32 *cfi;             /* an i386 image's call-frame information (hs_codemap_set_frames) */
    hs_fpo32 *fpo;             /* its PDB's frame data (FPO, FrameData) */
    bool frames_tried;         /*   both looked for */
} hs_image;

typedef struct hs_codemap hs_codemap;

hs_codemap *hs_codemap_new(hs_mem_read_fn read, void *ctx);
void hs_codemap_free(hs_codemap *m);

/* An image loaded at base (its headers and .pdata are read now; an image
 * already known at that base with the same size is kept). Returns it, or
 * NULL when its headers cannot be read. */
hs_image *hs_codemap_add_image(hs_codemap *m, uint64_t base, uint32_t size, const char *path, bool agent);
/* An i386 image's frame data for the x86 walker, from its file and its
 * PDB (the caller's to find: an image's `.eh_frame` is named in the COFF
 * string table, which is not mapped): its call-frame information and its
 * PDB's FPO and FrameData records; the map owns them (NULL: none; not
 * looked for again). Where both cover an address the PDB's is used. */
void hs_codemap_set_frames(hs_codemap *m, hs_image *im, hs_cfi32 *cfi, hs_fpo32 *fpo);
/* Where the PDB frame data of an i386 image comes from (its file's path,
 * UTF-8 -> a table the map then owns, or NULL); NULL: from nowhere. */
typedef hs_fpo32 *(*hs_pdb_frames_fn)(void *ctx, const char *path);
void hs_codemap_set_pdb_frames(hs_codemap *m, hs_pdb_frames_fn fn, void *ctx);
hs_fpo32 *hs_codemap_pdb_frames(hs_codemap *m, const char *path);
/* Mark every image unseen; images not marked seen again by add_image
 * before hs_codemap_sweep are unloaded (they stay, for naming, but no
 * longer match addresses). */
void hs_codemap_begin_enum(hs_codemap *m);
void hs_codemap_sweep(hs_codemap *m);
size_t hs_codemap_images(const hs_codemap *m, const hs_image **out);

/* hookscope's own code (replaces what was set before; the arenas' unwind
 * tables are read now). */
void hs_codemap_set_own(hs_codemap *m, const hs_owncode *own);
bool hs_codemap_own_thread(const hs_codemap *m, uint32_t tid);

/* Forget cached memory (code that may have changed). */
void hs_codemap_flush(hs_codemap *m);

/* The target's bits: 64 (the default), or 32 (i386 code: its system-call
 * stubs, hs_codemap_at_syscall). */
void hs_codemap_set_bits(hs_codemap *m, int bits);

/* The unwinder's environment over this map. */
hs_uw_env hs_codemap_env(hs_codemap *m);
/* The x86 walker's (hook/unwind/unwind32.h): code is what a loaded image
 * covers; frame data from its call-frame information (hs_codemap_set_cfi). */
hs_uw32_env hs_codemap_env32(hs_codemap *m);

/* Target memory through the page cache: 0, or -1. */
int hs_codemap_read(hs_codemap *m, uint64_t addr, void *buf, size_t len);

/* What a sampled stack is, by where it stands. */
enum hs_attribution {
    HS_ATTR_PROGRAM = 0,       /* the program's own code */
    HS_ATTR_HOOKSCOPE,         /* hookscope's own work in the target: an entry stub or its
                                  slow path, the timing wrapper, a probe and whatever it
                                  calls (an entry-stack capture's unwinding) */
};

/* Turn an unwound stack (frames[0..n), leaf first, with the leaf's
 * registers, or NULL) into what the profile shows: hookscope's frames
 * left out; a trampoline frame is the function it serves. *attr says
 * whose work the sample shows: for hookscope's, frame 0 is the function
 * its code served (a stub's, the timed one's in the wrapper, the one
 * whose probe called out), then that function's callers. Returns the
 * frames kept (0: none). */
uint32_t hs_codemap_attribute(const hs_codemap *m, const hs_uw_regs *leaf, uint64_t *frames, uint32_t n, int *attr);

/* Does pc stand right after a system call in an image (`syscall; ret`,
 * `int 2e; ret`: ntdll's and win32u's system-call stubs; in i386 code
 * the `ret` after `call edx` of `mov eax,N; mov edx,X; call edx; ret N`,
 * or the `add esp,4` after Windows 7's `call fs:[0C0h]`: where the 32-bit
 * context of a WOW64 thread in a system call stands, on Windows and
 * under Wine 8), where a thread blocked in the system is seen? */
bool hs_codemap_at_syscall(hs_codemap *m, uint64_t pc);

/* Is a in the agent DLL (hs_codemap_set_own)? */
bool hs_codemap_in_agent(const hs_codemap *m, uint64_t a);
/* The rvas in ntdll of system calls that never block (NtContinue,
 * NtYieldExecution, NtTestAlert: at most 8): a thread at their return is
 * not waiting (hookscope's own ntdll is the target's). */
void hs_codemap_set_quick(hs_codemap *m, const uint32_t *rvas, size_t n);

/* Is addr hookscope's code (an arena or the agent)? */
bool hs_codemap_is_own(const hs_codemap *m, uint64_t addr);

#endif
