/*
 * injector/report.c - write all reports into the output directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "report.h"
#include "util.h"

static int make_dirs(const char *dir)
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

static int write_one(const hs_results *r, const char *dir, const char *name,
                     int (*writer)(const hs_results *, FILE *))
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = hs_xmalloc(len);
    snprintf(path, len, "%s\\%s", dir, name);
    wchar_t *wpath = hs_wide(path);
    FILE *f = _wfopen(wpath, L"wb");
    int rc = -1;
    if (!f) {
        hs_err("cannot write %s: %s", path, strerror(errno));
    } else {
        rc = writer(r, f);
        if (fclose(f) != 0 || rc != 0) {
            hs_err("cannot write %s", path);
            rc = -1;
        }
    }
    free(wpath);
    free(path);
    return rc;
}

int hs_write_reports(const hs_results *r, const char *dir)
{
    if (make_dirs(dir) < 0) {
        hs_err("cannot create output directory %s", dir);
        return -1;
    }
    if (write_one(r, dir, "report.txt", hs_write_report_txt) < 0)
        return -1;
    if (write_one(r, dir, "report.json", hs_write_report_json) < 0)
        return -1;
    return 0;
}
