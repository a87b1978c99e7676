/*
 * injector/output/outdir_win.c - see outdir.h.
 */
#include "output/outdir.h"

#include <stdlib.h>
#include <windows.h>

#include "base/util.h"

int hs_make_output_dir(const char *dir)
{
    wchar_t *w = hs_wide(dir);
    size_t n = wcslen(w);
    for (size_t i = 1; i <= n; i++) {
        if (i == n || w[i] == L'\\' || w[i] == L'/') {
            wchar_t c = w[i];
            w[i] = 0;
            if (!(i == 2 && w[1] == L':'))
                CreateDirectoryW(w, NULL);
            w[i] = c;
        }
    }
    DWORD attr = GetFileAttributesW(w);
    free(w);
    return (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY)) ? 0 : -1;
}
