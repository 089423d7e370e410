/* Internal interface of the CUDA/NCCL half of the hardware backend: the
 * entry points zs_hw.c forwards to, the kernel launchers (attn.cu,
 * elem.cu, callable from C) and the cuBLASLt wrapper. Included by C and
 * CUDA files alike; only hw/ includes it. Tensors are bf16 passed as
 * void pointers so that C files need no CUDA half-precision headers. */
#ifndef ZS_CUDA_INTERNAL_H
#define ZS_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime.h>

#include "zs_hw.h"
#include "zs_hw_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

int zs__cuda_devices(int *count, char *desc, size_t n, zs_err *e);
int zs__cuda_check(FILE *log, zs_err *e);
int zs__cuda_run(const zs_schedule *s, const zs_hw_run_cfg *cfg, zs_result **out, zs_err *e);
int zs__cuda_bench(const zs_hw_bench_cfg *cfg, FILE *out, zs_err *e);

/* Fills a ZS_ERUNTIME error from a CUDA status (returns 0 on success). */
int zs__cuda_ok(cudaError_t st, const char *what, zs_err *e);

/* Tile sizes of the attention kernels (also used to build tile lists). */
#define ZS_ATTN_FWD_ROWS 128
#define ZS_ATTN_BWD_ROWS 64

/* Head dims the attention kernels are compiled for. */
int zs__attn_supported(int head_dim);
/* Forward variant: cp.async double-buffered K/V tiles (1, the default) or
 * plain loads (0; also ZS_HW_ATTN_FWD=simple in the environment). */
void zs__attn_set_pipelined(int on);
int zs__attn_pipelined(void);

/* Attention forward over device block list `blocks` and tile list
 * `tiles` (zs_hw_attn_tiles with ZS_ATTN_FWD_ROWS, over queries):
 * O (bf16) and LSE (float, natural log) of every block's q rows. */
cudaError_t zs__attn_fwd(const zs_hw_block *blocks, const int32_t *tiles, int ntiles,
                         const zs_attn_dims *d, float scale, const void *q, const void *k,
                         const void *v, void *o, float *lse, cudaStream_t st);

/* Attention backward: tiles over keys (ZS_ATTN_BWD_ROWS). Needs fp32
 * scratch: dd [q_rows][heads], dq32 [q_rows][heads][d], dk32 and dv32
 * [k_rows][kv_heads][d]; writes bf16 dq, dk, dv. */
typedef struct zs__attn_bwd_bufs {
    float *dd, *dq32, *dk32, *dv32;
    void *dq, *dk, *dv;
    int64_t q_rows, k_rows;
} zs__attn_bwd_bufs;
cudaError_t zs__attn_bwd(const zs_hw_block *blocks, const int32_t *tiles, int ntiles,
                         const zs_attn_dims *d, float scale, const void *q, const void *k,
                         const void *v, const void *o, const float *lse, const void *dout,
                         const zs__attn_bwd_bufs *b, cudaStream_t st);

/* Elementwise kernels (bf16 in and out, fp32 math). */
cudaError_t zs__rmsnorm(int64_t rows, int cols, const void *x, const void *w, float eps, void *y,
                        cudaStream_t st);
cudaError_t zs__swiglu(int64_t n, const void *gate, const void *up, void *y, cudaStream_t st);
cudaError_t zs__residual(int64_t n, const void *x, const void *r, void *y, cudaStream_t st);
/* LSE merge of two partial attention results (rows x heads rows). */
cudaError_t zs__attn_merge(int64_t rows, int heads, int head_dim, const void *oa, const float *la,
                           const void *ob, const float *lb, void *o, float *lse, cudaStream_t st);
/* Deterministic pseudo-random bf16 values in [-amp, amp). */
cudaError_t zs__fill(void *x, int64_t n, uint64_t seed, float amp, cudaStream_t st);

/* cuBLASLt GEMM, bf16 in and out, fp32 accumulate: C[m][n] = X[m][k] W[n][k]^T
 * (row-major, W as a linear layer's [out][in] weight). */
typedef struct zs__gemm zs__gemm;
int zs__gemm_new(zs__gemm **g, zs_err *e);
void zs__gemm_free(zs__gemm *g);
int zs__gemm_run(zs__gemm *g, int64_t m, int64_t n, int64_t k, const void *x, const void *w,
                 void *c, cudaStream_t st, zs_err *e);

#ifdef __cplusplus
}
#endif

#endif
