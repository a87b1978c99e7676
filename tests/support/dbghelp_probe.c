/*
 * dbghelp_probe.c - what the system's DbgHelp says about one image, called
 * as plainly as possible: the module it loaded (symbol type, PDB path, GUID,
 * age), every symbol SymEnumSymbols lists, the source line of addresses,
 * SymFindFileInPath, and the undecoration of names. A test-side tool
 * (Windows; run under Wine here): the evidence of
 * injector/symbols/FINDINGS.md was taken with it. The tests read DbgHelp
 * through hookscope's own backend instead (symdump.exe --dbghelp).
 *
 * usage: dbghelp_probe [options] IMAGE [RVA...]
 *   --path P        the search path given to SymInitialize (default: none)
 *   --opts HEX      SymSetOptions(HEX) (default SYMOPT_UNDNAME|SYMOPT_LOAD_LINES|
 *                   SYMOPT_FAIL_CRITICAL_ERRORS|SYMOPT_NO_PROMPTS)
 *   --base HEX      load address to give SymLoadModuleEx (default: the image's
 *                   preferred base)
 *   --lines         also the line of every function's first byte
 *   --undname NAME  print UnDecorateSymbolName(NAME, 0) and (NAME,
 *                   UNDNAME_NAME_ONLY) and exit; repeatable
 *   --find          SymFindFileInPath for the image's PDB (name, GUID and
 *                   age from the image's RSDS record) in the search path
 *
 * Output, one record per line, numbers in hex without 0x unless said:
 *   module <SymType> pdb=<LoadedPdbName> guid=<GUID> age=<dec>
 *          unmatched=<PdbUnmatched> lines=<LineNumbers> symbols=<GlobalSymbols>
 *   sym <rva> <size dec> <tag dec> <flags> <name>
 *   line <rva> <displacement dec> <file>:<line dec>      (or: line <rva> none <error dec>)
 *   found <path>  |  notfound <error dec>                 (--find)
 *   undname <name> -> <full> | <name only>
 *   error <what> <GetLastError dec>
 * Exit status 0, or 1 when the module did not load.
 */
#include <windows.h>
#include <dbghelp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static HANDLE proc = (HANDLE)(ULONG_PTR)0x5052;   /* any unique value */

static void put_utf8(const WCHAR *w)
{
    char buf[4096];
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, buf, sizeof buf, NULL, NULL);
    fputs(n > 0 ? buf : "?", stdout);
}

static void put_guid(const GUID *g)
{
    printf("{%08lX-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X}", (unsigned long)g->Data1,
           g->Data2, g->Data3, g->Data4[0], g->Data4[1], g->Data4[2], g->Data4[3], g->Data4[4],
           g->Data4[5], g->Data4[6], g->Data4[7]);
}

struct syms {
    DWORD64 base;
    ULONG64 *addr;
    size_t n, cap;
};

static BOOL CALLBACK on_symbol(PSYMBOL_INFOW si, ULONG size, PVOID ctx)
{
    struct syms *s = ctx;
    printf("sym %llx %lu %lu %lx ", (unsigned long long)(si->Address - si->ModBase),
           (unsigned long)si->Size, (unsigned long)si->Tag, (unsigned long)si->Flags);
    put_utf8(si->Name);
    putchar('\n');
    (void)size;
    if (si->Tag == 5 /* SymTagFunction */) {
        if (s->n == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 256;
            s->addr = realloc(s->addr, s->cap * sizeof *s->addr);
            if (!s->addr)
                exit(2);
        }
        s->addr[s->n++] = si->Address;
    }
    return TRUE;
}

static void print_line(DWORD64 base, DWORD64 addr)
{
    IMAGEHLP_LINEW64 ln;
    DWORD disp = 0;
    memset(&ln, 0, sizeof ln);
    ln.SizeOfStruct = sizeof ln;
    printf("line %llx ", (unsigned long long)(addr - base));
    if (SymGetLineFromAddrW64(proc, addr, &disp, &ln)) {
        printf("%lu ", (unsigned long)disp);
        put_utf8(ln.FileName);
        printf(":%lu\n", (unsigned long)ln.LineNumber);
    } else {
        printf("none %lu\n", (unsigned long)GetLastError());
    }
}

static int cmp_u64(const void *a, const void *b)
{
    ULONG64 x = *(const ULONG64 *)a, y = *(const ULONG64 *)b;
    return (x > y) - (x < y);
}

/* The image's CodeView RSDS record (GUID, age, PDB file name without its
 * folder), read from the file mapped flat. SymSrvGetFileIndexInfo would say
 * the same on Windows; Wine 8 does not implement it (calling it aborts). */
