/*
 * injector/launcher/dtrace_main.c - hookscope-dtrace.exe: `hookscope
 * dtrace` as a program of its own, for tools that run a DTRACE program
 * (cargo-flamegraph). It runs hookscope.exe from its own folder with
 * "dtrace" and its own command line after its name, verbatim (so the
 * quoting reaches hookscope as it came), on the same console and
 * standard handles, and exits with its exit code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>
#include <windows.h>

/* The command line after the program's name (the C runtime's rule for
 * argv[0]: up to the closing quote, else the first blank). */
static const wchar_t *after_program(const wchar_t *s)
{
    if (*s == L'"') {
        s++;
        while (*s && *s != L'"')
            s++;
        if (*s)
            s++;
    } else {
        while (*s && *s != L' ' && *s != L'\t')
            s++;
    }
    while (*s == L' ' || *s == L'\t')
        s++;
    return s;
}

int wmain(void)
{
    wchar_t self[MAX_PATH * 2];
    DWORD n = GetModuleFileNameW(NULL, self, MAX_PATH * 2);
    if (!n || n >= MAX_PATH * 2) {
        fprintf(stderr, "hookscope-dtrace: cannot find its own path\n");
        return 125;
    }
    wchar_t *slash = wcsrchr(self, L'\\');
    if (slash)
        slash[1] = 0;
    else
        self[0] = 0;
    const wchar_t *tail = after_program(GetCommandLineW());
    size_t len = wcslen(self) + wcslen(tail) + 64;
    wchar_t *exe = malloc(len * sizeof *exe), *cmd = malloc(len * sizeof *cmd);
    if (!exe || !cmd)
        return 125;
    swprintf(exe, len, L"%lshookscope.exe", self);
    swprintf(cmd, len, L"\"%ls\" dtrace %ls", exe, tail);
    if (GetFileAttributesW(exe) == INVALID_FILE_ATTRIBUTES) {
        fprintf(stderr, "hookscope-dtrace: hookscope.exe is not beside it (%ls)\n", exe);
        return 125;
    }
    STARTUPINFOW si;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
    si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    for (int i = 0; i < 3; i++) {
        HANDLE h = i == 0 ? si.hStdInput : i == 1 ? si.hStdOutput : si.hStdError;
        if (h && h != INVALID_HANDLE_VALUE)
            SetHandleInformation(h, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
    }
    /* Ctrl+C is hookscope's to handle; this one waits for it */
    SetConsoleCtrlHandler(NULL, TRUE);
    PROCESS_INFORMATION pi;
    if (!CreateProcessW(exe, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
        fprintf(stderr, "hookscope-dtrace: cannot start %ls (error %lu)\n", exe, GetLastError());
        return 125;
    }
    CloseHandle(pi.hThread);
    WaitForSingleObject(pi.hProcess, INFINITE);
    DWORD code = 125;
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hProcess);
    return (int)code;
}
