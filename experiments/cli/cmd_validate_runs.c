/* `zepsim validate --runs FILE.csv --cluster C`: predicts each published
 * fixed-length training run of a runs CSV (models/zs_runs.h) with the
 * analytic Megatron step model (models/zs_megatron_step.h) and prints
 * predicted vs measured tokens/s/GPU and model TFLOP/s/GPU, the error, the
 * step's breakdown and the defaults used for cells that were not
 * published; then the median and max |error|. A row the model cannot
 * express gets its reason. Nothing is fitted to the rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_point.h"
#include "zs_lengen.h"
#include "zs_machine.h"
#include "validate_runs.h"
#include "zs_megatron_step.h"
#include "zs_point.h"
#include "zs_presets.h"
#include "zs_suggest.h"
#include "zs_runs.h"
#include "zs_sort.h"

static const char runs_help[] =
    "usage: zepsim validate --runs FILE.csv --cluster C [--format table|csv|json]\n"
    "\n"
    "Predicts published fixed-length Megatron / NeMo training runs with an analytic\n"
    "step model (not a simulated schedule): the op inventory of `zepsim cost step`\n"
    "per layer (TP with sequence parallelism, FP8, recomputation), the CP ring,\n"
    "the 1F1B pipeline bubble (interleaved with vp > 1), the stage-to-stage sends\n"
    "and the distributed optimizer's collectives priced by the NCCL model on the\n"
    "cluster. Prints predicted vs measured tokens/s/GPU and model TFLOP/s/GPU\n"
    "(NeMo's model FLOPs, docs/output.md), error_pct (on model TFLOP/s/GPU where\n"
    "published, else tokens/s/GPU), the breakdown, then median and max |error|.\n"
    "\n"
    "FILE.csv: model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,zero,\n"
    "tokens_s_gpu,model_tflops_gpu; '#' comments; an empty cell is not published\n"
    "(recompute defaults to none, zero to 1: the distributed optimizer; zero 3 is\n"
    "FSDP). precision is bf16, fp8 (TransformerEngine's delayed scaling) or fp8-cs\n"
    "(current scaling, Megatron-Bridge's FP8-CS). The gradient buffer is not a\n"
    "column: --grad-dtype (default bf16), nor is FSDP's implementation: --fsdp.\n"
    "Optional columns after those, in any order: kernels (fused | eager |\n"
    "eager-fused-norm) prices the memory-bound ops as PyTorch eager runs them\n"
    "(torchtitan); sp (on | off; default on) off runs TP without sequence\n"
    "parallelism, as Megatron-LM did before 2022. recompute may\n"
    "also be torchtitan's selective-op or selective-layer. sft and lora rows pack\n"
    "short documents into each sample (--packed-docs). Names are read in any case.\n"
    "A row that cannot be priced (a model without a preset, FP8 on a GPU without\n"
    "it, ...) is listed with its reason; a malformed cell exits 2 with file:line.\n"
    "\n"
    "options:\n";

typedef struct runs_args {
    const char *runs, *cluster, *plot, *kernel, *calib;
    const char *packed; /* sft / lora rows: the packed documents' lengths, or "none" */
    zs_format fmt;
    int interference, simulate;
    long lora_rank; /* the adapters' rank for lora rows */
    zs_grad_dtype grad;
    zs_fsdp fsdp;
    zs_cli_flags fl; /* the shared flags as given: cluster points into it */
} runs_args;

