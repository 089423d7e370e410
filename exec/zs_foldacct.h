/* A rank's compute / exposed communication / idle accounting when its
 * streams may sleep through folded iterations (zs_fold.h): what the
 * analytic and SimGrid backends use instead of zs_rank_acct.
 *
 * zs_rank_acct (zs_result.h) splits a rank's time by the ops running on
 * it. A folded stream sleeps instead of running the skipped ops, so while
 * it sleeps its activity is replayed: it computes and communicates as it
 * did in its last simulated period (its state changes since the boundary
 * before last, repeated, stretched to the period it replays). The ops it
 * had in flight when it fell asleep belong to that replay and stop
 * counting; what they did after the fall is replayed after the wake (the
 * last skipped iteration's ops in flight). A stream's state is two bits: a
 * compute op running, a
 * communication running; the rank computes when any stream does, else
 * communicates (exposed) when any does, else idles, exactly as
 * zs_rank_acct. With no stream asleep it is zs_rank_acct.
 *
 * Cost: O(1) per change, plus O(1) per replayed state change when the
 * split is brought up to date (no SimGrid work). Depends on zs_result and
 * the schedule IR (stream count) only. */
#ifndef ZS_FOLDACCT_H
#define ZS_FOLDACCT_H

#include <stdint.h>

#include "zs_pool.h"
#include "zs_result.h"
#include "zs_schedule.h"

/* Boundaries kept per stream: the replay may repeat its last period or
 * up to ZS_FOLD_BACK_MAX (zs_fold.h) periods before it. */
#define ZS_FACCT_NB 4

typedef struct zs_foldacct_ev {
    double t;      /* when (log) or offset in the period (pattern) */
    uint8_t state; /* the stream's state from then on: bit 0 computing, bit 1 communicating */
} zs_foldacct_ev;

/* The log's changes, seven to a cache line: a zs_foldacct_ev takes 16
 * bytes for 9, and the logs (three periods of every stream's changes) are
 * a quarter of the analytic backend's memory at thousands of ranks, each
 * page of it cleared by the kernel when first touched. */
#define ZS_FACCT_PER_LINE 7
typedef struct zs_foldacct_line {
    double t[ZS_FACCT_PER_LINE];
    uint8_t state[ZS_FACCT_PER_LINE];
    uint8_t pad;
} zs_foldacct_line;

/* What a change reads and writes comes first, in one cache line (the
 * analytic backend keeps each stream's record on a cache line of its own:
 * at thousands of ranks every change lands on a rank in no cache). */
typedef struct zs_foldacct_stream {
    int comp, comm;   /* its ops running (ghosts excluded) */
    int gcomp, gcomm; /* ops in flight when it fell asleep: they end without counting */
    uint8_t state;    /* from comp and comm */
    uint8_t vstate;   /* while asleep: the replay's state */
    uint8_t eff;      /* state counted: state | vstate while asleep */
    /* the last change, when it came after the last boundary (else lok 0):
     * its time and the state before it, so that a change at the same time
     * (an op ends, the next starts) merges into it without reading the log */
    uint8_t lprev;
    int nb;         /* boundaries seen (logging starts at the first) */
    uint8_t asleep; /* replaying a period (below) */
    uint8_t tail;   /* the tail is being replayed (below) */
    uint8_t lok;
    /* The last change (the log's entry nlog - 1) is (lt, lst) here and
     * written to the log only when the next change comes (or a boundary or
     * a sleep needs it): the log's end is a cache line in no cache (each
     * write one more miss per event at thousands of ranks), and a fifth of
     * the changes are cancelled at once (an op ends, the next starts at the
     * same time) and then never reach it. */
    uint8_t lpend;
    uint8_t lst;
    int nlog; /* its state changes since its oldest boundary kept */
    double lt;
    /* A ring of caplog changes (ZS_FACCT_PER_LINE per line): change i
     * since the oldest boundary kept is entry (lh + i) mod caplog.
     * Dropping the oldest period at a boundary moves lh, not the entries (a
     * memmove of the three periods kept, each entry copied three times,
     * from lines long out of the caches). */
    zs_foldacct_line *log;
    int caplog;
    int lh;
    /* the rest: boundaries and replays */
    uint8_t pstate0;             /* asleep: the state the period starts in */
    uint8_t gstate0;             /* the ghosts' state at the fall */
    uint8_t tstate;              /* the tail's state now */
    uint8_t bstate[ZS_FACCT_NB]; /* its state at each boundary */
    double b[ZS_FACCT_NB];       /* its last iteration boundaries, b[ZS_FACCT_NB - 1] the latest */
    int bi[ZS_FACCT_NB];         /* the log's length at each */
    /* asleep: the period replayed */
    zs_foldacct_ev *pat; /* state changes over the period, offsets from its start */
    int npat, cappat;
    double plen;  /* the period's simulated length */
    double scale; /* replayed period / plen */
    double cyc;   /* when the current repetition started */
    int pidx;     /* next change of the pattern */
    int tidx;     /* the tail's next change */
    /* the ops in flight at the fall (ghosts): their state changes since,
     * replayed from the wake as the tail */
    zs_foldacct_ev *tl;
    int ntl, captl;
    double fell;   /* when it fell asleep */
    double tail0;  /* the tail replays from when */
    char pad_[56]; /* a whole number of cache lines */
} zs_foldacct_stream;

