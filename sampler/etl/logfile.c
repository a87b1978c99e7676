/*
 * sampler/etl/logfile.c - the view of the logfile header: the payload of
 * the file's first event (TRACE_LOGFILE_HEADER as written to a file;
 * snail-server records/kernel/header.hpp, TraceEvent's EventTraceHeader).
 * P = its PointerSize field (4 or 8):
 *   0 BufferSize, 4 Version, 8 ProviderVersion (OS build), 12
 *   NumberOfProcessors, 16 EndTime, 24 TimerResolution, 28 MaximumFileSize,
 *   32 LogFileMode, 36 BuffersWritten, 40 StartBuffers, 44 PointerSize,
 *   48 EventsLost, 52 CpuSpeedInMHz, 56 LoggerName (P), 56+P LogFileName
 *   (P), 56+2P TimeZoneInformation (176 bytes with padding), 232+2P
 *   BootTime, 240+2P PerfFreq, 248+2P StartTime, 256+2P ReservedFlags (the
 *   clock type), 260+2P BuffersLost, then the logger name and the log file
 *   name as NUL-terminated UTF-16.
 */
#include <string.h>

#include "hook/base/bytes.h"
#include "sampler/etl/internal.h"
#include "sampler/etl/text.h"

int hs_etl_logfile_parse(const hs_etl_event *ev, uint32_t state, hs_etl_info *info, hs_etl_error *err)
{
    const uint8_t *d = ev->data;
    size_t n = ev->size;
    if (n < 48) {
        hs_etl_fail_event(err, ev, "the logfile header of %u bytes is too short", ev->size);
        return -1;
    }
    uint32_t P = hs_le32(d + 44);
    if (P != 4 && P != 8) {
        hs_etl_fail_event(err, ev, "the logfile header names a pointer size of %u (not 4 or 8)", P);
        return -1;
    }
    size_t strings = 264 + 2 * (size_t)P;
    if (n < strings) {
        hs_etl_fail_event(err, ev, "the logfile header of %u bytes is too short for %u-byte pointers",
                          ev->size, P);
        return -1;
    }
    info->pointer_size = P;
    info->buffer_size = hs_le32(d + 0);
    info->version = hs_le32(d + 4);
    info->provider_version = hs_le32(d + 8);
    info->ncpus = hs_le32(d + 12);
    info->end_time = hs_le64(d + 16);
    info->timer_resolution = hs_le32(d + 24);
    info->max_file_size = hs_le32(d + 28);
    info->log_file_mode = hs_le32(d + 32);
    info->buffers_written = hs_le32(d + 36);
    info->events_lost = hs_le32(d + 48);
    info->cpu_mhz = hs_le32(d + 52);
    info->boot_time = hs_le64(d + 232 + 2 * P);
    info->perf_freq = hs_le64(d + 240 + 2 * P);
    info->start_time = hs_le64(d + 248 + 2 * P);
    info->clock = hs_le32(d + 256 + 2 * P);
    info->buffers_lost = hs_le32(d + 260 + 2 * P);
    switch (info->clock) {
    case HS_ETL_CLOCK_QPC:
        info->clock_hz = info->perf_freq;
        break;
    case HS_ETL_CLOCK_SYSTEM:
        info->clock_hz = 10000000;
        break;
    case HS_ETL_CLOCK_CYCLES:
        info->clock_hz = (uint64_t)info->cpu_mhz * 1000000;
        break;
    default:
        info->clock = HS_ETL_CLOCK_UNKNOWN;
        info->clock_hz = 0;
    }
    info->compressed = (info->log_file_mode & HS_ETL_MODE_COMPRESSED) != 0;
    info->compression = info->compressed ? (state & 0xFFFF) : HS_ETL_COMP_NONE;
    size_t next, len = hs_u16le_len(d + strings, n - strings, &next);
    hs_utf16le_to_utf8(d + strings, len, info->logger_name, sizeof info->logger_name);
    size_t at = strings + next;
    len = hs_u16le_len(d + at, n - at, &next);
    hs_utf16le_to_utf8(d + at, len, info->log_file_name, sizeof info->log_file_name);
    return 0;
}
