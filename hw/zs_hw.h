/* The hardware backend's entry points: list the GPUs, check the CUDA
 * kernels against the CPU reference, run a schedule on real GPUs, and run
 * the calibration microbenchmarks.
 *
 * Every function exists in every build: without the CUDA toolkit it
 * returns ZS_EUNSUPPORTED saying the backend was not built; on a machine
 * without a GPU it returns ZS_EUNSUPPORTED saying no GPU is visible. The
 * CUDA/NCCL code lives in hw/cuda/ and is reached only through here.
 * Depends on zs_schedule, zs_result, zs_model, zs_exec. */
#ifndef ZS_HW_H
#define ZS_HW_H

#include <stdio.h>

#include "zs_err.h"
#include "zs_exec.h"
#include "zs_model.h"
#include "zs_result.h"
#include "zs_schedule.h"

/* ZS_OK when this build has the backend, else ZS_EUNSUPPORTED saying it
 * was not built and how to build it. Touches no GPU (a process that forks
 * workers must not initialise CUDA first). */
int zs_hw_available(zs_err *e);

/* Visible GPUs: *count and a one-line description per GPU in desc
 * ("0: NVIDIA H200, sm_90, 139.8 GiB, driver 13.0"). ZS_EUNSUPPORTED when
 * the backend is not built or no GPU is visible. */
int zs_hw_devices(int *count, char *desc, size_t n, zs_err *e);

/* Kernel correctness on the GPU against the CPU reference (small random
 * bf16 inputs): attention forward and backward over varied block lists,
 * the LSE merge, GEMM, RMSNorm, SwiGLU, residual. Writes one line per check
 * to log; fails (ZS_ERUNTIME) when a relative error exceeds 1e-2 or a value
 * is NaN. */
int zs_hw_check(FILE *log, zs_err *e);

/* The defaults of zs_hw_run_cfg and zs_hw_bench_cfg (also the command
 * line's, experiments/cli/cmd_hw.c). */
#define ZS_HW_WARMUP     1
#define ZS_HW_ITERS      3
#define ZS_HW_GPN        8
#define ZS_HW_MAX_TOKENS 16384
#define ZS_HW_REPS       5

typedef struct zs_hw_run_cfg {
    /* The timeline path (exec.timeline; every rank, every layer: a measured
     * timeline keeps them all) and no folding: the GPUs run every op of
     * every iteration whatever exec.fold says. */
    zs_exec_opts exec;
    int warmup;        /* unmeasured iterations (default 1) */
    int iters;         /* measured iterations (default 3); the median one is reported */
    int gpus_per_node; /* for the timeline's process per node (default 8) */
    /* Several processes (one per GPU, started by the user's launcher):
     * rank >= 0 and nprocs > 1, the NCCL unique id exchanged through the
     * file `rendezvous` on a shared path. rank < 0: one thread per GPU in
     * this process. */
    int rank, nprocs;
    const char *rendezvous;
} zs_hw_run_cfg;

zs_hw_run_cfg zs_hw_run_cfg_default(void);

/* Runs schedule s (its model named in s->model) on the GPUs and fills a
 * new result (backend "hw"). In process mode only rank 0 returns a full
 * result; other ranks return their own row. */
int zs_hw_run(const zs_schedule *s, const zs_hw_run_cfg *cfg, zs_result **out, zs_err *e);

typedef struct zs_hw_bench_cfg {
    const char *models[8]; /* model presets or files; NULL-terminated (default: llama-7b) */
    int max_tokens;        /* largest attention length / GEMM token count (default 16384) */
    int reps;              /* timed repetitions per point, median reported (default 5) */
    int quick;             /* fewer points (device-check) */
    FILE *log;             /* progress lines, may be NULL */
} zs_hw_bench_cfg;

zs_hw_bench_cfg zs_hw_bench_cfg_default(void);

/* Microbenchmarks: attention fwd/bwd over a grid of q/kv lengths (causal
 * and full blocks), cuBLASLt GEMMs over token counts for each model's
 * shapes, elementwise ops, NCCL send/recv and collectives over sizes when
 * two or more GPUs are visible. Writes the measurement file (JSON, schema
 * in docs/hw-backend.md) to out. */
int zs_hw_bench(const zs_hw_bench_cfg *cfg, FILE *out, zs_err *e);

#endif
