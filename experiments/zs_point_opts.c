/* The study-point option table: see zs_point_opts.h. */
#include "zs_point_opts.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_backend.h"
#include "zs_cluster.h"
#include "zs_model.h"
#include "zs_num.h"
#include "zs_planner.h"
#include "zs_timeline.h"
#include "zs_trace_src.h"

/* ---- checks: names that must resolve ------------------------------------ */

static int check_model(char *val, size_t n, int code, zs_err *e)
{
    (void)n;
    (void)code;
    zs_model m;
    return zs_model_load(val, &m, e);
}

static int check_cluster(char *val, size_t n, int code, zs_err *e)
{
    (void)n;
    (void)code;
    zs_cluster cl;
    return zs_cluster_load(val, 0, &cl, e);
}

static int check_trace(char *val, size_t n, int code, zs_err *e)
{
    (void)n;
    (void)code;
    zs_trace_src_cfg scfg;
    memset(&scfg, 0, sizeof scfg);
    scfg.seed = 1;
    zs_trace_src *src = NULL;
    int rc = zs_trace_src_open(val, &scfg, &src, e);
    zs_trace_src_free(src);
    return rc;
}

static int check_method(char *val, size_t n, int code, zs_err *e)
{
    const zs_planner_ops *p;
    if (zs_planner_lookup(val, NULL, &p, e)) {
        e->code = code;
        return code;
    }
    snprintf(val, n, "%s", p->name);
    return ZS_OK;
}

static int check_backend(char *val, size_t n, int code, zs_err *e)
{
    const zs_backend *b;
    int rc = zs_backend_lookup(val, NULL, code, &b, e);
    if (!rc)
        snprintf(val, n, "%s", b->name);
    return rc;
}

/* ---- the table ------------------------------------------------------------- */

_Static_assert(sizeof(((zs_point_cfg *)0)->tl_ranks) == ZS_TL_RANKS_LEN,
               "a configuration holds the longest rank list");

#define F(m) ZS_OPT_FIELD(zs_point_cfg, m)
#define ROW(cli_, key_, type_, field, min_, max_, def_, arg_, values_, check_, help_)              \
    {                                                                                              \
        .cli = cli_, .key = key_, .type = type_, F(field), .min = min_, .max = max_,               \
        .deftext = def_, .arg = arg_, .values = values_, .check = check_, .help = help_            \
    }
#define RANGE(cli_, lo, hi, max_, help_)                                                           \
    {                                                                                              \
        .cli = cli_, .type = ZS_OPT_RANGE, F(lo), .off2 = offsetof(zs_point_cfg, hi), .max = max_, \
        .deftext = "", .arg = "A-B", .help = help_                                                 \
    }

/* Order: the order of --help and of the spec keys in messages. The
 * recompute values are in zs_recompute order (none = 0, full = 1). */
