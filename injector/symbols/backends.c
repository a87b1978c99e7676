/*
 * injector/symbols/backends.c - the debug-information backends of this
 * build (backend.h): DbgHelp on Windows; none in the native build used
 * by the unit tests, which name code from exports and COFF symbols only.
 */
#include <stddef.h>

#include "symbols/backend.h"

#ifdef _WIN32
extern const hs_sym_backend hs_sym_dbghelp;
#endif

const hs_sym_backend *const hs_sym_backends[] = {
#ifdef _WIN32
    &hs_sym_dbghelp,
#endif
    NULL,
};
