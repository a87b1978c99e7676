/*
 * injector/trace/fnframes.h - the x86 frame data the function service
 * sends with a 32-bit module's function list (hookscope/session.h,
 * hs_frame32_entry), for the 32-bit agent's entry stacks: the records of
 * the image's PDB (symbols/modsyms.h: hs_modsyms_frames32) and the rows of
 * its `.eh_frame` (hook/unwind/cfi32.h), the two the sampler's walk uses
 * for the same code.
 *
 * Why the injector reads them and the agent does not: a PDB is read here
 * only (the agent never parses one); `.eh_frame` is a loaded section, but
 * the long name that says so lives in the COFF string table, which is not
 * mapped, and its call-frame instructions would be run again at every
 * frame of every captured stack. Sent as rows of ready frame data, looked
 * up by rva, a frame costs the agent one binary search.
 */
#ifndef HOOKSCOPE_FNFRAMES_H
#define HOOKSCOPE_FNFRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "hook/pe/pe.h"
#include "hookscope/session.h"
#include "injector/symbols/modsyms.h"

/* The frame data of the i386 image pe (its file at path, UTF-8) into out
 * (room entries): first its PDB's records (*npdb), then its .eh_frame's
 * rows (*ncfi), each part by rva; a part that does not fit whole is left
 * out (said in the log). Both 0 for an image that is not i386. */
void hs_fnframes_build(const hs_pe *pe, const char *path, const hs_symconf *conf, hs_frame32_entry *out, size_t room,
                       int32_t *npdb, int32_t *ncfi);

#endif