static const zs_opt_spec runs_own[] = {
    ZS_OPT_ROW("runs", ZS_OPT_TEXT, runs_args, runs, 0, 0, NULL, "FILE",
               "the runs (e.g. shared/reference/e2e/nemo-24.07-dgx-h100.csv)"),
    {.cli = "interference",
     .type = ZS_OPT_ENUM,
     ZS_OPT_FIELD(runs_args, interference),
     .values = "off|on",
     .deftext = "on",
     .arg = "on|off",
     .help = "compute slowed under the overlapped DP collectives by the SMs NCCL's CTAs hold "
             "(interference_ms), in the step model and, with --simulate, the schedules"},
    {.cli = "grad-dtype",
     .type = ZS_OPT_ENUM,
     ZS_OPT_FIELD(runs_args, grad),
     .values = "fp32|bf16",
     .deftext = "bf16",
     .arg = "fp32|bf16",
     .help = "the gradient buffer (not a column of the runs): bf16 as NeMo's published "
             "configs set it (optim.grad_sync_dtype: bf16), fp32 as Megatron-LM's default "
             "with bf16 (docs/validation.md)"},
    {.cli = "fsdp",
     .type = ZS_OPT_ENUM,
     ZS_OPT_FIELD(runs_args, fsdp),
     .values = ZS_FSDP_VALUES,
     .deftext = "fsdp2",
     .arg = ZS_FSDP_VALUES,
     .help = "zero 3 rows: the FSDP the runs used (not a column), for its copies on the compute "
             "stream: fsdp2 (torchtitan) copies each gathered layer out, fsdp1 (Composer, "
             "llm-foundry) concatenates each layer's gradients, megatron-fsdp copies nothing"},
    /* 32: NeMo 1.x's peft.lora_tuning.adapter_dim (zs_step_cfg.lora) */
    ZS_OPT_ROW("lora-rank", ZS_OPT_INT, runs_args, lora_rank, 1, 65536, "32", "R",
               "lora rows: the adapters' rank (not a column of the runs; 32, NeMo's "
               "adapter_dim, by default), on the QKV projection, in the step model and the "
               "simulated schedule (plain-4d's lora=R)"),
    ZS_OPT_ROW("packed-docs", ZS_OPT_TEXT, runs_args, packed, 0, 0, "squad", "SPEC|none",
               "sft and lora rows: each sample packs documents of this length model (a trace "
               "spec: `squad`, SQuAD v1.1's samples, NeMo's fine-tuning set, by default), cut at "
               "the sample's end, attention per document; none: one causal sequence per sample"),
    ZS_OPT_ROW("simulate", ZS_OPT_FLAG, runs_args, simulate, 0, 1, "0", NULL,
               "also simulate each run's schedule: plain-4d (TP with sequence parallelism, CP "
               "ring, PP 1F1B or interleaved with vp, DP with the distributed optimizer; lora "
               "rows with frozen base weights) on fixed-length sequences, one iteration on the "
               "analytic backend (the schedules every comparison runs), beside the step model")};
static const zs_cli_use runs_uses[] = {
    {ZS_FP(CLUSTER), "the hardware the runs used (nodes: as many as a run needs)"},
    {ZS_FP(ATTN_KERNEL), "the attention kernel the runs used (e.g. fa-triton for MPT's Triton "
                         "FlashAttention on A100s; unfused, on any GPU, for Megatron-LM before "
                         "FlashAttention)"},
    {ZS_FP(CALIB), "of the runs' hardware: its fitted collectives, kernels and links price "
                   "every run"},
    {ZS_F_PLOT, "error_pct per run against the +-8% / +-20% goals (default none; needs gnuplot)"},
    {ZS_F_FORMAT, NULL},
    {0, NULL}};

int zs_validate_wants_runs(int argc, char **argv)
{
    return zs_cli_asks(argc, argv, &runs_own[0]);
}

static int parse_args(int argc, char **argv, runs_args *a)
{
    static const zs_cli_cmd cmd = {
        .name = "validate", .head = runs_help, ZS_CLI_OWN_ROWS(runs_own), .uses = runs_uses};
    int st = zs_cli_parse(&cmd, argc, argv, a, &a->fl);
    if (st >= 0)
        return st;
    a->cluster = zs_cli_given(&a->fl, ZS_P_CLUSTER);
    a->kernel = zs_cli_given(&a->fl, ZS_P_ATTN_KERNEL);
    a->calib = zs_cli_given(&a->fl, ZS_P_CALIB);
    a->plot = a->fl.plot && strcmp(a->fl.plot, "none") ? a->fl.plot : NULL;
    a->fmt = a->fl.fmt;
    if (optind < argc)
        return zs_cli_usage_error("validate", "unexpected argument '%s' with --runs", argv[optind]);
    if (!a->runs)
        return zs_cli_usage_error("validate", "--runs needs a file");
    if (!a->cluster)
        return zs_cli_usage_error("validate", "--runs needs --cluster (the runs' hardware)");
    if (!a->packed)
        a->packed = "squad";
    if (strlen(a->packed) > 255)
        return zs_cli_usage_error("validate", "--packed-docs: a length model of at most 255 "
                                              "characters");
    if (strcmp(a->packed, "none") && !zs_lengen_is_spec(a->packed))
        return zs_cli_usage_error("validate",
                                  "--packed-docs '%s' is not a length model: give a trace spec "
                                  "(squad, lognormal:MU,SIGMA, fixed:N; `zepsim trace presets`) "
                                  "or none",
                                  a->packed);
    zs_lengen *gen = NULL;
    zs_err e;
    if (strcmp(a->packed, "none") && zs_lengen_new(a->packed, 1, &gen, &e)) {
        char msg[400];
        zs_err_format(&e, msg, sizeof msg);
        return zs_cli_usage_error("validate", "--packed-docs: %s", msg);
    }
    zs_lengen_free(gen);
    return -1;
}

