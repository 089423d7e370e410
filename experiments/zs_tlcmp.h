/* Timeline comparison: two Chrome-trace timelines of the same schedule, a
 * measured one (`zepsim hw run --timeline`) and a predicted one (`zepsim
 * run --backend sim --timeline`), compared op by op. Ops are matched by
 * (rank, op label, kind) and, within that key, by order of start time:
 * both backends run the same program, so the k-th "attn" of rank 3 is the
 * same op in both files. Reports the iteration span of each file and, per
 * op label, the median durations and the median relative error, so a
 * calibration can be judged on a whole schedule, not only on isolated
 * microbenchmarks. The files are read as streams (zs_tlread_internal.h: plain or
 * gzip-compressed), each complete event kept as a 32-byte record, so a
 * comparison holds about a seventh of the files' size, never a whole
 * document: two 518 MB timelines (128 ranks) add 155 MB, where parsing
 * them whole took 12.7 GB.
 * The records of a side are held to the input limit (zs_input_limit:
 * ZEPSIM_MAX_INPUT_MB). Depends on zs_tlread (jansson, zlib). */
#ifndef ZS_TLCMP_H
#define ZS_TLCMP_H

#include <stddef.h>

#include "zs_err.h"

typedef struct zs_tlcmp_row {
    char name[96];             /* op label */
    char cat[16];              /* op kind: compute, send, recv, coll */
    int pairs;                 /* matched occurrences over all ranks */
    int err_pairs;             /* of them with a measured duration of at least 1 ns */
    double a_med_us, b_med_us; /* median durations (first file, second file) */
    double a_total_us;         /* summed durations in the first file */
    double abs_err_med_pct;    /* median |b - a| / a over the err_pairs (NAN if none) */
    double err_med_pct;        /* median signed (b - a) / a (NAN if none) */
} zs_tlcmp_row;

typedef struct zs_tlcmp {
    double a_span_us, b_span_us; /* last end - first start over each file's ops */
    double span_err_pct;         /* (b_span - a_span) / a_span; NAN when a_span is 0 */
    size_t a_events, b_events;   /* complete ("X") events read */
    size_t only_a, only_b;       /* events without a partner in the other file */
    zs_tlcmp_row *rows;          /* sorted by a_total_us, largest first */
    size_t nrows;
    /* Medians of |b - a| / a over all matched pairs of a class. */
    double compute_abs_err_med_pct, comm_abs_err_med_pct;
    int compute_pairs, comm_pairs;
} zs_tlcmp;

/* Reads both files (a Chrome trace object with "traceEvents", or a bare
 * event array) and compares them. Every complete event needs a string
 * "name", numbers "ts" (|ts| <= 1e18 us) and "dur" (0 <= dur <= 1e15 us)
 * and an integer "args.rank" >= 0, as zepsim's backends write them; other
 * events (metadata) are skipped. Relative errors are taken only over pairs
 * whose measured duration is at least 1 ns (the timelines' resolution):
 * below, a ratio means nothing and could overflow. NAN in a figure means
 * "no value" (no such pair, a measured span of 0); every other figure is
 * finite. */
int zs_tlcmp_files(const char *a_path, const char *b_path, zs_tlcmp **out, zs_err *e);
/* The same with several files per side, read as one timeline each (a
 * multi-process GPU run writes one file per rank: T.rank0.json, ...). */
int zs_tlcmp_files_n(const char *const *a, int na, const char *const *b, int nb, zs_tlcmp **out,
                     zs_err *e);
void zs_tlcmp_free(zs_tlcmp *c);

#endif
