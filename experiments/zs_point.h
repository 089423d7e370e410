/* One study point: a full configuration (model, cluster, trace, method and
 * its options, context, iterations, seed, backend, calibration) and what
 * running it gives (throughput, MFU, exposed communication, NIC use,
 * imbalance). `zepsim simulate`, `zepsim compare` and the experiment runner
 * all run points through zs_point_run, and `zepsim plan` plans through
 * zs_point_plan_batch; both build the point's env (zs_point_env.h), so
 * every number in a table or the results database, and every plan, comes
 * from the same path:
 *   trace -> the method's batcher -> planner -> backend -> result.
 * The options of a configuration, their ranges and defaults are one table
 * (zs_point_opts.h). Depends on the core, the models, the traces and both
 * backends. */
#ifndef ZS_POINT_H
#define ZS_POINT_H

#include <stdint.h>

#include "zs_batch.h"
#include "zs_cluster.h"
#include "zs_exec.h"
#include "zs_memory.h"
#include "zs_model.h"
#include "zs_planner.h"
#include "zs_result.h"
#include "zs_table.h"

typedef struct zs_point_cfg {
    char model[256];
    char cluster[256];
    int nodes;       /* 0: the preset's */
    char trace[512]; /* preset spec or file */
    char method[64];
    char opts[512];  /* method options "k=v,k=v" */
    int64_t context; /* tokens of one context group (see group) */
    int group;       /* GPUs per context group: global batch = GPUs / group x context */
    int iterations;
    uint64_t seed;
    char backend[16];     /* a backend's name (zs_backend.h) */
    char calib[512];      /* "" : analytical cost model */
    char attn_kernel[32]; /* "" : the GPU's own attention kernel */
    int zero_stage;
    zs_fsdp fsdp; /* ZeRO-3's implementation (zs_memory.h) */
    zs_recompute recompute;
    int precision;      /* a zs_precision (0 bf16, 1 fp8: delayed scaling, 2 fp8-cs: current
                           scaling) for the layers' linear GEMMs (zs_cost_set_fp8) */
    zs_grad_dtype grad; /* the gradient buffer's dtype (the memory model) */
    int validate;       /* run the plan validator on every plan */
    zs_fold_mode fold;  /* repeated segments (exec/zs_exec.h): off, on (exact), steady */
    int interference;   /* 1: compute-communication interference (zs_exec_opts) */
    char timeline[512]; /* timeline of the last iteration (zs_timeline.h; "" none) */
    /* Timeline ranks (exec/zs_timeline.h: "" automatic, the default; "all";
     * "0,5,17-20") and layers, inclusive (-1: all, the default). */
    char tl_ranks[256];
    int tl_layer0, tl_layer1;
    /* Not an option: GPU memory replacing the cluster's (GiB; 0: the
     * cluster's). zs_point_advice plans with unbounded memory to tell a
     * memory failure from any other. */
    double mem_gib_override;
} zs_point_cfg;

/* How c's schedules execute (borrowing c's strings): its fold mode,
 * interference and a
 * timeline at `timeline` (NULL: none) with c's ranks and layers. What
 * `run` and every study point hand their backend. */
void zs_point_exec(const zs_point_cfg *c, const char *timeline, zs_exec_opts *o);

/* The default study (the defaults of zs_point_opts.c): cluster-a, 16
 * nodes, llama-7b, arxiv, 256K tokens per 16-GPU group, 3 iterations, seed
 * 1, the SimGrid backend, ZeRO-1, full recomputation (long contexts do not
 * fit otherwise). */
void zs_point_cfg_default(zs_point_cfg *c);

typedef struct zs_point_result {
    int nodes, gpus; /* the cluster's size as run (nodes from the cluster or --nodes) */
    int iterations;
    double tokens; /* trained tokens, all iterations */
    /* trained tokens per iteration (tokens / iterations): methods that
     * delay documents (WLB-LLM's queues) or pad windows train a different
     * amount per iteration, so throughputs compare only beside this */
    double tokens_per_iter;
    double seconds;   /* simulated time, all iterations */
    double iter_time; /* mean per iteration, s */
    double tokens_per_s;
    double mfu;            /* model FLOPs utilisation, 0..1 */
    double compute_share;  /* mean time computing / iteration time */
    double exposed_share;  /* mean exposed communication / iteration time */
    double idle_share;     /* mean time waiting on peers / iteration time */
    double max_nic_util;   /* busiest NIC's busy time / iteration time */
    double attn_imbalance; /* mean over iterations, from the planner */
    double linear_imbalance;
    double imbalance_degree; /* mean over iterations; 0: no micro-batches (zs_plan_report) */
    double delay_iters;      /* iterations a trained token waited on average (zs_batch) */
    double plan_ms;          /* mean planning time per batch */
    /* Peak memory of one GPU over the iterations, an estimate of the memory
     * model (models/zs_memory.h): the model state as the plan's layout
     * shards it (ZeRO over the GPUs / (tp x pp)) plus the activations of
     * the GPU holding the most tokens; bytes. */
    double peak_mem;
    double mem_capacity; /* usable bytes of one GPU (memory less the reserve) */
    double wall_s;       /* host time of the whole point */
    int64_t ops;         /* ops simulated, all iterations */
    /* Cross-node point-to-point transfers of the last iteration, read back
     * from its timeline (zs_tlxnode_internal.h; xnode_n 0: no timeline, or none):
     * their count and the mean time each adds on its link, microseconds. */
    int64_t xnode_n;
    double xnode_us;
    char cost_desc[256];
    char notes[2048]; /* the planner's notes on the last iteration */
    char why[256];    /* why the last iteration's slowest rank was slowest */
    zs_result *last;  /* the last iteration's result (owned) */
} zs_point_result;

