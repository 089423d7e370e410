/* Shared schedule building for one training iteration: everything a planner
 * needs besides attention. A planner says how many tokens each slot holds
 * for the linear modules in each micro-batch and supplies an attention
 * emitter; the builder lays out the whole iteration:
 *   - per layer, forward and backward (backward GEMMs cost two GEMMs of the
 *     forward's size; attention backward is priced by the cost model), with
 *     the model's MLP (SwiGLU: gate and up GEMMs; GELU or squared ReLU: one
 *     up GEMM), RMSNorm, the activation and the residual as memory-bound
 *     ops, optional full
 *     recomputation (the layer's forward runs again before its backward);
 *   - tensor parallelism with sequence parallelism: all-gather before and
 *     reduce-scatter after the attention and MLP blocks over the TP group,
 *     GEMMs and heads divided by tp;
 *   - MoE layers: router, expert-parallel dispatch and combine all-to-all
 *     over the ranks of a node, expert GEMMs under a seeded per-step load
 *     imbalance;
 *   - pipeline parallelism: stages of consecutive layers, activation and
 *     gradient send/recv between stages, 1F1B over micro-batches of unequal
 *     cost, or interleaved 1F1B over virtual stages;
 *   - data-parallel gradient synchronisation per layer on the comm stream,
 *     overlapping the next layer's backward (all-reduce, or reduce-scatter
 *     with ZeRO >= 2), then the optimizer step and, with ZeRO 1-2, the
 *     weight all-gather; ZeRO-3 as FSDP2 runs it: each layer's weights
 *     gathered one layer ahead before its forward and its backward and
 *     copied out, its gradients reduce-scattered in every micro-batch
 *     (FSDP1 and Megatron-FSDP: zs_iter_spec.fsdp);
 *   - the embedding and LM head on the first and last stage;
 *   - LoRA fine-tuning (zs_iter_spec.lora): frozen base weights, rank-r
 *     adapters on the QKV projection.
 * Planners think in slots: slot = dp * cp_degree + cp, one per TP group of
 * a stage. The builder writes TP rank 0 of every group and copies the
 * programs to the other TP ranks at the end. Depends on the schedule IR, the
 * cost model and the memory configuration. */
#ifndef ZS_ITERATION_H
#define ZS_ITERATION_H

#include <stdint.h>

#include "zs_cost.h"
#include "zs_memory.h"
#include "zs_schedule.h"

typedef struct zs_iter zs_iter;

/* Communicator tags of the builder's groups (zs_schedule_group_tagged);
 * planners use tag 0 for their own groups, so a planner's CP group and the
 * DP group of the same ranks stay different communicators. */
enum { ZS_GROUP_TAG_DP = 1, ZS_GROUP_TAG_TP = 2, ZS_GROUP_TAG_EP = 3 };

typedef struct zs_iter_spec {
    zs_layout_dims dims;
    int micro_batches;
    /* tokens each slot holds for the linear modules, [micro * nslots + slot] */
    const int64_t *linear_tokens;
    zs_recompute recompute;
    int zero_stage;
    uint64_t seed; /* MoE load imbalance */
    /* Appends the attention of `micro` (forward or backward) for every slot
     * of `stage`: each slot's ops start after zs_iter_entry(it, slot) and
     * the emitter reports the op that ends them with zs_iter_set_exit. */
    int (*emit_attn)(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e);
    void *arg;
    /* Optional (NULL: none), [micro * nslots + slot]: how many of a slot's
     * linear tokens have their attention on another slot (a remapping
     * planner). The builder then cuts the linear ops next to attention in
     * two: before attention the moved tokens' part first (zs_iter_entry_moved:
     * their inputs can leave while the rest is computed), after it the kept
     * part first (so the moved tokens' results, zs_iter_set_exit_moved, can
     * arrive while it runs). Forward: QKV and output projections; backward:
     * the output projection's and QKV's input gradients (weight gradients
     * stay one GEMM over all tokens). */
    const int64_t *moved_tokens;
    /* LoRA fine-tuning: the rank of the adapters on every layer's QKV
     * projection (0: every weight trained), as the step model runs it
     * (zs_step_cfg.lora: NeMo's ParallelLinearAdapter). The base weights
     * are frozen: their GEMMs keep the input-gradient half of their
     * backward only (no weight gradient, no embedding gradient; with FP8
     * plain casts where a weight gradient needed a transpose), the
     * adapter's ops run after the QKV GEMM and before its input gradient,
     * and the gradient synchronisation, the optimizer and the ZeRO
     * parameter gather cover the adapters alone
     * (zs_step_lora_params_per_layer). The rank must be a multiple of tp;
     * moved tokens are refused. */
    int lora;
    /* ZeRO-3's implementation (zs_memory.h), as the step model prices it:
     * FSDP2 copies each gathered layer out on the compute stream before
     * the layer runs; FSDP1 runs it in place and concatenates its
     * gradients into the flat gradient before the reduce-scatter;
     * Megatron-FSDP copies nothing. */
    zs_fsdp fsdp;
} zs_iter_spec;

/* Nano-batches (DistCA's ping-pong). With n > 1 the layer body runs the
 * linear ops before attention once per nano-batch, in order, then the
 * emitter (once, for all of them: it reads each one's entry and sets each
 * one's exit with the _nano calls below), then the linear ops after
 * attention once per nano-batch, so one nano-batch's attention traffic can
 * overlap another's compute. tokens[(k * micro_batches + micro) * nslots +
 * slot]: nano-batch k's tokens (they sum to linear_tokens); NULL: an even
 * split. */
