/* The schedule IR: the one interface between planners and backends.
 *
 * A schedule holds, for every rank (GPU), an ordered program of ops on named
 * streams (0 = compute, 1 = comm, more if a planner wants them). Ops on one
 * stream of one rank run in program order; ops on different streams run
 * concurrently, ordered only by explicit dependencies on earlier ops of the
 * same rank. Ranks synchronise only through communication:
 *   - the k-th SEND from rank a to rank b with tag t (in a's unrolled program
 *     order) matches the k-th RECV on b from a with tag t; the transfer
 *     starts when both are issued and both complete when it ends;
 *   - the k-th COLL op on group g of every member forms one collective.
 * A cross-rank dependency is therefore a message (a zero-byte one is fine).
 * SEND and RECV ops do not hold their stream: a stream issues them in
 * order as soon as each one's dependencies have completed and moves on
 * (like NCCL calls inside a group: a ring step's send and receive run
 * together, so rings cannot deadlock). Any other op waits until every
 * earlier op of its stream, sends and receives included, has completed,
 * and until its dependencies have. A COLL op holds its stream until the
 * collective completes. A dependency on a SEND/RECV waits for the transfer
 * to complete.
 *
 * Layers repeat: a rank's program is a list of segments, each a run of ops
 * executed `repeat` times in a row (e.g. one layer's forward, repeat 32).
 * Backends unroll; nothing stores 32 copies. A dependency names an earlier
 * op of the same rank by index: inside the same segment it means the same
 * iteration of that segment, in an earlier segment its last iteration.
 *
 * Compute ops carry their predicted duration (from the cost model); the
 * hardware backend ignores it and measures. Host copies (ZS_CK_D2H,
 * ZS_CK_H2D: activation offloading) are compute ops in the IR, timed by
 * their duration (the host link's price), but a copy engine moves them,
 * not the SMs: backends count them as communication, never as compute,
 * and interference does not slow them (zs_ck_is_host_copy). The plan part (documents and
 * token placement per layout) is what the validator checks coverage
 * against. Depends on zs_cost (attention blocks, collective kinds) only. */
#ifndef ZS_SCHEDULE_H
#define ZS_SCHEDULE_H

#include <stdint.h>
#include <stdio.h>

#include "zs_cost.h"
#include "zs_err.h"

#define ZS_MAX_STREAMS    8
#define ZS_STREAM_COMPUTE 0
#define ZS_STREAM_COMM    1

typedef enum zs_op_kind {
    ZS_OP_COMPUTE = 0,
    ZS_OP_SEND,
    ZS_OP_RECV,
    ZS_OP_COLL,
    ZS_OP_MARKER,
    ZS_OP_NKINDS
} zs_op_kind;

typedef enum zs_compute_kind {
    ZS_CK_ATTN_FWD = 0, /* attention forward over a block list */
    ZS_CK_ATTN_BWD,     /* attention backward over a block list */
    ZS_CK_GEMM,         /* m x n x k (QKV, O, MLP, experts, LM head) */
    ZS_CK_ELEMWISE,     /* memory bound: norms, SwiGLU, residual, merges */
    ZS_CK_D2H,          /* `bytes` copied to pinned host memory by a copy engine */
    ZS_CK_H2D,          /* `bytes` copied back from pinned host memory by a copy engine */
    ZS_CK_NKINDS
} zs_compute_kind;

typedef enum zs_marker_kind {
    ZS_MARK_LAYER = 0,  /* value = layer index (first of a repeated run) */
    ZS_MARK_PHASE,      /* value = a zs_phase */
    ZS_MARK_MICROBATCH, /* value = micro-batch index */
    ZS_MARK_LAYER_DOWN, /* value = layer index of the first iteration of a repeated run,
                         * one less each iteration (backward passes) */
    ZS_MARK_NKINDS
} zs_marker_kind;

typedef enum zs_phase {
    ZS_PHASE_FORWARD = 0,
    ZS_PHASE_BACKWARD,
    ZS_PHASE_GRAD_SYNC,
    ZS_PHASE_OPTIMIZER,
    ZS_PHASE_NPHASES
} zs_phase;