static const zs_opt_spec table[] = {
    [ZS_P_MODEL] = ROW("model", "model", ZS_OPT_STR, model, 0, 0, "llama-7b", "NAME|FILE", NULL,
                       check_model, "model: a preset (`zepsim list models`) or a JSON file"),
    [ZS_P_CLUSTER] =
        ROW("cluster", "cluster", ZS_OPT_STR, cluster, 0, 0, "cluster-a", "NAME|FILE", NULL,
            check_cluster, "cluster: a preset (`zepsim list clusters`) or a JSON file"),
    [ZS_P_NODES] =
        ROW("nodes", "nodes", ZS_OPT_INT, nodes, 1, 65536, "", "N", NULL, NULL,
            "nodes (default: the cluster's own count, 16 for cluster-a; given, it overrides a "
            "cluster file's)"),
    [ZS_P_TRACE] =
        ROW("trace", "trace", ZS_OPT_STR, trace, 0, 0, "arxiv", "SPEC|FILE", NULL, check_trace,
            "document lengths: a preset (arxiv, github, prolong64k, ...), uniform:A-B, fixed:N, "
            "lognormal:MU,SIGMA, mix:..., or a file (`zepsim trace presets`)"),
    [ZS_P_METHOD] = ROW("method", "method", ZS_OPT_STR, method, 0, 0, "zeppelin", "NAME", NULL,
                        check_method, "method (`zepsim plan --help` lists them; any case)"),
    [ZS_P_OPT] = ROW("opt", "opts", ZS_OPT_OPTS, opts, 0, 0, "", "K=V[,K=V]", NULL, NULL,
                     "method options, appended (`zepsim plan --help` lists each method's)"),
    [ZS_P_NO_ROUTING] = ROW("no-routing", NULL, ZS_OPT_OPTSET, opts, 0, 0, "", NULL, "routing=0",
                            NULL, "Zeppelin ablation: --opt routing=0"),
    [ZS_P_NO_REMAP] = ROW("no-remap", NULL, ZS_OPT_OPTSET, opts, 0, 0, "", NULL, "remap=0", NULL,
                          "Zeppelin ablation: --opt remap=0"),
    [ZS_P_NO_HIER] = ROW("no-hier", NULL, ZS_OPT_OPTSET, opts, 0, 0, "", NULL, "hier=0", NULL,
                         "Zeppelin ablation: --opt hier=0"),
    [ZS_P_CONTEXT] = ROW("context", "context", ZS_OPT_I64, context, 1, 1ULL << 34, "262144",
                         "TOKENS", NULL, NULL, "tokens per context group"),
    [ZS_P_GROUP] =
        ROW("group", "group", ZS_OPT_INT, group, 1, 1 << 20, "16", "GPUS", NULL, NULL,
            "GPUs per context group; global batch = GPUs / group x context (16: the Zeppelin "
            "paper's CP groups of 2 nodes)"),
    [ZS_P_ITERATIONS] = ROW("iterations", "iterations", ZS_OPT_INT, iterations, 1, 100000, "3", "N",
                            NULL, NULL, "training iterations simulated"),
    /* at most 2^63 - 1: JSON (output documents, specs) and the results
     * database hold integers as int64; a larger seed printed as a rounded
     * double and could not be given in a spec */
    [ZS_P_SEED] = ROW("seed", "seed", ZS_OPT_U64, seed, 0, INT64_MAX, "1", "S", NULL, NULL,
                      "seed of the trace generator and planners"),
    [ZS_P_BACKEND] =
        ROW("backend", "backend", ZS_OPT_STR, backend, 0, 0, "sim", "NAME", NULL, check_backend,
            "a row of `zepsim list backends`: sim (SimGrid, contention), analytic "
            "(the analytic evaluator) or, where built, hw (the GPUs)"),
    [ZS_P_CALIB] = ROW("calib", "calib", ZS_OPT_STR, calib, 0, 0, "", "FILE", NULL, NULL,
                       "calibration from `zepsim calib fit` (default: analytic costs)"),
    [ZS_P_ATTN_KERNEL] =
        ROW("attn-kernel", "attn_kernel", ZS_OPT_STR, attn_kernel, 0, 0, "", "NAME", NULL, NULL,
            "attention kernel of the cluster's GPU (`zepsim show gpu G` lists them; default the "
            "GPU's own; unfused on any GPU: Megatron-LM's attention before FlashAttention)"),
    [ZS_P_ZERO] =
        ROW("zero", "zero_stage", ZS_OPT_INT, zero_stage, 0, 3, "1", "S", NULL, NULL,
            "ZeRO stage: 0 all-reduces the gradients; 1 reduce-scatters them and all-gathers "
            "the parameters after the optimizer (Megatron's distributed optimizer); 2 the "
            "same; 3 FSDP: every layer's weights gathered per micro-batch"),
    [ZS_P_FSDP] =
        ROW("fsdp", "fsdp", ZS_OPT_ENUM, fsdp, 0, 0, "fsdp2", ZS_FSDP_VALUES, ZS_FSDP_VALUES, NULL,
            "ZeRO-3's implementation, for its copies on the compute stream: fsdp2 "
            "(PyTorch FSDP2, torchtitan) copies each gathered layer out before its "
            "forward and backward; fsdp1 (PyTorch FSDP1, Composer) gathers in place "
            "and concatenates each layer's gradients before the reduce-scatter; "
            "megatron-fsdp copies nothing"),
    [ZS_P_RECOMPUTE] = ROW("recompute", "recompute", ZS_OPT_ENUM, recompute, 0, 0, "full",
                           "none|full", "none|full", NULL, "activation recomputation"),
    [ZS_P_PRECISION] =
        ROW("precision", "precision", ZS_OPT_ENUM, precision, 0, 0, "bf16", "bf16|fp8|fp8-cs",
            "bf16|fp8|fp8-cs", NULL,
            "the layers' linear GEMMs: fp8 runs them as TransformerEngine does with delayed "
            "scaling, on the GPU's FP8 GEMM curve, with their casts, FP8 sequence-parallel gathers "
            "and amax updates; fp8-cs with current scaling (an amax pass, a scale kernel and a TP "
            "amax all-reduce before each cast); needs FP8 tensor cores (docs/cost-model.md)"),
    [ZS_P_GRAD_DTYPE] = ROW(
        "grad-dtype", "grad_dtype", ZS_OPT_ENUM, grad, 0, 0, "fp32", "fp32|bf16", "fp32|bf16", NULL,
        "the gradient buffer each GPU keeps (memory): fp32 main gradients (Megatron-LM's "
        "default with bf16) or a bf16 buffer (Megatron-Core's grad_reduce_in_fp32 off, "
        "NeMo's grad_sync_dtype: bf16); reductions are bf16 either way"),
    [ZS_P_VALIDATE] = ROW("validate", "validate", ZS_OPT_FLAG, validate, 0, 1, "0", NULL, NULL,
                          NULL, "check every plan with the plan validator"),
    [ZS_P_FOLD] =
        ROW("fold", "fold", ZS_OPT_ENUM, fold, 0, 0, "on", "off|on|steady", "off|on|steady", NULL,
            "layer folding: simulate a repeated layer pass until its iterations take the same time "
            "(to 1e-4), replay the rest; steady: also when they only swing around a steady mean "
            "(faster at scale, approximate); off: simulate every layer"),
    [ZS_P_INTERFERENCE] =
        ROW("interference", "interference", ZS_OPT_ENUM, interference, 0, 0, "off", "off|on",
            "off|on", NULL,
            "compute-communication interference (analytic backend): NCCL kernels hold one SM "
            "per channel while they run, so compute under a collective or transfer slows "
            "(docs/cost-model.md); on turns folding off"),
    [ZS_P_TIMELINE] =
        ROW("timeline", "timeline", ZS_OPT_STR, timeline, 0, 0, "", "FILE", NULL, NULL,
            "Chrome trace of the last iteration (FILE.json.gz: gzip; compare: FILE.METHOD.json; "
            "in a spec, {case} and {series} become the labels)"),
    /* a rank list, "" (the default): automatic */
    [ZS_P_TL_RANKS] =
        {.cli = "timeline-ranks",
         .type = ZS_OPT_STR,
         F(tl_ranks),
         .max = ZS_TL_MAX_RANK,
         .deftext = "",
         .arg = "LIST",
         .syntax = zs_tl_ranks_check,
         .help =
             "ranks in the timeline: all, or a list such as 0,5,17-20 (default: every rank while "
             "the timeline stays under 64 MB, ZEPSIM_TIMELINE_MAX_MB, else 8 chosen ones: the "
             "most and the least compute, rank 0, the last, evenly spaced; a note says which)"},
    [ZS_P_TL_LAYERS] = RANGE("timeline-layers", tl_layer0, tl_layer1, 1 << 20,
                             "only layers A..B (from 0) in the timeline (default all)"),
};
#undef ROW
#undef RANGE
#undef F

_Static_assert(sizeof table / sizeof table[0] == ZS_P_COUNT, "a row for every name");

int zs_popt_count(void)
{
    return ZS_P_COUNT;
}

const zs_opt_spec *zs_popt_at(int i)
{
    return i >= 0 && i < zs_popt_count() ? &table[i] : NULL;
}

const zs_opt_spec *zs_popt_find_cli(const char *name)
{
    return zs_opt_find(table, zs_popt_count(), name, NULL);
}

const zs_opt_spec *zs_popt_find_key(const char *key)
{
    return zs_opt_find(table, zs_popt_count(), NULL, key);
}

const char *zs_popt_keys(void)
{
    static char buf[512];
    if (!buf[0]) {
        size_t o = 0;
        for (int i = 0; i < zs_popt_count() && o < sizeof buf; i++)
            if (table[i].key)
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", o ? ", " : "", table[i].key);
    }
    return buf;
}
