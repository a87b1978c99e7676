/*
 * injector/trace/owncode.h - what a sampler must know of hookscope's own
 * code and threads in the target, read live from the session while the
 * target runs: the agent DLL, each hooked module's arena (stubs,
 * trampolines, the unwind table registered for them), each hooked
 * function's slot, the threads hookscope started there, and the modules
 * the agent recorded (so that the sampler need not list them from
 * outside, which under Wine costs a ptrace attach per read). The sampler
 * calls it from its own thread, while the agent still writes the session
 * (read as untrusted input, profile/from_session.h).
 */
#ifndef HOOKSCOPE_OWNCODE_H
#define HOOKSCOPE_OWNCODE_H

#include <stdint.h>

#include "sampler/sampler.h"

struct hs_session_host;

typedef struct hs_owncode_src {
    const struct hs_session_host *session;
    uint64_t signature;        /* of what was last handed out */
} hs_owncode_src;

/* An hs_sampler_config.own callback: ctx is an hs_owncode_src. Fills *o
 * and returns 1 when something changed since the last call, else 0. */
int hs_owncode_read(void *ctx, hs_owncode *o);
/* An hs_sampler_config.true_returns callback (ctx as above). */
size_t hs_owncode_true_returns(void *ctx, uint32_t tid, hs_true_return *out, size_t cap);

#endif
