/*
 * injector/trace/owncode.c - hookscope's code in the target, from the
 * session (see owncode.h).
 */
#include "injector/trace/owncode.h"

#include "injector/profile/from_session.h"
#include "injector/trace/session_host.h"

int hs_owncode_read(void *ctx, hs_owncode *o)
{
    hs_owncode_src *own = ctx;
    hs_session_src src = hs_session_host_src(own->session);
    return hs_session_owncode(&src, o, &own->signature);
}

size_t hs_owncode_true_returns(void *ctx, uint32_t tid, hs_true_return *out, size_t cap)
{
    hs_owncode_src *own = ctx;
    hs_session_src src = hs_session_host_src(own->session);
    return hs_session_true_returns(&src, tid, out, cap);
}
