/*
 * injector/output/writers.h - every output format is one writer of a
 * profile, listed in one table: its format name, the file a run writes
 * it to, whether a given profile has anything for it, and the function
 * that writes it. Writers only read the profile (profile/profile.h).
 */
#ifndef HOOKSCOPE_WRITERS_H
#define HOOKSCOPE_WRITERS_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"

typedef struct hs_writer {
    const char *format;                      /* "txt", "json", "folded" */
    const char *file;                        /* its file in the output directory */
    const char *what;                        /* one line, for help texts */
    bool (*wanted)(const hs_profile *p);     /* does p have anything for it? NULL: always */
    int (*write)(const hs_profile *p, FILE *out); /* 0, or -1 on an output error */
} hs_writer;

/* The writers, in the order a run writes them; NULL-terminated. */
extern const hs_writer *const hs_writers[];

/* The writer of a format name, or NULL. */
const hs_writer *hs_writer_find(const char *format);

/* Write one writer's output to the file dir/name (dir exists). Returns
 * 0, or -1 after printing an error. */
int hs_write_file(const hs_writer *w, const hs_profile *p, const char *dir, const char *name);

/* Write every wanted writer's file into dir (which exists), and remove
 * the files of the others (left by an earlier run). Returns 0, or -1
 * after printing an error. */
int hs_write_all(const hs_profile *p, const char *dir);

/* The writers' functions. */
int hs_write_txt(const hs_profile *p, FILE *out);
int hs_write_json(const hs_profile *p, FILE *out);
int hs_write_folded(const hs_profile *p, FILE *out);
int hs_write_folded_time(const hs_profile *p, FILE *out);

#endif