typedef struct zs_foldacct {
    double last;      /* integrated up to here */
    int ncomp, ncomm; /* streams counted as computing / communicating */
    int nasleep;
    int ntail;     /* streams replaying a tail */
    int failed;    /* out of memory: the replay degrades to idle, see zs_foldacct_failed */
    int nst;       /* streams in use, 0: ZS_MAX_STREAMS (the replay visits only these) */
    zs_pool *pool; /* where its buffers live (NULL: malloc); set before the first change */
    /* No replayed change comes before this (the least next change the
     * last scan of the replaying streams found): until then a change
     * integrates without reading every stream's replay, each on cache
     * lines of its own. -INFINITY (or 0 at init): scan again. */
    double tnext;
    char pad_[16]; /* the streams start a cache line after the start */
    zs_foldacct_stream st[ZS_MAX_STREAMS];
} zs_foldacct;

void zs_foldacct_init(zs_foldacct *a);
void zs_foldacct_free(zs_foldacct *a); /* its buffers (not a) */

/* Where change i of q's log (since its oldest boundary kept) is: its line
 * (*slot: its place there). */
static inline zs_foldacct_line *zs_foldacct_log_at(const zs_foldacct_stream *q, int i, int *slot)
{
    int j = q->lh + i;
    j -= j >= q->caplog ? q->caplog : 0;
    *slot = j % ZS_FACCT_PER_LINE;
    return &q->log[j / ZS_FACCT_PER_LINE];
}

/* An op of `stream` started (+1) or ended (-1) at now. */
void zs_foldacct_change(zs_foldacct *a, zs_rank_result *r, int stream, double now, int dcompute,
                        int dcomm);
/* `stream` reached an iteration boundary of a segment that may fold. */
void zs_foldacct_boundary(zs_foldacct *a, zs_rank_result *r, int stream, double now);
/* `stream` sleeps from now (right after a boundary), replaying one of its
 * periods stretched to `period`: back 0 its last one (from the boundary
 * before last to now), 1 the one before, ... (at most ZS_FACCT_NB - 2).
 * The replay keeps that period's phase: its repetitions start at the
 * period's end boundary plus whole periods, so a stream that entered this
 * boundary off its steady phase replays from where its steady phase is. */
void zs_foldacct_sleep(zs_foldacct *a, zs_rank_result *r, int stream, double now, double period,
                       int back);
void zs_foldacct_wake(zs_foldacct *a, zs_rank_result *r, int stream, double now);
/* Integrates up to `end` (the iteration's end). */
void zs_foldacct_close(zs_foldacct *a, zs_rank_result *r, double end);

#endif
