/* CPU reference kernels of the hardware backend: variable-length causal
 * attention forward and backward over a block list (with log-sum-exp),
 * the log-sum-exp merge of partial results that ring attention relies on,
 * GEMM, RMSNorm, SwiGLU and the residual add, plus bf16 conversions.
 *
 * They are plain C in float with double accumulation, slow on purpose and
 * written to read like the formulas: the CUDA kernels are checked against
 * them on a GPU, and they are unit-tested on the CPU against naive
 * formulas. Depends on zs_err only (never on CUDA). */
#ifndef ZS_HW_REF_H
#define ZS_HW_REF_H

#include <stdint.h>

#include "zs_err.h"

/* Tensor shapes shared by attention kernels. Tokens are packed rows:
 * Q and O are [rows][heads][head_dim], K and V [rows][kv_heads][head_dim],
 * LSE [rows][heads]. heads must be a multiple of kv_heads (GQA: query head
 * h reads KV head h / (heads / kv_heads)). */
typedef struct zs_attn_dims {
    int heads, kv_heads, head_dim;
} zs_attn_dims;

/* One attention block in buffer coordinates: queries are rows
 * [q_off, q_off + nq) of Q (and of O, LSE), keys and values rows
 * [k_off, k_off + nk) of K and V. q_pos / k_pos are the document positions
 * of the first query and key; key j is visible to query i iff
 * k_pos + j <= q_pos + i (the causal mask in document positions, as in
 * zs_attn_block). A query row with no visible key gets O = 0 and
 * LSE = -inf, which the merge treats as "no contribution". */
typedef struct zs_hw_block {
    int64_t q_off, k_off;
    int32_t nq, nk;
    int32_t q_pos, k_pos;
} zs_hw_block;

/* Checks a block list against buffer sizes (rows of Q and K) and dims. */
int zs_hw_blocks_check(const zs_hw_block *b, int nb, const zs_attn_dims *d, int64_t q_rows,
                       int64_t k_rows, zs_err *e);

/* Forward: for every block writes O and LSE (natural log) of its q rows,
 * softmax(scale * Q K^T + mask) V. Blocks must not share q rows (partial
 * results are merged with zs_ref_attn_merge). */
int zs_ref_attn_fwd(const zs_hw_block *b, int nb, const zs_attn_dims *d, float scale,
                    const float *q, const float *k, const float *v, float *o, float *lse,
                    zs_err *e);

/* Backward: given the final O and LSE of every q row (after merging) and
 * dO, ADDS the gradients of each block to dq, dk, dv (the caller zeroes
 * them). Because the softmax statistics are the merged ones, summing the
 * blocks' contributions gives the gradient of the unsplit attention, which
 * is how ring attention's backward works. */
int zs_ref_attn_bwd(const zs_hw_block *b, int nb, const zs_attn_dims *d, float scale,
                    const float *q, const float *k, const float *v, const float *o,
                    const float *lse, const float *dout, float *dq, float *dk, float *dv,
                    zs_err *e);

/* Merges two partial results of the same query rows by log-sum-exp:
 * lse = log(exp(la) + exp(lb)), o = oa exp(la - lse) + ob exp(lb - lse).
 * rows x heads rows of head_dim values; out may alias a. */
void zs_ref_attn_merge(int64_t rows, int heads, int head_dim, const float *oa, const float *la,
                       const float *ob, const float *lb, float *o, float *lse);

/* C[m][n] = A[m][k] B[k][n] (row-major, double accumulation). */
void zs_ref_gemm(int m, int n, int k, const float *a, const float *b, float *c);
/* y = x / sqrt(mean(x^2) + eps) * w, per row of `cols` values. */
void zs_ref_rmsnorm(int64_t rows, int cols, const float *x, const float *w, float eps, float *y);
/* y = silu(gate) * up = gate / (1 + exp(-gate)) * up. */
void zs_ref_swiglu(int64_t n, const float *gate, const float *up, float *y);
/* y = x + r. */
void zs_ref_residual(int64_t n, const float *x, const float *r, float *y);

/* bf16 as its 16 raw bits: round to nearest even (NaN stays NaN). */
uint16_t zs_bf16_from_float(float f);
float zs_bf16_to_float(uint16_t h);
/* Rounds every value to the nearest bf16 (what a bf16 tensor can hold). */
void zs_bf16_round(float *x, int64_t n);

/* max |a - b| / max(max |b|, floor) over n values; NaN anywhere gives NaN. */
double zs_rel_err(const float *a, const float *b, int64_t n, double floor);

#endif