typedef struct zs_iter_nano_spec {
    int n;
    const int64_t *tokens;
} zs_iter_nano_spec;

#define ZS_ITER_MAX_NANO 4
#define ZS_ITER_MAX_VP   64 /* model chunks per stage */

/* Builds the whole iteration into s (whose docs and pieces the planner
 * sets). s->dims, layers, heads, micro_batches are filled from spec. */
int zs_iter_build(zs_schedule *s, const zs_cost *cost, const zs_iter_spec *spec, zs_err *e);
/* The same with nano-batches (nano may be NULL: none). */
int zs_iter_build_nano(zs_schedule *s, const zs_cost *cost, const zs_iter_spec *spec,
                       const zs_iter_nano_spec *nano, zs_err *e);
/* The same with the interleaved 1F1B schedule of Megatron-LM (Narayanan
 * et al. 2021; `forward_backward_pipelining_with_interleaving`): each
 * stage holds vp model chunks of layers / (pp x vp) layers (chunk v of
 * stage s is virtual stage v x pp + s), runs its micro-batches' chunks in
 * Megatron's order (warm-up (pp - s - 1) x 2 + (vp - 1) x pp forwards, or
 * all of them when there are exactly pp micro-batches; then one forward
 * and one backward in turn; model chunk of the k-th forward (k mod pp vp)
 * / pp, of the k-th backward the reverse), and sends activations from the
 * last stage to the first between chunks. vp = 1 is zs_iter_build. Needs
 * micro-batches a multiple of pp and layers a multiple of pp x vp. */
int zs_iter_build_interleaved(zs_schedule *s, const zs_cost *cost, const zs_iter_spec *spec, int vp,
                              zs_err *e);

/* The rank (TP rank 0) of a slot in a stage, for a layout (also usable
 * before the builder runs, e.g. to place the plan's pieces). */
int zs_slot_rank(const zs_layout_dims *d, int stage, int slot);

/* ---- for attention emitters ---------------------------------------------- */

zs_schedule *zs_iter_schedule(zs_iter *it);
const zs_cost *zs_iter_cost(zs_iter *it);
int zs_iter_nslots(const zs_iter *it);
/* The rank (TP rank 0) of a slot in a stage. */
int zs_iter_rank(const zs_iter *it, int stage, int slot);
/* Query heads and KV heads per GPU (divided by tp). */
int zs_iter_heads(const zs_iter *it);
int zs_iter_kv_heads(const zs_iter *it);
/* The op the slot's attention must follow (QKV done, or O-proj grad done). */
int64_t zs_iter_entry(const zs_iter *it, int slot);
void zs_iter_set_exit(zs_iter *it, int slot, int64_t op);
/* The same per nano-batch k (0 <= k < the spec's nano; k = 0 is what
 * zs_iter_entry and zs_iter_set_exit mean). */
int zs_iter_nano(const zs_iter *it); /* nano-batches per micro-batch (>= 1) */
int64_t zs_iter_entry_nano(const zs_iter *it, int k, int slot);
void zs_iter_set_exit_nano(zs_iter *it, int k, int slot, int64_t op);
/* With moved tokens: the op after which their inputs are ready (their QKV
 * forward, their output-projection input gradient backward; the entry when
 * the slot moves none), and the op their post-attention part waits for
 * (required when the slot moves tokens). */
int64_t zs_iter_entry_moved(const zs_iter *it, int slot);
void zs_iter_set_exit_moved(zs_iter *it, int slot, int64_t op);
/* The first op of the layer body being written on `rank` (a TP rank 0 of
 * a slot; a backward layer's recomputed forward included), or -1 (pipeline
 * parallelism, another rank, no layer yet). A dependency that bounds how
 * early an op without other dependencies is posted: to the layer it
 * belongs to. */
int64_t zs_iter_rank_layer_start(const zs_iter *it, int rank);
/* A fresh tag for a message class (unique within the schedule). */
int zs_iter_tag(zs_iter *it);

/* Predicted seconds of one layer's linear ops on a slot holding `tokens`
 * linear tokens of which `moved` are moved (as zs_iter_spec.moved_tokens),
 * measured from the layer's start (forward) or the start of its backward,
 * with the same ops and cost model the builder uses (dense models; an MoE
 * layer is priced at mean expert load). For planners that predict a
 * schedule before building it. */
typedef struct zs_iter_lin {
    double fwd_moved; /* forward: until the moved tokens' QKV is done */
    double fwd_entry; /* forward: until the attention entry (all QKV) */
    double fwd_post;  /* forward: from the attention exit to the layer's end */
    double fwd_kept;  /* forward: from the attention exit until the kept tokens' output
                       * projection is done (where the moved tokens' part starts) */
    double bwd_moved; /* backward: until the moved tokens' dO is done */
    double bwd_entry; /* backward: until the attention entry */
    double bwd_post;  /* backward: from the attention exit to the end */
    double bwd_kept;  /* backward: the same for the kept tokens' QKV input gradient */
} zs_iter_lin;
int zs_iter_linear_time(const zs_cost *cost, int tp, int slots_per_node, double tokens,
                        double moved, zs_iter_lin *out, zs_err *e);

/* Layer index of a rank's first layer in its stage. */
int zs_iter_stage_first_layer(const zs_iter *it, int stage);

#endif
