/*
 * objprobe.c - another process of the user, looking for hookscope's
 * objects the way a squatter or a snoop would (tests/test_session_guard.py).
 *
 * PID may be an exe's file name instead (its first process).
 *
 *   objprobe list PID     the named objects of this session whose names
 *                         contain "hookscope" ("named NAME" lines, after a
 *                         self-check: an event it names itself must be
 *                         listed), and whether the names hookscope once gave
 *                         the session and its events for PID open ("open
 *                         NAME yes|no")
 *   objprobe squat PID    create those names first (a section and two
 *                         events), print "squatting", hold them until stdin
 *                         closes
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <windows.h>
#include <tlhelp32.h>
#include <winternl.h>

typedef struct dir_info {
    UNICODE_STRING name, type;
} dir_info;

NTSTATUS NTAPI NtOpenDirectoryObject(HANDLE *h, ACCESS_MASK access, OBJECT_ATTRIBUTES *attr);
NTSTATUS NTAPI NtQueryDirectoryObject(HANDLE h, void *buf, ULONG len, BOOLEAN single, BOOLEAN restart,
                                      ULONG *context, ULONG *ret);

static const wchar_t *const old_names[] = { L"Local\\hookscope-session-%lu", L"Local\\hookscope-fnreq-%lu",
                                            L"Local\\hookscope-fnans-%lu" };

/* Print the names containing `needle` in this session's BaseNamedObjects;
 * returns how many there are, -1 if the directory cannot be listed. */
static int list_named(const wchar_t *needle, int print)
{
    DWORD sid = 0;
    ProcessIdToSessionId(GetCurrentProcessId(), &sid);
    wchar_t path[64];
    swprintf(path, 64, L"\\Sessions\\%lu\\BaseNamedObjects", (unsigned long)sid);
    UNICODE_STRING us;
    RtlInitUnicodeString(&us, path);
    OBJECT_ATTRIBUTES oa;
    InitializeObjectAttributes(&oa, &us, 0, NULL, NULL);
    HANDLE dir;
    if (NtOpenDirectoryObject(&dir, 0x1 /* DIRECTORY_QUERY */, &oa) != 0)
        return -1;
    static uint8_t buf[1 << 16];
    ULONG context = 0, ret = 0;
    int found = 0;
    BOOLEAN restart = TRUE;
    while (NtQueryDirectoryObject(dir, buf, sizeof buf, TRUE, restart, &context, &ret) == 0) {
        restart = FALSE;
        const dir_info *e = (const dir_info *)buf;
        wchar_t name[512];
        size_t n = e->name.Length / 2 < 511 ? e->name.Length / 2 : 511;
        memcpy(name, e->name.Buffer, n * 2);
        name[n] = 0;
        if (wcsstr(name, needle)) {
            found++;
            if (print)
                printf("named %ls\n", name);
        }
    }
    CloseHandle(dir);
    return found;
}

static unsigned long pid_of(const char *arg)
{
    if (strspn(arg, "0123456789") == strlen(arg))
        return strtoul(arg, NULL, 10);
    HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
    PROCESSENTRY32 pe = { .dwSize = sizeof pe };
    unsigned long found = 0;
    for (BOOL ok = Process32First(snap, &pe); ok && !found; ok = Process32Next(snap, &pe))
        if (!_stricmp(pe.szExeFile, arg))
            found = pe.th32ProcessID;
    CloseHandle(snap);
    return found;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 3)
        return 2;
    unsigned long pid = pid_of(argv[2]);
    printf("pid %lu\n", pid);
    wchar_t name[3][64];
    for (int i = 0; i < 3; i++)
        swprintf(name[i], 64, old_names[i], pid);
    if (!strcmp(argv[1], "squat")) {
        HANDLE s = CreateFileMappingW(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE, 0, 1 << 16, name[0]);
        HANDLE a = CreateEventW(NULL, FALSE, FALSE, name[1]), b = CreateEventW(NULL, FALSE, FALSE, name[2]);
        if (!s || !a || !b)
            return 1;
        printf("squatting\n");
        char line[16];
        while (fgets(line, sizeof line, stdin))
            ;
        return 0;
    }
    /* the listing works: it shows a name of our own */
    HANDLE self = CreateEventW(NULL, TRUE, FALSE, L"Local\\objprobe-self-check-hookscope");
    if (!self || list_named(L"objprobe-self-check", 0) != 1) {
        printf("cannot list named objects\n");
        return 1;
    }
    CloseHandle(self);
    int n = list_named(L"hookscope", 1);
    printf("named-count %d\n", n);
    HANDLE h = OpenFileMappingW(FILE_MAP_READ, FALSE, name[0]);
    printf("open %ls %s\n", name[0], h ? "yes" : "no");
    for (int i = 1; i < 3; i++) {
        HANDLE e = OpenEventW(SYNCHRONIZE, FALSE, name[i]);
        printf("open %ls %s\n", name[i], e ? "yes" : "no");
    }
    return 0;
}
