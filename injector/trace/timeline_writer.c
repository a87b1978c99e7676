/*
 * injector/trace/timeline_writer.c - the timeline's file written by a
 * thread of its own (see timeline_writer.h).
 *
 * One lock and two condition variables (a buffer queued, a buffer
 * freed): Windows' slim locks, which Wine keeps in the process (a
 * futex), where an event's wait is a round trip to the wineserver, which
 * a loaded machine may leave waiting for a CPU. The queue is a ring of
 * the buffers in the order queued; the free ones a stack.
 */
#include "injector/trace/timeline_writer.h"

#include <stdlib.h>
#include <windows.h>

#include "hook/base/util.h"

struct hs_tl_writer {
    FILE *f;
    const char *path;
    hs_tl_outbuf *bufs;
    unsigned nbufs;
    hs_tl_outbuf **queued;       /* a ring: [head, head + nqueued) in the order queued */
    unsigned head, nqueued;
    hs_tl_outbuf **free;         /* a stack of nfree */
    unsigned nfree;
    bool ending;
    volatile bool failed;
    SRWLOCK lock;
    CONDITION_VARIABLE queued_cv, freed_cv;
    HANDLE thread;
    uint64_t writes, full_waits;   /* (writes and write_s the thread's alone until it ends) */
    double write_s;
};

static DWORD WINAPI writer_main(void *arg)
{
    hs_tl_writer *w = arg;
    AcquireSRWLockExclusive(&w->lock);
    for (;;) {
        while (!w->nqueued && !w->ending)
            SleepConditionVariableSRW(&w->queued_cv, &w->lock, INFINITE, 0);
        if (!w->nqueued)
            break;
        hs_tl_outbuf *b = w->queued[w->head];
        ReleaseSRWLockExclusive(&w->lock);
        if (!w->failed && b->used) {
            double t = hs_now();
            bool ok = fwrite(b->data, 1, b->used, w->f) == b->used;
            w->write_s += hs_now() - t;
            w->writes++;
            if (!ok) {
                hs_err("cannot write %s: the timeline stops here", w->path);
                w->failed = true;
            }
        }
        b->failed = w->failed && b->used;
        AcquireSRWLockExclusive(&w->lock);
        w->head = (w->head + 1) % w->nbufs;
        w->nqueued--;
        w->free[w->nfree++] = b;
        WakeConditionVariable(&w->freed_cv);
    }
    ReleaseSRWLockExclusive(&w->lock);
    return 0;
}

hs_tl_writer *hs_tl_writer_start(FILE *f, const char *path, size_t bytes, unsigned nbufs)
{
    hs_tl_writer *w = hs_xcalloc(1, sizeof *w);
    w->f = f;
    w->path = path;
    w->nbufs = nbufs;
    w->bufs = hs_xcalloc(nbufs, sizeof *w->bufs);
    w->queued = hs_xcalloc(nbufs, sizeof *w->queued);
    w->free = hs_xcalloc(nbufs, sizeof *w->free);
    /* (the last first: the stack hands out the first buffer first) */
    for (unsigned i = nbufs; i-- > 0;) {
        w->bufs[i].data = hs_xmalloc(bytes);
        w->free[w->nfree++] = &w->bufs[i];
    }
    InitializeSRWLock(&w->lock);
    InitializeConditionVariable(&w->queued_cv);
    InitializeConditionVariable(&w->freed_cv);
    w->thread = CreateThread(NULL, 0, writer_main, w, 0, NULL);
    if (!w->thread) {
        hs_err("cannot start the timeline's writer: %s", hs_win_error(GetLastError()));
        hs_tl_writer_end(w, NULL, NULL, NULL, NULL, NULL);
        return NULL;
    }
    return w;
}

hs_tl_outbuf *hs_tl_writer_buffer(hs_tl_writer *w)
{
    AcquireSRWLockExclusive(&w->lock);
    if (!w->nfree)
        w->full_waits++;
    while (!w->nfree)
        SleepConditionVariableSRW(&w->freed_cv, &w->lock, INFINITE, 0);
    hs_tl_outbuf *b = w->free[--w->nfree];
    ReleaseSRWLockExclusive(&w->lock);
    return b;
}

void hs_tl_writer_queue(hs_tl_writer *w, hs_tl_outbuf *b)
{
    AcquireSRWLockExclusive(&w->lock);
    w->queued[(w->head + w->nqueued) % w->nbufs] = b;
    w->nqueued++;
    WakeConditionVariable(&w->queued_cv);
    ReleaseSRWLockExclusive(&w->lock);
}

bool hs_tl_writer_failed(const hs_tl_writer *w)
{
    return w->failed;
}

bool hs_tl_writer_end(hs_tl_writer *w, void (*each_failed)(void *ctx, hs_tl_outbuf *b), void *ctx,
                      uint64_t *writes, double *write_s, uint64_t *full_waits)
{
    if (w->thread) {
        AcquireSRWLockExclusive(&w->lock);
        w->ending = true;
        WakeConditionVariable(&w->queued_cv);
        ReleaseSRWLockExclusive(&w->lock);
        WaitForSingleObject(w->thread, INFINITE);
        CloseHandle(w->thread);
    }
    for (unsigned i = 0; i < w->nbufs; i++) {
        if (w->bufs[i].failed && each_failed)
            each_failed(ctx, &w->bufs[i]);
        free(w->bufs[i].data);
    }
    if (writes)
        *writes = w->writes;
    if (write_s)
        *write_s = w->write_s;
    if (full_waits)
        *full_waits = w->full_waits;
    bool failed = w->failed;
    free(w->bufs);
    free(w->queued);
    free(w->free);
    free(w);
    return failed;
}