/* Op flags. A recomputed op repeats work already counted once (activation
 * recomputation): it costs time but is not new coverage of the plan. */
#define ZS_OPF_RECOMPUTE 1u

typedef struct zs_op {
    uint8_t kind;   /* zs_op_kind */
    uint8_t stream; /* < schedule->nstreams */
    uint16_t label; /* index into schedule->labels ("qkv", "ring-kv", ...) */
    uint16_t flags; /* ZS_OPF_* */
    int16_t ndeps;  /* dependencies: rank->deps[dep0 .. dep0+ndeps) */
    int64_t dep0;
    double duration; /* predicted seconds (compute ops; 0 otherwise) */
    union {
        struct {
            uint8_t ck;      /* zs_compute_kind */
            int16_t heads;   /* attention: query heads computed on this GPU */
            int32_t nblocks; /* attention: schedule->blocks[block0 ..) */
            int64_t block0;
            double m, n, k; /* GEMM shape */
            double bytes;   /* elementwise: HBM bytes moved */
        } compute;
        struct {
            int32_t peer; /* the other rank */
            int32_t tag;  /* matches sends to receives with the same tag */
            double bytes;
            int32_t ncarry; /* what it carries: schedule->carry[carry0 ..) (0: not recorded) */
            int64_t carry0;
        } p2p;
        struct {
            int32_t group; /* schedule->groups[group] */
            uint8_t ck;    /* zs_coll_kind */
            double bytes;  /* per-rank buffer, as in zs_cost_ops.collective; members
                            * agree on it except for all-to-all, which is
                            * all-to-all-v (the largest buffer sets the pace) */
        } coll;
        struct {
            uint8_t mk; /* zs_marker_kind */
            int32_t value;
        } marker;
    } u;
} zs_op;

/* What a transfer carries: `bytes` of document `doc`'s data. A send or
 * receive may name a run of these in the schedule's pool (zs_op.u.p2p
 * carry0, ncarry): the documents whose data it moves, each with its part of
 * the bytes, so that a transfer merging several documents' ring steps (one
 * NCCL send per peer per step) says what it holds. The validator checks
 * that the parts add up to the transfer's bytes, that both ends agree, and
 * that attention waiting for such a transfer computes only documents it
 * carries. */
typedef struct zs_carry {
    int32_t doc;
    double bytes;
} zs_carry;

/* A run of a rank's ops [op0, op0 + nops) executed `repeat` times. */
typedef struct zs_segment {
    int64_t op0;
    int32_t nops;
    int32_t repeat;
} zs_segment;

typedef struct zs_rank_prog {
    zs_op *ops;
    int64_t nops, ops_cap;
    int32_t *deps; /* op indices of this rank */
    int64_t ndeps, deps_cap;
    zs_segment *segs;
    int32_t nsegs, segs_cap;
} zs_rank_prog;

/* A communication group for collectives: sorted, distinct ranks. */
typedef struct zs_group {
    int32_t n;
    int32_t *ranks; /* sorted, distinct (zs_schedule_group_tagged keeps them so) */
    int32_t tag;    /* communicator tag: equal ranks with different tags are
                     * different groups (NCCL communicators), so collectives on
                     * different streams never share one */
} zs_group;

/* Where a piece of a document lives. Layout: attention or linear modules.
 * rank: the representative rank (first rank of its TP group, pipeline
 * stage 0); tokens are replicated across TP ranks and pipeline stages. */
typedef enum zs_layout { ZS_LAYOUT_ATTN = 0, ZS_LAYOUT_LINEAR = 1 } zs_layout;

typedef struct zs_piece {
    int32_t doc;
    int32_t t0, t1; /* token range [t0, t1) of the document */
    int32_t rank;
    uint8_t layout; /* zs_layout */
    int16_t micro;  /* micro-batch index (0 without pipelining) */
} zs_piece;

/* Parallel layout: rank = ((dp * pp_deg + pp) * cp_deg + cp) * tp_deg + tp,
 * i.e. TP innermost (inside a node), then CP, then PP, then DP. */
