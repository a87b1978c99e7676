/*
 * injector/profile/from_session.h - read a session: into a profile at the
 * end (modules, functions and everything the agent counted, summed over
 * every thread region, with raw addresses; profile/resolve.h names them),
 * and while the target runs (the calls so far, hookscope's own code for a
 * sampler, one module record for the function service). The only host
 * code that reads the session's layout.
 *
 * The session is untrusted input: the target can write every byte of it
 * at any time (session.h). So the layout and the configuration come from
 * hookscope's own copy (never from the section's header), every read is
 * bounded by the section's size, every record is copied out of the
 * section before it is checked and used (a value cannot change between
 * its check and its use), every count, index, offset, size, string and
 * depth is checked against the capacities hookscope chose, and nothing
 * is allocated by a size the target wrote (only by those capacities).
 * What fails a check is left out, and counted as a problem: a report
 * then has what could be trusted, and one line names what was not.
 */
#ifndef HOOKSCOPE_FROM_SESSION_H
#define HOOKSCOPE_FROM_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "hookscope/session.h"
#include "injector/profile/profile.h"
#include "sampler/sampler.h"

/* A session as hookscope.exe reads it. */
typedef struct hs_session_src {
    const hs_session_header *layout;  /* hookscope's own copy of the layout and configuration */
    void *view;                       /* the section, mapped: every byte written by the target too */
    uint64_t size;                    /* bytes of the view that may be read (layout->total_size) */
    /* The agent commits the section's pages as its tables fill. Can the
     * bytes at p be read (1: committed, or made so; 0: read as zeros)?
     * *run holds how many are wanted, and gets how many from p on are in
     * the same state (at least one). NULL: the whole view can be read. */
    int (*committed)(const void *p, uint64_t *run);
} hs_session_src;

/* What a read found that the agent cannot have written: the first
 * problem, named, and how many there were. */
typedef struct hs_session_trust {
    uint64_t problems;
    char first[200];
} hs_session_trust;

/* "session corrupted by the target: <first> (and N more problems)", the
 * one line a run prints and the report keeps; buf, or "" when trust saw
 * no problem. */
const char *hs_session_trust_line(const hs_session_trust *t, char *buf, size_t len);

/* Everything into p. p->tsc_hz must be set (durations are converted to
 * ns here); with p->sampling.on, the calls of each thread go to p's
 * thread list too. Problems go to *trust (NULL: not kept; a read while
 * the agent still writes sees half-written tables, which are no
 * problem). */
void hs_profile_from_session(hs_profile *p, const hs_session_src *s, hs_session_trust *trust);

/* The header as the view has it now, copied, with the layout and the
 * configuration replaced by hookscope's own and error_text made one
 * terminated line: every field of the copy can be used as it is. */
void hs_session_header_copy(const hs_session_src *s, hs_session_header *out);

/* The module records (functions) the agent has written: the count it
 * wrote, at most the capacity. */
uint32_t hs_session_modules(const hs_session_src *s);
uint32_t hs_session_functions(const hs_session_src *s);
/* The thread regions in use (threads_used, at most the capacity). */
uint32_t hs_session_regions(const hs_session_src *s);
/* Record i (< hs_session_modules), copied, its path terminated; false
 * when it cannot be read. */
bool hs_session_module_at(const hs_session_src *s, uint32_t i, hs_module_rec *out);

/* The calls counted so far, summed over the regions (for the progress
 * line while the target runs); *stack_ticks (unless NULL): the rdtsc ticks
 * the threads spent capturing entry stacks so far (hs_region_hdr.stack_ticks). */
uint64_t hs_session_live_calls(const hs_session_src *s, uint64_t *stack_ticks);

/* --timeline: one region's ring as the injector drains it. tail is
 * hookscope's own count of the events it took (the view's tl_tail is
 * only ever written); tid the thread the events now belong to (named by
 * the ring's HS_TL_THREAD events; 0 before the first). */
typedef struct hs_session_tl {
    uint64_t tail;
    uint32_t tid;
    uint64_t filtered;           /* the region's tl_filtered as last read */
    uint64_t dropped;            /* the region's tl_dropped as last read, */
    uint64_t drop_first, drop_last; /*   and its range of times */
    uint64_t waits, wait_ticks;  /* the region's tl_waits and tl_wait_ticks as last read */
    uint32_t funcs;              /* the events the last take returned: their highest function + 1 */
} hs_session_tl;

/* Take the events region k (< the regions in use) holds now, at most max,
 * copied into out and checked (a function of the session, or a thread's
 * name; t0 <= t1; the duration within them; a depth the shadow stack can
 * have): a thread name is applied to *st and not returned, an event that
 * fails a check is left out as a problem. Hands the ring's room back to
 * the agent (tl_tail). Returns the events in out; their thread is the tid
 * in *st when they are returned (a name midway ends the take, so that
 * one take is one thread's). */
size_t hs_session_timeline_take(const hs_session_src *s, uint32_t k, hs_session_tl *st, hs_tl_event *out,
                                size_t max, hs_session_trust *t);

/* The calls open on region k's shadow stack now (outermost first), as
 * events with t1 and ticks 0, checked (a function of the session, the
 * depth its place), at most max; problems into *t. */
size_t hs_session_timeline_open(const hs_session_src *s, uint32_t k, hs_tl_event *out, size_t max,
                                hs_session_trust *t);

/* The timeline's counts of calls (kept, left out, dropped: the agent's
 * counts of its rings) against the timed calls p counted: more than those
 * cannot be, and are a problem; the counts of the calls not kept are then
 * set to 0 (the calls kept are the checked events themselves). */
void hs_session_timeline_check(const hs_profile *p, hs_prof_timeline *tl, hs_session_trust *t);

/* hookscope's own code and threads in the target, for a sampler (sampler.h,
 * hs_owncode): fills *o and returns 1 when anything changed since the call
 * that returned *signature, else 0 (o untouched). */
int hs_session_owncode(const hs_session_src *s, hs_owncode *o, uint64_t *signature);

/* The return addresses the 32-bit agent's return probes took off thread
 * tid's stack (agent/time32.S): for each of its open timed calls, oldest
 * first, the stack slot that holds the return thunk's address, and the
 * caller's true return address, the newest `cap` of them. As the target
 * wrote them: a sampler believes them only where its stack copy holds
 * hookscope's code. Returns how many. */
size_t hs_session_true_returns(const hs_session_src *s, uint32_t tid, hs_true_return *out, size_t cap);

#endif
