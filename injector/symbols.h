/*
 * injector/symbols.h - names for functions: exports and the COFF symbol
 * table read from the module's file (our own PE reader), then DbgHelp
 * (PDB, DWARF) for what those do not name; C++ names undecorated
 * (Itanium names with the C++ runtime's demangler, MSVC names with
 * UnDecorateSymbolName); sub_<rva> when nothing names a function.
 */
#ifndef HOOKSCOPE_SYMBOLS_H
#define HOOKSCOPE_SYMBOLS_H

#include "results.h"

/* Name every function of r. Modules whose file cannot be read (or does not
 * match the traced image) get a warning and DbgHelp/sub_ names. */
void hs_symbolize(hs_results *r);

/* Undecorate one symbol name; returns malloc'd text. */
char *hs_undecorate(const char *name);

#endif