/* What running c costs, a priori, in a unit that grows in proportion with
 * its host time, for progress estimates (zs_progress_eta): iterations x
 * GPUs^ZS_POINT_COST_EXPONENT x the backend's rel_cost. Measured: Fig. 9's
 * 28 points in `experiment run` (llama-3b, 16-128 GPUs, SimGrid, one
 * iteration; 2-core machine, December 2026, medians of 3 runs) took 0.83 /
 * 2.06 / 4.29 / 9.92 s per 7 points at 16 / 32 / 64 / 128 GPUs, x2.2-2.5
 * per doubling (GPUs^1.2-1.3); `bench sim`'s fitted exponents at
 * 1024-4096 GPUs are 1.45 (SimGrid) and 1.23 (analytic). A cluster that
 * does not load counts as one GPU (the point fails at once). */
#define ZS_POINT_COST_EXPONENT 1.3
double zs_point_cost_hint(const zs_point_cfg *c);

/* Progress callback: called after each iteration (may be NULL). */
typedef void (*zs_point_progress)(void *arg, int done, int total);

int zs_point_run(const zs_point_cfg *cfg, zs_point_progress progress, void *parg,
                 zs_point_result *out, zs_err *e);
void zs_point_result_clear(zs_point_result *r);

/* One iteration's share of a point's figures: plain data (no pointers),
 * so a worker process can send it back. Iterations are independent once
 * their batch is drawn (planners keep no state between batches and a
 * backend run changes nothing in the env), so the iterations of one point
 * may run in separate processes (`zepsim compare` does) and be combined
 * into the figures zs_point_run gives, bit for bit: zs_point_run itself
 * combines such records, in iteration order. */
typedef struct zs_point_iter {
    int nodes, gpus;
    double tokens, model_flops, peak_flops, iter_time;
    int64_t ops;
    double exposed, busy, idle, nic; /* this iteration's mean shares (iter_time > 0) */
    double imb_a, imb_l, imb_d;      /* the planner's imbalances */
    double wait;                     /* wait_iters x tokens of the batch */
    double plan_s, peak_mem, mem_capacity;
    double wall_s;       /* host time of this iteration (its env, batches, plan, run) */
    double tl_bytes;     /* JSON size of the timeline it wrote (0: none) */
    char tl_subset[512]; /* the timeline's automatic rank subset ("": none; zs_result) */
    int64_t xnode_n;     /* cross-node transfers in the timeline (0: none) */
    double xnode_us;     /* the mean time each adds on its link, us (zs_tlxnode) */
    char cost_desc[256]; /* the cost model's description */
    char notes[1024];    /* the planner's notes */
    char why[256];       /* why its slowest rank was slowest */
} zs_point_iter;

/* Runs iteration `it` (from 0) of cfg alone: builds the point's env, draws
 * batches 0..it, plans and runs batch it (the timeline, when cfg has one,
 * only in the last iteration). last: when not NULL, the iteration's result
 * (owned by the caller). */
int zs_point_run_iter(const zs_point_cfg *cfg, int it, zs_point_iter *out, zs_result **last,
                      zs_err *e);
/* The sums a point's means are taken from. Start both it and the
 * zs_point_result zeroed, add every iteration's record in iteration order,
 * then finish: out->wall_s is the sum of the records' (zs_point_run sets
 * its own), out->last is left alone. */
typedef struct zs_point_acc {
    double flops, peak, exposed, busy, idle, nic, imb_a, imb_l, imb_d, wait, plan_s;
} zs_point_acc;
void zs_point_add(zs_point_acc *t, const zs_point_iter *q, zs_point_result *out);
void zs_point_finish(const zs_point_acc *t, zs_point_result *out);

/* One planned batch of a point, as `zepsim plan` shows it (owned). */
typedef struct zs_point_plan {
    zs_batch *batch;
    zs_schedule *sched;
    zs_plan_report rep;
    char method[64]; /* the registry's spelling */
    char cost_desc[256];
    double peak_mem, mem_capacity; /* as in zs_point_result */
    int nodes;
    /* The machine it was planned for, as the machine loader gave it
     * (experiments/zs_machine.h: calibrated links included). */
    zs_model model;
    zs_cluster cluster;
} zs_point_plan;

/* Plans the index-th global batch (from 0) of cfg's trace with cfg's
 * method: the batch zs_point_run simulates in iteration index. *out is
 * cleared on failure. */
int zs_point_plan_batch(const zs_point_cfg *cfg, long index, zs_point_plan *out, zs_err *e);
void zs_point_plan_clear(zs_point_plan *p);

/* The configuration as "key=value; ..." text (for provenance). */
void zs_point_cfg_format(const zs_point_cfg *c, char *buf, size_t n);

#endif