/* One row's outcome. */
typedef struct outcome {
    int ok;
    char reason[300];   /* why it was not predicted */
    char defaults[256]; /* the defaults used for unpublished cells */
    char notes[300];    /* how the row was read, where not as published */
    zs_mstep s;
    double err_pct; /* signed, on the figure named by err_on */
    const char *err_on;
    int gpn;       /* GPUs per node of the cluster */
    char attn[32]; /* the attention kernel that priced it */
    int te_cudnn;  /* 1: TransformerEngine would run cuDNN's attention on this GPU
                    * (compute capability 9 and up), which attn is not */
    /* --simulate: the schedule's prediction (sim_ok) or why not */
    int sim_ok;
    char sim_reason[300];
    double sim_tokens_s_gpu, sim_tflops_gpu, sim_err_pct, sim_step_s;
    double sim_busy, sim_exposed, sim_idle; /* shares of the iteration */
} outcome;

/* Whether row r's samples pack documents (sft and lora rows, unless
 * --packed-docs none). */
static int packs_docs(const zs_run *r, const runs_args *a)
{
    return r->task != ZS_TASK_PRETRAIN && strcmp(a->packed, "none") != 0;
}

/* Packs of one sft / lora row: PACKS samples of seq tokens each, filled
 * with documents of the length model spec (seed 1) concatenated and cut at
 * each sample's end (the rest starts the next sample, as a document of its
 * own), as Plain-4D's loader cuts and as --simulate's schedules run them.
 * Fewer samples once MAX_DOCS documents are drawn (tiny documents in long
 * samples), at least one. */
enum { PACKS = 64, MAX_DOCS = 1 << 20 };

static int pack_docs(const char *spec, int seq, int32_t **docs, int *n, int *packs, zs_err *e)
{
    zs_lengen *gen;
    int rc = zs_lengen_new(spec, 1, &gen, e);
    if (rc)
        return rc;
    int cap = 64, k = 0;
    int32_t *d = malloc((size_t)cap * sizeof *d), carry = 0;
    int p = 0;
    for (; d && p < PACKS && k < MAX_DOCS; p++) {
        for (int used = 0; d && used < seq;) {
            int32_t len = carry ? carry : zs_lengen_next(gen);
            int32_t take = len < seq - used ? len : seq - used;
            carry = len - take;
            if (k == cap) {
                int32_t *grown = realloc(d, (size_t)(cap *= 2) * sizeof *d);
                if (!grown)
                    free(d);
                d = grown;
                if (!d)
                    break;
            }
            d[k++] = take;
            used += take;
        }
    }
    zs_lengen_free(gen);
    if (!d)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    *docs = d, *n = k, *packs = p;
    return ZS_OK;
}

/* Why row r's model cannot be priced: no such preset (with the nearest
 * names), or a preset that does not load (its error). */
static void no_model_reason(const zs_run *r, char *reason, size_t len)
{
    zs_model m;
    zs_err le;
    zs_err_clear(&le);
    if (zs_preset_text("model", r->model) && zs_model_load(r->model, &m, &le) != ZS_OK) {
        char why[400]; /* there (in any case), but it does not load: say why */
        zs_err_format(&le, why, sizeof why);
        snprintf(reason, len, "model preset '%s' does not load: %s", r->model, why);
        return;
    }
    char names[64][64], mean[80];
    zs_suggest sg;
    zs_suggest_init(&sg, r->model);
    for (size_t i = 0; i < 64 && zs_preset_name("model", i, names[i], sizeof names[i]); i++)
        zs_suggest_add(&sg, names[i]);
    zs_suggest_phrase(&sg, mean, sizeof mean);
    snprintf(reason, len,
             "no model preset '%s': %sadd one as models/presets/model-NAME.json with its "
             "source (`zepsim list models`)",
             r->model, mean);
}

/* Predicts row r on cluster name (as many nodes as it needs). ZS_EINPUT
 * from the model is a reason, not a failure; other errors are returned. */
