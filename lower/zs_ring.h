/* Ring attention over a group of slots, shared by every method that uses
 * context-parallel rings (TE CP, Hybrid DP, USP, WLB-LLM, Zeppelin).
 *
 * Each document of the ring is cut into 2g zigzag chunks over a ring of g
 * slots: slot i holds query and KV chunks i and 2g-1-i (the spec's layout
 * may place them as ring or stripe instead, zs_cplayout.h). In step j
 * (0 <= j < g) slot i computes its queries against the KV chunks first held
 * by slot (i - j) mod g (causal: chunk pairs above the diagonal are
 * skipped, the diagonal pair is a causal block), while the KV it holds
 * moves on to slot i+1 (send and receive issued together, overlapping the
 * step's compute). Backward mirrors forward: KV and the accumulated dK/dV
 * travel together, and a last step returns each dK/dV to its owner; a
 * member adds the dK/dV it received to its own with an elementwise op on
 * the compute stream (as TransformerEngine does), which waits for both the
 * step's compute and the arrival, so the send waits for whichever is later.
 *
 * Chunking: ZS_RING_PAD pads every document to a multiple of 2g (TE CP:
 * padded tokens cost compute and bytes but are not tokens of the plan);
 * ZS_RING_EXACT cuts chunks of floor(len/2g) and deals the remainder
 * tokens one each to the first chunks (WLB-LLM's per-document sharding).
 *
 * The emitter appends ops to the ranks of the ring's slots in the stage
 * being built, after each slot's `dep` op, and returns in `dep` the last op
 * of each slot, so several rings and local work can be chained on a rank.
 * Transfers go through a hook, so a planner can route them (Zeppelin's
 * routing layer); the default hook is a direct send/receive pair.
 * Depends on the schedule IR, the iteration builder and the cost model. */
#ifndef ZS_RING_H
#define ZS_RING_H

#include "zs_cplayout.h"
#include "zs_iteration.h"

typedef enum zs_ring_chunking { ZS_RING_PAD = 0, ZS_RING_EXACT = 1 } zs_ring_chunking;

/* Appends the ops that move x->bytes from rank x->src to rank x->dst (the
 * same tag on both sides); the transfer may start after x->src_deps on src
 * and x->dst_dep on dst, and carries x's carry list (the documents whose
 * KV shards it holds). Returns in *src_op / *dst_op the op on each side
 * that completes it (the receiver's is what the next compute waits for).
 * All transfers of one ring step are emitted before the step's compute, so
 * a hook can issue them as one NCCL group. A failed append is the
 * schedule's to report (the ring checks it once at its end); the hook
 * returns its own failures only. */
typedef int (*zs_ring_xfer_fn)(void *arg, zs_iter *it, const zs_xfer *x, int64_t *src_op,
                               int64_t *dst_op, zs_err *e);

typedef struct zs_ring_spec {
    int g;            /* ring size (>= 1; g = 1 is plain local attention) */
    const int *slots; /* g slots in ring order */
    int ndocs;
    const int32_t *docs; /* document indices in the schedule */
    zs_ring_chunking chunking;
    int comm_stream;      /* stream for the ring's transfers (ZS_STREAM_COMM or another) */
    const char *label;    /* e.g. "ring" (ops become "ring-attn-fwd", "ring-kv", ...) */
    zs_ring_xfer_fn xfer; /* NULL: direct send/recv */
    void *xfer_arg;
    zs_cp_layout layout; /* token layout (a ring one; zero: zigzag, as described above) */
} zs_ring_spec;

/* Emits the ring's attention (forward, or backward when backward=1) for
 * stage `stage`. dep[k] (in/out) is the last op of slot slots[k]'s chain.
 * Returns ZS_OK or the first failure (zs_schedule_check). */
int zs_ring_emit(zs_iter *it, int stage, const zs_ring_spec *rs, int backward, int64_t *dep,
                 zs_err *e);
/* The same ring computing `heads` query heads and moving `kv_heads` KV
 * heads per GPU instead of the iteration's (0: the iteration's): for
 * head-parallel x ring methods (USP), one ring per head subset. */
int zs_ring_emit_heads(zs_iter *it, int stage, const zs_ring_spec *rs, int heads, int kv_heads,
                       int backward, int64_t *dep, zs_err *e);

/* ---- step by step (a planner that interleaves several rings and other
 * work on a GPU, e.g. Zeppelin's attention engine) --------------------------
 *
 * A ring run emits one ring's ops piece by piece; zs_ring_emit is a run
 * that emits step after step. Per member k (0 <= k < g) and step j
 * (0 <= j < g), in any order that respects:
 *   kv(j, k)    (j < g-1) KV sent k -> k+1 for step j+1: after kv(j-1, k-1);
 *   attn(j, k)  member k's attention of step j: after attn(j-1, k) and
 *               kv(j-1, k-1);
 *   dkv(j, k)   backward: the dK/dV of the KV member k used in step j travel
 *               on to k+1: after attn(j, k) and dkv(j-1, k-1). For j > 0 an
 *               accumulation op on the compute stream adds the incoming
 *               dK/dV (it waits for both, by time), then the send follows it.
 * A call out of that order is a ZS_EINVALID error. The spec and dep are
 * copied; the run borrows `it`. */
