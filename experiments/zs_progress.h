/* Progress of a long run (compare's methods, simulate's iterations, run's
 * replay, the experiment runner's points) for people and for batch logs: on
 * a terminal one line rewritten in place; elsewhere (a Slurm log, a pipe)
 * whole lines, one when the caller says a step finished and otherwise at
 * most one per interval (10 s), each with the elapsed time and, once it
 * means something, an estimate of the time left.
 *
 * The estimate: work whose steps cost about the same (simulate's
 * iterations) is read from the share done; work whose items cost very
 * different amounts (a spec's points, from 16 to 1024 GPUs) from the items'
 * a-priori costs (zs_progress_eta), as time per unit of cost measured on
 * the finished items, so cheap points done first do not promise a quick
 * end. Neither is printed before 5% of the work (by cost) is done or
 * before 2 s. Times are passed in, so the rules are tested with a fake
 * clock. Depends on nothing but libc. */
#ifndef ZS_PROGRESS_H
#define ZS_PROGRESS_H

#include <stdio.h>

typedef struct zs_progress {
    FILE *f;         /* NULL: silent (--quiet) */
    int tty;         /* rewrite one line in place */
    char what[64];   /* "compare", "simulate zeppelin" */
    double t0, last; /* start, last line printed (s) */
    double interval; /* seconds between lines when no step finished */
    int open;        /* a terminal line is open (needs a newline) */
    int lines;       /* lines printed (non-terminal) */
} zs_progress;

/* f NULL: silent. tty: f is a terminal. now: the clock (s). */
void zs_progress_init(zs_progress *p, FILE *f, int tty, const char *what, double now);
/* frac: the share of the work done (0..1; the time left from it, from 5%
 * on, as elapsed x (1 - frac) / frac); step: a step just
 * finished (always a line off a terminal); status: what is done and
 * running. */
void zs_progress_report(zs_progress *p, double now, double frac, int step, const char *status);
/* The same with the time left given (seconds; < 0: no estimate). */
void zs_progress_report_left(zs_progress *p, double now, double left, int step, const char *status);

/* One item of work for zs_progress_eta: its a-priori cost, in any unit
 * that grows in proportion with its expected time (a study point's
 * iterations x GPUs^1.3, zs_point_cost_hint), 0 for an item that will not
 * run here;
 * when it started and ended (s, the clock of now; < 0: not yet). */
typedef struct zs_eta_item {
    double cost;
    double start, end;
} zs_eta_item;

/* The share of the work (by cost) that must be done before an estimate is
 * printed: earlier, one or two items' own variation is all it would say. */
#define ZS_PROGRESS_MIN_SHARE 0.05

/* Seconds left, at now, of items run up to `jobs` at a time in their
 * order (each on the first worker free), or -1 while less than
 * ZS_PROGRESS_MIN_SHARE of the cost is finished. The time per unit of cost
 * is that of the finished items (their run times over their costs); an
 * item not started needs its cost at that rate, a running one what its
 * cost leaves after the time it has run, but at least a quarter of that
 * time again; the estimate is when the last worker would be free if the
 * items left ran in order on the first one free (jobs above
 * ZS_PROGRESS_MAX_JOBS count as that many). */
#define ZS_PROGRESS_MAX_JOBS 256
double zs_progress_eta(const zs_eta_item *items, int n, int jobs, double now);

/* Ends an open terminal line. */
void zs_progress_end(zs_progress *p);
/* Seconds of a monotonic clock. */
double zs_progress_now(void);

#endif
