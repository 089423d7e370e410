/* The time one attention pass takes under a context-parallel token layout
 * (zs_cplayout.h), priced step by step from what the layout does, for
 * `zepsim cost attention --layout`:
 *   ring layouts (zigzag, ring, stripe): per member and ring step one
 *     kernel launch over the blocks it computes (the attention curve prices
 *     the shapes, causal tile skipping and small blocks included); the KV
 *     it holds goes to the next member on its own stream while it computes
 *     (a point-to-point transfer), and a step starts when the member's last
 *     step and the KV it needs have both ended, so a slow member delays its
 *     successors (the critical path is computed, not assumed). After every
 *     step but the first the member corrects its running output (forward)
 *     or adds the step's dQ to its running dQ (backward), one fused pass
 *     over an fp32 accumulator (ZS_CPL_ACC_BYTES per element). Backward also
 *     sends the dK/dV of the KV it used on to the next member after adding
 *     the dK/dV that came in (three KV-sized passes, as lower/zs_ring.c), and
 *     the last send returns each dK/dV to its owner (zs_cpl_impl below
 *     swaps these generic passes for ring-flash-attention's own ops);
 *   llama3: an all-gather of K and V over the group (the largest shard,
 *     NCCL buffers being equal), then one launch per member over its query
 *     chunks against the gathered keys; backward gathers again and
 *     reduce-scatters dK and dV; nothing overlaps (the generic model; see
 *     zs_cpl_impl for ring-flash-attention's llama3).
 * The ideal is the pass's exact causal FLOPs over g GPUs at the rate one GPU
 * reaches on a 1/g share (a document of len/g tokens for each one), the
 * baseline the published layout comparisons use (docs/cost-model.md).
 * Depends on the cost model and zs_cplayout. */
#ifndef ZS_CPLAYOUT_PRICE_H
#define ZS_CPLAYOUT_PRICE_H

#include "zs_cost.h"
#include "zs_cplayout.h"

/* Bytes per element of a fused accumulator pass: read the fp32 running
 * value, read the step's value in the model's dtype, write fp32 back
 * (ring-flash-attention's update_out_and_lse and its dQ sum keep fp32
 * accumulators; docs/cost-model.md). */
#define ZS_CPL_ACC_BYTES(dtype_bytes) (8.0 + (double)(dtype_bytes))

/* What runs around the attention kernels of a ring layout (llama3 is the
 * same under all three):
 *   fused    one fused accumulator pass per step after the first, forward
 *            and backward, and three KV-sized passes for each dK/dV sum
 *            (the generic model above; the default);
 *   rfa      zhuzilin/ring-flash-attention as its code runs (01c8baf5,
 *            docs/cost-model.md lists every op): the first step's fp32
 *            casts and the last one's casts back, the output correction
 *            as PyTorch's TensorExpr fuser compiles its TorchScript (the
 *            output update one kernel, the log-sum-exp update three, as
 *            aten::log_sigmoid is not fusible), an update only on the steps
 *            a member computes, the copy back of a sliced update (stripe's
 *            out[:, 1:], zigzag's second half), the varlen zigzag's index
 *            gathers and scatters for packed documents, fp32 dK/dV sums
 *            and fp32 dK/dV transfers;
 *   rfa-eager  the same with the correction's ops each its own kernel
 *            (eager PyTorch, or TorchScript before its profiling runs).
 * Under both rfa implementations llama3 is ring-flash-attention's own
 * llama3_flash_attn_varlen_func, not Llama 3's zigzag: contiguous placement
 * over the pack (zs_cpl_pack_blocks), K and V gathered a few KV heads at a
 * time under the previous group's kernel, dK and dV reduce-scattered per
 * group (zs_cplayout_price.c says what runs). */
typedef enum zs_cpl_impl {
    ZS_CPL_IMPL_FUSED = 0,
    ZS_CPL_IMPL_RFA,
    ZS_CPL_IMPL_RFA_EAGER
} zs_cpl_impl;

/* The option values, in enum order. */
#define ZS_CPL_IMPL_VALUES "fused|ring-flash-attn|ring-flash-attn-eager"

const char *zs_cpl_impl_name(zs_cpl_impl i);
/* Parses an implementation name; a ZS_EUSAGE error naming `what` otherwise. */
int zs_cpl_impl_parse(const char *s, const char *what, zs_cpl_impl *out, zs_err *e);

typedef struct zs_cpl_pass {
    zs_cp_layout layout;
    const int32_t *lens; /* tokens of each document */
    int docs;            /* documents, packed (one launch per step) */
    int g;               /* members of the CP group: ranks 0, stride, 2 stride, ... */
    int stride;          /* rank distance between members (the TP degree) */
    int pad;             /* pad documents to whole chunks (TE) or cut them exactly */
    int heads;           /* query heads on one GPU */
    int kv_heads;        /* KV heads on one GPU */
    int backward;
    zs_cpl_impl impl; /* what runs around the kernels (ring layouts) */
} zs_cpl_pass;

typedef struct zs_cpl_price {
    double time;         /* seconds of the pass, critical path */
    double compute;      /* kernel seconds of the busiest member */
    double compute_mean; /* kernel seconds, mean over members */
    double merge;        /* accumulator passes, the most a member does (ring layouts) */
    double comm;         /* seconds of the transfers or collectives one member waits on or issues */
    double ideal;        /* see above */
    double flops;        /* exact causal FLOPs of the documents, this pass */
    double kv_bytes;     /* KV bytes of the largest shard (one transfer or collective buffer) */
    int busiest;         /* member with the most kernel seconds */
} zs_cpl_price;

int zs_cpl_price_pass(const zs_cost *c, const zs_cpl_pass *p, zs_cpl_price *out, zs_err *e);

#endif
