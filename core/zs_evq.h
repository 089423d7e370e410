/* The analytic backend's pending events, earliest first: by time, ties by
 * the sequence number the caller gives (so runs are deterministic). The
 * order is a total order on (time, sequence), the one a binary heap of
 * those pairs pops, so any structure that keeps it gives the same run.
 *
 * Why not a binary heap: at thousands of ranks tens of thousands of events
 * are pending, and each pop walked the heap's levels with an unpredictable
 * branch and, past the caches, a cache miss per level: 40% of the
 * backend's time at 4096 GPUs (docs/simulator.md, "The analytic backend
 * at scale"). Events never go back in time (a completion is scheduled at
 * or after the present), so the keys popped only grow, and a radix heap
 * keeps them: bucket b holds the events whose key first differs from the
 * last key popped at bit b; a push appends to its bucket; a pop takes the
 * lowest non-empty bucket, finds its least event and spreads the rest over
 * lower buckets. Every step reads and writes arrays in order, each event
 * moves down a few buckets in its life, and no comparison decides a path.
 * An event that would go back in time (not seen in practice: kept for
 * exactness) waits in a small binary heap beside it.
 *
 * The next ZS_EVQ_AHEAD events are kept in order in a window in front, so
 * that the backend can look ahead (zs_evq_peek) and fetch the state the
 * coming events will touch before it handles them. An event pushed before
 * the window's last one is inserted into the window in its place. Depends
 * on zs_err only. */
#ifndef ZS_EVQ_H
#define ZS_EVQ_H

#include <stdint.h>

#include "zs_err.h"

typedef struct zs_ev {
    double t;
    int64_t seq; /* ties: the smaller first */
    int64_t op;  /* the caller's */
    int32_t rank;
    int8_t stream;
    int8_t comm;
} zs_ev;

#define ZS_EVQ_AHEAD 16  /* events kept in order in front */
#define ZS_EVQ_WCAP  64  /* the window's ring (a power of two) */
#define ZS_EVQ_NB    129 /* radix buckets: keys are 128 bits (time, sequence) */

typedef struct zs_evq_bucket {
    zs_ev *v;
    int64_t n, cap;
} zs_evq_bucket;

typedef struct zs_evq {
    zs_ev win[ZS_EVQ_WCAP]; /* ring: win[(wh + i) % ZS_EVQ_WCAP], i < wn, in order */
    int32_t wh, wn;
    /* behind the window: the radix heap (keys at or after `last`) ... */
    zs_evq_bucket b[ZS_EVQ_NB];
    uint64_t nonempty[3];    /* bit i: b[i] holds events */
    uint64_t last_t, last_s; /* the last key taken from the buckets (time's bits, sequence) */
    int64_t nrad;
    /* ... and the binary heap of those before it */
    zs_ev *early;
    int64_t nearly, capearly;
} zs_evq;

/* An empty queue is all zeros. */
void zs_evq_free(zs_evq *q);
/* ZS_ENOMEM when a buffer cannot grow (q is then unchanged). */
int zs_evq_push(zs_evq *q, zs_ev v);
/* Moves the earliest event to *out; q must not be empty. ZS_ENOMEM when a
 * buffer cannot grow (q can then only be freed). */
int zs_evq_pop(zs_evq *q, zs_ev *out);

static inline int64_t zs_evq_size(const zs_evq *q)
{
    return q->wn + q->nrad + q->nearly;
}

/* The i-th next event (0: the one zs_evq_pop returns next), for i below
 * ZS_EVQ_AHEAD; NULL when fewer are pending. Valid until the next push or
 * pop. */
static inline const zs_ev *zs_evq_peek(const zs_evq *q, int i)
{
    return i < q->wn ? &q->win[(q->wh + i) & (ZS_EVQ_WCAP - 1)] : NULL;
}

#endif
