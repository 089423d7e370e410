/* A wait-any with a timeout over SimGrid communications that keeps them
 * on a timeout, for the SimGrid executor's actors (sim/ internal).
 *
 * SimGrid 3.32's sg_comm_wait_any_for drops a reference to every comm it
 * was given when it times out, which frees comms still in flight; its C
 * API has no call that adds one back. The executor needs the timeout: its
 * compute ops end at known dates (no SimGrid activity), and folded streams
 * sleep until a date, while transfers stay outstanding. This is the one
 * C++ file of zepsim (s4u::Comm::wait_any_for keeps the references right).
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

#ifdef __cplusplus
}
#endif

#endif
