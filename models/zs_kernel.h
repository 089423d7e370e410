/* Compute-kernel descriptions of a GPU and what they cost: attention
 * (FlashAttention-style tiled kernels, forward and backward each with their
 * own curve) and GEMM (cuBLAS-style efficiency curve). A GPU preset carries
 * one or more attention kernels (FlashAttention-2, FlashAttention-3, the
 * kernel of a measurement...) and names the one it models by default; the
 * figures of each come from a published or shared measurement named in its
 * `source`. Depends on zs_config (JSON parsing) and libm.
 *
 * How an attention launch is priced (docs/cost-model.md has the derivation):
 * the kernel runs one CTA per (query tile, head) of every sequence in the
 * launch (a varlen launch packs several documents; each block of a ring
 * step is one sequence); a CTA walks the key tiles its rows may see (tiles
 * crossed by the causal diagonal computed whole). CTAs share the GPU's
 * `slots` (SMs x CTAs per SM):
 *
 *   compute = sum_CTA (cta + keytiles * tile) / slots       (per CTA, one slot)
 *           + sum_seq heads * seq / slots                   (per sequence and head)
 *   with the tile part slowed by (1 + (half / max(W, half_floor))^p), W the launch's
 *   tile FLOPs (half_floor: the smallest launch a fit saw),
 *   and never below the longest CTA (a launch too small to fill the GPU);
 *   time = launch + max(compute, HBM bytes / HBM bandwidth).
 *
 * `tile` is 4 * tile_q * tile_k * d_eff FLOPs (x2.5 backward) at the rate
 * `tflops` spread over the slots; d_eff = 128 * (dfix + (1 - dfix) * d / 128)
 * makes the part of a tile's time that does not scale with the head
 * dimension (softmax, masking) explicit; `cta` scales with d_eff / 128 too
 * (a CTA loads its Q tile and writes O). GQA enters through the bytes (K and
 * V are read once per KV head). */
#ifndef ZS_KERNEL_H
#define ZS_KERNEL_H

#include <stdint.h>
#include <stdio.h>

#include "zs_config.h"
#include "zs_err.h"

#define ZS_KERNEL_MAX    5 /* attention kernels per GPU (presets give up to 4; "unfused" adds one) */
#define ZS_KERNEL_SOURCE 640

/* One direction (forward or backward) of an attention kernel. */
typedef struct zs_attn_dir {
    double tflops;     /* asymptotic rate on whole tiles at d = 128, TFLOP/s (FA convention) */
    double cta_us;     /* fixed cost of one CTA (query tile x head) on one slot, us */
    double seq_us;     /* fixed cost per sequence and head on one slot (varlen documents), us */
    double launch_us;  /* fixed cost per launch, us */
    double half;       /* launch tile FLOPs at which the tile rate is halved (0: no size effect) */
    double p;          /* exponent of that size effect */
    double half_floor; /* a fit's smallest launch (tile FLOPs): smaller launches keep the size
                          effect it has there instead of extrapolating it (0: none) */
} zs_attn_dir;

typedef struct zs_attn_kernel {
    char name[32];
    char source[ZS_KERNEL_SOURCE];
    int tile_q, tile_k; /* query and key tile sizes */
    int ctas_per_sm;    /* concurrent CTAs per SM (slots = SMs x this) */
    double dfix;        /* share of a d = 128 tile's time independent of d */
    zs_attn_dir fwd, bwd;
    /* 1: not a tiled kernel but Megatron-LM's attention before FlashAttention
     * (zs_gpu_select_kernel's "unfused"): priced op by op from the GEMM curve
     * and HBM (zs_cost_attn_work); the tile fields are the GPU's default
     * kernel's, for what reads tiles */
    int unfused;
} zs_attn_kernel;

/* The GEMM efficiency curve: time = launch + 2mnk / rate * (1 + (half_dim / x)^p),
 * x = max(min(m, n, k), dim_floor). dim_floor is the smallest dimension the
 * curve was fitted on: below it the size term keeps its value there, since
 * the power law, extrapolated, grows faster than the work shrinks and would
 * price a GEMM 8 wide slower than the same GEMM 256 wide. */
typedef struct zs_gemm_curve {
    double tflops;
    double half_dim;
    double p;
    double launch_us;
    double dim_floor; /* 0: no floor (the size term extrapolated) */
    char source[ZS_KERNEL_SOURCE];
} zs_gemm_curve;