typedef struct zs_layout_dims {
    int tp, cp, pp, dp;
} zs_layout_dims;

/* The builder's first failure (see "building" below). */
typedef struct zs_sched_error {
    int code;       /* a zs_status; ZS_OK while nothing has failed */
    int rank;       /* the rank written to, -1 when the failure is about no rank */
    int64_t op;     /* the index the op would have had in that rank, -1 when no op */
    char label[64]; /* the op's label, "" when none */
    char msg[256];  /* what was wrong */
} zs_sched_error;

typedef struct zs_schedule {
    /* Provenance and shape, printed with every result. */
    char method[64];
    char model[64];
    char cluster[64];
    char cost_desc[256];
    zs_layout_dims dims;
    int nranks;
    int layers; /* transformer layers of the model */
    int heads;  /* query heads of the model (attention coverage is counted in heads) */
    int micro_batches;

    int nstreams;
    char stream_names[ZS_MAX_STREAMS][16];

    zs_rank_prog *ranks; /* nranks programs */

    zs_attn_block *blocks; /* shared pool referenced by attention ops */
    int64_t nblocks, blocks_cap;

    zs_carry *carry; /* shared pool referenced by sends and receives (zs_carry) */
    int64_t ncarry, carry_cap;

    zs_group *groups;
    int32_t ngroups, groups_cap;

    char **labels;
    int32_t nlabels, labels_cap;
    int32_t label_hint; /* last label looked up (builder speed-up) */

    /* The plan: the batch's documents and where their tokens live. */
    int32_t ndocs;
    int32_t *doc_len;
    zs_piece *pieces;
    int64_t npieces, pieces_cap;

    zs_sched_error error; /* the builder's first failure (code ZS_OK: none) */
} zs_schedule;

/* ---- building (planners) ------------------------------------------------ *
 *
 * Every building function checks its arguments against the schedule (ranks,
 * streams, peers, groups, dependencies on earlier ops, byte counts and
 * durations finite and >= 0; token ranges and collective membership are the
 * validator's) and records the first failure in s->error: its code, rank,
 * op index, label and a message. From then on every building function
 * appends nothing and returns that code. A planner therefore appends freely
 * (a failed op's negative index fed into later calls does no harm) and
 * checks once, with zs_schedule_check, at the end of an emitter or a phase:
 * the error names what really failed. */

/* ZS_OK, or s->error as a zs_err (what failed, rank/op/label, the fix). */
int zs_schedule_check(const zs_schedule *s, zs_err *e);

/* A schedule of nranks ranks with streams "compute" and "comm". */
zs_schedule *zs_schedule_new(int nranks);
void zs_schedule_free(zs_schedule *s);

/* Adds a stream name; returns its index or a negative status. */
int zs_schedule_add_stream(zs_schedule *s, const char *name);
/* Interns a label; returns its index or a negative status. */
int zs_schedule_label(zs_schedule *s, const char *name);
/* Adds (or finds an equal) group; ranks need not be sorted. Returns its index or < 0. */
int zs_schedule_group(zs_schedule *s, const int *ranks, int n);
/* The same with a communicator tag (zs_group.tag); zs_schedule_group is tag 0. */
int zs_schedule_group_tagged(zs_schedule *s, const int *ranks, int n, int tag);
/* Rank's position in g (a binary search: a data-parallel group has
 * thousands of members), -1 when it is not a member. */
int zs_group_index(const zs_group *g, int rank);
/* Sets the documents of the batch (copied). */
int zs_schedule_set_docs(zs_schedule *s, const int32_t *len, int32_t ndocs);
int zs_schedule_add_piece(zs_schedule *s, int32_t doc, int32_t t0, int32_t t1, int32_t rank,
                          zs_layout layout, int micro);

/* Starts a new segment on a rank (repeat >= 1); ops appended to the rank
 * go into its last segment. A rank with no segment gets one (repeat 1) on
 * its first op. */
int zs_schedule_begin_segment(zs_schedule *s, int rank, int repeat);

