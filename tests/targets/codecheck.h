/*
 * codecheck.h - code_matches_file(): compare every executable section of
 * this exe in memory with the file on disk (1: equal, 0: not, -1: cannot
 * read the file). Programs that are attached to use it to show that a
 * detach restored every byte.
 */
#ifndef HS_TEST_CODECHECK_H
#define HS_TEST_CODECHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

/* Compare every executable section of this exe in memory with the file. */
static int code_matches_file(void)
{
    HMODULE self = GetModuleHandleW(NULL);
    wchar_t path[MAX_PATH];
    GetModuleFileNameW(self, path, MAX_PATH);
    FILE *f = _wfopen(path, L"rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *file = malloc(size);
    fread(file, 1, size, f);
    fclose(f);
    IMAGE_NT_HEADERS64 *nt = (IMAGE_NT_HEADERS64 *)((char *)self + ((IMAGE_DOS_HEADER *)self)->e_lfanew);
    IMAGE_SECTION_HEADER *sec = IMAGE_FIRST_SECTION(nt);
    int same = 1;
    for (int i = 0; i < nt->FileHeader.NumberOfSections; i++) {
        if (!(sec[i].Characteristics & IMAGE_SCN_MEM_EXECUTE))
            continue;
        DWORD n = sec[i].SizeOfRawData < sec[i].Misc.VirtualSize ? sec[i].SizeOfRawData : sec[i].Misc.VirtualSize;
        if (memcmp((char *)self + sec[i].VirtualAddress, file + sec[i].PointerToRawData, n) != 0)
            same = 0;
    }
    free(file);
    return same;
}

#endif
