/* elevation: prints how elevated its own token is ("elevation-type N
 * elevated N": TokenElevationType 1 default, 2 full, 3 limited), for the
 * tests of the rights an elevated hookscope gives its target
 * (tests/test_rights.py). */
#include <stdio.h>
#include <windows.h>

__attribute__((noinline)) int report(void)
{
    HANDLE t;
    TOKEN_ELEVATION_TYPE type = 0;
    TOKEN_ELEVATION e = { 0 };
    DWORD n;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t))
        return 1;
    GetTokenInformation(t, TokenElevationType, &type, sizeof type, &n);
    GetTokenInformation(t, TokenElevation, &e, sizeof e, &n);
    printf("elevation-type %d elevated %lu\n", (int)type, (unsigned long)e.TokenIsElevated);
    CloseHandle(t);
    return 0;
}

int main(void)
{
    return report();
}