typedef struct zs_ring_run zs_ring_run;

int zs_ring_run_new(zs_iter *it, int stage, const zs_ring_spec *rs, int heads, int kv_heads,
                    int backward, const int64_t *dep, zs_ring_run **out, zs_err *e);
void zs_ring_run_free(zs_ring_run *r);
/* Replaces member k's first dependency (before any of its ops is emitted). */
int zs_ring_run_set_dep(zs_ring_run *r, int k, int64_t op, zs_err *e);
int zs_ring_run_kv(zs_ring_run *r, int j, int k, zs_err *e);
int zs_ring_run_attn(zs_ring_run *r, int j, int k, zs_err *e);
int zs_ring_run_dkv(zs_ring_run *r, int j, int k, zs_err *e);
/* kv(j, k) and dkv(j, k) in two halves, for a caller that merges the
 * transfers of several runs that share a source, a destination and a step
 * into one (Zeppelin's engine: one send per peer per step). _begin checks
 * the order, emits dkv's accumulation (j > 0) and returns in *dep the op the
 * send must wait for; the caller appends the transfer (its bytes
 * zs_ring_run_bytes, its carry list zs_ring_run_carry) and gives _end the
 * receiver's op. Between the halves the member's later steps of that kind
 * wait: _end must come before the next _begin of the same member and kind
 * (and kv's _end before the receiver's attention of step j+1). */
int zs_ring_run_kv_begin(zs_ring_run *r, int j, int k, int64_t *dep, zs_err *e);
int zs_ring_run_kv_end(zs_ring_run *r, int j, int k, int64_t dst_op, zs_err *e);
int zs_ring_run_dkv_begin(zs_ring_run *r, int j, int k, int64_t *dep, zs_err *e);
int zs_ring_run_dkv_end(zs_ring_run *r, int j, int k, int64_t dst_op, zs_err *e);
/* The carry list of kv(j, k) and dkv(j, k): the documents of the shard
 * member k holds in step j, with their bytes (entries of the schedule's
 * pool; *n = 0 when the ring's documents are not the schedule's). */
void zs_ring_run_carry(const zs_ring_run *r, int j, int k, int64_t *c0, int *n);
/* Predicted seconds of attn(j, k) and of the accumulation in dkv(j, k). */
double zs_ring_run_attn_time(zs_ring_run *r, int j, int k);
double zs_ring_run_acc_time(const zs_ring_run *r, int j, int k);
/* Bytes moved by kv(j, k) (and dkv(j, k)): the KV shard member k holds in step j. */
double zs_ring_run_bytes(const zs_ring_run *r, int j, int k);
/* The op that ends member k's part once all its steps are emitted: its
 * last attention (forward) or the arrival of its own dK/dV (backward). */
int64_t zs_ring_run_exit(const zs_ring_run *r, int k);
/* Member k's last attention op so far (its first dependency before any). */
int64_t zs_ring_run_last_attn(const zs_ring_run *r, int k);
/* The tag of the run's KV (dkv = 0) or dK/dV (dkv = 1) transfers. */
int zs_ring_run_tag(const zs_ring_run *r, int dkv);
/* The rank of member k. */
int zs_ring_run_rank(const zs_ring_run *r, int k);

/* The blocks member k of a ring of g computes in step j for document doc
 * of len tokens (real geometry): its query chunks k and 2g-1-k against the
 * KV chunks first held by member k-j, blocks above the diagonal dropped.
 * Returns how many (<= 4). For planners that price a ring before building. */
int zs_ring_member_blocks(int32_t doc, int32_t len, int g, zs_ring_chunking ch, int k, int j,
                          zs_attn_block out[4]);

/* Token range of chunk c (0 <= c < 2g) of a document of len tokens. */
void zs_ring_chunk(int32_t len, int g, zs_ring_chunking ch, int c, int32_t *t0, int32_t *t1);

/* Adds the plan's attention pieces for the ring's documents (slot k holds
 * the chunks the spec's layout gives it) on the ranks of stage 0; the
 * schedule's documents must be set. */
int zs_ring_add_pieces(zs_schedule *s, const zs_layout_dims *dims, const zs_ring_spec *rs,
                       int micro, zs_err *e);

/* KV bytes slot slots[k] holds and sends per forward ring step (padded
 * for ZS_RING_PAD), with kv_heads KV heads per GPU. */
double zs_ring_step_bytes(const zs_schedule *s, const zs_model *m, int kv_heads,
                          const zs_ring_spec *rs, int k);

#endif
