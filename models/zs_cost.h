/* The cost-model interface: predicted seconds for every op a schedule can
 * hold. Planners price their decisions through it and stamp each compute op
 * with its predicted duration; the analytic backend and the SimGrid backend
 * execute with it. The analytical model (zs_cost_analytic.c) needs no data;
 * a calibrated model (fitted from measurements, `--calib FILE`) implements
 * the same ops, so swapping one for the other touches no planner.
 *
 * Attention geometry is expressed in document token positions so that the
 * cost (tile padding, causal masking) and the plan validator (coverage of
 * the causal triangle) see the same thing. Depends on zs_model, zs_cluster. */
#ifndef ZS_COST_H
#define ZS_COST_H

#include <stdint.h>

#include "zs_cluster.h"
#include "zs_err.h"
#include "zs_model.h"

/* zs_attn_block (queries [q0, q1) against keys [k0, k1) of one document,
 * causal) is defined in zs_kernel.h, which prices it. */

/* Collective kinds shared by the IR and the cost models. */
typedef enum zs_coll_kind {
    ZS_COLL_ALLGATHER = 0,
    ZS_COLL_REDUCESCATTER,
    ZS_COLL_ALLREDUCE,
    ZS_COLL_ALLTOALL,
    ZS_COLL_NKINDS
} zs_coll_kind;

/* Bus bytes and steps of a ring collective on n ranks with `bytes` per rank
 * as zs_cost_ops.collective defines it (for `zepsim cost`). */
void zs_coll_bus(zs_coll_kind k, int n, double bytes, double *bus_bytes, double *steps);

const char *zs_coll_kind_name(int k);

typedef struct zs_cost zs_cost;

typedef struct zs_cost_ops {
    const char *name; /* "analytic", "calibrated" */
    /* Attention forward (backward=0) or backward (1) over n blocks, with
     * `heads` query heads on this GPU (model heads / tp for TP, fewer for
     * head-parallel methods). One kernel launch handles all blocks. */
    double (*attn)(const zs_cost *c, const zs_attn_block *b, int n, int heads, int backward);
    /* One GEMM of m x k by k x n (forward; backward costs 2 GEMMs of the
     * same size and is priced by the caller as two calls) that moves
     * `bytes` through HBM (zs_gemm_bytes; <= 0: inputs and output in the
     * model's dtype). Priced by zs_gemm_time: the cost's GEMM curve, never
     * faster than moving those bytes. */
    double (*gemm)(const zs_cost *c, double m, double n, double k, double bytes);
    /* A memory-bound op moving `bytes` through HBM (norms, SwiGLU, residual). */
    double (*elementwise)(const zs_cost *c, double bytes);
    /* Uncontended time of a point-to-point transfer on the default path. */
    double (*p2p)(const zs_cost *c, int src_rank, int dst_rank, double bytes);
    /* Uncontended time of a collective over `n` ranks listed in `ranks`,
     * `bytes` being each rank's buffer (input for all-gather and all-to-all,
     * output for reduce-scatter, the whole buffer for all-reduce): the pair
     * NCCL runs there and its time (models/zs_nccl.h). */
    double (*collective)(const zs_cost *c, zs_coll_kind kind, const int *ranks, int n,
                         double bytes);
    void (*free)(zs_cost *c);
} zs_cost_ops;

struct zs_cost {
    const zs_cost_ops *ops;
    zs_model model;
    zs_cluster cluster;
    char desc[256]; /* printed in every result: which model, which calibration */
    void *impl;     /* owned by the implementation */
    int fp8;        /* the layers' linear GEMMs in FP8 (zs_cost_set_fp8); 0: bf16 */
    int fp8_cs;     /* ... with current scaling (an amax pass before each cast) */
};

/* Prices the transformer layers' linear GEMMs in FP8, as TransformerEngine
 * runs them (`zepsim cost step --precision fp8|fp8-cs` prices the same):
 * the iteration builder then times them on the GPU's FP8 GEMM curve
 * (zs_cost_gemm_fp8) and adds their casts, the FP8 all-gathers of
 * sequence parallelism and, on = 1 (delayed scaling), the amax / scale
 * updates or, on = 2 (current scaling), an amax pass, a scale kernel and
 * for gathered tensors a TP amax all-reduce before each cast. 0: bf16.
 * ZS_EINPUT naming the GPU when it has no FP8 tensor cores or no FP8 GEMM
 * rate. */
int zs_cost_set_fp8(zs_cost *c, int on, zs_err *e);
/* One FP8 GEMM of m x k by k x n on the GPU's FP8 curve (zs_gpu_fp8_curve)
 * through zs_gemm_time, moving `bytes` through HBM (<= 0: FP8 inputs, one
 * byte a value, and the output in the model's dtype, TransformerEngine's
 * bf16 output). */
double zs_cost_gemm_fp8(const zs_cost *c, double m, double n, double k, double bytes);
/* The HBM rate a GEMM's bytes move at on c's GPU: ZS_HBM_EFF of its
 * bandwidth (zs_gemm_time's bound). */
double zs_cost_gemm_hbm_Bps(const zs_cost *c);
/* The model's element size in bytes (2, bf16, for a cost built without a
 * model): a GEMM's default bytes. */