static int predict(const zs_run *r, const runs_args *a, outcome *o, zs_err *e)
{
    const char *cluster = a->cluster;
    memset(o, 0, sizeof *o);
    int rcv = r->recompute >= 0 ? r->recompute : ZS_STEP_RC_NONE;
    int zero = r->zero >= 0 ? r->zero : 1;
    /* FSDP's copies on the compute stream follow --fsdp */
    static const char *const fsdp_note[] = {" (fsdp2: copy-out priced by --fsdp)",
                                            " (fsdp1: gradient concatenation priced by --fsdp)",
                                            " (megatron-fsdp: no copies by --fsdp)"};
    snprintf(o->defaults, sizeof o->defaults,
             "recompute: %s%s; zero: %d%s%s; gradients: %s (--grad-dtype); kernels: %s%s",
             zs_step_rc_name((zs_step_rc)rcv), r->recompute >= 0 ? "" : " (default; not published)",
             zero, r->zero >= 0 ? "" : " (default; not published)",
             zero >= 3 ? fsdp_note[a->fsdp] : "", zs_grad_dtype_name(a->grad),
             zs_step_kernels_name(r->kernels),
             r->sp ? "" : "; sp: off (TP all-reduces, no sequence parallelism)");
    if (r->no_model) {
        no_model_reason(r, o->reason, sizeof o->reason);
        return ZS_OK;
    }
    zs_machine_cfg mc;
    zs_machine_cfg_init(&mc);
    mc.model = r->model;
    mc.cluster = cluster;
    mc.ranks = r->gpus;
    mc.kernel = a->kernel;
    mc.calib = a->calib;
    zs_machine mach;
    int rc = zs_machine_load(&mc, &mach, e);
    if (rc)
        return rc;
    zs_cost *c = mach.cost;
    zs_mstep_cfg g = {r->gpus,
                      r->gbs,
                      r->mbs,
                      r->seq,
                      r->tp,
                      r->pp,
                      r->cp,
                      r->vp,
                      r->precision,
                      (zs_step_rc)rcv,
                      zero,
                      a->interference,
                      a->grad,
                      r->kernels,
                      r->task == ZS_TASK_LORA ? (int)a->lora_rank : 0,
                      NULL,
                      0,
                      0,
                      a->fsdp,
                      !r->sp};
    int packed = packs_docs(r, a);
    int32_t *docs = NULL;
    if (packed && (rc = pack_docs(a->packed, r->seq, &docs, &g.ndocs, &g.npacks, e))) {
        zs_machine_clear(&mach);
        return rc;
    }
    g.docs = docs;
    zs_err why;
    zs_err_clear(&why);
    rc = zs_megatron_step(c, &g, &o->s, &why);
    double per_pack = packed ? (double)g.ndocs / g.npacks : 1;
    free(docs);
    o->gpn = mach.cluster.gpus_per_node;
    int layers = c->model.layers;
    const zs_attn_kernel *k = zs_cost_attn_kernel(c);
    snprintf(o->attn, sizeof o->attn, "%s", k ? k->name : "");
    o->te_cudnn =
        r->kernels == ZS_KERN_FUSED && mach.cluster.gpu.cc >= 9.0 && strcmp(o->attn, "cudnn") != 0;
    zs_machine_clear(&mach);
    if (rc == ZS_EINPUT || rc == ZS_EUSAGE) {
        zs_err_format(&why, o->reason, sizeof o->reason);
        return ZS_OK;
    }
    if (rc) {
        *e = why;
        return rc;
    }
    o->ok = 1;
    char how[160];
    if (packed)
        snprintf(how, sizeof how,
                 "each %d-token sample packs '%s' documents (%.1f per sample, cut at its end; "
                 "--packed-docs), attention per document",
                 r->seq, a->packed, per_pack);
    else
        snprintf(how, sizeof how, "each sample priced as one causal %d-token sequence", r->seq);
    if (r->task == ZS_TASK_SFT)
        snprintf(o->notes, sizeof o->notes,
                 "sft: %s; error on tokens/s (NeMo's published SFT model FLOPs leave out most "
                 "of the attention term)",
                 how);
    if (r->task == ZS_TASK_LORA)
        snprintf(o->notes, sizeof o->notes,
                 "lora: base weights frozen, rank-%ld adapters on QKV (--lora-rank; NeMo's "
                 "default 32); %s; error on tokens/s",
                 a->lora_rank, how);
    if (layers % (r->pp * r->vp)) {
        size_t k = strlen(o->notes);
        snprintf(o->notes + k, sizeof o->notes - k,
                 "%suneven pipeline split: %d layers over pp %d x vp %d, the slowest stage's %.0f "
                 "priced",
                 k ? "; " : "", layers, r->pp, r->vp, zs_megatron_stage_layers(layers, r->pp));
    }
    if (r->model_tflops_gpu > 0 && r->task == ZS_TASK_PRETRAIN) {
        o->err_on = "model_tflops_gpu";
        o->err_pct = 100 * (o->s.model_tflops_gpu - r->model_tflops_gpu) / r->model_tflops_gpu;
    } else {
        o->err_on = "tokens_s_gpu";
        o->err_pct = 100 * (o->s.tokens_s_gpu - r->tokens_s_gpu) / r->tokens_s_gpu;
    }
    return ZS_OK;
}

/* The run as a study point: plain-4d on sequences of exactly seq tokens
 * (the concatenate-and-cut loader then makes windows of mbs whole
 * sequences), gbs / (dp x mbs) micro-batches per DP rank, one iteration on
 * the analytic backend. Returns why the schedules cannot express the run,
 * or NULL. */
