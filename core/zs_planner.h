/* The planner interface: one global batch in, one schedule out.
 *
 * A method (local, te-cp, llama-cp, hybrid-dp, ulysses, usp, plain-4d,
 * fixed-4d, wlb-llm, zeppelin, flashcp, distca, dyn-cp, dcp, flexsp, auto) is a
 * zs_planner_ops in its own file plus one row in zs_planners.def. Planners see the model, the
 * cluster, the cost model, the memory configuration and method options; they place tokens, lower
 * the plan to a schedule through the builder in zs_schedule.h (and the shared layer helpers in
 * zs_iteration.h), and fill a small report. A method that packs its own batches (the 4D methods,
 * WLB-LLM's outlier queues) says so through its batcher hook, so every
 * caller that turns a trace into batches for a method gets the same
 * batches. Depends on the core and models only. */
#ifndef ZS_PLANNER_H
#define ZS_PLANNER_H

#include "zs_batch.h"
#include "zs_batcher.h"
#include "zs_cluster.h"
#include "zs_cost.h"
#include "zs_memory.h"
#include "zs_model.h"
#include "zs_opts.h"
#include "zs_schedule.h"

typedef struct zs_plan_ctx {
    const zs_model *model;
    const zs_cluster *cluster;
    const zs_cost *cost;
    zs_mem_cfg mem; /* ZeRO stage, recomputation, reserve (degrees set by the planner) */
    zs_opts *opts;  /* method options; planners read theirs, the rest is an error */
    uint64_t seed;  /* for methods with randomness (MoE imbalance) */
} zs_plan_ctx;

/* What a planner says about its plan, printed beside the result. */
typedef struct zs_plan_report {
    zs_layout_dims dims;
    double attn_imbalance;   /* max / mean attention work per rank (per micro-batch for PP) */
    double linear_imbalance; /* max / mean tokens per rank for the linear modules */
    /* WLB-LLM's imbalance degree: the largest predicted micro-batch forward
     * latency x micro-batches / their total (1 = balanced); 0 for methods
     * without micro-batches. */
    double imbalance_degree;
    /* The most tokens one GPU holds per layout over the whole iteration,
     * all of its micro-batches added (the imbalance figures' view). */
    int64_t max_attn_tokens, max_linear_tokens;
    /* The most tokens per layout one GPU holds alive at once, what its
     * activations are sized by (the memory model's peak): a micro-batch's
     * activations are freed once its backward is done, and a GPU runs its
     * micro-batches in index order, one at a time without pipelining, up to
     * min(pp, micro-batches) consecutive ones with 1F1B on the first stage
     * (the pieces' ranks). Equal to the above with one micro-batch. */
    int64_t max_live_attn_tokens, max_live_linear_tokens;
    /* A planner that keeps part of the live activations off the device
     * (bytescale offload=on: in host memory): the most any GPU keeps on it,
     * in tokens' worth of activations, which the memory peak is then sized
     * by (0: the above, every live activation on the device). */
    int64_t max_resident_tokens;
    /* LoRA's adapter rank the plan trains with (0: every weight), which
     * sizes the memory peak's gradients and optimizer state */
    int lora;
    double plan_seconds; /* host time spent planning */
    char notes[1024];    /* decisions and approximations, "; "-separated */
} zs_plan_report;

/* The shape of the greedy batcher's global batches. */
typedef struct zs_batch_shape {
    int64_t budget; /* tokens per global batch */
    int32_t window; /* longest document kept whole; longer ones are split */
} zs_batch_shape;

typedef struct zs_planner_ops {
    const char *name;
    const char *summary;
    /* The options plan reads (NULL-terminated rows, zs_opts.h): their
     * parsing, ranges, defaults and `zepsim plan --help` text. */
    const zs_opt_spec *const *options;
    int (*plan)(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e);
    /* How the method brings its documents; NULL: the greedy batcher with
     * the study's shape (GPUs / group x context tokens, window = context).
     * Called once per study with the study's shape in *shape and the
     * documents of the trace; it either reshapes the greedy batcher's
     * batches (changes *shape, leaves *out NULL) or returns a batcher of
     * its own over docs in *out. The batcher borrows ctx and docs: both
     * must outlive it. Reads options like plan does. */
    int (*batcher)(const zs_plan_ctx *ctx, zs_doc_stream docs, zs_batch_shape *shape,
                   zs_batcher **out, zs_err *e);
    /* The method's per-batch decisions alone, without lowering them to a
     * schedule: what a training job computes per batch (`zepsim bench plan`
     * times it apart from plan). NULL: the method decides nothing apart
     * from plan. classes[ZS_PLAN_CLASSES] (zeroed by the caller) receives
     * the documents per placement class where the method classifies them
     * (Zeppelin: local, intra-node ring, inter-node ring, ...). */
    int (*decide)(const zs_plan_ctx *ctx, const zs_batch *batch, int *classes, zs_err *e);
} zs_planner_ops;

#define ZS_PLAN_CLASSES 4

/* The registry: the built-in rows of planners/zs_planners.def, then any
 * added with zs_planner_register. Names match case-insensitively. */
const zs_planner_ops *zs_planner_find(const char *name);
const zs_planner_ops *zs_planner_at(int i); /* NULL past the end */
int zs_planner_count(void);
/* Adds a method at run time (a program embedding zepsim, a test): one
 * row, borrowed (it must outlive its use), found by every lookup after the
 * built-in ones. Errors: no name or plan, a name already taken, more than
 * ZS_PLANNER_ADDED_MAX rows. Register before forking workers. */
#define ZS_PLANNER_ADDED_MAX 8
int zs_planner_register(const zs_planner_ops *p, zs_err *e);
/* The registered methods' names, ", "-separated, into buf (truncated to n). */
void zs_planner_names(char *buf, size_t n);
/* zs_planner_find, or ZS_EUSAGE "unknown method 'x'" with `where` (an
 * option, a key path) and a fix that offers the nearest name and lists
 * them all. *out untouched on failure. */
int zs_planner_lookup(const char *name, const char *where, const zs_planner_ops **out, zs_err *e);

/* The planners' common "tp" option (1..ZS_TP_MAX, dividing the GPUs of a
 * node: TP groups stay inside NVLink), default 1. The command line's
 * --tp (experiments/cli/cli_flags.c) has the same range. */
#define ZS_TP_MAX 64
extern const zs_opt_spec zs_opt_tp;
/* Reads a tp row (zs_opt_tp or a method's own with a computed default
 * def) and checks that it divides a node's GPUs. */
int zs_plan_opt_tp(const zs_plan_ctx *ctx, const zs_opt_spec *row, long def, long *tp, zs_err *e);

/* Runs a planner, times it, and (with validate=1) checks the schedule. */
int zs_plan_batch(const zs_planner_ops *p, const zs_plan_ctx *ctx, const zs_batch *batch,
                  int validate, zs_schedule **out, zs_plan_report *rep, zs_err *e);

void zs_plan_report_note(zs_plan_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
