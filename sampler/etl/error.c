/*
 * sampler/etl/error.c - the reader's one-line error messages: where in the
 * file (a byte offset, for a compressed buffer the buffer's offset and the
 * place in its decompressed data), then what.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sampler/etl/reader.h"

void hs_etl_fail(hs_etl_error *err, int has_offset, uint64_t offset, const char *fmt, ...)
{
    if (!err)
        return;
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    err->has_offset = has_offset;
    err->offset = offset;
    if (has_offset)
        snprintf(err->msg, sizeof err->msg, "byte %llu (0x%llx): %s", (unsigned long long)offset,
                 (unsigned long long)offset, what);
    else
        snprintf(err->msg, sizeof err->msg, "%s", what);
}

void hs_etl_fail_event(hs_etl_error *err, const hs_etl_event *ev, const char *fmt, ...)
{
    if (!err)
        return;
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (ev->in_compressed) {
        err->has_offset = 1;
        err->offset = ev->buffer_offset;
        snprintf(err->msg, sizeof err->msg, "compressed buffer at byte %llu (0x%llx), byte %llu of its data: %s",
                 (unsigned long long)ev->buffer_offset, (unsigned long long)ev->buffer_offset,
                 (unsigned long long)ev->offset, what);
    } else {
        hs_etl_fail(err, 1, ev->offset, "%s", what);
    }
}