static int image_rsds(const WCHAR *image, GUID *guid, DWORD *age, WCHAR *name)
{
    int ok = 0;
    HANDLE f = CreateFileW(image, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, 0, NULL);
    if (f == INVALID_HANDLE_VALUE)
        return 0;
    HANDLE m = CreateFileMappingW(f, NULL, PAGE_READONLY, 0, 0, NULL);
    const BYTE *v = m ? MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0) : NULL;
    ULONG size = 0;
    const IMAGE_DEBUG_DIRECTORY *dd =
        v ? ImageDirectoryEntryToData((PVOID)v, FALSE, IMAGE_DIRECTORY_ENTRY_DEBUG, &size) : NULL;
    for (ULONG i = 0; dd && i < size / sizeof *dd; i++) {
        const BYTE *cv = v + dd[i].PointerToRawData;
        if (dd[i].Type == IMAGE_DEBUG_TYPE_CODEVIEW && dd[i].SizeOfData > 24 &&
            !memcmp(cv, "RSDS", 4)) {
            const char *p = (const char *)cv + 24, *b = p;
            for (const char *q = p; *q; q++)
                if (*q == '\\' || *q == '/')
                    b = q + 1;
            memcpy(guid, cv + 4, sizeof *guid);
            memcpy(age, cv + 20, sizeof *age);
            ok = MultiByteToWideChar(CP_UTF8, 0, b, -1, name, MAX_PATH) > 0;
            break;
        }
    }
    if (v)
        UnmapViewOfFile(v);
    if (m)
        CloseHandle(m);
    CloseHandle(f);
    return ok;
}

int wmain(int argc, WCHAR **argv)
{
    const WCHAR *path = NULL, *image = NULL;
    DWORD opts = SYMOPT_UNDNAME | SYMOPT_LOAD_LINES | SYMOPT_FAIL_CRITICAL_ERRORS | SYMOPT_NO_PROMPTS;
    DWORD64 base = 0;
    int lines = 0, find = 0, i;
    int first_rva = argc;

    for (i = 1; i < argc; i++) {
        if (!wcscmp(argv[i], L"--path") && i + 1 < argc) {
            path = argv[++i];
        } else if (!wcscmp(argv[i], L"--opts") && i + 1 < argc) {
            opts = wcstoul(argv[++i], NULL, 16);
        } else if (!wcscmp(argv[i], L"--base") && i + 1 < argc) {
            base = _wcstoui64(argv[++i], NULL, 16);
        } else if (!wcscmp(argv[i], L"--lines")) {
            lines = 1;
        } else if (!wcscmp(argv[i], L"--find")) {
            find = 1;
        } else if (!wcscmp(argv[i], L"--undname") && i + 1 < argc) {
            char in[2048], full[4096], only[4096];
            WideCharToMultiByte(CP_UTF8, 0, argv[++i], -1, in, sizeof in, NULL, NULL);
            if (!UnDecorateSymbolName(in, full, sizeof full, UNDNAME_COMPLETE))
                strcpy(full, "<error>");
            if (!UnDecorateSymbolName(in, only, sizeof only, UNDNAME_NAME_ONLY))
                strcpy(only, "<error>");
            printf("undname %s -> %s | %s\n", in, full, only);
            image = L"";
        } else if (!image) {
            image = argv[i];
        } else {
            first_rva = i;
            break;
        }
    }
    if (!image) {
        fputs("usage: dbghelp_probe [--path P] [--opts HEX] [--base HEX] [--lines] [--find] "
              "IMAGE [RVA...] | --undname NAME...\n", stderr);
        return 2;
    }
    if (!image[0])
        return 0;

    SymSetOptions(opts);
    if (!SymInitializeW(proc, path, FALSE)) {
        printf("error SymInitialize %lu\n", (unsigned long)GetLastError());
        return 1;
    }
    DWORD64 got = SymLoadModuleExW(proc, NULL, image, NULL, base, 0, NULL, 0);
    if (!got) {
        printf("error SymLoadModuleEx %lu\n", (unsigned long)GetLastError());
        return 1;
    }
    IMAGEHLP_MODULEW64 mi;
    memset(&mi, 0, sizeof mi);
    mi.SizeOfStruct = sizeof mi;
    if (!SymGetModuleInfoW64(proc, got, &mi)) {
        printf("error SymGetModuleInfo %lu\n", (unsigned long)GetLastError());
    } else {
        printf("module %d pdb=", (int)mi.SymType);
        put_utf8(mi.LoadedPdbName);
        printf(" guid=");
        put_guid(&mi.PdbSig70);
        printf(" age=%lu unmatched=%d lines=%d symbols=%d\n", (unsigned long)mi.PdbAge,
               (int)mi.PdbUnmatched, (int)mi.LineNumbers, (int)mi.GlobalSymbols);
    }
    if (find) {
        GUID guid;
        DWORD age;
        WCHAR pdbname[MAX_PATH], found[MAX_PATH * 2];
        if (!image_rsds(image, &guid, &age, pdbname)) {
            printf("notfound no-rsds\n");
        } else if (SymFindFileInPathW(proc, path, pdbname, &guid, age, 0, SSRVOPT_GUIDPTR,
                                      (PSTR)found, NULL, NULL)) {
            fputs("found ", stdout);
            put_utf8(found);
            putchar('\n');
        } else {
            printf("notfound %lu\n", (unsigned long)GetLastError());
        }
    }

    struct syms s = { got, NULL, 0, 0 };
    if (!SymEnumSymbolsW(proc, got, L"*", on_symbol, &s))
        printf("error SymEnumSymbols %lu\n", (unsigned long)GetLastError());
    if (lines) {
        qsort(s.addr, s.n, sizeof *s.addr, cmp_u64);
        for (size_t k = 0; k < s.n; k++)
            print_line(got, s.addr[k]);
    }
    for (i = first_rva; i < argc; i++)
        print_line(got, got + wcstoul(argv[i], NULL, 16));
    free(s.addr);
    SymCleanup(proc);
    return 0;
}