double zs_cost_dtype_bytes(const zs_cost *c);
/* The FP8 ops around those GEMMs, shared by the step model (zs_step.h) and
 * the iteration builder. A cast of vals values reads them in the model's
 * dtype and writes FP8 twice (row-wise and transposed, for the backward's
 * GEMMs). A layer's amax / scale update reads and writes the fp32 amax
 * histories and scales of its 4 GEMMs' 3 tensors (input, weight, output
 * gradient). */
#define ZS_FP8_AMAX_HIST 1024 /* TransformerEngine's default (NeMo fp8_amax_history_len) */
double zs_fp8_cast_bytes(double vals, double dtype_bytes);
double zs_fp8_amax_bytes(void);
/* TransformerEngine's cast-transpose kernel moves its bytes at this
 * fraction of HBM bandwidth, not a streaming kernel's: on an H100 SXM it
 * cast-transposed 4096 x 4096 fp16 values to FP8 in 51.53 us (NVIDIA/
 * TransformerEngine PR 101, March 2023, 8-byte vectors) [S]; the 67.1 MB
 * it moves, less the 6.268 us small-kernel floor (the GEMM curve's
 * launch), run at 1.48 TB/s, 0.4426 of the 3.35 TB/s peak. A transpose
 * writes across rows, which costs what a streaming copy does not. TE 1.7's
 * run-time compiled version kept the large-matrix kernel (PR 258: "nothing
 * too drastic"); the same fraction on every FP8 GPU [assumed]. */
#define ZS_FP8_CT_EFF 0.4426
/* The time of a cast-transpose that moves bytes on GPU g (its HBM
 * bandwidth, the GEMM curve's launch). */
double zs_fp8_cast_time(const zs_gpu *g, double bytes);

/* The analytical model: FLOPs and bytes with shape-dependent efficiency.
 * Returns NULL when out of memory. Free with zs_cost_free. */
zs_cost *zs_cost_analytic_new(const zs_model *m, const zs_cluster *c);
void zs_cost_free(zs_cost *c);
/* The attention kernel a cost model prices attention with (its name,
 * source and curves; for `zepsim cost` and reports). */
const zs_attn_kernel *zs_cost_attn_kernel(const zs_cost *c);
/* The parameters of NCCL's model the cost model prices collectives with
 * (NCCL's own figures unless calibrated): both backends give them to
 * zs_nccl_group_plan so that they run the same algorithm. */
struct zs_nccl_params;
const struct zs_nccl_params *zs_cost_nccl(const zs_cost *c);
/* zs_cost_collective with a sentence saying how the model priced it (for
 * `zepsim cost collective`). */
double zs_cost_collective_how(const zs_cost *c, zs_coll_kind kind, const int *ranks, int n,
                              double bytes, char *how, size_t len);
/* zs_cost_attn with what the launch amounts to (tiles, CTAs, compute and
 * memory time) in w. */
double zs_cost_attn_work(const zs_cost *c, const zs_attn_block *b, int n, int heads, int backward,
                         zs_attn_work *w);

/* Convenience wrappers (no NULL checks: c must be valid). */
static inline double zs_cost_attn(const zs_cost *c, const zs_attn_block *b, int n, int heads,
                                  int backward)
{
    return c->ops->attn(c, b, n, heads, backward);
}
/* A GEMM whose inputs and output are in the model's dtype: what a caller
 * that does not know more passes. It is the fewest bytes a bf16 GEMM
 * moves (a weight gradient accumulated in fp32 moves more), so the HBM
 * bound it gets is never above the GEMM's own. */
static inline double zs_cost_gemm(const zs_cost *c, double m, double n, double k)
{
    return c->ops->gemm(c, m, n, k, 0);
}
/* A GEMM that moves `bytes` through HBM (zs_gemm_bytes). */
static inline double zs_cost_gemm_io(const zs_cost *c, double m, double n, double k, double bytes)
{
    return c->ops->gemm(c, m, n, k, bytes);
}
static inline double zs_cost_elementwise(const zs_cost *c, double bytes)
{
    return c->ops->elementwise(c, bytes);
}
static inline double zs_cost_p2p(const zs_cost *c, int src, int dst, double bytes)
{
    return c->ops->p2p(c, src, dst, bytes);
}
static inline double zs_cost_collective(const zs_cost *c, zs_coll_kind k, const int *ranks, int n,
                                        double bytes)
{
    return c->ops->collective(c, k, ranks, n, bytes);
}

/* ---- context-parallel shards (zigzag over g ranks, 2g chunks) ---------------- */
/* Chunk c of 2g of a document of len tokens (exact split, the remainder
 * spread over the first chunks). */
void zs_zigzag_chunk(int32_t len, int g, int c, int32_t *t0, int32_t *t1);
/* The blocks rank `rank` computes in ring step `step`: its query chunks
 * rank and 2g-1-rank against the KV chunks first held by rank - step
 * (mod g), blocks above the diagonal dropped. Returns how many (<= 4). */
int zs_zigzag_step_blocks(int32_t doc, int32_t len, int g, int rank, int step,
                          zs_attn_block out[4]);
/* Seconds rank `rank` spends on one document's attention under zigzag CP
 * over g ranks: one launch per ring step, or (one_launch) all its blocks
 * as one launch, which is the document's share of launches other documents
 * share too. g <= 1: the whole document. */
double zs_cost_attn_zigzag(const zs_cost *c, int32_t len, int g, int rank, int heads, int backward,
                           int one_launch);

#endif
