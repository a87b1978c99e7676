/*
 * injector/profile/load.h - read a saved run (report.json, as written by
 * output/report_json.c) back into a profile, already resolved: every writer can
 * then write its output again, byte for byte as the run wrote it.
 */
#ifndef HOOKSCOPE_LOAD_H
#define HOOKSCOPE_LOAD_H

#include <stddef.h>

#include "injector/profile/profile.h"

/* Parse report.json text; NULL with a one-line reason in err. */
hs_profile *hs_profile_from_json(const char *text, size_t len, char *err, size_t errlen);

/* Read the file at path (UTF-8); NULL with a one-line reason in err that
 * names the file. */
hs_profile *hs_profile_load(const char *path, char *err, size_t errlen);

#endif
