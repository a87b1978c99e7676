/*
 * agent/tls.c - a thread's TLS slot: at a fixed TEB offset, read by every
 * entry stub, it points at the counters of the thread's region (regions.c).
 * While the agent itself works on a thread, the slot points at the sink,
 * so that calls the agent makes into hooked modules are neither counted
 * nor recursive.
 */
#include <string.h>

#include "agent/agent.h"

void *hs_tls_get(void)
{
    DWORD i = g_hs.tls;
    if (i < 64)
        return (void *)(uintptr_t)hs_teb_read(HS_TEB_TLS_SLOTS + i * sizeof(void *));
    void **exp = (void **)(uintptr_t)hs_teb_read(HS_TEB_TLS_EXPANSION);
    return exp ? exp[i - 64] : NULL;
}

void hs_tls_set(void *v)
{
    DWORD i = g_hs.tls;
    if (i < 64) {
        hs_teb_write(HS_TEB_TLS_SLOTS + i * sizeof(void *), (uint64_t)(uintptr_t)v);
        return;
    }
    void **exp = (void **)(uintptr_t)hs_teb_read(HS_TEB_TLS_EXPANSION);
    if (exp)
        exp[i - 64] = v;
    else
        TlsSetValue(i, v);  /* allocates the expansion slots */
}

void *hs_agent_enter(void)
{
    void *prev = hs_tls_get();
    hs_tls_set(g_hs.sink);
    return prev;
}

void hs_agent_leave(void *prev)
{
    hs_tls_set(prev);
}
