/* The hardware executor's view of a schedule, computed on the CPU before
 * any device work: every rank's program unrolled (segments repeated,
 * dependencies resolved to unrolled indices), send/recv runs grouped the
 * way NCCL issues them, every message matched to its receive and checked
 * for NCCL's in-order matching, collectives checked across group members,
 * and the largest buffer every op kind needs. Also the per-rank accounting
 * of measured op times into a zs_result and the Chrome-trace timeline.
 *
 * Nothing here touches CUDA, so all of it is unit-tested on the CPU.
 * Depends on zs_schedule and zs_result. */
#ifndef ZS_HW_PROG_H
#define ZS_HW_PROG_H

#include <stdint.h>
#include <stdio.h>

#include "zs_err.h"
#include "zs_hw_ref.h"
#include "zs_result.h"
#include "zs_schedule.h"

/* One unrolled op of a rank. */
typedef struct zs_hw_item {
    int64_t op;    /* index in the rank's stored ops */
    int32_t iter;  /* iteration of its segment */
    int32_t ndeps; /* unrolled indices prog->deps[dep0 .. dep0 + ndeps) */
    int64_t dep0;
    int64_t group; /* p2p: unrolled index of the first op of its send/recv group; else -1 */
    int32_t comm;  /* p2p: communicator lane (the sender's stream); else -1 */
    int32_t nth;   /* coll: k-th collective of its group on this rank; else -1 */
} zs_hw_item;

typedef struct zs_hw_prog {
    int rank;
    zs_hw_item *items;
    int64_t n;
    int64_t *deps;
    int64_t ndeps;
} zs_hw_prog;

/* Largest sizes over all ranks, so device buffers are allocated once. */
typedef struct zs_hw_needs {
    int64_t attn_q_rows, attn_k_rows; /* summed over one op's blocks */
    int attn_heads;                   /* most query heads of an attention op */
    int attn_blocks;                  /* most blocks in one op */
    double gemm_a, gemm_b, gemm_c;    /* elements of the GEMM operands */
    double elem_bytes, p2p_bytes, coll_bytes;
    /* Bytes of the largest host copy (ZS_CK_D2H / ZS_CK_H2D: activation
     * offloading); 0 when the schedule has none. Each rank then holds one
     * device buffer and one pinned host buffer of this size, which every
     * copy reuses, as other ops reuse the synthetic tensors. */
    double host_copy_bytes;
    int p2p_lanes;          /* distinct sender streams used by sends (communicators needed) */
    unsigned p2p_lane_mask; /* bit l set: stream l sends (lane l exists) */
} zs_hw_needs;

/* Unrolls every rank, groups p2p runs (a run is cut where an op depends on
 * something not issued when the run starts), matches messages and
 * collectives and computes the buffer needs. progs is an array of
 * s->nranks programs the caller frees with zs_hw_progs_free. Schedules NCCL
 * cannot execute as written (a pair's messages matched out of order on one
 * lane) are ZS_EUNSUPPORTED; inconsistent schedules (unmatched sends,
 * collectives whose members disagree) are ZS_EINVALID, naming the rank and
 * op. Host copies (activation offloading) are accepted: their need is
 * host_copy_bytes, apart from the elementwise ops'. */
int zs_hw_progs_build(const zs_schedule *s, zs_hw_prog **progs, zs_hw_needs *needs, zs_err *e);
void zs_hw_progs_free(zs_hw_prog *progs, int nranks);

/* Measured times of one rank's unrolled ops, seconds from a common start. */
typedef struct zs_hw_times {
    double *start, *end; /* prog.n entries each */
} zs_hw_times;

/* One rank's row from its measured op times: compute, exposed
 * communication and idle (zs_rank_acct) up to `end_all` (the iteration's
 * end over all ranks), its end and op count. Markers count as ops but take
 * no time; host copies (d2h/h2d) count as communication, not compute, as
 * on the other backends. Returns ZS_ENOMEM (row untouched) when out of memory. */
int zs_hw_account_rank(const zs_schedule *s, const zs_hw_prog *p, const zs_hw_times *t,
                       double end_all, zs_rank_result *row);
/* Every rank's row (all times known), then zs_result_finish. */
int zs_hw_account(const zs_schedule *s, const zs_hw_prog *progs, const zs_hw_times *t,
                  zs_result *r);

/* Buffer coordinates of an attention op's blocks: block i's queries and
 * keys get their own rows (packed one after the other), so partial results
 * never overwrite each other. Writes the total rows of Q and K. */
void zs_hw_blocks_pack(const zs_attn_block *in, int n, zs_hw_block *out, int64_t *q_rows,
                       int64_t *k_rows);

/* Work items of the attention kernels: (block, first row) pairs of
 * `rows`-row tiles over the queries (forward: rows = 128) or the keys
 * (backward: rows = 64), heaviest first (ties by position) so long causal
 * tiles start early. Key tiles no query sees are left out; query tiles
 * that see no key are kept (last), since they must still write O = 0 and
 * LSE = -inf.
 * tiles holds 2 ints per tile; returns the number written (at most `cap`),
 * or the number needed when tiles is NULL. */
int64_t zs_hw_attn_tiles(const zs_hw_block *b, int nb, int rows, int over_keys, int32_t *tiles,
                         int64_t cap);

/* Writes the measured times as a timeline (exec/zs_timeline.h: Chrome
 * trace JSON, .gz compressed, written atomically): one process per node
 * (gpus_per_node ranks each), one thread per GPU stream, an "X" event per
 * timed op with its label, kind, sizes, op index and predicted duration in
 * "args", and send->receive flows. only_rank >= 0 writes that rank alone
 * (process mode: each process writes its own file), else every rank is
 * written (measurements are not cut to an automatic subset). *bytes (may
 * be NULL) is the JSON size. */
int zs_hw_timeline_write(const zs_schedule *s, const zs_hw_prog *progs, const zs_hw_times *t,
                         int gpus_per_node, int only_rank, const char *path, double *bytes,
                         zs_err *e);

#endif