static const char *sim_point(const zs_run *r, const runs_args *a, const outcome *o, zs_point_cfg *c)
{
    const char *cluster = a->cluster;
    int dp = r->gpus / (r->tp * r->cp * r->pp);
    int rcv = r->recompute >= 0 ? r->recompute : ZS_STEP_RC_NONE;
    zs_point_cfg_default(c);
    snprintf(c->model, sizeof c->model, "%s", r->model);
    snprintf(c->cluster, sizeof c->cluster, "%s", cluster);
    c->nodes = r->gpus / o->gpn;
    int packed = packs_docs(r, a);
    if (packed)
        snprintf(c->trace, sizeof c->trace, "%s", a->packed);
    else
        snprintf(c->trace, sizeof c->trace, "fixed:%d", r->seq);
    snprintf(c->method, sizeof c->method, "plain-4d");
    /* packed samples under CP: each document sharded on its own, as
     * TransformerEngine's THD format does (Plain-4D's per-document CP);
     * lora rows freeze the base weights with --lora-rank's adapters, as
     * the step model prices them */
    char lora[32] = "";
    if (r->task == ZS_TASK_LORA)
        snprintf(lora, sizeof lora, ",lora=%ld", a->lora_rank);
    snprintf(c->opts, sizeof c->opts, "tp=%d,cp=%d,pp=%d,vp=%d,window=%d,micro=%d%s%s", r->tp,
             r->cp, r->pp, r->vp, r->mbs * r->seq, r->gbs / (dp * r->mbs),
             packed && r->cp > 1 ? ",sharding=doc" : "", lora);
    c->context = (int64_t)r->mbs * r->seq;
    c->group = r->gpus;
    c->iterations = 1;
    snprintf(c->backend, sizeof c->backend, "analytic");
    c->zero_stage = r->zero >= 0 ? r->zero : 1;
    c->recompute = rcv == ZS_STEP_RC_FULL ? ZS_RECOMPUTE_FULL : ZS_RECOMPUTE_NONE;
    c->precision = (int)r->precision; /* zs_point_cfg.precision is a zs_precision */
    c->grad = a->grad;
    c->fsdp = a->fsdp;
    c->interference = a->interference; /* the step model's mechanism, in the schedule too */
    snprintf(c->attn_kernel, sizeof c->attn_kernel, "%s", a->kernel ? a->kernel : "");
    if (rcv != ZS_STEP_RC_NONE && rcv != ZS_STEP_RC_FULL)
        return "the schedules recompute none or full, not this row's mode";
    if (r->kernels != ZS_KERN_FUSED)
        return "the schedules price fused kernels, not eager ones";
    if (!r->sp)
        return "the schedules run TP with sequence parallelism, not this row's all-reduces";
    if (o->gpn < 1 || r->gpus % o->gpn != 0)
        return "the run's GPUs are not whole nodes of the cluster";
    return NULL;
}

/* Simulates row r's schedule (--simulate) beside its step-model
 * prediction; ZS_EINPUT / ZS_EUSAGE from planning is a reason. */
static int simulate(const zs_run *r, const runs_args *a, outcome *o, zs_err *e)
{
    zs_point_cfg c;
    const char *why_not = sim_point(r, a, o, &c);
    if (why_not) {
        snprintf(o->sim_reason, sizeof o->sim_reason, "%s", why_not);
        return ZS_OK;
    }
    zs_point_result pr;
    zs_err why;
    zs_err_clear(&why);
    int rc = zs_point_run(&c, NULL, NULL, &pr, &why);
    if (rc == ZS_EINPUT || rc == ZS_EUSAGE) {
        zs_err_format(&why, o->sim_reason, sizeof o->sim_reason);
        return ZS_OK;
    }
    if (rc) {
        *e = why;
        return rc;
    }
    o->sim_ok = pr.iter_time > 0;
    if (o->sim_ok) {
        o->sim_step_s = pr.iter_time;
        o->sim_tokens_s_gpu = pr.tokens_per_iter / pr.iter_time / r->gpus;
        /* NeMo's model FLOPs per token, as the step model counts them */
        o->sim_tflops_gpu = o->s.model_tflops_gpu * o->sim_tokens_s_gpu / o->s.tokens_s_gpu;
        o->sim_busy = pr.compute_share;
        o->sim_exposed = pr.exposed_share;
        o->sim_idle = pr.idle_share;
        int on_tflops = !strcmp(o->err_on, "model_tflops_gpu");
        double pred = on_tflops ? o->sim_tflops_gpu : o->sim_tokens_s_gpu;
        double meas = on_tflops ? r->model_tflops_gpu : r->tokens_s_gpu;
        o->sim_err_pct = 100 * (pred - meas) / meas;
    } else {
        snprintf(o->sim_reason, sizeof o->sim_reason, "the simulation ran no iteration");
    }
    zs_point_result_clear(&pr);
    return ZS_OK;
}

