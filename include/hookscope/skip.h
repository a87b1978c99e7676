/*
 * hookscope/skip.h - why a function is not hooked, how it is hooked, and why
 * a hooked function only gets an entry probe instead of the full wrapper.
 *
 * These codes cross the process boundary (the agent writes them into the
 * session, the injector prints them), so their values never change; new
 * codes are appended.
 */
#ifndef HOOKSCOPE_SKIP_H
#define HOOKSCOPE_SKIP_H

/* Why a function was not hooked. HS_OK means it was (or can be). */
typedef enum hs_skip_reason {
    HS_OK = 0,
    HS_SKIP_TOO_SHORT = 1,        /* function and usable padding shorter than any patch */
    HS_SKIP_BRANCH_INTO_PATCH = 2,/* a branch targets the bytes a patch would overwrite */
    HS_SKIP_JUMP_TABLE = 3,       /* indirect jump whose targets could not be bounded */
    HS_SKIP_UNDECODABLE = 4,      /* capstone could not decode an instruction of the window */
    HS_SKIP_UNRELOCATABLE = 5,    /* an instruction of the window cannot run elsewhere */
    HS_SKIP_OUT_OF_RANGE = 6,     /* a relative target does not reach from the trampoline */
    HS_SKIP_NOT_CODE = 7,         /* entry is not inside an executable section */
    HS_SKIP_AGENT = 8,            /* the agent itself depends on this function */
    HS_SKIP_NO_ARENA = 9,         /* no trampoline memory within +-2 GB of the module */
    HS_SKIP_PATCH_FAILED = 10,    /* writing the patch failed (protection, race) */
    HS_SKIP_OVERLAP = 11,         /* overlaps another function's patch */
    HS_SKIP_FILTERED = 12,        /* excluded by the user's filter */
    HS_SKIP_LIMIT = 13,           /* over the session's function capacity */
    HS_SKIP_X86 = 14,             /* i386 code in a 64-bit process (no agent runs 32-bit code yet) */
    HS_SKIP_BOUNDS = 15,          /* only the start is known (a call's target, a hot-patch entry, a
                                     symbol): the window's branches cannot be checked against its end */
    HS_SKIP__COUNT
} hs_skip_reason;

/* How a hooked function's entry was redirected. */
typedef enum hs_patch_kind {
    HS_PATCH_NONE = 0,
    HS_PATCH_JMP32 = 1,      /* 5-byte jmp rel32 at the entry */
    HS_PATCH_SHORT_PAD = 2,  /* 2-byte jmp rel8 at the entry to a jmp rel32 in nearby padding */
    HS_PATCH_INT3 = 3,       /* 1-byte int3 at the entry, redirected by a vectored handler */
    HS_PATCH__COUNT
} hs_patch_kind;

/* Why a hooked function gets only an entry probe (no return probe / timing). */
typedef enum hs_entry_only_reason {
    HS_WRAP_OK = 0,
    HS_WRAP_VARARGS = 1,         /* walks its caller's argument area (va_list) */
    HS_WRAP_STACK_ARGS = 2,      /* more stack arguments than the wrapper copies */
    HS_WRAP_RETURNS_TWICE = 3,   /* setjmp and friends */
    HS_WRAP_STACK_PROBE = 4,     /* __chkstk, alloca helpers: non-standard convention */
    HS_WRAP_ARGS_ADDRESS = 5,    /* takes the address of its incoming argument area */
    HS_WRAP_NO_UNWIND = 6,       /* no unwind info: cannot tell its frame */
    HS_WRAP_AGENT = 7,           /* the agent itself calls it */
    HS_WRAP_NOT_A_FUNCTION = 8,  /* a fragment entered by jump, not by call */
    HS_WRAP_LOOPS_TO_ENTRY = 9,  /* jumps back to its own entry (a loop through the hook) */
    HS_WRAP_UNKNOWN_ARGS = 10,   /* its stack use could not be followed */
    HS_WRAP_TAIL_JUMP = 11,      /* tail-jumps to code whose use of the stack it hands
                                    on cannot be bounded (a function pointer, varargs) */
    HS_WRAP_DWARF_EH = 12,       /* (32-bit) its image's C++ exceptions unwind by return
                                    address (DWARF-2), which the return thunk would end */
    HS_WRAP__COUNT
} hs_entry_only_reason;

/* Names used in reports and in `hookscope functions`: short, kebab-case. */
static inline const char *hs_skip_reason_name(int r)
{
    static const char *const names[HS_SKIP__COUNT] = {
        "ok", "too-short", "branch-into-patch", "unresolved-jump-table",
        "undecodable", "unrelocatable-instruction", "target-out-of-range",
        "not-executable", "agent-dependency", "no-arena", "patch-failed",
        "overlap", "filtered", "over-capacity", "i386-code", "bounds-unknown",
    };
    return (r >= 0 && r < HS_SKIP__COUNT) ? names[r] : "unknown";
}

static inline const char *hs_patch_kind_name(int k)
{
    static const char *const names[HS_PATCH__COUNT] = {
        "none", "jmp32", "short-jmp-to-padding", "int3",
    };
    return (k >= 0 && k < HS_PATCH__COUNT) ? names[k] : "unknown";
}

static inline const char *hs_entry_only_name(int r)
{
    static const char *const names[HS_WRAP__COUNT] = {
        "ok", "varargs", "too-many-stack-args", "returns-twice", "stack-probe",
        "args-address-taken", "no-unwind-info", "agent-dependency", "not-a-function",
        "loops-to-entry", "unknown-stack-args", "tail-jump-stack-args", "dwarf-exceptions",
    };
    return (r >= 0 && r < HS_WRAP__COUNT) ? names[r] : "unknown";
}

#endif