/* The floor a GEMM curve without "dim_floor" takes: 256, the smallest
 * dimension of XLA's measured GEMM tables (sm_90, sm_100), which every
 * preset's curve was fitted to or taken from (docs/cost-model.md, "GEMM"). */
#define ZS_GEMM_DIM_FLOOR 256.0

/* Achievable fraction of HBM bandwidth for a streaming (memory-bound)
 * kernel: 2.8 of 3.35 TB/s for coalesced loads on an H100 SXM5, measured
 * with Nsight Compute (mikamirai.com/blog/gpu-memory-bandwidth, 2026) [S];
 * applied to every GPU [assumed]. The step model's memory-bound ops and
 * the HBM bound of every GEMM (zs_gemm_time) move their bytes at it. */
#define ZS_HBM_EFF 0.84

/* What one attention launch amounts to (for `zepsim cost` and tests). */
typedef struct zs_attn_work {
    int64_t seqs;       /* sequences (blocks) with work */
    int64_t ctas;       /* CTAs over all heads */
    int64_t tiles;      /* tile computations over all heads */
    double flops_tiles; /* FLOPs of those tiles (FA convention, real d) */
    double flops_exact; /* FLOPs of the exact causal pairs (what a FLOP counter reports) */
    double bytes;       /* HBM bytes (Q, K, V, O; backward also dO, dQ, dK, dV) */
    double t_compute, t_memory, t_launch, t_longest_cta;
    double seconds;
} zs_attn_work;

/* One attention block: queries [q0, q1) against keys/values [k0, k1) of one
 * document. The causal mask always applies: query q attends key k iff
 * k <= q. A block entirely below the diagonal is "full", one crossing it is
 * "causal"; a block entirely above it computes nothing and is a bug. In a
 * launch each block is one sequence (a varlen launch packs several). */
typedef struct zs_attn_block {
    int32_t doc; /* document index in the global batch */
    int32_t q0, q1;
    int32_t k0, k1;
} zs_attn_block;

/* The shape a launch runs with. */
typedef struct zs_attn_shape {
    int heads, kv_heads, head_dim;
    int sms;        /* SMs of the GPU */
    double hbm_Bps; /* HBM bandwidth, bytes/s (0: no memory floor) */
    int dtype_bytes;
} zs_attn_shape;

/* Seconds of one launch over n blocks (0 when there is no work); fills w
 * when not NULL. */
double zs_attn_kernel_time(const zs_attn_kernel *k, int backward, const zs_attn_block *b, int n,
                           const zs_attn_shape *sh, zs_attn_work *w);
/* Number of (q, k) pairs with k <= q inside the block. */
int64_t zs_attn_block_pairs(const zs_attn_block *b);
/* Pairs the kernel computes (whole tiles) for the blocks, per head. */
int64_t zs_attn_kernel_tile_pairs(const zs_attn_kernel *k, const zs_attn_block *b, int n);

/* HBM bytes of a GEMM of m x k by k x n: both inputs read once (in_b bytes
 * a value) and the output written once (out_b bytes a value; a weight
 * gradient accumulated into an fp32 buffer reads and writes it: pass 8). */
double zs_gemm_bytes(double m, double n, double k, double in_b, double out_b);
/* Seconds of one GEMM, the one function that prices every GEMM: the curve
 * (its size term held at dim_floor below it), and never less than the
 * launch plus its bytes at hbm_Bps (a GEMM cannot beat moving its operands
 * through HBM once; bytes or hbm_Bps <= 0: no such bound, the curve
 * alone). 0 when a dimension is not positive or the rate is 0. */
double zs_gemm_time(const zs_gemm_curve *g, double m, double n, double k, double bytes,
                    double hbm_Bps);

/* ---- JSON --------------------------------------------------------------------- */
/* Parses one kernel object ({"name", "source", "tile_q", "tile_k",
 * "ctas_per_sm", "dfix", "fwd": {...}, "bwd": {...}}). */
int zs_attn_kernel_from_json(const zs_json_doc *doc, const json_t *obj, zs_attn_kernel *out,
                             zs_err *e);
int zs_gemm_curve_from_json(const zs_json_doc *doc, const json_t *obj, zs_gemm_curve *out,
                            zs_err *e);
/* Parses {"tflops", "cta_us", ...} into d. parent names the object in errors. */
int zs_attn_dir_from_json(const zs_json_doc *doc, const json_t *obj, const char *parent,
                          zs_attn_dir *d, zs_err *e);
json_t *zs_attn_dir_to_json(const zs_attn_dir *d);

void zs_attn_kernel_print(FILE *f, const zs_attn_kernel *k, int indent);

#endif
