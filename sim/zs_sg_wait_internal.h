/* A wait-any with a timeout over SimGrid communications that keeps them
 * on a timeout, for the SimGrid executor's actors (sim/ internal).
 *
 * SimGrid 3.32's sg_comm_wait_any_for drops a reference to every comm it
 * was given when it times out, which frees comms still in flight; its C
 * API has no call that adds one back. The executor needs the timeout: its
 * compute ops end at known dates (no SimGrid activity), and folded streams
 * sleep until a date, while transfers stay outstanding. This is the one
 * C++ file of zepsim (s4u::Comm::wait_any_for keeps the references right);
 * it also keeps each actor's wait set between waits and reports comms as
 * SimGrid completes them (zs_sim_fin.c), which the C API cannot. Depends
 * on SimGrid 3.32 only. */
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

/* The actor's wait set, kept between waits (rebuilding it for every wait
 * cost O(n) twice more): zs__sgw_add appends a posted comm (borrowing the
 * caller's reference; 0, or -1 when out of memory); zs__sgw_wait waits on
 * the whole set as zs__sgw_wait_any_for does and takes the completed comm
 * out (its reference released); zs__sgw_drop(k) takes entry k out, the
 * reference staying the caller's. Entries keep their order. */
int zs__sgw_add(zs_sgw *w, sg_comm_t c);
size_t zs__sgw_size(const zs_sgw *w);
ssize_t zs__sgw_wait(zs_sgw *w, double timeout);
void zs__sgw_drop(zs_sgw *w, size_t k);

/* Completion notices. SimGrid 3.32 copies a message's payload pointer to
 * its receiver once, in the engine, at the moment the comm completes
 * (before it answers any wait on it). zs__sgw_on_done(fn, ctx) makes that
 * copy also call fn(ctx, key) with the comm's key (zs__sgw_key: the same
 * for the sender's and the receiver's handle of one comm); fn runs in the
 * engine, must not block or call SimGrid, and sees every comm that
 * completes (every payload is non-NULL). zs__sgw_on_done(NULL, NULL)
 * restores the plain copy. An actor learns this way which of its comms
 * are complete without asking SimGrid. */
void zs__sgw_on_done(void (*fn)(void *ctx, const void *key), void *ctx);
const void *zs__sgw_key(sg_comm_t c);

#ifdef __cplusplus
}
#endif

#endif
