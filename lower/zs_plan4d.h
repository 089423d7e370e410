/* Shared lowering of the 4D-parallel methods (plain-4d, fixed-4d, wlb-llm):
 * documents already packed into micro-batches (one packed sequence per CP
 * group and micro-batch) become a whole-iteration schedule with TP, CP
 * rings, PP 1F1B stages and DP. The methods differ only in how they pack
 * and in how each micro-batch is sharded over its CP group:
 *   - per-sequence: the packed sequence is padded to a multiple of 2 CP and
 *     cut into 2 CP zigzag chunks regardless of document boundaries (slot i
 *     holds chunks i and 2CP-1-i);
 *   - per-document: every document is cut into 2 CP zigzag chunks of
 *     floor(len / 2CP) tokens, the remainder dealt one token each to the
 *     first chunks (no padding).
 * Both run the same ring (CP-1 KV steps forward; backward moves KV ahead
 * and the accumulated dK/dV behind, then returns each dK/dV to its owner)
 * on a stream of their own, so the adaptive choice compares like with like.
 * Internal to core (zs__ names). Depends on the planner interface, the
 * iteration builder and the cost model. */
#ifndef ZS_PLAN4D_H
#define ZS_PLAN4D_H

#include "zs_planner.h"

typedef enum zs_p4d_shard {
    ZS__SHARD_SEQ = 0,      /* per-sequence, every micro-batch */
    ZS__SHARD_DOC = 1,      /* per-document, every micro-batch */
    ZS__SHARD_ADAPTIVE = 2, /* per micro-batch, the faster by predicted kernel latency */
    ZS__SHARD_STATIC = 3    /* one for the whole batch, the faster in total */
} zs_p4d_shard;

/* Options every 4D method reads: tp, cp, pp, vp, window, micro. */
typedef struct zs_p4d {
    zs_layout_dims dims;
    int32_t window; /* context window (tokens of one packed sequence for the loader) */
    int micro;      /* micro-batches per DP rank; 0: from the packing */
    int vp;         /* model chunks per stage (interleaved 1F1B; 1: plain 1F1B) */
    const char *method;
    long max_tokens; /* tokens per GPU that fit (all in-flight micro-batches) */
    int lora;        /* LoRA's adapter rank (zs_iter_spec.lora; 0: every weight trained) */
} zs_p4d;

/* The options every 4D method reads (rows of their tables, zs_opts.h). */
extern const zs_opt_spec zs_p4d_opt_tp, zs_p4d_opt_cp, zs_p4d_opt_pp, zs_p4d_opt_vp,
    zs_p4d_opt_window, zs_p4d_opt_micro;
#define ZS__4D_OPTIONS                                                                             \
    &zs_p4d_opt_tp, &zs_p4d_opt_cp, &zs_p4d_opt_pp, &zs_p4d_opt_vp, &zs_p4d_opt_window,            \
        &zs_p4d_opt_micro

/* Reads tp, cp, pp, vp, window, micro (defaults from WLB-LLM's Table 1 when the
 * model, window and GPU count match a row, else tp = min(8, GPUs per node),
 * cp = 2, pp = 4) and the memory capacity. */
int zs_p4d_options(const zs_plan_ctx *ctx, const char *method, zs_p4d *o, zs_err *e);

/* The same and the option `lora` (plain-4d's: the other 4D methods train
 * every weight): a rank tp does not divide, or above the hidden size, is
 * a usage error (ZS_EUSAGE); a rank sets o->lora, and the capacity is
 * then that of frozen base weights. */
extern const zs_opt_spec zs_p4d_opt_lora;
int zs_p4d_options_lora(const zs_plan_ctx *ctx, const char *method, zs_p4d *o, zs_err *e);

/* The loader of the 4D methods (their batcher hook, zs_planner.h): a
 * global batch is nmicro context windows, nmicro = PP x DP micro-batches
 * (micro x DP when micro is given), as WLB-LLM's loader brings them.
 * Reads the options into *o (lora: the method's take `lora`,
 * zs_p4d_options_lora). */
int zs_p4d_loader(const zs_plan_ctx *ctx, const char *method, int lora, zs_p4d *o, int *nmicro,
                  zs_err *e);
/* The hook of the methods that pack inside the planner (plain-4d,
 * fixed-4d): the greedy batcher reshaped to nmicro windows, documents
 * longer than a window split. */
int zs_p4d_shape(const zs_plan_ctx *ctx, const char *method, zs_batch_shape *shape, zs_err *e);

/* ZS_EINPUT naming the first document longer than the window. */
int zs_p4d_check_window(const zs_batch *b, int32_t window, zs_err *e);

/* Predicted forward cost of one whole document split over a CP group:
 * attention plus linear modules (the W_a + W_l the packers balance). */
typedef struct zs_p4d_doc_cost {
    const zs_plan_ctx *ctx;
    const zs_p4d *o;
} zs_p4d_doc_cost;
double zs_p4d_doc_cost_fn(void *arg, int32_t len);

/* Lowers a packing: document d of the batch goes to packed sequence
 * seq_of[d] in [0, nseq); sequence k runs on DP rank k / micro as its
 * micro-batch k % micro (micro = o->micro, or ceil(nseq / dp) when 0).
 * Writes the plan's notes (sharding decisions, imbalance degree). */
int zs_p4d_lower(const zs_plan_ctx *ctx, const zs_batch *b, const zs_p4d *o, const int32_t *seq_of,
                 int32_t nseq, zs_p4d_shard shard, zs_schedule **out, zs_plan_report *rep,
                 zs_err *e);

/* Model chunks whose activations the first pipeline stage holds at once
 * (1F1B: whole micro-batches; interleaved with vp > 1: chunks of 1 / vp of
 * the stage's layers, Megatron's warm-up plus one). */
int zs_p4d_inflight_chunks(int pp, int vp, int micro);

#endif
