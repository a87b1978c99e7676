/*
 * relayload: loads relay1.dll, calls its relay(ping), frees it, then the
 * same with relay2.dll (tests/targets/relaydll.c: both at one base, relay's
 * return address from ping at the same address, behind frames of
 * different sizes). ping's entry stack is ping, relay, through, main, ...
 * both times. Prints where each DLL was and the pings; exits 0 when both
 * DLLs were at one base and ping ran twice.
 */
#include <stdio.h>
#include <windows.h>

typedef void (*relay_fn)(void (*)(void));

static volatile int pings;

__attribute__((noinline)) void ping(void)
{
    pings++;
}

__attribute__((noinline)) static HMODULE through(const wchar_t *dll)
{
    HMODULE m = LoadLibraryW(dll);
    relay_fn relay = m ? (relay_fn)(void (*)(void))GetProcAddress(m, "relay") : NULL;
    if (!relay) {
        printf("cannot load %ls or find its relay (%lu)\n", dll, GetLastError());
        return NULL;
    }
    relay(ping);
    if (!FreeLibrary(m))
        printf("cannot free %ls (%lu)\n", dll, GetLastError());
    return m;
}

int main(void)
{
    HMODULE a = through(L"relay1.dll");
    HMODULE b = through(L"relay2.dll");
    printf("one base: %d\npings: %d\n", a && a == b, pings);
    return a && a == b && pings == 2 ? 0 : 1;
}
