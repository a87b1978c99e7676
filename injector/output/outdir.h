/*
 * injector/output/outdir.h - the output directory of a run.
 */
#ifndef HOOKSCOPE_OUTDIR_H
#define HOOKSCOPE_OUTDIR_H

/* Create the directory (and its parents); 0, or -1 if it is not a
 * directory afterwards. */
int hs_make_output_dir(const char *dir);

#endif