/* Appends ops; each returns the op index in the rank (>= 0) or a negative
 * status. deps: indices of earlier ops of the same rank (may be NULL). */
int64_t zs_sched_attn(zs_schedule *s, int rank, int stream, const char *label, int backward,
                      const zs_attn_block *b, int nblocks, int heads, double duration,
                      const int64_t *deps, int ndeps);
int64_t zs_sched_gemm(zs_schedule *s, int rank, int stream, const char *label, double m, double n,
                      double k, double duration, const int64_t *deps, int ndeps);
int64_t zs_sched_elementwise(zs_schedule *s, int rank, int stream, const char *label, double bytes,
                             double duration, const int64_t *deps, int ndeps);
/* A host copy (to_host: device to host, else host to device) of `bytes`
 * taking `duration` seconds on the host link; put it on a stream of its
 * own (a copy stream) so that compute is not held behind it. */
int64_t zs_sched_host_copy(zs_schedule *s, int rank, int stream, const char *label, int to_host,
                           double bytes, double duration, const int64_t *deps, int ndeps);
/* 1 when compute kind ck is a host copy (a copy engine's, not the SMs'). */
static inline int zs_ck_is_host_copy(int ck)
{
    return ck == ZS_CK_D2H || ck == ZS_CK_H2D;
}
/* 1 when a rank of s has a host copy (backends and writers that cannot
 * run them refuse such schedules). */
int zs_schedule_has_host_copies(const zs_schedule *s);
int64_t zs_sched_send(zs_schedule *s, int rank, int stream, const char *label, int peer, int tag,
                      double bytes, const int64_t *deps, int ndeps);
int64_t zs_sched_recv(zs_schedule *s, int rank, int stream, const char *label, int peer, int tag,
                      double bytes, const int64_t *deps, int ndeps);
/* A transfer to append: `bytes` from rank src to rank dst on `stream` with
 * `tag`; the send waits for src_deps (nsrc_deps of them), the receive for
 * dst_dep (-1: none); both carry pool entries [carry0, carry0 + ncarry)
 * (ncarry 0: nothing recorded). Planners' transfer hooks take one. */
typedef struct zs_xfer {
    int src, dst, stream, tag;
    double bytes;
    const int64_t *src_deps;
    int nsrc_deps;
    int64_t dst_dep;
    int64_t carry0;
    int ncarry;
} zs_xfer;

/* Appends x as one send and one receive labelled `label`; *src_op and
 * *dst_op get their indices (negative after a failure, which is recorded). */
void zs_sched_xfer(zs_schedule *s, const zs_xfer *x, const char *label, int64_t *src_op,
                   int64_t *dst_op);
/* Appends a carry list (n >= 1 entries, copied; documents of the plan,
 * bytes finite and >= 0) to the pool; returns its first index or the
 * recorded failure. */
int64_t zs_schedule_carry(zs_schedule *s, const zs_carry *c, int n);
/* A copy of pool entries [c0, c0 + n) with every part scaled so that they
 * add up to `bytes` (a routed transfer's slices and chunks); returns its
 * first index or the recorded failure. */
int64_t zs_schedule_carry_scaled(zs_schedule *s, int64_t c0, int n, double bytes);
/* Send or receive op `op` of rank carries pool entries [c0, c0 + n) (n = 0:
 * nothing recorded). A negative op (a failed append) is ignored. */
int zs_sched_set_carry(zs_schedule *s, int rank, int64_t op, int64_t c0, int n);
int64_t zs_sched_coll(zs_schedule *s, int rank, int stream, const char *label, int group,
                      zs_coll_kind kind, double bytes, const int64_t *deps, int ndeps);
int64_t zs_sched_marker(zs_schedule *s, int rank, zs_marker_kind mk, int value);
/* Sets flags on ops [from, rank's op count) of a rank (e.g. a recomputed run). */
void zs_schedule_flag_ops(zs_schedule *s, int rank, int64_t from, unsigned flags);
/* Appends rank src's whole program (segments, ops, dependencies, flags) to
 * rank dst, which must have no ops yet: peers move by peer_shift and
 * collectives go to group_map[group] (group < ngroup_map; NULL map: the
 * same groups). The copies of a TP group leader's program to its other
 * ranks. Returns ZS_OK or the recorded failure. */