static const char *const cols[] = {"line",
                                   "model",
                                   "task",
                                   "gpus",
                                   "tp",
                                   "pp",
                                   "cp",
                                   "vp",
                                   "mbs",
                                   "gbs",
                                   "seq",
                                   "microbatches",
                                   "status",
                                   "pred_tokens_s_gpu",
                                   "meas_tokens_s_gpu",
                                   "pred_tflops_gpu",
                                   "meas_tflops_gpu",
                                   "error_pct",
                                   "error_on",
                                   "step_ms",
                                   "compute_ms",
                                   "tp_comm_ms",
                                   "cp_comm_ms",
                                   "pp_bubble_ms",
                                   "pp_comm_ms",
                                   "dp_comm_ms",
                                   "optimizer_ms",
                                   "dp_rs_ms",
                                   "dp_ag_ms",
                                   "interference_ms",
                                   "defaults",
                                   "notes",
                                   "reason"};
enum { NCOLS = sizeof cols / sizeof cols[0] };

/* A measurement as the file gives it (empty: not published). */
static void meas_or_empty(zs_table *t, int col, double v)
{
    if (v > 0 && isfinite(v))
        zs_table_set(t, col, "%.15g", v);
}

static zs_table *runs_table(const zs_runs *rs, const outcome *o)
{
    zs_table *t = zs_table_new("published runs: predicted vs measured (per GPU)");
    static const int text[] = {1, 2, 12, 18, 30, 31, 32};
    for (int i = 0; i < NCOLS; i++) {
        int is_text = 0;
        for (size_t k = 0; k < sizeof text / sizeof text[0]; k++)
            is_text |= text[k] == i;
        zs_table_col(t, cols[i], is_text ? ZS_COL_TEXT : ZS_COL_NUM);
    }
    for (int i = 0; i < rs->n; i++) {
        const zs_run *r = &rs->rows[i];
        const outcome *u = &o[i];
        const zs_mstep *s = &u->s;
        zs_table_row(t);
        int k = 0;
        zs_table_set(t, k++, "%d", r->line);
        zs_table_set(t, k++, "%s", r->model);
        zs_table_set(t, k++, "%s", zs_run_task_name(r->task));
        zs_table_set(t, k++, "%d", r->gpus);
        zs_table_set(t, k++, "%d", r->tp);
        zs_table_set(t, k++, "%d", r->pp);
        zs_table_set(t, k++, "%d", r->cp);
        zs_table_set(t, k++, "%d", r->vp);
        zs_table_set(t, k++, "%d", r->mbs);
        zs_table_set(t, k++, "%d", r->gbs);
        zs_table_set(t, k++, "%d", r->seq);
        zs_table_set(t, k++, "%d", zs_run_microbatches(r));
        zs_table_set(t, k++, "%s", u->ok ? "predicted" : "not expressed");
        if (u->ok)
            zs_table_num(t, k, "%.0f", s->tokens_s_gpu);
        k++;
        meas_or_empty(t, k++, r->tokens_s_gpu);
        if (u->ok)
            zs_table_num(t, k, "%.0f", s->model_tflops_gpu);
        k++;
        meas_or_empty(t, k++, r->model_tflops_gpu);
        if (u->ok) {
            zs_table_num(t, k++, "%+.1f", u->err_pct);
            zs_table_set(t, k++, "%s", u->err_on);
            const double v[] = {s->step_s,      s->compute_s, s->tp_comm_s,     s->cp_comm_s,
                                s->pp_bubble_s, s->pp_comm_s, s->dp_comm_s,     s->optim_s,
                                s->dp_rs_s,     s->dp_ag_s,   s->interference_s};
            for (size_t j = 0; j < sizeof v / sizeof v[0]; j++)
                zs_table_num(t, k++, "%.1f", v[j] * 1e3);
        } else {
            k += 13;
        }
        zs_table_set(t, k++, "%s", u->defaults);
        zs_table_set(t, k++, "%s", u->notes);
        if (!u->ok)
            zs_table_set(t, k, "%s", u->reason);
    }
    return t;
}

