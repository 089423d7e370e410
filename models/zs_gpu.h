/* GPU descriptions: dense bf16 peak, HBM bandwidth and capacity, NVLink
 * bandwidth, SM count, compute capability, the FP8 GEMM rate where the GPU
 * has FP8 tensor cores, and the compute kernels that run on it (attention
 * kernels with forward and backward curves, the GEMM curve; zs_kernel.h),
 * each with its source. Loaded from a built-in preset name or a JSON file.
 * Depends on zs_config and zs_kernel. */
#ifndef ZS_GPU_H
#define ZS_GPU_H

#include <stdio.h>

#include "zs_config.h"
#include "zs_err.h"
#include "zs_kernel.h"

typedef struct zs_gpu {
    char name[64];
    char source[256];     /* where the numbers come from (optional, free text) */
    double peak_tflops;   /* dense bf16 tensor-core peak, TFLOP/s */
    double hbm_gbs;       /* HBM bandwidth, GB/s */
    double mem_gib;       /* device memory, GiB */
    double nvlink_gbs;    /* NVLink bandwidth per GPU per direction, GB/s
                           * (spec sheets quote both directions: 400 -> 200) */
    int sms;              /* streaming multiprocessors */
    double cc;            /* CUDA compute capability (8.0 Ampere, 9.0 Hopper, 10.0
                           * Blackwell): selects NCCL's per-architecture constants
                           * (models/zs_nccl.c) */
    int nvlinks;          /* NVLink links per GPU (0: nvlink_gbs / 25, / 50 on
                           * Blackwell): NCCL counts links x its per-link figure,
                           * whatever a calibration makes of nvlink_gbs */
    char attn_kernel[32]; /* the attention kernel this GPU is modelled with */
    double fp8_tflops;    /* asymptotic FP8 (e4m3) GEMM rate of the FP8 GEMM curve, TFLOP/s
                           * (0: no FP8 figure; FP8 needs compute capability >= 8.9) */
    double fp8_half_dim;  /* the FP8 curve's size effect (zs_gemm_curve); when the */
    double fp8_p;         /* description has none, the GEMM curve's */
    double fp8_dim_floor; /* the FP8 curve's dim_floor (absent: the GEMM curve's) */
    char fp8_source[ZS_KERNEL_SOURCE]; /* where the FP8 curve comes from */
    double host_gbs; /* pinned host <-> device copy rate per direction achieved over the
                      * GPU's host link (PCIe), GB/s (0: no figure): activation
                      * offloading's price */
    char host_source[ZS_KERNEL_SOURCE]; /* where host_gbs comes from */
    int nkernels;
    zs_attn_kernel kernels[ZS_KERNEL_MAX];
    zs_gemm_curve gemm;
    int assumed_kernels; /* 1: no kernels in the description, scaled from the A800 preset */
} zs_gpu;

extern const zs_field zs_gpu_fields[];
extern const size_t zs_gpu_nfields;

int zs_gpu_load(const char *name_or_file, zs_gpu *out, zs_err *e);
int zs_gpu_from_json(const zs_json_doc *doc, const json_t *obj, const char *parent_key, zs_gpu *out,
                     zs_err *e);
/* The attention kernel the GPU is modelled with (its attn_kernel). */
const zs_attn_kernel *zs_gpu_attn_kernel(const zs_gpu *g);
/* Selects the attention kernel by name; ZS_EINPUT naming the choices when
 * the GPU has none of that name (g untouched). */
int zs_gpu_select_kernel(zs_gpu *g, const char *name, zs_err *e);
/* The FP8 GEMM curve: fp8_tflops, fp8_half_dim, fp8_p and fp8_dim_floor, the
 * GEMM curve's launch cost, fp8_source (meaningful only when fp8_tflops > 0). */
zs_gemm_curve zs_gpu_fp8_curve(const zs_gpu *g);
/* ZS_EINPUT (where "--precision") naming g when it cannot run FP8 GEMMs: no
 * FP8 tensor cores (compute capability below 8.9) or no FP8 GEMM rate. */
int zs_gpu_check_fp8(const zs_gpu *g, zs_err *e);
/* ZS_EINPUT (where `where`) naming g when it has no host copy rate
 * (host_gbs), which offloading activations to host memory needs. */
int zs_gpu_check_host(const zs_gpu *g, const char *where, zs_err *e);
void zs_gpu_print(FILE *f, const zs_gpu *g);

#endif
