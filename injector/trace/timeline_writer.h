/*
 * injector/trace/timeline_writer.h - the timeline's file written by a
 * thread of its own: the drain fills buffers of blocks and queues them;
 * this thread writes them to the file in the order they were queued, so
 * that a take of the drain never waits for a write (a write under Wine
 * makes the thread wait for the disk's cache and the system; meanwhile
 * the rings fill). The queue is bounded: a fixed number of buffers of a
 * fixed size, taken from a stack (the last freed first) so that only as
 * many are ever touched as the writes fell behind.
 */
#ifndef HOOKSCOPE_TIMELINE_WRITER_H
#define HOOKSCOPE_TIMELINE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One buffer: bytes [0, used) of data go to the file. failed: they did
 * not (a write failed, at this buffer or before it); its bytes stay
 * there until the buffer is filled again, for its owner to count. */
typedef struct hs_tl_outbuf {
    unsigned char *data;
    size_t used;
    bool failed;
} hs_tl_outbuf;

typedef struct hs_tl_writer hs_tl_writer;

/* Start the thread writing to f (path for the message when a write
 * fails: printed once) with nbufs buffers of bytes each (>= 2). NULL
 * after printing why. */
hs_tl_writer *hs_tl_writer_start(FILE *f, const char *path, size_t bytes, unsigned nbufs);

/* A buffer to fill: waits while every buffer is queued. Its used and
 * failed are those it was written with (0 and false the first time). */
hs_tl_outbuf *hs_tl_writer_buffer(hs_tl_writer *w);

/* Queue b (from hs_tl_writer_buffer) to be written after every buffer
 * queued before it; b is the writer's from here. */
void hs_tl_writer_queue(hs_tl_writer *w, hs_tl_outbuf *b);

/* Whether a write has failed (every buffer from that one on is failed). */
bool hs_tl_writer_failed(const hs_tl_writer *w);

/* Write what is queued, stop the thread; then each buffer that failed
 * (and was not handed out again since) is given to each_failed; free
 * all. *writes, *write_s, *full_waits: the writes made, the seconds they
 * took, and how often hs_tl_writer_buffer waited for one (the queue
 * full). Returns whether a write failed. */
bool hs_tl_writer_end(hs_tl_writer *w, void (*each_failed)(void *ctx, hs_tl_outbuf *b), void *ctx,
                      uint64_t *writes, double *write_s, uint64_t *full_waits);

#endif