/* --simulate: each run's schedule beside the step model. */
static zs_table *sim_table(const zs_runs *rs, const outcome *o)
{
    static const char *const sc[] = {"line",
                                     "model",
                                     "status",
                                     "sim_tokens_s_gpu",
                                     "meas_tokens_s_gpu",
                                     "sim_tflops_gpu",
                                     "meas_tflops_gpu",
                                     "sim_error_pct",
                                     "step_model_error_pct",
                                     "sim_step_ms",
                                     "step_model_ms",
                                     "busy_pct",
                                     "exposed_pct",
                                     "idle_pct",
                                     "reason"};
    enum { NSC = sizeof sc / sizeof sc[0] };
    zs_table *t = zs_table_new("simulated schedules (plain-4d, analytic backend) vs measured");
    for (int i = 0; i < NSC; i++)
        zs_table_col(t, sc[i], i == 1 || i == 2 || i == NSC - 1 ? ZS_COL_TEXT : ZS_COL_NUM);
    for (int i = 0; i < rs->n; i++) {
        const zs_run *r = &rs->rows[i];
        const outcome *u = &o[i];
        zs_table_row(t);
        int k = 0;
        zs_table_set(t, k++, "%d", r->line);
        zs_table_set(t, k++, "%s", r->model);
        zs_table_set(t, k++, "%s", u->sim_ok ? "simulated" : "not simulated");
        if (u->sim_ok)
            zs_table_num(t, k, "%.0f", u->sim_tokens_s_gpu);
        k++;
        meas_or_empty(t, k++, r->tokens_s_gpu);
        if (u->sim_ok)
            zs_table_num(t, k, "%.0f", u->sim_tflops_gpu);
        k++;
        meas_or_empty(t, k++, r->model_tflops_gpu);
        if (u->sim_ok) {
            zs_table_num(t, k++, "%+.1f", u->sim_err_pct);
            zs_table_num(t, k++, "%+.1f", u->err_pct);
            zs_table_num(t, k++, "%.1f", u->sim_step_s * 1e3);
            zs_table_num(t, k++, "%.1f", u->s.step_s * 1e3);
            zs_table_num(t, k++, "%.1f", 100 * u->sim_busy);
            zs_table_num(t, k++, "%.1f", 100 * u->sim_exposed);
            zs_table_num(t, k++, "%.1f", 100 * u->sim_idle);
        } else {
            k += 7;
            zs_table_set(t, k, "%s", u->ok ? u->sim_reason : "not predicted by the step model");
        }
    }
    return t;
}

/* The median and largest of |v| over n values (sorted in place). */
static void med_max(double *v, int n, double *med, double *mx)
{
    zs_sort_doubles(v, (size_t)n);
    *med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    *mx = v[n - 1];
}

static void sim_summary(zs_output *d, const zs_runs *rs, const outcome *o)
{
    double *v = malloc(sizeof *v * (size_t)(rs->n > 0 ? rs->n : 1));
    int n = 0;
    for (int i = 0; v && i < rs->n; i++)
        if (o[i].sim_ok)
            v[n++] = fabs(o[i].sim_err_pct);
    zs_output_set_int(d, NULL, "runs_simulated", n);
    zs_output_text(d, "%d runs simulated", n);
    if (n > 0) {
        double med, mx;
        med_max(v, n, &med, &mx);
        zs_output_set_num(d, NULL, "sim_median_abs_error_pct", med);
        zs_output_set_num(d, NULL, "sim_max_abs_error_pct", mx);
        zs_output_text(d, ": |error| median %.1f%%, max %.1f%% (held-out)", med, mx);
    }
    zs_output_text(d, "\n");
    free(v);
}

static void summary(zs_output *d, const zs_runs *rs, const outcome *o)
{
    double *abs_err = malloc(sizeof *abs_err * (size_t)rs->n);
    int n = 0;
    for (int i = 0; abs_err && i < rs->n; i++)
        if (o[i].ok)
            abs_err[n++] = fabs(o[i].err_pct);
    zs_output_set_int(d, NULL, "runs_total", rs->n);
    zs_output_set_int(d, NULL, "runs_predicted", n);
    zs_output_set_int(d, NULL, "runs_not_expressed", rs->n - n);
    zs_output_text(d, "\n%d runs: %d predicted, %d not expressed (reason in the table)\n", rs->n, n,
                   rs->n - n);
    if (n > 0) {
        double med, mx;
        med_max(abs_err, n, &med, &mx);
        zs_output_set_num(d, NULL, "median_abs_error_pct", med);
        zs_output_set_num(d, NULL, "max_abs_error_pct", mx);
        zs_output_text(
            d,
            "|error| over the predicted runs: median %.1f%%, max %.1f%% (issue 29's goal: "
            "median <= 8%%, max <= 20%%; held-out: nothing was fitted to these runs)\n",
            med, mx);
    }
    free(abs_err);
}

typedef struct plot_runs {
    const zs_runs *rs;
    const outcome *o;
} plot_runs;

static void plot_data(FILE *f, const void *arg)
{
    const plot_runs *x = arg;
    for (int i = 0; i < x->rs->n; i++)
        if (x->o[i].ok)
            fprintf(f, "%d %.6g \"%s/%s\"\n", i + 1, x->o[i].err_pct, x->rs->rows[i].model,
                    zs_run_task_name(x->rs->rows[i].task));
}

static void plot_script(FILE *f, const char *out, const char *dat, const void *arg)
{
    const plot_runs *x = arg;
    fprintf(f,
            "set output '%s'\nset ylabel 'error (%%), predicted vs measured'\n"
            "set title 'zepsim validate --runs: analytic step model, held-out'\n"
            "set xtics rotate by 45 right\nset key top right\nset xrange [0:%d]\n"
            "plot 0 notitle lc rgb 'gray', 8 title '+-8%%' dt 2 lc rgb 'gray', -8 notitle dt 2 "
            "lc rgb 'gray', 20 title '+-20%%' dt 3 lc rgb 'gray', -20 notitle dt 3 lc rgb 'gray', "
            "'%s' using 1:2:xtic(3) title 'runs' pt 7\n",
            out, x->rs->n + 1, dat);
}

