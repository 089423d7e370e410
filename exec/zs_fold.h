/* Folding: executing a schedule's repeated segments without simulating
 * every iteration, shared by the analytic and SimGrid backends.
 *
 * A planner writes the identical layer passes of a micro-batch as one
 * segment repeated once per layer (zs_schedule.h). A backend that folds
 * simulates the first iterations of such a segment for real and, once
 * they repeat, replays the rest: each stream of each rank sleeps for the
 * skipped iterations (their count times the stream's measured period),
 * then goes on after them, and the accounting of the skipped work is added
 * (op counts and bytes exactly, busy shares as measured in the last
 * simulated iteration).
 *
 * What may fold is decided before the run (zs_fold_new), from the
 * schedule alone. Segments whose iterations talk to each other (a message
 * channel or a collective group whose k-th message / collective falls in
 * both) form a component: every segment of a component has the same
 * repeat count and its iterations match one to one, so they all skip the
 * same iterations and messages and collectives still pair as unrolled. A
 * segment that shares a channel or group with differently shaped segments,
 * repeats fewer than 6 times, or holds layers a timeline must show, runs
 * unrolled.
 *
 * When to fold is decided during the run (zs_fold_cross), once per
 * component, when the last of its streams enters an iteration K: if every
 * stream has completed at least min_iters iterations, its last four
 * periods were the same to within `tol` (relative), and all the
 * component's streams share that period (coupled streams with different
 * periods drift apart: a USP point folded 0.86% fast before this check),
 * the segment is identical in timing. It then folds at the next iteration
 * no stream has entered yet, and each stream replays the period it had
 * completed at the decision, in that period's phase, until the last
 * iteration, which runs again. Not the period before its own fall: a
 * stream that falls after others sleep has met less traffic since (a
 * sleeping stream sends nothing), and Zeppelin's gradient all-reduce,
 * replaying such a period, lost 5.6 pp of exposed share. A component whose
 * streams never repeat that closely runs unrolled to its end (counted in
 * the notes). Exactness: in a periodic steady state the replay is exact;
 * the error is bounded by tol per skipped iteration, plus the transition
 * at the skip (a transfer still in flight there completes during the
 * sleep). Two equal periods were not enough: in a
 * transient, a gradient all-reduce gated by a different slowest member
 * every few layers repeated twice and then changed (0.66% on a Fig. 8
 * point), and three were not either: on a Zeppelin point (Fig. 8,
 * ProLong-64K, 128K) a ready-first engine's stream repeated three times
 * and then changed (0.58%); four hold on every figure-spec point.
 *
 * Depends on the schedule IR and zs_result only. */
#ifndef ZS_FOLD_H
#define ZS_FOLD_H

#include <stdint.h>

#include "zs_err.h"
#include "zs_result.h"
#include "zs_schedule.h"

typedef struct zs_fold_cfg {
    int on;          /* 0: nothing folds (zs_fold_new still succeeds) */
    double tol;      /* exact repeat: relative difference allowed between a stream's last
                      * min_iters - 1 periods (1e-4) */
    double tol_mean; /* steady repeat (4 periods): the last two periods' mean against the two
                      * before (0: exact repeats only, the default) */
    double spread;   /* steady repeat: largest period's distance from the mean (0.15 with steady
                        folding) */
    int min_iters;   /* iterations simulated before a fold (at least 3; 4 by default) */
    int tail_iters;  /* last iterations simulated after the fold (0 or 1) */
    /* Timeline: iterations holding layers layer0..layer1 of the ranks
     * with rank_on[r] = 1 are simulated, not replayed. keep_all: a
     * timeline of every layer (nothing folds). rank_on NULL: all ranks
     * (read by zs_fold_new only); layer0 < 0: no layer limit. */
    int keep_all;
    const uint8_t *rank_on;
    int layer0, layer1;
} zs_fold_cfg;

/* On, exact repeats only (tol 1e-4, four periods: 5 iterations), the last
 * iteration simulated too, no timeline. */
void zs_fold_cfg_init(zs_fold_cfg *c);
/* Also fold steady repeats (tol_mean 5e-2, spread 0.15): a stream whose
 * period swings as other traffic shares its links but does not drift.
 * Faster at scale, not exact: see docs/simulator.md for how far it moves
 * results. */
void zs_fold_cfg_steady(zs_fold_cfg *c);

typedef struct zs_fold zs_fold;

/* Analyses s (borrowed; it must outlive the fold). */
int zs_fold_new(const zs_schedule *s, const zs_fold_cfg *cfg, zs_fold **out, zs_err *e);
void zs_fold_free(zs_fold *f);

/* 1 when segment seg of rank may fold (a backend can skip the hook otherwise). */
int zs_fold_candidate(const zs_fold *f, int rank, int32_t seg);

/* What a stream does at an iteration boundary. */
typedef struct zs_fold_step {
    int ref;       /* the stream is the rank's reference stream of the segment (the
                    * first with ops): backends measure periods at its boundaries */
    int32_t skip;  /* iterations skipped from the one entered (0: run it) */
    double period; /* the period replayed: the stream's when the component decided */
    /* Simulated seconds it sleeps: until the boundary its steady period
     * puts after the skipped iterations, counted from its boundary at the
     * decision (skip x period when it kept its period since; never < 0). */
    double sleep;
    /* Which of its periods the replay repeats: 0 its last one (from the
     * boundary before last to this one), 1 the one before, ... It is the
     * period the stream had completed when the component decided: one
     * completed later may be distorted by streams that already sleep (a
     * sleeping stream sends nothing, so a laggard's transfers meet less
     * traffic). At most ZS_FOLD_BACK_MAX. */
    int32_t back;
} zs_fold_step;

#define ZS_FOLD_BACK_MAX 2

/* Stream `stream` of `rank` finished iteration iter - 1 of segment seg
 * and enters iteration iter (1 <= iter < repeat) at time now. Fills *st
 * (skip 0: run the iteration). The backend then skips: no op of the
 * stream in iterations [iter, iter + skip) runs; the stream sleeps
 * st->sleep (its accounting: zs_foldacct.h); at its end every op of the
 * stream in the segment counts skip more completions (an op whose last
 * simulated iteration is still in flight gets them when it completes), and
 * the ops' work is accounted (zs_fold_ops_per_iter and the backend's
 * bytes). */
void zs_fold_cross(zs_fold *f, int rank, int32_t seg, int stream, int32_t iter, double now,
                   zs_fold_step *st);

/* Ops of `stream` in one iteration of segment seg of rank (markers count). */
int64_t zs_fold_ops_per_iter(const zs_fold *f, int rank, int32_t seg, int stream);

typedef struct zs_fold_stats {
    int64_t segments;       /* repeated segment instances (rank x segment, repeat >= 2) */
    int64_t candidates;     /* of which could fold */
    int64_t folded;         /* of which folded */
    int64_t unsteady;       /* candidates that never repeated within tol (ran unrolled) */
    int64_t shape;          /* not candidates: channel / group shared with other shapes */
    int64_t timeline;       /* not candidates (or not fully folded): a timeline shows them */
    int64_t iters_replayed; /* stream-iterations replayed (summed over streams) */
    int64_t ops_replayed;   /* ops replayed, counted as unrolled */
    int first_fold;         /* smallest iteration a component folded at (-1: none) */
    int last_fold;          /* largest */
} zs_fold_stats;

void zs_fold_get_stats(const zs_fold *f, zs_fold_stats *st);
/* Adds the fold's notes (what folded, what ran unrolled and why) to r. */
void zs_fold_note(const zs_fold *f, zs_result *r);

#endif
