/* The result structure every backend (analytic, SimGrid, hardware) fills,
 * so results compare field by field and op by op.
 *
 * Per rank, wall time up to the iteration's end splits into exactly three
 * parts: compute (a compute op is running), exposed communication (a
 * communication op is running and no compute op is) and idle (neither).
 * Backends keep that split with zs_rank_acct as ops start and end, in O(1)
 * per event. Depends on zs_cluster (link classes) and zs_table. */
#ifndef ZS_RESULT_H
#define ZS_RESULT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zs_cluster.h"
#include "zs_err.h"
#include "zs_fork.h"
#include "zs_table.h"

typedef struct zs_rank_result {
    double compute;      /* seconds with a compute op running */
    double exposed_comm; /* seconds with comm running and no compute */
    double idle;         /* seconds with neither (waiting on a peer) */
    double comm;         /* seconds with a comm op running (overlapped or not) */
    double end;          /* when the rank's last op finished */
    int64_t ops;         /* ops executed (unrolled) */
} zs_rank_result;

typedef struct zs_result {
    char backend[32]; /* "analytic", "simgrid", "hw" */
    char notes[1024]; /* approximations the backend made, shown to the user */
    double iter_time; /* seconds: the last rank's end */
    int nranks;
    zs_rank_result *ranks;
    double link_bytes[ZS_LINK_NCLASSES]; /* bytes carried per link class */
    double link_busy[ZS_LINK_NCLASSES];  /* summed busy seconds over links of the class */
    int nnics;         /* nodes * nics_per_node; NIC id = node * nics_per_node + k */
    double *nic_bytes; /* bytes sent + received through each NIC */
    double *nic_busy;  /* seconds each NIC carried traffic */
    /* Per rank: seconds its compute ops took beyond their predicted
     * durations because NCCL kernels held SMs under them (zs_exec_opts
     * interference); NULL: not modelled. */
    double *interference;
    int slowest_rank;
    char slowest_why[256];
    int64_t ops_executed;  /* ops of the iteration, every repeat counted */
    int64_t ops_replayed;  /* of which folding replayed instead of simulating (zs_fold.h) */
    double wall_seconds;   /* host time the backend took */
    double timeline_bytes; /* JSON size of the timeline written (0: none; zs_timeline_note) */
    /* The automatic rank subset the timeline kept, as a sentence ("": every
     * rank, or the ranks asked for; zs_timeline_note, ZS_TL_NOTE_LEN). */
    char timeline_subset[512];
    /* Filled by the caller for throughput and MFU. */
    double tokens;      /* tokens trained in the iteration */
    double model_flops; /* useful FLOPs of the iteration (fwd + bwd, no recompute, no padding) */
    double peak_flops;  /* sum over GPUs of the peak, FLOP/s */
} zs_result;

zs_result *zs_result_new(int nranks, int nnics);
void zs_result_free(zs_result *r);

/* A result as plain bytes, for a child process to send its parent
 * (base/zs_fork.h): the struct (its pointers replaced on the way back),
 * then the per-rank rows, the two per-NIC arrays and, when modelled, the
 * per-rank interference. */
int zs_result_pack(const zs_result *r, zs_fork_buf *out, zs_err *e);
/* The result packed at *pos of b (advanced past it); NULL when the bytes
 * there do not hold one, or out of memory. */
zs_result *zs_result_unpack(const zs_fork_buf *b, size_t *pos);
/* Appends a note ("; "-separated). */
void zs_result_note(zs_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a formatted note to a "; "-separated notes buffer of n bytes
 * (cut when full, and then ending in " [notes cut]"): the results' and the
 * planners' notes. */
void zs_notes_vappend(char *notes, size_t n, const char *fmt, va_list ap);
/* The share of its time the slowest rank must compute to be called
 * compute-bound: what is not compute (exposed communication, waiting on
 * other ranks) is then under a quarter of it. */
#define ZS_RESULT_COMPUTE_BOUND 0.75

/* Sets iter_time and the slowest rank (with a sentence on why) from
 * ranks[]: compute-bound when it computes at least ZS_RESULT_COMPUTE_BOUND
 * of its time, else communication-bound or waiting on other ranks,
 * whichever of exposed communication and idle is larger, with the share. */
void zs_result_finish(zs_result *r);
/* ZS_EINVALID naming the first figure that is not finite (an overflowed
 * sum of op times, say), so that no inf or NaN is ever reported as a
 * result; ZS_OK otherwise. */
int zs_result_check(const zs_result *r, zs_err *e);

/* Per-rank accounting of compute / exposed comm / idle. */
typedef struct zs_rank_acct {
    double last;   /* time of the last change */
    int computing; /* compute ops running */
    int comm;      /* comm ops running */
} zs_rank_acct;

/* Call at every start (+1) or end (-1) of an op on the rank, with the
 * current time; `dcompute` and `dcomm` are the changes in running ops. */
void zs_rank_acct_change(zs_rank_acct *a, zs_rank_result *r, double now, int dcompute, int dcomm);
/* Closes the accounting at the iteration's end (idle until `end`). */
void zs_rank_acct_close(zs_rank_acct *a, zs_rank_result *r, double end);

/* Summary as rows of a key/value table (zs_table_kv_new): iteration time, tokens/s, MFU, mean and
 * max compute/exposed/idle, bytes per link class, max NIC utilisation. */
void zs_result_summary(const zs_result *r, zs_table *t);
/* The sentences that do not fit a table: why the slowest rank is slowest,
 * and the backend's notes on what it approximated. */
void zs_result_print_text(const zs_result *r, FILE *f);
/* Per-rank rows: rank, compute, exposed, idle, comm, end, and when the
 * result has it, interference (a seventh column the caller adds). */
void zs_result_ranks(const zs_result *r, zs_table *t);

#endif
