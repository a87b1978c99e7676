/*
 * bench/nulldll.c - a DLL that does nothing, for what a DLL's mere
 * presence costs each thread's start and end (bench/run.py dll-presence).
 * Built four ways (bench/bench.mk): with mingw's DLL startup, which brings
 * a TLS directory (the loader allocates TLS and runs TLS callbacks for
 * every new thread), or with no startup code and so no TLS directory; and
 * with thread notifications, or with DisableThreadLibraryCalls (-DNO_THREAD_CALLS).
 */
#include <windows.h>

#ifdef NO_CRT
#define ENTRY nulldll_entry   /* the image's entry point (-e): no CRT around it */
#else
#define ENTRY DllMain
#endif

BOOL WINAPI ENTRY(HINSTANCE self, DWORD reason, LPVOID reserved)
{
    (void)self;
    (void)reserved;
#ifdef NO_THREAD_CALLS
    if (reason == DLL_PROCESS_ATTACH)
        DisableThreadLibraryCalls(self);
#else
    (void)reason;
#endif
    return TRUE;
}
