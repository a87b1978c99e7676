/*
 * hook/engine/calls.h - functions an image's code calls: where its symbols
 * and unwind data stop (an i386 image has no .pdata; a stripped one no
 * symbols), a direct call in a function of exact extent (.pdata,
 * .eh_frame, the PDB), or a direct jump out of it (a tail call), is
 * evidence of a function that starts at its target.
 * Only the start is known: such a function is bounded by the next start
 * (`functions` says so, as `call`).
 *
 * The code is decoded linearly over each exact extent by capstone in the
 * image's mode (32-bit for PE32); a target is kept when it lies in an
 * executable section, outside every exact extent, and is not already a
 * function's start.
 */
#ifndef HOOKSCOPE_ENGINE_CALLS_H
#define HOOKSCOPE_ENGINE_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "hook/pe/functions.h"
#include "hook/pe/pe.h"

/* The call targets (rvas, sorted, unique; malloc'd) of the functions in
 * `known` (hs_pe_functions' list). Returns 0, or -1 (out of memory, or
 * capstone could not be opened). */
int hs_call_targets(const hs_pe *pe, const hs_pe_func *known, size_t n, uint32_t **out, size_t *count);

#endif
