/* Published training runs (issue 29): the reader of a runs CSV, one
 * fixed-length Megatron / NeMo training run per row, in the schema
 *   model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,zero,
 *   tokens_s_gpu,model_tflops_gpu
 * with '#' comment lines and an empty cell where a figure was not
 * published (recompute, zero, either measurement). An optional 16th
 * column, kernels (fused | eager | eager-fused-norm: zs_step.h), names
 * the framework's kernels for runs outside Megatron / NeMo (torchtitan);
 * empty or absent is fused; an optional sp column (on | off; empty or
 * absent is on) says whether TP ran with sequence parallelism (runs
 * before Megatron-LM had it, 2021-22, ran without). The optional columns
 * follow the 15 in any order. Every cell is checked
 * here, at the boundary: a bad cell is ZS_EINPUT naming file:line and the
 * column, with how to fix it. Names (task, precision, recompute, kernels,
 * the model) compare case-insensitively; a model name without a preset
 * is read (no_model) for the predictor to give the row a reason. `zepsim
 * validate --runs` predicts the rows with zs_megatron_step. Depends on
 * zs_model (the model names), zs_step (precision and recomputation names)
 * and zs_fdio (bounded reads). */
#ifndef ZS_RUNS_H
#define ZS_RUNS_H

#include "zs_err.h"
#include "zs_step.h"

/* At most this many rows (a published table has tens; the bound keeps a
 * hostile file's work small). */
#define ZS_RUNS_MAX_ROWS 4096
/* The largest parallel degree, batch and sequence a row may give. */
#define ZS_RUNS_MAX_GPUS 1048576
#define ZS_RUNS_MAX_SEQ  1048576

typedef enum zs_run_task { ZS_TASK_PRETRAIN = 0, ZS_TASK_SFT, ZS_TASK_LORA } zs_run_task;
const char *zs_run_task_name(zs_run_task t);

typedef struct zs_run {
    int line; /* its line in the file */
    char model[64];
    zs_run_task task;
    int gpus, gbs, mbs, seq, tp, pp, cp, vp;
    zs_precision precision;
    int recompute;                         /* a zs_step_rc, or -1: not published */
    int zero;                              /* 0..3, or -1: not published */
    double tokens_s_gpu, model_tflops_gpu; /* measured; 0: not published */
    zs_step_kernels kernels;               /* the optional kernels column; fused when absent */
    int sp;       /* the optional sp column: 1 (on, also when absent or empty): TP with sequence
                   * parallelism, Megatron's default since 2022; 0: TP all-reduces, replicated norms */
    int no_model; /* 1: the model cell names no preset (the row cannot be predicted) */
} zs_run;

typedef struct zs_runs {
    char path[512];
    int n;
    zs_run *rows;
} zs_runs;

/* Data-parallel degree gpus / (tp pp cp) and micro-batches per DP rank
 * gbs / (mbs dp) of a row the reader accepted. */
int zs_run_dp(const zs_run *r);
int zs_run_microbatches(const zs_run *r);

/* Reads the runs file at path whole (bounded by zs_input_limit() and
 * ZS_RUNS_MAX_ROWS). ZS_EINPUT with file:line, the column and the fix for
 * a wrong header, a non-numeric or out-of-range cell, a model cell that is
 * a path or empty, an unknown task, precision or recomputation, gpus not
 * divisible by tp pp cp, gbs not divisible by mbs dp, fewer layers than pp
 * x vp chunks, a row with neither measurement, or a file without rows.
 * Free with zs_runs_free. */
int zs_runs_read(const char *path, zs_runs *out, zs_err *e);
void zs_runs_free(zs_runs *r);

#endif
