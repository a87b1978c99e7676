/*
 * injector/output/outdir.h - the output directory of a run: created (with
 * its parents) before the target starts, and held for the whole run by a
 * lock file, so that two hookscope runs never write into one directory at
 * once (the second is refused at start). After a run, the files hookscope
 * writes that this run did not write are removed (output/writers.c), so a
 * directory holds exactly one run's outputs; other files are left alone.
 */
#ifndef HOOKSCOPE_OUTDIR_H
#define HOOKSCOPE_OUTDIR_H

/* Create and lock dir. Returns 0, or -1 after printing one line saying
 * why (the path is a file, a part of it is a file, access denied, another
 * hookscope run holds it). The lock lasts until hookscope exits (it is
 * released, and its file gone, before the process ends). */
int hs_outdir_open(const char *dir);

#endif