int zs_schedule_copy_rank(zs_schedule *s, int src, int dst, int peer_shift, const int *group_map,
                          int ngroup_map);

/* ---- reading (backends, reports) ----------------------------------------- */

static inline const zs_op *zs_schedule_op(const zs_schedule *s, int rank, int64_t i)
{
    return &s->ranks[rank].ops[i];
}
/* NULL for an op without dependencies: a rank with none has no deps array,
 * and NULL + 0 is undefined (found by the plan fuzz target). */
static inline const int32_t *zs_schedule_deps(const zs_schedule *s, int rank, const zs_op *op)
{
    return op->ndeps ? s->ranks[rank].deps + op->dep0 : NULL;
}
/* Attention work of one rank: (q, k <= q) pairs x query heads over its
 * forward attention ops and every repeat, recomputation excluded. FLOPs are
 * 4 x head_dim times this. */
double zs_schedule_attn_work(const zs_schedule *s, int rank);
/* Ops of one rank after unrolling the repeats. */
int64_t zs_schedule_unrolled_ops(const zs_schedule *s, int rank);
/* All ops stored / unrolled, and bytes of memory held by the schedule. */
int64_t zs_schedule_total_ops(const zs_schedule *s);
int64_t zs_schedule_total_unrolled(const zs_schedule *s);
size_t zs_schedule_memory(const zs_schedule *s);

const char *zs_op_kind_name(int k);
const char *zs_compute_kind_name(int k);
const char *zs_phase_name(int p);
/* One line describing op i of a rank ("r3 #17 comm send ring-kv peer=4 tag=2 bytes=..."; a
 * transfer's carry list as carries=d3:BYTES,d5:BYTES) */
void zs_op_print(FILE *f, const zs_schedule *s, int rank, int64_t i);

/* ---- dump and reload (zepsim plan --dump, zepsim run PLAN) --------------- */

/* Writes a readable, diffable JSON document (one op per line). */
int zs_schedule_dump(const zs_schedule *s, FILE *f, zs_err *e);
int zs_schedule_dump_file(const zs_schedule *s, const char *path, zs_err *e);
/* Reads a dump back; malformed files are ZS_EINPUT errors naming file:line.
 * A dump is bounded work for the validator and the backends: at most
 * zs_plan_limits_get().ranks ranks and .ops executed ops (stored ops times
 * their segment's repeat, over all ranks; attention block references count
 * against the same budget), no segment repeated more often than the plan
 * has layers, op times finite in [0, ZS_PLAN_MAX_SECONDS], sizes in [0,
 * ZS_PLAN_MAX_BYTES] and GEMM dimensions in [0, ZS_PLAN_MAX_DIM]. */
int zs_schedule_load_file(const char *path, zs_schedule **out, zs_err *e);

/* Bounds on a plan read from a file (docs/reliability.md). The defaults are
 * about 5x the largest study here (a 4096-GPU Zeppelin plan: 51M executed
 * ops); the CLI reads ZEPSIM_MAX_PLAN_RANKS and ZEPSIM_MAX_PLAN_OPS. */
typedef struct zs_plan_limits {
    int64_t ranks; /* ranks of one plan */
    int64_t ops;   /* executed ops (and attention block references) */
} zs_plan_limits;

#define ZS_PLAN_MAX_RANKS_DEFAULT 65536
#define ZS_PLAN_MAX_OPS_DEFAULT   ((int64_t)1 << 28)
#define ZS_PLAN_MAX_SECONDS       1e6  /* one op: 11.6 days */
#define ZS_PLAN_MAX_BYTES         1e15 /* one transfer or memory-bound op: 1 PB */
#define ZS_PLAN_MAX_DIM           1e12 /* one GEMM dimension */

zs_plan_limits zs_plan_limits_get(void);
/* Process-wide; values below 1 are raised to 1. */
void zs_plan_limits_set(zs_plan_limits l);

#endif