/* error_pct per predicted run (x: the run's place in the file) with the
 * goals' bands (zs_cli_gnuplot). */
static void plot(const char *path, const zs_runs *rs, const outcome *o)
{
    plot_runs x = {rs, o};
    zs_cli_gnuplot(path, 900, 600, plot_data, plot_script, &x);
}

/* The first run predicted (all share the cluster, so its GPU and kernel),
 * or NULL. */
static const outcome *first_predicted(const zs_runs *rs, const outcome *o)
{
    for (int i = 0; i < rs->n; i++)
        if (o[i].ok)
            return &o[i];
    return NULL;
}

int zs_cmd_validate_runs(int argc, char **argv)
{
    runs_args a = {0};
    int st = parse_args(argc, argv, &a);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    zs_calib *cal = NULL; /* checked once, before any row names it */
    if (a.calib && zs_calib_load(a.calib, &cal, &e))
        return zs_cli_fail(&e);
    zs_calib_free(cal);
    zs_runs rs;
    int rc = zs_runs_read(a.runs, &rs, &e);
    if (rc)
        return zs_cli_fail(&e);
    outcome *o = calloc((size_t)rs.n, sizeof *o);
    if (!o)
        rc = zs_err_set(&e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0; !rc && i < rs.n; i++) {
        rc = predict(&rs.rows[i], &a, &o[i], &e);
        if (!rc && a.simulate && o[i].ok)
            rc = simulate(&rs.rows[i], &a, &o[i], &e);
        if (rc) {
            char w[600];
            snprintf(w, sizeof w, "%s:%d", rs.path, rs.rows[i].line);
            zs_err_prefix_where(&e, w);
        }
    }
    int out = 0;
    if (!rc) {
        zs_output *d = zs_output_new("validate", a.fmt, stdout);
        if (d) {
            zs_output_set_text(d, NULL, "model", "analytic Megatron step model");
            zs_output_set_text(d, NULL, "cluster", a.cluster);
            const outcome *o0 = first_predicted(&rs, o);
            const char *kern = o0 ? o0->attn : (a.kernel ? a.kernel : "the GPU's own");
            zs_output_set_text(d, NULL, "attn_kernel", kern);
            zs_output_set_text(d, NULL, "packed_docs", a.packed);
            zs_output_set_text(d, NULL, "calib", a.calib ? a.calib : "");
            zs_output_text(d,
                           "analytic step model (not a simulated schedule): Megatron 1F1B with "
                           "TP+SP, CP ring, distributed optimizer; op inventory of `zepsim cost "
                           "step`, %s%s cost model, NCCL model on cluster '%s', "
                           "attention kernel %s%s\n",
                           a.calib ? "calibrated by " : "uncalibrated analytic",
                           a.calib ? a.calib : "", a.cluster, kern,
                           a.kernel ? " (--attn-kernel)" : " (the GPU's own)");
            if (a.calib && o0) { /* a fit applied beyond its data says so */
                zs_model m;
                zs_err me;
                zs_cluster cl;
                if (!zs_model_load(rs.rows[o0 - o].model, &m, &me) &&
                    !zs_cluster_load(a.cluster, 0, &cl, &me))
                    zs_cli_calib_notes(d, a.calib, cl.gpu.name, &m);
            }
            if (o0 && o0->te_cudnn) {
                char note[512];
                snprintf(note, sizeof note,
                         "the %s curve. TransformerEngine runs FlashAttention where "
                         "NVTE_FUSED_ATTN=0, as NeMo-Framework-Launcher 24.01-24.07 set for every "
                         "run (conf/config.yaml), and cuDNN's fused attention otherwise on GPUs "
                         "of compute capability 9 and up (NeMo 24.09 on, NeMo 2.0's performance "
                         "scripts): `--attn-kernel cudnn` for runs launched so "
                         "(docs/validation.md, 'Which attention kernel')",
                         kern);
                zs_output_set_text(d, NULL, "attention", note);
                zs_output_text(d, "attention: %s\n", note);
            }
            zs_output_text(d, "runs: %s (held-out: nothing is fitted to them)\n\n", a.runs);
            zs_output_table(d, "runs", runs_table(&rs, o));
            summary(d, &rs, o);
            if (a.simulate) {
                zs_output_text(d, "\n");
                zs_output_table(d, "simulated", sim_table(&rs, o));
                sim_summary(d, &rs, o);
            }
        }
        out = zs_cli_doc_end(d);
        if (a.plot)
            plot(a.plot, &rs, o);
    }
    free(o);
    zs_runs_free(&rs);
    return rc ? zs_cli_fail(&e) : out;
}
