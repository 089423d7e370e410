/* The analytic backend's pending events, earliest first: by time, ties by
 * the sequence number the caller gives (so runs are deterministic). Any
 * structure that pops in this total order gives the same run.
 *
 * The next ZS_EVQ_AHEAD events are kept in order in a window in front, so
 * that the backend can look ahead (zs_evq_peek) and fetch the state the
 * coming events will touch before it handles them (with thousands of ranks
 * every event lands on a rank whose state is in no cache). An event pushed
 * before the window's last one is inserted into the window in its place.
 * Behind the window, the events before a split time wait in a 4-ary heap,
 * the later ones unordered in an array; when the near events run out, the
 * far events before a new split (about an eighth of them, from a sample)
 * are moved into a batch and sorted (a bucket pass by time, then an
 * insertion sort that only fixes order inside buckets), and leave it from
 * its front; the events pushed below the split meanwhile (one push in
 * twenty at 4096 GPUs) wait in the heap, and the earlier of the batch's
 * first and the heap's top leaves. A heap of the whole batch cost a chain
 * of dependent compares per level on each pop (an eighth of the backend's
 * time at 4096 GPUs); a push of a far event appends. Every event in the
 * window comes before every event behind it, and every event in the
 * batch or the heap before every far one. Beside them, an event that
 * comes after the last one put there waits in a run, in order (a FIFO: no
 * heap, no far scans), and the back pops the earlier of the run's first
 * and the heap's: a dry run, whose events all come at time 0, pushes
 * nothing else. Times are compared as numbers
 * (NaN, which no run produces, waits until only NaN is left). Depends on
 * zs_err only. */
#ifndef ZS_EVQ_INTERNAL_H
#define ZS_EVQ_INTERNAL_H

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

#define ZS_EVQ_AHEAD 16 /* events kept in order in front */
#define ZS_EVQ_WCAP  32 /* the window's ring (a power of two) */

typedef struct zs_evq {
    zs_ev win[ZS_EVQ_WCAP]; /* ring: win[(wh + i) % ZS_EVQ_WCAP], i < wn, in order */
    int32_t wh, wn;
    /* behind the window: the near events (time below split) in a heap,
     * the far ones unordered */
    zs_ev *heap;
    int64_t n, cap;
    zs_ev *far;
    int64_t nfar, capfar;
    double split;
    /* the near events refill took, sorted: srt[sh .. sn); tmp and cnt
     * scratch for the sort; srt, tmp and cnt hold capb each (as many as
     * there are far events, so that refill cannot fail) */
    zs_ev *srt, *tmp;
    int64_t *cnt;
    int64_t sh, sn, capb;
    /* events in order, each after all those before it: run[rh .. rn) */
    zs_ev *run;
    int64_t rh, rn, caprun;
} zs_evq;

void zs_evq_init(zs_evq *q); /* empty */
void zs_evq_free(zs_evq *q); /* its buffers; then empty */
/* Adds the event (t, seq, op, rank, stream, comm); ZS_ENOMEM when the heap
 * cannot grow (q is then unchanged). The fields come as arguments, in
 * registers: an event built in memory field by field and copied whole
 * from there is a load that no store can forward, which waits until
 * every older store has reached the cache (with thousands of ranks, stores
 * to lines in no cache: an eighth of the backend's time at 32K GPUs). */
int zs_evq_add(zs_evq *q, double t, int64_t seq, int64_t op, int32_t rank, int8_t stream,
               int8_t comm);

static inline int zs_evq_push(zs_evq *q, const zs_ev *v)
{
    return zs_evq_add(q, v->t, v->seq, v->op, v->rank, v->stream, v->comm);
}
/* Removes and returns the earliest event; q must not be empty. */
zs_ev zs_evq_pop(zs_evq *q);

static inline int64_t zs_evq_size(const zs_evq *q)
{
    return q->wn + q->n + (q->sn - q->sh) + q->nfar + (q->rn - q->rh);
}

/* The i-th next event (0: the one zs_evq_pop returns next), for i below
 * ZS_EVQ_AHEAD; NULL when fewer are pending. Valid until the next push or
 * pop. */
static inline const zs_ev *zs_evq_peek(const zs_evq *q, int i)
{
    return i < q->wn ? &q->win[(q->wh + i) & (ZS_EVQ_WCAP - 1)] : NULL;
}

#endif
