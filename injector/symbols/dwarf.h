/*
 * injector/symbols/dwarf.h - source lines of a gcc (or clang) PE image from
 * its DWARF line table (.debug_line, versions 2 to 5), for --srcline on
 * builds that carry DWARF instead of a PDB. Portable C over hook/pe.h.
 *
 * Why not DbgHelp: Wine's DbgHelp reads DWARF 2-4 only (gcc 12 emits 5 by
 * default) and keeps only the first row at an address (symt_add_func_line
 * drops the others), while gcc emits several rows per address (location
 * views): at 115 of 1013 code bytes of tests/fixtures/pdb/pdbc.c built with
 * -gdwarf-4 its line differs from addr2line's (FINDINGS.md).
 *
 * Read: the section names of the image (long names "/N" through the COFF
 * string table, so the file bytes must be attached to the hs_pe), every
 * line program in .debug_line with its file table (v5 directory/file entry
 * formats, strings in .debug_line_str or .debug_str), and the compilation
 * directory of each unit (DW_AT_comp_dir of the first DIE in .debug_info,
 * matched by DW_AT_stmt_list) for relative names. Rows become hs_linetab
 * entries (rva, line, file), each sequence's end the end of their range;
 * file names are joined as addr2line joins them: comp_dir/dir/name unless
 * absolute. Every read is bounds-checked; a malformed unit stops the read
 * with a one-line error.
 */
#ifndef HOOKSCOPE_DWARF_H
#define HOOKSCOPE_DWARF_H

#include <stddef.h>

#include "hook/pe/pe.h"
#include "injector/symbols/symtab.h"

/* Fill and finish lines. 0 (also when the image has no .debug_line: then the
 * table stays empty), or -1 with err set. */
int hs_dwarf_lines(const hs_pe *pe, hs_linetab *lines, char *err, size_t errlen);

#endif
