/* Waiting on SimGrid communications, for the SimGrid executor's actors
 * (sim/ internal): a wait-any with a timeout, completion notices, and
 * parking.
 *
 * SimGrid 3.32's sg_comm_wait_any_for drops a reference to every comm it
 * was given when it times out, which frees comms still in flight; its C
 * API has no call that adds one back. The executor needs the timeout: its
 * compute ops end at known dates (no SimGrid activity), and folded streams
 * sleep until a date, while transfers stay outstanding. This is the one
 * C++ file of zepsim (s4u::Comm::wait_any_for keeps the references right);
 * it also reports comms as SimGrid completes them (zs_sim_fin.c) and lets
 * an actor block until such a report (parking), which the C API cannot.
 * Depends on SimGrid 3.32 only. */
#ifndef ZS_SG_WAIT_INTERNAL_H
#define ZS_SG_WAIT_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

#include <simgrid/forward.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One waiter per actor (it reuses its buffer between calls). */
typedef struct zs_sgw zs_sgw;

zs_sgw *zs__sgw_new(void); /* NULL when out of memory */
void zs__sgw_free(zs_sgw *w);

/* Waits until one of comms[0..n) completes or `timeout` seconds pass
 * (timeout < 0: no limit). Returns the index of the completed comm, whose
 * reference is released as sg_comm_wait_any does; -1 on a timeout, every
 * comm still held by the caller; -2 when SimGrid reported a failure. */
ssize_t zs__sgw_wait_any_for(zs_sgw *w, sg_comm_t *comms, size_t n, double timeout);

/* Completion notices. SimGrid 3.32 copies a message's payload pointer to
 * its receiver once, in the engine, at the moment the comm completes
 * (before it answers any wait on it). zs__sgw_on_done(fn, ctx) makes that
 * copy also call fn(ctx, key) with the comm's key (zs__sgw_key: the same
 * for the sender's and the receiver's handle of one comm); fn runs in the
 * engine, must not block or call SimGrid (zs__sgp_wake excepted: it is
 * made for the engine), and sees every comm that completes (every payload
 * is non-NULL). zs__sgw_on_done(NULL, NULL) restores the plain copy. An actor learns this way which
 * of its comms are complete without asking SimGrid. */
void zs__sgw_on_done(void (*fn)(void *ctx, const void *key), void *ctx);
const void *zs__sgw_key(sg_comm_t c);

/* Parking: an actor that waits for the first of its outstanding comms to
 * complete blocks on its own zs_sgp, and the completion notice of the
 * comm wakes it. A wait-any over all of them did the same in O(n) per
 * call: SimGrid registers the wait with, and unregisters it from, every
 * comm of the set (with a list node allocated per comm), which was a
 * third of a routed 128-GPU run. What SimGrid simulates does not change:
 * one blocking simcall per wait as before, its timeout a kernel timer set
 * and removed at the same points, and the actors a completion wakes
 * answered in the order the wait-any answered them (zs_sgp.seq); the
 * woken actor then collects its comm with a wait answered at once.
 * Zero-initialise. */
typedef struct zs_sgp {
    void *who;              /* the parked actor (SimGrid's kernel actor), NULL when not parked */
    void *timer;            /* its timeout (a kernel timer), or NULL */
    void *woke;             /* what zs__sgp_wake was given */
    unsigned long long seq; /* parking number: actors woken by one comm go in this order */
    int state;              /* 0 never parked, 1 parked, 2 woken, 3 timed out */
} zs_sgp;

/* Blocks the calling actor until zs__sgp_wake(p, ...) or `timeout`
 * seconds (< 0: no limit). 1: woken (p->woke says by what), 0: timed out,
 * -2: SimGrid failed. */
int zs__sgp_park(zs_sgp *p, double timeout);
/* In the engine (from a completion notice): wakes p's actor if it is
 * parked, with `what`. 1 if it was parked, else 0. */
int zs__sgp_wake(zs_sgp *p, void *what);

#ifdef __cplusplus
}
#endif

#endif
