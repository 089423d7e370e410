/* The analytic backend's accounting calls (zs_foldacct), queued and
 * applied in batches, rank by rank.
 *
 * A rank's accounting is a sink: nothing during a run reads it, and what
 * it ends with depends only on the order of the calls made for that rank
 * (zs_foldacct_change, _boundary, _sleep, _wake, each with its time). At
 * thousands of ranks every call landed on a rank whose accounting was in
 * no cache: its header, its stream's record and the end of the stream's
 * log, three cache misses per op start or end, about a third of the
 * backend's time at 4096 GPUs. Queued (16 bytes appended to an array),
 * then ordered by rank (a stable counting sort: each rank's calls keep
 * their order) and applied rank after rank, a rank's lines are fetched
 * once per batch for the dozens of calls it got since the last, and the
 * ranks are walked in address order with their state fetched ahead. The
 * results are the same to the bit: each rank sees the same calls with the
 * same arguments in the same order.
 *
 * The queue knows where each rank's zs_foldacct and zs_rank_result are:
 * at acct0 and res0 plus rank * stride (the caller's per-rank records).
 * Depends on zs_foldacct and zs_bigmem only. */
#ifndef ZS_ACCTQ_H
#define ZS_ACCTQ_H

#include <stddef.h>
#include <stdint.h>

#include "zs_foldacct.h"

/* What a queued call is (zs_acctq_rec.kind). */
#define ZS_ACCTQ_CHANGE   0
#define ZS_ACCTQ_BOUNDARY 1
#define ZS_ACCTQ_SLEEP    2 /* the next record holds the period */
#define ZS_ACCTQ_WAKE     3

typedef struct zs_acctq_rec {
    double t; /* when (the record after a sleep: its period) */
    int32_t rank;
    uint8_t stream;
    uint8_t kind;  /* ZS_ACCTQ_* */
    int8_t da, db; /* a change: dcompute, dcomm; a sleep: back */
} zs_acctq_rec;

typedef struct zs_acctq {
    zs_acctq_rec *v, *tmp; /* the calls queued: v[0 .. n); tmp: v ordered by rank */
    int64_t n, cap;
    int32_t *cnt; /* per rank + 1: counts, then where each rank's calls start */
    int nranks;
    char *acct0, *res0;
    size_t stride;
    size_t bytes; /* of v and tmp each */
} zs_acctq;

/* A queue of `per_rank` calls per rank of nranks before it applies them;
 * ZS_ENOMEM when it cannot get its memory. */
int zs_acctq_init(zs_acctq *q, int nranks, int per_rank, zs_foldacct *acct0, zs_rank_result *res0,
                  size_t stride);
void zs_acctq_free(zs_acctq *q); /* its buffers (unapplied calls are dropped) */

/* Applies every call queued, in order for each rank. */
void zs_acctq_flush(zs_acctq *q);

/* Queues a call: as zs_foldacct_change etc. on the rank's accounting. */
static inline void zs_acctq_put(zs_acctq *q, int rank, int stream, double t, int kind, int da,
                                int db)
{
    if (q->n == q->cap)
        zs_acctq_flush(q);
    q->v[q->n++] = (zs_acctq_rec){t, rank, (uint8_t)stream, (uint8_t)kind, (int8_t)da, (int8_t)db};
}

static inline void zs_acctq_change(zs_acctq *q, int rank, int stream, double now, int dcompute,
                                   int dcomm)
{
    zs_acctq_put(q, rank, stream, now, ZS_ACCTQ_CHANGE, dcompute, dcomm);
}

static inline void zs_acctq_boundary(zs_acctq *q, int rank, int stream, double now)
{
    zs_acctq_put(q, rank, stream, now, ZS_ACCTQ_BOUNDARY, 0, 0);
}

void zs_acctq_sleep(zs_acctq *q, int rank, int stream, double now, double period, int back);

static inline void zs_acctq_wake(zs_acctq *q, int rank, int stream, double now)
{
    zs_acctq_put(q, rank, stream, now, ZS_ACCTQ_WAKE, 0, 0);
}

#endif
