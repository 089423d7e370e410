/* Progress of a long run (compare's methods, simulate's iterations, the
 * experiment runner's points) for people and for batch logs: on a terminal
 * one line rewritten in place; elsewhere (a Slurm log, a pipe) whole lines,
 * one when the caller says a step finished and otherwise at most one per
 * interval (10 s), each with the elapsed time and an estimate of the time
 * left. Times are passed in, so the rules are tested with a fake clock.
 * Depends on nothing but libc. */
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
/* frac: the share of the work done (0..1; ETA from it); step: a step just
 * finished (always a line off a terminal); status: what is done and
 * running. */
void zs_progress_report(zs_progress *p, double now, double frac, int step, const char *status);
/* Ends an open terminal line. */
void zs_progress_end(zs_progress *p);
/* Seconds of a monotonic clock. */
double zs_progress_now(void);

#endif
