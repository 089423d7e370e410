/* Shared iteration building: see zs_iteration.h.
 *
 * For every pipeline stage the builder walks that stage's 1F1B order of
 * chunks (a chunk = one micro-batch through the stage's layers, forward or
 * backward). A chunk is three segments on every slot's rank: a prologue
 * (pipeline receive, embedding or LM head), the layer body repeated once
 * per layer of the stage, and an epilogue (pipeline send). Inside the body
 * the slots' linear ops are written first, then the planner's attention
 * emitter for all slots at once (rings connect slots), then the rest. */
#include "zs_iteration.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_step.h"

struct zs_iter {
    zs_schedule *s;
    const zs_cost *cost;
    const zs_iter_spec *sp;
    const int64_t *nano_tokens;
    const zs_model *m;
    int tp, cp, pp, dp, nslots, M;
    int vp;                /* model chunks per stage (interleaved 1F1B; 1: none) */
    int nano, cur;         /* nano-batches; the one being written (-1: the whole micro-batch) */
    int64_t *entry, *exit; /* [nano * nslots + slot] */
    int64_t *entry_moved, *exit_moved; /* per slot, with moved tokens (never with nano-batches) */
    int64_t *layer_first; /* per slot: the first op of the layer body being written (-1: none) */
    int next_tag;
    int tag_act, tag_grad;
    int pp_stream;    /* pipeline sends and receives: off the compute stream so
                       * a stage can post the next receive while its send waits */
    int tp_stream;    /* the backward's asynchronous TP collectives (tp > 1) */
    int zero3;        /* ZeRO-3 over a DP group of two or more */
    double *moe_load; /* per rank: expert load factor (mean 1) */
    int *tp_group;    /* per slot-rank: the TP group's id (leader ranks only) */
    zs_err *e;
    /* Dry run (zs_iter_linear_time): no schedule; ops only add their
     * predicted time to the chain; one slot of dry_tokens / dry_moved. */
    int dry, dry_ep;
    double dry_tokens, dry_moved;
    double dry_mark; /* chain time when the moved tokens' entry op was written */
};

zs_schedule *zs_iter_schedule(zs_iter *it)
{
    return it->s;
}
const zs_cost *zs_iter_cost(zs_iter *it)
{
    return it->cost;
}
int zs_iter_nslots(const zs_iter *it)
{
    return it->nslots;
}
int zs_slot_rank(const zs_layout_dims *d, int stage, int slot)
{
    int dp = slot / d->cp, cp = slot % d->cp;
    return ((dp * d->pp + stage) * d->cp + cp) * d->tp;
}

int zs_iter_rank(const zs_iter *it, int stage, int slot)
{
    int dp = slot / it->cp, cp = slot % it->cp;
    return ((dp * it->pp + stage) * it->cp + cp) * it->tp;
}
int zs_iter_heads(const zs_iter *it)
{
    return it->m->heads / it->tp;
}
int zs_iter_kv_heads(const zs_iter *it)
{
    int kv = it->m->kv_heads / it->tp;
    return kv > 0 ? kv : 1;
}
int64_t zs_iter_entry(const zs_iter *it, int slot)
{
    return it->entry[slot];
}
void zs_iter_set_exit(zs_iter *it, int slot, int64_t op)
{
    it->exit[slot] = op;
}
int zs_iter_nano(const zs_iter *it)
{
    return it->nano;
}
int64_t zs_iter_entry_nano(const zs_iter *it, int k, int slot)
{
    return it->entry[(size_t)k * it->nslots + slot];
}
void zs_iter_set_exit_nano(zs_iter *it, int k, int slot, int64_t op)
{
    it->exit[(size_t)k * it->nslots + slot] = op;
}
/* The entry/exit index of a slot for the nano-batch being written. */
static size_t cur_ix(const zs_iter *it, int slot)
{
    return (size_t)(it->cur > 0 ? it->cur : 0) * it->nslots + slot;
}
int64_t zs_iter_entry_moved(const zs_iter *it, int slot)
{
    return it->entry_moved[slot];
}
void zs_iter_set_exit_moved(zs_iter *it, int slot, int64_t op)
{
    it->exit_moved[slot] = op;
}
int64_t zs_iter_rank_layer_start(const zs_iter *it, int rank)
{
    if (it->dry || !it->layer_first || it->pp != 1 || rank < 0 || rank % it->tp != 0 ||
        rank / it->tp >= it->nslots)
        return -1;
    return it->layer_first[rank / it->tp];
}
/* Marks the op about to be written on the slot as its layer's first, unless
 * one is marked already (a backward layer: its recomputed forward's). */
static void mark_layer_first(zs_iter *it, int slot, int rank)
{
    if (!it->dry && it->layer_first[slot] < 0)
        it->layer_first[slot] = it->s->ranks[rank].nops;
}
static void reset_layer_first(zs_iter *it)
{
    if (!it->layer_first)
        return;
    for (int sl = 0; sl < it->nslots; sl++)
        it->layer_first[sl] = -1;
}
int zs_iter_tag(zs_iter *it)
{
    return it->next_tag++;
}
int zs_iter_stage_first_layer(const zs_iter *it, int stage)
{
    int base = it->m->layers / it->pp, extra = it->m->layers % it->pp;
    return stage * base + (stage < extra ? stage : extra);
}

static int stage_layers(const zs_iter *it, int stage)
{
    return it->m->layers / it->pp + (stage < it->m->layers % it->pp ? 1 : 0);
}

/* An op's label: prefix + name (a dry run writes no ops and skips it). */
static void label(const zs_iter *it, char *l, size_t n, const char *pfx, const char *name)
{
    /* A dry run prices without labels; the empty string keeps every
     * caller's buffer defined (-O3 cannot see that dry runs skip it). */
    if (it->dry)
        l[0] = '\0';
    else
        snprintf(l, n, "%s%s", pfx, name);
}

/* ---- op helpers ------------------------------------------------------------
 *
 * The builder appends freely: a failed append is recorded in the schedule
 * (zs_schedule.h) and later ones do nothing, so the body, the chunks and the
 * groups check the schedule once per phase, with zs_schedule_check. */

typedef struct chain {
    int rank;
    int64_t last; /* last op on the compute stream, -1 before the first */
    double t;     /* dry run: predicted seconds so far */
} chain;

/* The dependencies of an op appended to the chain: its last op and
 * extra_dep (-1: none), each once. Returns their count (at most 2). */
static int chain_deps(const chain *c, int64_t extra_dep, int64_t deps[2])
{
    int nd = 0;
    if (c->last >= 0)
        deps[nd++] = c->last;
    if (extra_dep >= 0 && extra_dep != c->last)
        deps[nd++] = extra_dep;
    return nd;
}

/* A GEMM; fp8: in FP8 (a layer's linear GEMM when the cost model prices
 * them so, zs_cost_set_fp8). The builder does not tell a weight gradient
 * (accumulated in fp32) from the other GEMMs here, so both precisions take
 * their defaults' bytes: the output in the model's dtype, the fewest a
 * GEMM of the shape moves, so that the HBM bound never overprices. */
static int64_t gemm_prec(zs_iter *it, chain *c, const char *label, double m, double n, double k,
                         int64_t extra_dep, int fp8)
{
    double t = m <= 0 ? 0
               : fp8  ? zs_cost_gemm_fp8(it->cost, m, n, k, 0)
                      : zs_cost_gemm(it->cost, m, n, k);
    if (it->dry) {
        c->t += t;
        return 0;
    }
    int64_t deps[2];
    int nd = chain_deps(c, extra_dep, deps);
    int64_t op = zs_sched_gemm(it->s, c->rank, ZS_STREAM_COMPUTE, label, m, n, k, t, deps, nd);
    if (op >= 0)
        c->last = op;
    return op;
}

static int64_t gemm(zs_iter *it, chain *c, const char *label, double m, double n, double k,
                    int64_t extra_dep)
{
    return gemm_prec(it, c, label, m, n, k, extra_dep, 0);
}

/* A memory-bound op taking t after the chain's last op and extra_dep (-1:
 * none). */
static int64_t elem_t(zs_iter *it, chain *c, const char *label, double bytes, double t,
                      int64_t extra_dep)
{
    if (it->dry) {
        c->t += t;
        return 0;
    }
    int64_t deps[2];
    int nd = chain_deps(c, extra_dep, deps);
    int64_t op = zs_sched_elementwise(it->s, c->rank, ZS_STREAM_COMPUTE, label, bytes, t, deps, nd);
    if (op >= 0)
        c->last = op;
    return op;
}

/* An elementwise op (the cost model's elementwise curve) after the chain's
 * last op and extra_dep (-1: none). */
static int64_t elem_dep(zs_iter *it, chain *c, const char *label, double bytes, int64_t extra_dep)
{
    return elem_t(it, c, label, bytes, bytes > 0 ? zs_cost_elementwise(it->cost, bytes) : 0,
                  extra_dep);
}

static int64_t elem(zs_iter *it, chain *c, const char *label, double bytes)
{
    return elem_dep(it, c, label, bytes, -1);
}

/* ---- FP8 (zs_cost_set_fp8: TransformerEngine, delayed scaling) -------------
 * The layers' linear GEMMs run in FP8: before each, TransformerEngine casts
 * its inputs (forward the activation and the weight, backward the output
 * gradient); sequence parallelism gathers FP8 values; every layer updates
 * its amax histories and scales. The same inventory and bytes as `zepsim
 * cost step --precision fp8` (zs_fp8_cast_bytes, zs_fp8_amax_bytes). MoE
 * experts and the LM head stay in bf16. */

static int fp8_on(const zs_iter *it)
{
    return it->cost->fp8;
}

/* Whether the base weights are frozen (LoRA): no weight gradients. */
static int frozen(const zs_iter *it)
{
    return it->sp->lora > 0;
}

/* Whether a cast's FP8 tensor is then gathered over TP (sequence
 * parallelism): a column-parallel layer's input, a row-parallel layer's
 * output gradient. */
static int fp8_gathered(int grad, const char *name)
{
    int col = !strcmp(name, "qkv") || !strcmp(name, "mlp-up");
    int row = !strcmp(name, "o-proj") || !strcmp(name, "mlp-down");
    return grad ? row : col;
}

static int64_t tp_coll(zs_iter *it, chain *c, const char *label, zs_coll_kind k, double bytes);

/* FP8 current scaling (zs_cost_set_fp8 on = 2): before the cast, the amax
 * pass over its bf16 input, the TP all-reduce of that amax where the FP8
 * tensor is gathered, the scale kernel; as the step model prices them
 * (zs_step.c, cs_scale). */
static void fp8_cs_scale(zs_iter *it, chain *c, const char *pfx, int grad, const char *name,
                         double vals)
{
    if (!it->cost->fp8_cs)
        return;
    char l[64] = "";
    if (!it->dry)
        snprintf(l, sizeof l, "%samax-%s%s", pfx, grad ? "d" : "", name);
    elem(it, c, l, vals * it->m->dtype_bytes);
    if (fp8_gathered(grad, name)) {
        if (!it->dry)
            snprintf(l, sizeof l, "%stp-ar-amax-%s%s", pfx, grad ? "d" : "", name);
        tp_coll(it, c, l, ZS_COLL_ALLREDUCE, 4);
    }
    if (!it->dry)
        snprintf(l, sizeof l, "%sscale-%s%s", pfx, grad ? "d" : "", name);
    elem(it, c, l, 8);
}

/* The cast of vals values before GEMM `name` ("cast-qkv"; grad: of its
 * output gradient, "cast-dqkv"); pfx: the recomputation's prefix. ct:
 * TransformerEngine's cast-transpose, which also writes the transpose a
 * weight-gradient GEMM reads; without it (frozen weights, whose backward
 * runs the input-gradient GEMM only) a plain cast, read bf16 and write
 * FP8 once, at the streaming rate (as the step model's). */
static void fp8_cast_ct(zs_iter *it, chain *c, const char *pfx, int grad, const char *name,
                        double vals, int ct)
{
    if (!fp8_on(it) || vals <= 0)
        return;
    fp8_cs_scale(it, c, pfx, grad, name, vals);
    char l[64];
    if (!it->dry)
        snprintf(l, sizeof l, "%scast-%s%s", pfx, grad ? "d" : "", name);
    if (!ct) {
        elem(it, c, l, vals * (it->m->dtype_bytes + 1));
        return;
    }
    double bytes = zs_fp8_cast_bytes(vals, it->m->dtype_bytes);
    elem_t(it, c, l, bytes, zs_fp8_cast_time(&it->cost->cluster.gpu, bytes), -1);
}

/* An activation's or an output gradient's cast: transposed too unless the
 * weights are frozen. */
static void fp8_cast(zs_iter *it, chain *c, const char *pfx, int grad, const char *name,
                     double vals)
{
    fp8_cast_ct(it, c, pfx, grad, name, vals, !frozen(it));
}

/* The FP8 cast of a linear GEMM's weight (w values, "cast-w-qkv"), in the
 * iteration's first micro-batch only: TransformerEngine keeps the FP8
 * weight and its transpose for the later micro-batches and for
 * recomputation when Megatron-Core passes is_first_microbatch (the same
 * as the step inventory, zs_step_op.per_step). */
static void fp8_cast_weight(zs_iter *it, chain *c, int micro, const char *pfx, const char *name,
                            double w)
{
    if (micro != 0 || pfx[0] || it->cur > 0)
        return;
    char wn[48];
    snprintf(wn, sizeof wn, "w-%s", name);
    /* frozen or not, the dgrad reads the weight's transpose */
    fp8_cast_ct(it, c, "", 0, wn, w, 1);
}

/* Bytes of one value the TP all-gather before a linear GEMM moves. */
static double gather_bytes(const zs_iter *it)
{
    return fp8_on(it) ? 1 : it->m->dtype_bytes;
}

/* A collective of c's rank on `stream` after op dep (-1: none). */
static int64_t coll_after(zs_iter *it, const chain *c, int stream, const char *label, int group,
                          zs_coll_kind k, double bytes, int64_t dep)
{
    int64_t deps[1] = {dep};
    return zs_sched_coll(it->s, c->rank, stream, label, group, k, bytes, deps, dep >= 0);
}

/* ... after the chain's last op, which it becomes. */
static int64_t coll_on(zs_iter *it, chain *c, int stream, const char *label, int group,
                       zs_coll_kind k, double bytes)
{
    int64_t op = coll_after(it, c, stream, label, group, k, bytes, c->last);
    if (op >= 0)
        c->last = op;
    return op;
}

/* A collective on the compute stream after the chain's last op; a dry run
 * prices it over dry_n consecutive ranks of a node. */
static int64_t coll(zs_iter *it, chain *c, const char *label, int group, int dry_n, zs_coll_kind k,
                    double bytes)
{
    if (it->dry) {
        int ranks[256], n = dry_n < 256 ? dry_n : 256;
        for (int i = 0; i < n; i++)
            ranks[i] = i * it->tp;
        c->t += zs_cost_collective(it->cost, k, ranks, n, bytes);
        return 0;
    }
    return coll_on(it, c, ZS_STREAM_COMPUTE, label, group, k, bytes);
}

/* A TP collective the compute waits for: sequence parallelism puts it on
 * the critical path between the norm and the GEMM. It runs on the TP
 * stream (one NCCL communicator, one stream: the backward's asynchronous
 * ones are there too), the next compute op after it. */
static int64_t tp_coll(zs_iter *it, chain *c, const char *label, zs_coll_kind k, double bytes)
{
    if (it->tp == 1)
        return c->last;
    if (it->dry) {
        int ranks[64], n = it->tp < 64 ? it->tp : 64;
        for (int i = 0; i < n; i++)
            ranks[i] = i;
        c->t += zs_cost_collective(it->cost, k, ranks, n, bytes);
        return 0;
    }
    return coll_on(it, c, it->tp_stream, label, it->tp_group[c->rank], k, bytes);
}

/* A column-parallel layer's backward as TransformerEngine's Linear /
 * LayerNormLinear / LayerNormMLP and Megatron's ColumnParallelLinear run
 * it with sequence parallelism: the gather of the layer's input (saved
 * scattered) is issued before the input-gradient GEMM and waited for
 * before the weight-gradient GEMM; the input gradient's reduce-scatter is
 * issued after its GEMM and waited for after the weight gradient's. Both
 * on the TP stream (their own NCCL stream), so they run under the GEMMs.
 * dgrad / wgrad append the GEMMs (dgrad may append several); in_bytes is
 * the gathered input's, rs_bytes the reduce-scatter's. In a dry run the
 * chain takes max(gather, dgrad) + max(reduce-scatter, wgrad). */
typedef struct col_bwd {
    const char *name; /* the layer's: "tp-ag-NAME-input", "tp-rs-dNAME" */
    double in_bytes, rs_bytes;
    /* an elementwise op on the output gradient before each input-gradient
     * GEMM (RoPE's backward before QKV's): bytes per token, its label */
    double pre_bpt;
    const char *pre;
} col_bwd;

/* cb's op before an input-gradient GEMM of m tokens (sfx: "-moved"). */
static void col_bwd_pre(zs_iter *it, chain *c, const col_bwd *cb, double m, int64_t *dep,
                        const char *sfx)
{
    if (!cb || !(cb->pre_bpt > 0) || m <= 0)
        return;
    char l[64];
    label(it, l, sizeof l, cb->pre, sfx);
    elem_dep(it, c, l, m * cb->pre_bpt, *dep);
    *dep = -1; /* the op waited for it */
}

static int64_t tp_async(zs_iter *it, chain *c, const char *label, zs_coll_kind k, double bytes,
                        int64_t dep)
{
    return coll_after(it, c, it->tp_stream, label, it->tp_group[c->rank], k, bytes, dep);
}

static double dry_tp(zs_iter *it, zs_coll_kind k, double bytes)
{
    chain d = {0, -1, 0};
    tp_coll(it, &d, "", k, bytes);
    return d.t;
}

/* Before the dgrad GEMM(s): returns the gather (-1: none). */
static int64_t col_bwd_begin(zs_iter *it, chain *c, const col_bwd *cb, double *t0)
{
    *t0 = c->t;
    if (it->tp == 1 || it->dry)
        return -1;
    char l[64];
    snprintf(l, sizeof l, "tp-ag-%s-input", cb->name);
    return tp_async(it, c, l, ZS_COLL_ALLGATHER, cb->in_bytes, c->last);
}

/* After the dgrad GEMM(s), before the wgrad GEMM: returns the
 * reduce-scatter; the wgrad GEMM must also wait for the gather. */
static int64_t col_bwd_mid(zs_iter *it, chain *c, const col_bwd *cb, double t0, double *t1)
{
    if (it->tp == 1)
        return -1;
    if (it->dry) {
        double ag = dry_tp(it, ZS_COLL_ALLGATHER, cb->in_bytes);
        if (ag > c->t - t0)
            c->t = t0 + ag;
        *t1 = c->t;
        return -1;
    }
    char l[64];
    snprintf(l, sizeof l, "tp-rs-d%s", cb->name);
    return tp_async(it, c, l, ZS_COLL_REDUCESCATTER, cb->rs_bytes, c->last);
}

/* After the wgrad GEMM: the chain continues after the reduce-scatter too
 * (the compute stream keeps the GEMM's order). */
static void col_bwd_end(zs_iter *it, chain *c, const col_bwd *cb, int64_t rs, double t1)
{
    if (it->tp == 1)
        return;
    if (it->dry) {
        double r = dry_tp(it, ZS_COLL_REDUCESCATTER, cb->rs_bytes);
        if (r > c->t - t1)
            c->t = t1 + r;
        return;
    }
    if (rs >= 0)
        c->last = rs;
}

/* ---- MoE ------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Expert load per rank: lognormal(0, 0.3) draws normalised to mean 1 over
 * each expert-parallel group, so total expert work is conserved and only
 * its spread changes. The spread is an assumption (documented in
 * docs/methods.md), seeded per iteration. */
static void moe_loads(zs_iter *it, int stage, const int *ep_of, int nep_groups)
{
    uint64_t st = it->sp->seed * 0x2545F4914F6CDD1DULL + (uint64_t)stage + 1;
    for (int sl = 0; sl < it->nslots; sl++) {
        double u1 = ((splitmix(&st) >> 11) + 0.5) / 9007199254740992.0;
        double u2 = ((splitmix(&st) >> 11) + 0.5) / 9007199254740992.0;
        double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
        it->moe_load[zs_iter_rank(it, stage, sl)] = exp(0.3 * z);
    }
    for (int g = 0; g < nep_groups; g++) {
        double sum = 0;
        int n = 0;
        for (int sl = 0; sl < it->nslots; sl++)
            if (ep_of[sl] == g) {
                sum += it->moe_load[zs_iter_rank(it, stage, sl)];
                n++;
            }
        for (int sl = 0; sl < it->nslots; sl++)
            if (ep_of[sl] == g)
                it->moe_load[zs_iter_rank(it, stage, sl)] *= n / sum;
    }
}

/* ---- the layer body ------------------------------------------------------- */

typedef struct body {
    int stage, micro, backward, last_micro;
    int chunk;         /* model chunk of the stage (interleaved 1F1B; 0 without) */
    int *ep_group;     /* per slot: schedule group id of its expert-parallel group */
    int *dp_group;     /* per slot: schedule group id for gradient sync */
    int64_t *param_ag; /* per slot: the ZeRO-3 weight all-gather not yet waited for (-1: none) */
    double ag_params;  /* the weights it gathers, per TP rank */
} body;

/* Layers of one chunk of the stage (all of the stage's without
 * interleaving) and the first of them. */
static int chunk_layers(const zs_iter *it, const body *b)
{
    return it->vp > 1 ? it->m->layers / (it->pp * it->vp) : stage_layers(it, b->stage);
}
static int chunk_first_layer(const zs_iter *it, const body *b)
{
    if (it->vp > 1)
        return (b->chunk * it->pp + b->stage) * chunk_layers(it, b);
    return zs_iter_stage_first_layer(it, b->stage);
}

/* Pipeline neighbours of a chunk: is it the model's first (last) virtual
 * stage, the stage of the one before (after) it, and the message tags of
 * the boundary before (after) it. Without interleaving one tag per
 * direction serves every boundary; with it each boundary has its own, so a
 * stage that both sends to and receives from the last stage (pp = 2) keeps
 * its channels apart. */
static int chunk_first(const body *b)
{
    return b->stage == 0 && b->chunk == 0;
}
static int chunk_last(const zs_iter *it, const body *b)
{
    return b->stage == it->pp - 1 && b->chunk == it->vp - 1;
}
static int pp_tag(const zs_iter *it, const body *b, int next, int grad)
{
    if (it->vp <= 1)
        return grad ? it->tag_grad : it->tag_act;
    int boundary = b->chunk * it->pp + b->stage - (next ? 0 : 1);
    return 3 + 2 * boundary + (grad ? 1 : 0);
}

static double tokens(const zs_iter *it, int micro, int slot)
{
    if (it->dry)
        return it->dry_tokens;
    if (it->cur >= 0 && it->nano > 1) {
        if (it->nano_tokens)
            return (double)it->nano_tokens[((size_t)it->cur * it->M + micro) * it->nslots + slot];
        return (double)it->sp->linear_tokens[(size_t)micro * it->nslots + slot] / it->nano;
    }
    return (double)it->sp->linear_tokens[(size_t)micro * it->nslots + slot];
}

/* Linear tokens of the slot whose attention runs elsewhere (<= tokens). */
static double moved(const zs_iter *it, int micro, int slot)
{
    if (it->dry)
        return it->dry_moved;
    if (!it->sp->moved_tokens)
        return 0;
    return (double)it->sp->moved_tokens[(size_t)micro * it->nslots + slot];
}

/* RoPE rotates the queries and keys after the QKV GEMM (models without
 * learned positions): it reads and writes them, bytes per token. */
static double rope_bytes(const zs_iter *it)
{
    const zs_model *m = it->m;
    if (zs_model_learned_pos(m))
        return 0;
    return 2.0 * (m->heads + m->kv_heads) * m->head_dim / it->tp * m->dtype_bytes;
}

/* QKV output columns on one GPU. */
static double qkv_cols(const zs_iter *it)
{
    const zs_model *m = it->m;
    return (double)(m->heads + 2 * m->kv_heads) * m->head_dim / it->tp;
}

/* LoRA's adapter on the QKV projection of T tokens, forward, as the step
 * model runs it (zs_step.c, lora_fwd): NeMo's ParallelLinearAdapter
 * (nemo/collections/nlp/modules/common/megatron/adapters/
 * parallel_adapters.py) gathers the norm's output itself under sequence
 * parallelism (in bf16: the QKV GEMM's FP8 gather is of no use to it),
 * runs linear_in (hidden to rank, column-parallel, its output gathered)
 * and linear_out (rank to this GPU's QKV columns) in bf16, scales the
 * result by alpha / rank and adds it to the projection's. */
static void lora_fwd(zs_iter *it, chain *c, double T, const char *pfx)
{
    if (!frozen(it))
        return;
    double r = it->sp->lora, tp = it->tp, h = it->m->hidden, by = it->m->dtype_bytes;
    double qkv_n = qkv_cols(it), out = T * qkv_n;
    char l[64];
    label(it, l, sizeof l, pfx, "tp-ag-lora-input");
    tp_coll(it, c, l, ZS_COLL_ALLGATHER, T / tp * h * by);
    label(it, l, sizeof l, pfx, "lora-in");
    gemm(it, c, l, T, r / tp, h, -1);
    label(it, l, sizeof l, pfx, "tp-ag-lora-in");
    tp_coll(it, c, l, ZS_COLL_ALLGATHER, T * r / tp * by);
    label(it, l, sizeof l, pfx, "lora-out");
    gemm(it, c, l, T, qkv_n, r, -1);
    label(it, l, sizeof l, pfx, "lora-scale");
    elem(it, c, l, 2 * out * by);
    label(it, l, sizeof l, pfx, "lora-add");
    elem(it, c, l, 3 * out * by);
}

/* Forward linear ops before attention; sets entry[slot]. */
static void fwd_pre(zs_iter *it, body *b, chain *c, int slot, const char *pfx)
{
    const zs_model *m = it->m;
    double T = tokens(it, b->micro, slot), Tl = T / it->tp, h = m->hidden, by = m->dtype_bytes;
    double qkv_n = (double)(m->heads + 2 * m->kv_heads) * m->head_dim / it->tp;
    char l[64];
    int f8 = fp8_on(it);
    double rope = rope_bytes(it); /* per token */
    label(it, l, sizeof l, pfx, "norm1");
    elem(it, c, l, 2 * Tl * h * by);
    fp8_cast(it, c, pfx, 0, "qkv", Tl * h);
    fp8_cast_weight(it, c, b->micro, pfx, "qkv", h * qkv_n);
    label(it, l, sizeof l, pfx, "tp-ag-attn");
    tp_coll(it, c, l, ZS_COLL_ALLGATHER, Tl * h * gather_bytes(it));
    double mv = moved(it, b->micro, slot);
    if (mv > 0) {
        /* The moved tokens' QKV first: it leaves while the rest is computed. */
        label(it, l, sizeof l, pfx, "qkv-moved");
        gemm_prec(it, c, l, mv, qkv_n, h, -1, f8);
        if (rope > 0) {
            label(it, l, sizeof l, pfx, "rope-moved");
            elem(it, c, l, mv * rope);
        }
        it->entry_moved[slot] = c->last;
        it->dry_mark = c->t;
    }
    label(it, l, sizeof l, pfx, "qkv");
    gemm_prec(it, c, l, T - mv, qkv_n, h, -1, f8);
    lora_fwd(it, c, T, pfx); /* never with moved tokens (build_with) */
    if (rope > 0) {
        label(it, l, sizeof l, pfx, "rope");
        elem(it, c, l, (T - mv) * rope);
    }
    it->entry[cur_ix(it, slot)] = c->last;
    if (mv <= 0)
        it->entry_moved[slot] = c->last;
    it->exit[cur_ix(it, slot)] = -1;
    it->exit_moved[slot] = -1;
}

/* The MoE block of a forward layer: router, dispatch, experts, combine. */
static void fwd_moe(zs_iter *it, body *b, chain *c, int slot, const char *pfx)
{
    const zs_model *m = it->m;
    double T = tokens(it, b->micro, slot), h = m->hidden, by = m->dtype_bytes;
    double load = it->dry ? 1 : it->moe_load[c->rank];
    double Tk = T * m->top_k, f = (double)m->expert_ffn / it->tp;
    char l[64];
    label(it, l, sizeof l, pfx, "moe-router");
    gemm(it, c, l, T, m->experts, h, -1);
    label(it, l, sizeof l, pfx, "moe-dispatch");
    coll(it, c, l, it->dry ? 0 : b->ep_group[slot], it->dry_ep, ZS_COLL_ALLTOALL, Tk * h * by);
    label(it, l, sizeof l, pfx, "expert-gate-up");
    gemm(it, c, l, Tk * load, 2 * f, h, -1);
    label(it, l, sizeof l, pfx, "expert-swiglu");
    elem(it, c, l, 3 * Tk * load * f * by);
    label(it, l, sizeof l, pfx, "expert-down");
    gemm(it, c, l, Tk * load, h, f, -1);
    label(it, l, sizeof l, pfx, "moe-combine");
    coll(it, c, l, it->dry ? 0 : b->ep_group[slot], it->dry_ep, ZS_COLL_ALLTOALL, Tk * h * by);
}

/* Forward ops after attention. */
static int fwd_post(zs_iter *it, body *b, chain *c, int slot, const char *pfx)
{
    const zs_model *m = it->m;
    double T = tokens(it, b->micro, slot), Tl = T / it->tp, h = m->hidden, by = m->dtype_bytes;
    double ad = (double)m->heads * m->head_dim / it->tp;
    char l[64];
    int64_t ex = it->exit[cur_ix(it, slot)];
    double mv = moved(it, b->micro, slot);
    if (!it->dry && (ex < 0 || (mv > 0 && it->exit_moved[slot] < 0)))
        return zs_err_set(it->e, ZS_EINVALID, "attention emitter", NULL,
                          "slot %d has no attention exit op%s", slot,
                          ex < 0 ? "" : " for its moved tokens");
    int f8 = fp8_on(it), moe = zs_model_is_moe(m), gated = zs_model_mlp(m) == ZS_MLP_SWIGLU;
    double f = (double)m->ffn / it->tp, up = (gated ? 2 : 1) * f;
    fp8_cast(it, c, pfx, 0, "o-proj", T * ad);
    fp8_cast_weight(it, c, b->micro, pfx, "o-proj", ad * h);
    label(it, l, sizeof l, pfx, "o-proj");
    gemm_prec(it, c, l, T - mv, h, ad, ex, f8);
    it->dry_mark = c->t;
    if (mv > 0) {
        /* The moved tokens' attention output arrives while the kept part runs. */
        label(it, l, sizeof l, pfx, "o-proj-moved");
        gemm_prec(it, c, l, mv, h, ad, it->exit_moved[slot], f8);
    }
    label(it, l, sizeof l, pfx, "tp-rs-attn");
    tp_coll(it, c, l, ZS_COLL_REDUCESCATTER, Tl * h * by);
    label(it, l, sizeof l, pfx, "residual-norm2");
    elem(it, c, l, 3 * Tl * h * by);
    if (!moe) {
        fp8_cast(it, c, pfx, 0, "mlp-up", Tl * h);
        fp8_cast_weight(it, c, b->micro, pfx, "mlp-up", h * up);
    }
    label(it, l, sizeof l, pfx, "tp-ag-mlp");
    tp_coll(it, c, l, ZS_COLL_ALLGATHER, Tl * h * (moe ? by : gather_bytes(it)));
    if (moe) {
        fwd_moe(it, b, c, slot, pfx);
    } else {
        label(it, l, sizeof l, pfx, gated ? "mlp-gate-up" : "mlp-up");
        gemm_prec(it, c, l, T, up, h, -1, f8);
        /* SwiGLU reads gate and up and writes their product; GELU and
         * squared ReLU read one and write one */
        label(it, l, sizeof l, pfx, gated ? "swiglu" : "activation");
        elem(it, c, l, (gated ? 3 : 2) * T * f * by);
        fp8_cast(it, c, pfx, 0, "mlp-down", T * f);
        fp8_cast_weight(it, c, b->micro, pfx, "mlp-down", f * h);
        label(it, l, sizeof l, pfx, "mlp-down");
        gemm_prec(it, c, l, T, h, f, -1, f8);
    }
    label(it, l, sizeof l, pfx, "tp-rs-mlp");
    tp_coll(it, c, l, ZS_COLL_REDUCESCATTER, Tl * h * by);
    label(it, l, sizeof l, pfx, "residual");
    elem(it, c, l, 2 * Tl * h * by);
    if (f8 && !it->cost->fp8_cs) { /* delayed scaling's amax histories */
        label(it, l, sizeof l, pfx, "amax-scale");
        elem(it, c, l, zs_fp8_amax_bytes());
    }
    return ZS_OK;
}

/* A frozen weight's backward (LoRA): the input-gradient GEMM only. With
 * no weight gradient a column-parallel layer has no input to gather
 * again and nothing to hide its input gradient's reduce-scatter under:
 * the reduce-scatter follows the GEMM on the critical path (the step
 * model's linear_bwd_of). */
static void gemm_bwd_frozen(zs_iter *it, chain *c, const char *name, double m, double n, double k,
                            int64_t extra_dep, int lin, const col_bwd *cb)
{
    char l[64];
    int f8 = lin && fp8_on(it);
    col_bwd_pre(it, c, cb, m, &extra_dep, "");
    if (f8)
        fp8_cast(it, c, "", 1, name, m * n);
    label(it, l, sizeof l, name, "-dgrad");
    gemm_prec(it, c, l, m, k, n, extra_dep, f8);
    if (cb) {
        label(it, l, sizeof l, "tp-rs-d", cb->name);
        tp_coll(it, c, l, ZS_COLL_REDUCESCATTER, cb->rs_bytes);
    }
}

/* A backward GEMM is the input-gradient and the weight-gradient GEMMs;
 * lin: a layer's linear GEMM, in FP8 when the cost model says so (its
 * output gradient cast first). */
static void gemm_bwd_col(zs_iter *it, chain *c, const char *name, double m, double n, double k,
                         int64_t extra_dep, int lin, const col_bwd *cb)
{
    if (frozen(it)) {
        gemm_bwd_frozen(it, c, name, m, n, k, extra_dep, lin, cb);
        return;
    }
    char l[64];
    int f8 = lin && fp8_on(it);
    col_bwd_pre(it, c, cb, m, &extra_dep, "");
    if (f8)
        fp8_cast(it, c, "", 1, name, m * n);
    double t0 = 0, t1 = 0;
    int64_t ag = cb ? col_bwd_begin(it, c, cb, &t0) : -1, rs = -1;
    label(it, l, sizeof l, name, "-dgrad");
    gemm_prec(it, c, l, m, k, n, extra_dep, f8);
    if (cb)
        rs = col_bwd_mid(it, c, cb, t0, &t1);
    label(it, l, sizeof l, name, "-wgrad");
    gemm_prec(it, c, l, k, n, m, ag, f8);
    if (cb)
        col_bwd_end(it, c, cb, rs, t1);
}

static void gemm_bwd_lin(zs_iter *it, chain *c, const char *name, double m, double n, double k,
                         int64_t extra_dep, int lin)
{
    gemm_bwd_col(it, c, name, m, n, k, extra_dep, lin, NULL);
}

static void gemm_bwd(zs_iter *it, chain *c, const char *name, double m, double n, double k,
                     int64_t extra_dep)
{
    gemm_bwd_lin(it, c, name, m, n, k, extra_dep, 0);
}

/* A backward GEMM next to attention with mv of its m tokens moved: two
 * input-gradient GEMMs (before attention: the moved part first, marking
 * the moved tokens' entry; after it: the kept part first, then the moved
 * part after its results arrived), then the weight gradient over all. */
static void gemm_bwd_split(zs_iter *it, chain *c, int slot, const char *name, double m, double mv,
                           double n, double k, int before, int64_t kept_dep, int64_t moved_dep,
                           const col_bwd *cb)
{
    char l[64];
    if (mv <= 0) {
        gemm_bwd_col(it, c, name, m, n, k, kept_dep, 1, cb);
        return;
    }
    int f8 = fp8_on(it);
    if (!before)
        col_bwd_pre(it, c, cb, m - mv, &kept_dep, "");
    fp8_cast(it, c, "", 1, name, m * n);
    double t0 = 0, t1 = 0;
    int64_t ag = cb ? col_bwd_begin(it, c, cb, &t0) : -1, rs = -1;
    if (before) {
        label(it, l, sizeof l, name, "-dgrad-moved");
        gemm_prec(it, c, l, mv, k, n, -1, f8);
        it->entry_moved[slot] = c->last;
        it->dry_mark = c->t;
        label(it, l, sizeof l, name, "-dgrad");
        gemm_prec(it, c, l, m - mv, k, n, -1, f8);
    } else {
        label(it, l, sizeof l, name, "-dgrad");
        gemm_prec(it, c, l, m - mv, k, n, kept_dep, f8);
        it->dry_mark = c->t;
        col_bwd_pre(it, c, cb, mv, &moved_dep, "-moved");
        label(it, l, sizeof l, name, "-dgrad-moved");
        gemm_prec(it, c, l, mv, k, n, moved_dep, f8);
    }
    if (cb)
        rs = col_bwd_mid(it, c, cb, t0, &t1);
    label(it, l, sizeof l, name, "-wgrad");
    gemm_prec(it, c, l, k, n, m, ag, f8);
    if (cb)
        col_bwd_end(it, c, cb, rs, t1);
}

/* Backward ops before attention backward (MLP, O projection). */
static void bwd_pre(zs_iter *it, body *b, chain *c, int slot)
{
    const zs_model *m = it->m;
    double T = tokens(it, b->micro, slot), Tl = T / it->tp, h = m->hidden, by = m->dtype_bytes;
    double ad = (double)m->heads * m->head_dim / it->tp;
    elem(it, c, "residual-bwd", 2 * Tl * h * by);
    tp_coll(it, c, "tp-ag-mlp-bwd", ZS_COLL_ALLGATHER, Tl * h * by);
    if (zs_model_is_moe(m)) {
        double load = it->dry ? 1 : it->moe_load[c->rank];
        double Tk = T * m->top_k, f = (double)m->expert_ffn / it->tp;
        coll(it, c, "moe-combine-bwd", it->dry ? 0 : b->ep_group[slot], it->dry_ep,
             ZS_COLL_ALLTOALL, Tk * h * by);
        gemm_bwd(it, c, "expert-down", Tk * load, h, f, -1);
        elem(it, c, "expert-swiglu-bwd", 4 * Tk * load * f * by);
        gemm_bwd(it, c, "expert-gate-up", Tk * load, 2 * f, h, -1);
        coll(it, c, "moe-dispatch-bwd", it->dry ? 0 : b->ep_group[slot], it->dry_ep,
             ZS_COLL_ALLTOALL, Tk * h * by);
        gemm_bwd(it, c, "moe-router", T, m->experts, h, -1);
    } else {
        double f = (double)m->ffn / it->tp;
        int gated = zs_model_mlp(m) == ZS_MLP_SWIGLU;
        gemm_bwd_lin(it, c, "mlp-down", T, h, f, -1, 1);
        /* GELU and squared ReLU read the input and the gradient and write
         * one gradient */
        elem(it, c, gated ? "swiglu-bwd" : "activation-bwd", (gated ? 4 : 3) * T * f * by);
        col_bwd cb = {"mlp", Tl * h * gather_bytes(it), Tl * h * by, 0, NULL};
        gemm_bwd_col(it, c, gated ? "mlp-gate-up" : "mlp-up", T, (gated ? 2 : 1) * f, h, -1, 1,
                     &cb);
    }
    if (zs_model_is_moe(m))
        tp_coll(it, c, "tp-rs-mlp-bwd", ZS_COLL_REDUCESCATTER, Tl * h * by);
    elem(it, c, "norm2-bwd", 3 * Tl * h * by);
    tp_coll(it, c, "tp-ag-attn-bwd", ZS_COLL_ALLGATHER, Tl * h * by);
    double mv = moved(it, b->micro, slot);
    gemm_bwd_split(it, c, slot, "o-proj", T, mv, h, ad, 1, -1, -1, NULL);
    it->entry[cur_ix(it, slot)] = c->last;
    if (mv <= 0)
        it->entry_moved[slot] = c->last;
    it->exit[cur_ix(it, slot)] = -1;
    it->exit_moved[slot] = -1;
}

/* LoRA's adapter backward on T tokens, last op first, as the step model
 * runs it (zs_step.c, lora_bwd): neither linear runs sequence-parallel
 * itself, so the input gradients are all-reduced over TP, linear_in's
 * under its weight-gradient GEMM (issued after its input-gradient GEMM,
 * waited for after the weight gradient's), then reduce-scattered back to
 * the sequence shards and added to the QKV projection's. */
static void lora_bwd(zs_iter *it, chain *c, double T, int64_t *dep)
{
    double r = it->sp->lora, tp = it->tp, h = it->m->hidden, by = it->m->dtype_bytes;
    double qkv_n = qkv_cols(it), out = T * qkv_n;
    elem_dep(it, c, "lora-scale-bwd", 2 * out * by, *dep);
    *dep = -1; /* the op waited for it */
    gemm(it, c, "lora-out-dgrad", T, r, qkv_n, -1);
    gemm(it, c, "lora-out-wgrad", qkv_n, r, T, -1);
    tp_coll(it, c, "tp-ar-dlora-out", ZS_COLL_ALLREDUCE, T * r * by);
    gemm(it, c, "lora-in-dgrad", T, h, r / tp, -1);
    double t0 = c->t;
    int64_t ar = -1;
    if (it->tp > 1 && !it->dry)
        ar = tp_async(it, c, "tp-ar-dlora-in", ZS_COLL_ALLREDUCE, T * h * by, c->last);
    gemm(it, c, "lora-in-wgrad", r / tp, h, T, -1);
    if (it->tp > 1 && it->dry) {
        double a = dry_tp(it, ZS_COLL_ALLREDUCE, T * h * by);
        if (a > c->t - t0)
            c->t = t0 + a;
    } else if (ar >= 0) {
        c->last = ar; /* the compute stream keeps the GEMM's order */
    }
    tp_coll(it, c, "tp-rs-dlora-input", ZS_COLL_REDUCESCATTER, T / tp * h * by);
    elem(it, c, "lora-grad-add", 3 * T / tp * h * by);
}

/* ---- ZeRO-3 ------------------------------------------------------------------
 * As PyTorch FSDP2 runs it (torchtitan) and the step model prices it
 * (zs_megatron_step.c, dp_comm_fsdp): the weights stay sharded over the DP
 * group and are all-gathered in every micro-batch: the root module's (the
 * embedding, final norm and LM head of the chunk) at the micro-batch's
 * start, each layer's before its forward and again before its backward,
 * except the chunk's last layer, kept from its forward. The next layer's
 * gather is issued as a layer starts (FSDP2's prefetch, one layer ahead)
 * and the next layer waits for it, then copies the weights out of the
 * gather buffer on the compute stream (FSDPParamGroup.wait_for_unshard ->
 * foreach_all_gather_copy_out, the step model's fsdp-copy-out). Gradients
 * are reduce-scattered after each layer's backward in every micro-batch,
 * the root's after the chunk's backward; the optimizer updates the shards
 * and no gather follows it. Gathers and reduce-scatters share the comm
 * stream in the order they are issued: FSDP2 (and Megatron-FSDP) run both
 * through one process group, one NCCL communicator, which runs one
 * collective at a time whatever CUDA stream posts it (pytorch/pytorch
 * #177015, #186335). */
static int zero3_on(const zs_iter *it)
{
    return !it->dry && it->zero3;
}

/* Per slot: gathers `params` (per TP rank) over the DP group once the
 * chain's last op is done (b->param_ag: the gather to wait for). The
 * gather depends on a join that takes no time: inside a repeated layer
 * segment the chain's last op before it is the previous segment's, and the
 * join, after the previous layer on the compute stream, holds the gather
 * until that layer is done. */
static void zero3_gather(zs_iter *it, body *b, chain *ch, const char *label, double params)
{
    if (params <= 0)
        return;
    b->ag_params = params;
    for (int sl = 0; sl < it->nslots; sl++) {
        int n = it->s->groups[b->dp_group[sl]].n;
        elem_t(it, &ch[sl], "zero3-prefetch", 0, 0, -1);
        int64_t deps[1] = {ch[sl].last};
        b->param_ag[sl] = zs_sched_coll(it->s, ch[sl].rank, ZS_STREAM_COMM, label, b->dp_group[sl],
                                        ZS_COLL_ALLGATHER, params * it->m->dtype_bytes / n, deps,
                                        ch[sl].last >= 0);
    }
}

/* Per slot: the compute stream waits for the pending gather and, under
 * FSDP2, copies its weights out (FSDP1 and Megatron-FSDP gather in place:
 * a wait that takes no time). */
static void zero3_wait(zs_iter *it, body *b, chain *ch)
{
    int copy = it->sp->fsdp == ZS_FSDP2;
    for (int sl = 0; sl < it->nslots; sl++)
        if (b->param_ag[sl] >= 0) {
            elem_dep(it, &ch[sl], copy ? "fsdp-copy-out" : "fsdp-wait",
                     copy ? 2 * b->ag_params * it->m->dtype_bytes : 0, b->param_ag[sl]);
            b->param_ag[sl] = -1;
        }
}

/* FSDP1: before a reduce-scatter of `params` gradients, autograd's
 * concatenation of the parameter views' gradients into the flat gradient,
 * on the compute stream. */
static void fsdp1_grad_cat(zs_iter *it, chain *c, double params)
{
    if (zero3_on(it) && it->sp->fsdp == ZS_FSDP1 && params > 0)
        elem(it, c, "fsdp1-grad-cat", 2 * params * it->m->dtype_bytes);
}

/* Weights outside the layers a chunk holds, per TP rank: the embedding on
 * the first (emb_params), the final norm and the LM head (or, tied and on
 * another stage, its copy of the embedding) on the last (head_params);
 * together FSDP's root module (root_params). */
static double emb_params(const zs_iter *it, const body *b)
{
    return chunk_first(b) ? (double)it->m->vocab * it->m->hidden / it->tp : 0;
}
static double head_params(const zs_iter *it, const body *b)
{
    const zs_model *m = it->m;
    if (!chunk_last(it, b))
        return 0;
    double emb = m->tied_embeddings && chunk_first(b) ? 0 : (double)m->vocab * m->hidden;
    return (m->hidden + emb) / it->tp;
}
static double root_params(const zs_iter *it, const body *b)
{
    return emb_params(it, b) + head_params(it, b);
}

/* Weights of one layer on one GPU: what ZeRO-3 gathers, LoRA or not. */
static double layer_params(const zs_iter *it)
{
    return zs_model_params_per_layer(it->m) / it->tp;
}

/* Parameters of one layer whose gradients the DP group synchronises, on
 * one GPU: the layer's, or with LoRA its adapters'. */
static double synced_params_per_layer(const zs_iter *it)
{
    return zs_step_trained_params_per_layer(it->m, it->sp->lora) / it->tp;
}

/* Whether the gradients of this backward are synchronised: in the last
 * micro-batch (ZeRO-3: in every one). */
static int grad_sync_now(const zs_iter *it, const body *b)
{
    return b->last_micro || zero3_on(it);
}

/* Synchronises `params` gradients (per TP rank) of a slot over its DP group
 * on the comm stream once the chain's last op is done: an all-reduce, or
 * from ZeRO-1 on a reduce-scatter (Megatron's distributed optimizer
 * reduce-scatters the gradients and all-gathers the updated parameters;
 * DeepSpeed's ZeRO-1 and 2 reduce-scatter by default, `reduce_scatter:
 * true`), as the step model prices them (zs_megatron_step.c). */
static void grad_sync(zs_iter *it, body *b, chain *c, int slot, int root, double params)
{
    if (it->dry || params <= 0)
        return;
    static const char *const names[2][2] = {{"grad-all-reduce", "grad-all-reduce-root"},
                                            {"grad-reduce-scatter", "grad-reduce-scatter-root"}};
    int rs = it->sp->zero_stage >= 1, n = it->s->groups[b->dp_group[slot]].n;
    double bytes = params * it->m->dtype_bytes;
    int64_t deps[1] = {c->last};
    zs_sched_coll(it->s, c->rank, ZS_STREAM_COMM, names[rs][root], b->dp_group[slot],
                  rs ? ZS_COLL_REDUCESCATTER : ZS_COLL_ALLREDUCE, rs ? bytes / n : bytes, deps,
                  c->last >= 0);
}

static int bwd_post(zs_iter *it, body *b, chain *c, int slot)
{
    const zs_model *m = it->m;
    double T = tokens(it, b->micro, slot), Tl = T / it->tp, h = m->hidden, by = m->dtype_bytes;
    double qkv_n = (double)(m->heads + 2 * m->kv_heads) * m->head_dim / it->tp;
    int64_t ex = it->exit[cur_ix(it, slot)];
    double mv = moved(it, b->micro, slot);
    if (!it->dry && (ex < 0 || (mv > 0 && it->exit_moved[slot] < 0)))
        return zs_err_set(it->e, ZS_EINVALID, "attention emitter", NULL,
                          "slot %d has no attention backward exit op%s", slot,
                          ex < 0 ? "" : " for its moved tokens");
    /* RoPE's backward on the query and key gradients before each part's
     * QKV input-gradient GEMM */
    col_bwd cb = {"attn", Tl * h * gather_bytes(it), Tl * h * by, rope_bytes(it), "rope-bwd"};
    if (frozen(it)) {
        /* the adapter's output gradient is the projection's, after RoPE's
         * backward (never with moved tokens) */
        col_bwd_pre(it, c, &cb, T, &ex, "");
        cb.pre_bpt = 0;
        lora_bwd(it, c, T, &ex);
    }
    gemm_bwd_split(it, c, slot, "qkv", T, mv, qkv_n, h, 0, ex, it->exit_moved[slot], &cb);
    elem(it, c, "norm1-bwd", 3 * Tl * h * by);
    /* After the last nano-batch the layer's gradients are final: sync them
     * while the next layer's backward runs. */
    if (grad_sync_now(it, b) && !(it->nano > 1 && it->cur < it->nano - 1)) {
        double params = synced_params_per_layer(it);
        fsdp1_grad_cat(it, c, params);
        grad_sync(it, b, c, slot, 0, params);
    }
    return ZS_OK;
}

/* ---- chunks ------------------------------------------------------------------ */

static void begin_all(zs_iter *it, int stage, int repeat)
{
    for (int sl = 0; sl < it->nslots; sl++)
        zs_schedule_begin_segment(it->s, zs_iter_rank(it, stage, sl), repeat);
}

/* Runs the planner's attention emitter for every slot of the stage, once
 * the ops it follows are in. */
static int attention(zs_iter *it, body *b, int backward)
{
    int rc = zs_schedule_check(it->s, it->e);
    if (!rc)
        rc = it->sp->emit_attn(it->sp->arg, it, b->stage, b->micro, backward, it->e);
    /* An emitter that did not check its appends stops here all the same. */
    if (!rc)
        rc = zs_schedule_check(it->s, it->e);
    return rc;
}

static int layer_forward(zs_iter *it, body *b, chain *ch, const char *pfx)
{
    int rc = ZS_OK;
    int nn = it->nano > 1 ? it->nano : 1;
    if (!pfx[0])
        reset_layer_first(it);
    for (int k = 0; k < nn; k++) {
        it->cur = nn > 1 ? k : -1;
        for (int sl = 0; sl < it->nslots; sl++) {
            mark_layer_first(it, sl, ch[sl].rank);
            fwd_pre(it, b, &ch[sl], sl, pfx);
        }
    }
    it->cur = -1;
    rc = attention(it, b, 0);
    for (int k = 0; k < nn && !rc; k++) {
        it->cur = nn > 1 ? k : -1;
        for (int sl = 0; sl < it->nslots && !rc; sl++) {
            int64_t ex = it->exit[cur_ix(it, sl)];
            ch[sl].last = ex > ch[sl].last ? ex : ch[sl].last;
            rc = fwd_post(it, b, &ch[sl], sl, pfx);
        }
    }
    it->cur = -1;
    return rc;
}

static int layer_backward(zs_iter *it, body *b, chain *ch)
{
    int rc = ZS_OK;
    reset_layer_first(it);
    if (it->sp->recompute == ZS_RECOMPUTE_FULL) {
        int64_t *from = malloc(sizeof(int64_t) * (size_t)it->nslots);
        if (!from)
            return zs_err_set(it->e, ZS_ENOMEM, NULL, NULL, "out of memory");
        for (int sl = 0; sl < it->nslots; sl++)
            from[sl] = it->s->ranks[ch[sl].rank].nops;
        rc = layer_forward(it, b, ch, "recompute-");
        /* The emitter may have written to any rank of the stage. */
        for (int sl = 0; sl < it->nslots && !rc; sl++)
            zs_schedule_flag_ops(it->s, ch[sl].rank, from[sl], ZS_OPF_RECOMPUTE);
        free(from);
        if (rc)
            return rc;
    }
    int nn = it->nano > 1 ? it->nano : 1;
    for (int k = 0; k < nn; k++) {
        it->cur = nn > 1 ? k : -1;
        for (int sl = 0; sl < it->nslots; sl++) {
            mark_layer_first(it, sl, ch[sl].rank);
            bwd_pre(it, b, &ch[sl], sl);
        }
    }
    it->cur = -1;
    rc = attention(it, b, 1);
    for (int k = 0; k < nn && !rc; k++) {
        it->cur = nn > 1 ? k : -1;
        for (int sl = 0; sl < it->nslots && !rc; sl++) {
            int64_t ex = it->exit[cur_ix(it, sl)];
            ch[sl].last = ex > ch[sl].last ? ex : ch[sl].last;
            rc = bwd_post(it, b, &ch[sl], sl);
        }
    }
    it->cur = -1;
    return rc;
}

/* Layer markers at the start of the stage's repeated layer segment, so
 * timelines can name each op's layer. dir 0: forward, counting up from the
 * stage's first layer; 1: backward, counting down from its last; -1: the
 * layers are over (layer -1). skip: layers of the chunk before the
 * segment's first. */
static void layer_markers(zs_iter *it, chain *ch, int dir, const body *b, int skip)
{
    int first = chunk_first_layer(it, b), n = chunk_layers(it, b);
    zs_marker_kind kind = dir > 0 ? ZS_MARK_LAYER_DOWN : ZS_MARK_LAYER;
    int value = dir < 0 ? -1 : dir > 0 ? first + n - 1 - skip : first + skip;
    for (int sl = 0; sl < it->nslots; sl++)
        zs_sched_marker(it->s, ch[sl].rank, kind, value);
}

/* A chunk's first segment: markers, then the embedding, the LM head's
 * backward or the pipeline receive. */
static void chunk_prologue(zs_iter *it, body *b, chain *ch)
{
    int stage = b->stage, first = chunk_first(b), last = chunk_last(it, b);
    const zs_model *m = it->m;
    double h = m->hidden, by = m->dtype_bytes;
    begin_all(it, stage, 1);
    for (int sl = 0; sl < it->nslots; sl++) {
        zs_sched_marker(it->s, ch[sl].rank, ZS_MARK_MICROBATCH, b->micro);
        zs_sched_marker(it->s, ch[sl].rank, ZS_MARK_PHASE,
                        b->backward ? ZS_PHASE_BACKWARD : ZS_PHASE_FORWARD);
    }
    if (zero3_on(it) && !b->backward) {
        /* the root's weights before anything runs, the first layer's
         * while the embedding runs or the activations arrive */
        zero3_gather(it, b, ch, "zero3-ag-root", root_params(it, b));
        zero3_wait(it, b, ch);
        zero3_gather(it, b, ch, "zero3-ag", layer_params(it));
    }
    for (int sl = 0; sl < it->nslots; sl++) {
        chain *c = &ch[sl];
        double T = tokens(it, b->micro, sl), Tl = T / it->tp;
        if (!b->backward && first) {
            /* each TP rank looks up its vocabulary shard's rows; sequence
             * parallelism reduce-scatters the sum */
            elem(it, c, "embedding", 2 * Tl * h * by);
            tp_coll(it, c, "tp-rs-embedding", ZS_COLL_REDUCESCATTER, Tl * h * by);
        } else if (b->backward && last) {
            double V = (double)m->vocab / it->tp;
            elem(it, c, "cross-entropy-bwd", ZS_XENT_BWD_BYTES * T * V);
            col_bwd cb = {"lm-head", Tl * h * by, Tl * h * by, 0, NULL};
            gemm_bwd_col(it, c, "lm-head", T, V, h, -1, 0, &cb);
            elem(it, c, "final-norm-bwd", 3 * Tl * h * by);
            /* the LM head's gradients are final: their bucket goes now
             * (ZeRO-3: with the root's, in the epilogue) */
            if (!zero3_on(it) && grad_sync_now(it, b) && !frozen(it))
                grad_sync(it, b, c, sl, 1, head_params(it, b));
        } else {
            /* Activations (forward) or their gradients (backward) arrive from
             * the neighbouring stage. */
            int from = (b->backward ? stage + 1 : stage - 1 + it->pp) % it->pp;
            int64_t op = zs_sched_recv(
                it->s, c->rank, it->pp_stream, b->backward ? "pp-recv-grad" : "pp-recv-act",
                zs_iter_rank(it, from, sl), pp_tag(it, b, b->backward, b->backward), Tl * h * by,
                NULL, 0);
            if (op >= 0)
                c->last = op; /* the chunk's first compute op waits for it */
        }
    }
    zero3_wait(it, b, ch);
}

/* A chunk's last segment: the LM head and loss, the embedding's backward or
 * the pipeline send. */
static void chunk_epilogue(zs_iter *it, body *b, chain *ch)
{
    int stage = b->stage, first = chunk_first(b), last = chunk_last(it, b);
    const zs_model *m = it->m;
    double h = m->hidden, by = m->dtype_bytes;
    begin_all(it, stage, 1);
    layer_markers(it, ch, -1, b, 0);
    for (int sl = 0; sl < it->nslots; sl++) {
        chain *c = &ch[sl];
        double T = tokens(it, b->micro, sl), Tl = T / it->tp;
        if (!b->backward && last) {
            double V = (double)m->vocab / it->tp;
            elem(it, c, "final-norm", 2 * Tl * h * by);
            tp_coll(it, c, "tp-ag-lm-head", ZS_COLL_ALLGATHER, Tl * h * by);
            gemm(it, c, "lm-head", T, V, h, -1);
            /* vocab-parallel cross-entropy on fp32 logits: its passes, and
             * three all-reduces of one fp32 value per token over TP */
            elem(it, c, "cross-entropy", ZS_XENT_FWD_BYTES * T * V);
            for (int i = 0; i < 3; i++)
                tp_coll(it, c, "tp-ar-cross-entropy", ZS_COLL_ALLREDUCE, T * 4.0);
        } else if (b->backward && first) {
            if (frozen(it)) /* LoRA: no gradient for the embedding */
                continue;
            tp_coll(it, c, "tp-ag-dembedding", ZS_COLL_ALLGATHER, Tl * h * by);
            elem(it, c, "embedding-bwd", 2 * Tl * h * by);
        } else {
            int to = (b->backward ? stage - 1 + it->pp : stage + 1) % it->pp;
            int64_t deps[1] = {c->last};
            zs_sched_send(it->s, c->rank, it->pp_stream,
                          b->backward ? "pp-send-grad" : "pp-send-act", zs_iter_rank(it, to, sl),
                          pp_tag(it, b, !b->backward, b->backward), Tl * h * by, deps,
                          c->last >= 0);
        }
        /* The embedding's gradients (ZeRO-3: the whole root's, after the
         * chunk's backward, FSDP's root post-backward) */
        if (b->backward && grad_sync_now(it, b) && !frozen(it)) {
            fsdp1_grad_cat(it, c, root_params(it, b));
            grad_sync(it, b, c, sl, 1, zero3_on(it) ? root_params(it, b) : emb_params(it, b));
        }
    }
}

/* One micro-batch through the stage's layers, forward or backward. */
static int chunk(zs_iter *it, body *b, chain *ch)
{
    chunk_prologue(it, b, ch);
    /* ZeRO-3: every layer but the last gathers the next one's weights, so
     * the last is a segment of its own. */
    int n = chunk_layers(it, b), split = zero3_on(it) && n > 1, rc = ZS_OK;
    for (int part = 0; part <= split && !rc; part++) {
        begin_all(it, b->stage, split && !part ? n - 1 : split ? 1 : n);
        layer_markers(it, ch, b->backward, b, part ? n - 1 : 0);
        if (split && !part)
            zero3_gather(it, b, ch, b->backward ? "zero3-ag-bwd" : "zero3-ag", layer_params(it));
        rc = b->backward ? layer_backward(it, b, ch) : layer_forward(it, b, ch, "");
        if (split && !part)
            zero3_wait(it, b, ch);
    }
    if (rc)
        return rc;
    chunk_epilogue(it, b, ch);
    return zs_schedule_check(it->s, it->e);
}

/* The optimizer step after the last backward (and the ZeRO weight
 * all-gather that follows it). */
static int optimizer(zs_iter *it, body *b, chain *ch, int stage)
{
    const zs_model *m = it->m;
    /* LoRA: Adam and the ZeRO gather over the adapters alone */
    double trained = frozen(it) ? zs_step_trained_params(m, it->sp->lora) : zs_model_params(m);
    double params = trained / ((double)it->tp * it->pp);
    begin_all(it, stage, 1);
    for (int sl = 0; sl < it->nslots; sl++) {
        chain *c = &ch[sl];
        int n = it->s->groups[b->dp_group[sl]].n;
        double shard = it->sp->zero_stage >= 1 ? params / n : params;
        zs_sched_marker(it->s, c->rank, ZS_MARK_PHASE, ZS_PHASE_OPTIMIZER);
        /* Wait for every gradient collective of the comm stream: depend on
         * the stream's last op. */
        const zs_rank_prog *p = &it->s->ranks[c->rank];
        int64_t last_comm = -1;
        for (int64_t i = p->nops - 1; i >= 0; i--)
            if (p->ops[i].stream == ZS_STREAM_COMM) {
                last_comm = i;
                break;
            }
        int64_t deps[2];
        int nd = chain_deps(c, last_comm, deps);
        /* Adam on fp32 master weights: read and write 16 bytes per parameter. */
        double bytes = shard * 32.0;
        int64_t op = zs_sched_elementwise(it->s, c->rank, ZS_STREAM_COMPUTE, "optimizer", bytes,
                                          zs_cost_elementwise(it->cost, bytes), deps, nd);
        if (op >= 0)
            c->last = op;
        if (it->sp->zero_stage >= 1 && it->sp->zero_stage < 3 && n > 1) {
            /* On the comm stream, like every other collective of the DP
             * group (one communicator, one stream). */
            int64_t d1[1] = {c->last};
            zs_sched_coll(it->s, c->rank, ZS_STREAM_COMM, "zero-param-all-gather", b->dp_group[sl],
                          ZS_COLL_ALLGATHER, shard * m->dtype_bytes, d1, 1);
        }
    }
    return zs_schedule_check(it->s, it->e);
}

/* ---- groups ------------------------------------------------------------------ */

/* Expert parallelism inside a node: the stage's slots on the same node
 * form one group. epid: per slot, the index of its group among them;
 * returns how many there are. */
static int ep_groups(zs_iter *it, int stage, body *b, int *ranks, int *epid)
{
    const zs_cluster *cl = &it->cost->cluster;
    int ngroups = 0;
    for (int sl = 0; sl < it->nslots; sl++)
        epid[sl] = -1;
    for (int sl = 0; sl < it->nslots; sl++) {
        if (epid[sl] >= 0)
            continue;
        int node = zs_cluster_node_of(cl, zs_iter_rank(it, stage, sl)), n = 0;
        for (int s2 = sl; s2 < it->nslots; s2++)
            if (epid[s2] < 0 && zs_cluster_node_of(cl, zs_iter_rank(it, stage, s2)) == node) {
                epid[s2] = ngroups;
                ranks[n++] = zs_iter_rank(it, stage, s2);
            }
        int eg = zs_schedule_group_tagged(it->s, ranks, n, ZS_GROUP_TAG_EP);
        for (int s2 = sl; s2 < it->nslots; s2++)
            if (epid[s2] == ngroups)
                b->ep_group[s2] = eg;
        ngroups++;
    }
    return ngroups;
}

static int make_groups(zs_iter *it, int stage, body *b)
{
    int *ranks = malloc(sizeof(int) * (size_t)(it->nslots + it->tp));
    int *epid = malloc(sizeof(int) * (size_t)it->nslots);
    if (!ranks || !epid) {
        free(ranks);
        free(epid);
        return zs_err_set(it->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    /* Gradient sync: every slot of the stage holds a replica of its weights. */
    for (int sl = 0; sl < it->nslots; sl++)
        ranks[sl] = zs_iter_rank(it, stage, sl);
    int g = zs_schedule_group_tagged(it->s, ranks, it->nslots, ZS_GROUP_TAG_DP);
    for (int sl = 0; sl < it->nslots; sl++)
        b->dp_group[sl] = g;
    /* TP groups. */
    for (int sl = 0; sl < it->nslots; sl++) {
        int r0 = zs_iter_rank(it, stage, sl);
        for (int t = 0; t < it->tp; t++)
            ranks[t] = r0 + t;
        it->tp_group[r0] = zs_schedule_group_tagged(it->s, ranks, it->tp, ZS_GROUP_TAG_TP);
    }
    int ngroups = ep_groups(it, stage, b, ranks, epid);
    int rc = zs_schedule_check(it->s, it->e);
    if (!rc && zs_model_is_moe(it->m))
        moe_loads(it, stage, epid, ngroups);
    free(ranks);
    free(epid);
    return rc;
}

/* Copies every TP group's rank-0 program to its other ranks, through the
 * builder: TP groups stay, every other group moves with the TP rank. */
static int replicate_tp(zs_iter *it)
{
    zs_schedule *s = it->s;
    if (it->tp == 1)
        return ZS_OK;
    int32_t ng0 = s->ngroups;
    int *map = malloc(sizeof(int) * (size_t)(ng0 > 0 ? ng0 : 1));
    int *ranks = malloc(sizeof(int) * (size_t)s->nranks);
    if (!map || !ranks) {
        free(map);
        free(ranks);
        return zs_err_set(it->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int o = 1; o < it->tp; o++) {
        for (int32_t g = 0; g < ng0; g++) {
            const zs_group *gr = &s->groups[g];
            int inside = gr->n == it->tp && gr->ranks[0] % it->tp == 0 &&
                         gr->ranks[gr->n - 1] == gr->ranks[0] + it->tp - 1;
            if (inside) {
                map[g] = g;
                continue;
            }
            int n = gr->n, tag = gr->tag;
            for (int i = 0; i < n; i++)
                ranks[i] = gr->ranks[i] + o;
            map[g] = zs_schedule_group_tagged(s, ranks, n, tag);
        }
        for (int r0 = 0; r0 < s->nranks; r0 += it->tp)
            zs_schedule_copy_rank(s, r0, r0 + o, o, map, ng0);
    }
    free(map);
    free(ranks);
    return zs_schedule_check(s, it->e);
}

/* The k-th forward (backward) chunk of a stage in Megatron-LM's
 * interleaved schedule: its micro-batch and model chunk
 * (get_model_chunk_id, get_microbatch_id_in_model_chunk). */
static void interleaved_chunk(const zs_iter *it, int k, int backward, body *b)
{
    int group = it->pp * it->vp, in_group = k % group;
    b->chunk = in_group / it->pp;
    if (backward)
        b->chunk = it->vp - 1 - b->chunk;
    b->micro = k / group * it->pp + in_group % it->pp;
    b->backward = backward;
    b->last_micro = backward && b->micro == it->M - 1;
}

/* One stage's chunks in Megatron-LM's interleaved 1F1B order
 * (forward_backward_pipelining_with_interleaving): warm-up forwards, then
 * one forward and one backward in turn, then the remaining backwards. */
static int interleaved_order(zs_iter *it, body *b, chain *ch)
{
    int total = it->M * it->vp, warm;
    if (it->M == it->pp)
        warm = total; /* Megatron's "all warm-up" case */
    else {
        warm = (it->pp - b->stage - 1) * 2 + (it->vp - 1) * it->pp;
        if (warm > total)
            warm = total;
    }
    int rc = ZS_OK;
    for (int k = 0; k < warm && !rc; k++) {
        interleaved_chunk(it, k, 0, b);
        rc = chunk(it, b, ch);
    }
    for (int k = 0; k < total - warm && !rc; k++) {
        interleaved_chunk(it, k + warm, 0, b);
        if (!(rc = chunk(it, b, ch))) {
            interleaved_chunk(it, k, 1, b);
            rc = chunk(it, b, ch);
        }
    }
    for (int k = total - warm; k < total && !rc; k++) {
        interleaved_chunk(it, k, 1, b);
        rc = chunk(it, b, ch);
    }
    b->chunk = 0;
    return rc;
}

static int build(zs_iter *it)
{
    zs_schedule *s = it->s;
    int nsl = it->nslots;
    body b;
    memset(&b, 0, sizeof b);
    chain *ch = calloc((size_t)nsl, sizeof(chain));
    b.ep_group = calloc((size_t)nsl, sizeof(int));
    b.dp_group = calloc((size_t)nsl, sizeof(int));
    b.param_ag = malloc(sizeof(int64_t) * (size_t)nsl);
    if (!ch || !b.ep_group || !b.dp_group || !b.param_ag) {
        free(ch);
        free(b.ep_group);
        free(b.dp_group);
        free(b.param_ag);
        return zs_err_set(it->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    int rc = ZS_OK;
    for (int stage = 0; stage < it->pp && !rc; stage++) {
        if ((rc = make_groups(it, stage, &b)))
            break;
        for (int sl = 0; sl < nsl; sl++) {
            ch[sl].rank = zs_iter_rank(it, stage, sl);
            ch[sl].last = -1;
            b.param_ag[sl] = -1;
        }
        b.stage = stage;
        if (it->vp > 1) {
            rc = interleaved_order(it, &b, ch);
            if (!rc)
                rc = optimizer(it, &b, ch, stage);
            continue;
        }
        /* 1F1B: warm-up forwards, then one forward and one backward in
         * turn, then the remaining backwards. */
        int M = it->M, warm = it->pp - stage - 1;
        if (warm > M)
            warm = M;
        int f = 0, bk = 0;
        while (!rc && (f < M || bk < M)) {
            int do_fwd = f < M && (f < warm || f - bk < warm + 1);
            if (bk >= f)
                do_fwd = 1;
            b.micro = do_fwd ? f : bk;
            b.backward = !do_fwd;
            b.last_micro = !do_fwd && bk == M - 1;
            rc = chunk(it, &b, ch);
            if (do_fwd)
                f++;
            else
                bk++;
        }
        if (!rc)
            rc = optimizer(it, &b, ch, stage);
    }
    if (!rc)
        rc = replicate_tp(it);
    (void)s;
    free(ch);
    free(b.ep_group);
    free(b.dp_group);
    free(b.param_ag);
    return rc;
}

int zs_iter_build(zs_schedule *s, const zs_cost *cost, const zs_iter_spec *spec, zs_err *e)
{
    return zs_iter_build_nano(s, cost, spec, NULL, e);
}

static int build_with(zs_schedule *s, const zs_cost *cost, const zs_iter_spec *spec,
                      const zs_iter_nano_spec *nano, int vp, zs_err *e);

int zs_iter_build_nano(zs_schedule *s, const zs_cost *cost, const zs_iter_spec *spec,
                       const zs_iter_nano_spec *nano, zs_err *e)
{
    return build_with(s, cost, spec, nano, 1, e);
}

int zs_iter_build_interleaved(zs_schedule *s, const zs_cost *cost, const zs_iter_spec *spec, int vp,
                              zs_err *e)
{
    const zs_layout_dims *d = &spec->dims;
    if (vp < 1 || vp > ZS_ITER_MAX_VP)
        return zs_err_set(e, ZS_EINPUT, "vp", "use 1 to 64 model chunks per stage",
                          "vp=%d model chunks per stage", vp);
    /* Pipeline tags 3 .. 2 pp vp stay below the planners' (zs_iter_tag). */
    if (vp > 1 && d->pp * vp > 496)
        return zs_err_set(e, ZS_EINPUT, "vp", "use pp x vp <= 496 virtual stages",
                          "pp=%d x vp=%d virtual stages", d->pp, vp);
    if (vp > 1 && d->pp < 2)
        return zs_err_set(e, ZS_EINPUT, "vp", "interleave with pp >= 2, or use vp=1",
                          "vp=%d needs pipeline parallelism (pp=%d)", vp, d->pp);
    if (vp > 1 && cost->model.layers % (d->pp * vp) != 0)
        return zs_err_set(e, ZS_EINPUT, "vp", "choose pp x vp dividing the layers",
                          "pp=%d x vp=%d does not divide the model's %d layers", d->pp, vp,
                          cost->model.layers);
    if (vp > 1 && spec->micro_batches % d->pp != 0)
        return zs_err_set(e, ZS_EINPUT, "vp",
                          "use a multiple of pp micro-batches per DP rank (Megatron-LM's "
                          "interleaved schedule requires it)",
                          "%d micro-batches per DP rank with pp=%d", spec->micro_batches, d->pp);
    return build_with(s, cost, spec, NULL, vp, e);
}

static int build_with(zs_schedule *s, const zs_cost *cost, const zs_iter_spec *spec,
                      const zs_iter_nano_spec *nano, int vp, zs_err *e)
{
    int nn = nano && nano->n > 1 ? nano->n : 1;
    const zs_layout_dims *d = &spec->dims;
    const zs_model *m = &cost->model;
    if (d->tp < 1 || d->cp < 1 || d->pp < 1 || d->dp < 1 ||
        d->tp * d->cp * d->pp * d->dp != s->nranks)
        return zs_err_set(e, ZS_EINPUT, "parallel layout",
                          "choose tp x cp x pp x dp equal to the number of GPUs",
                          "tp=%d x cp=%d x pp=%d x dp=%d does not match %d GPUs", d->tp, d->cp,
                          d->pp, d->dp, s->nranks);
    if (m->heads % d->tp != 0 || (m->kv_heads % d->tp != 0 && d->tp % m->kv_heads != 0))
        return zs_err_set(e, ZS_EINPUT, "--tp", "use a TP degree that divides the heads",
                          "tp=%d does not divide %d heads / %d KV heads", d->tp, m->heads,
                          m->kv_heads);
    if (d->pp > m->layers)
        return zs_err_set(e, ZS_EINPUT, "--pp", "use at most one stage per layer",
                          "pp=%d exceeds the %d layers", d->pp, m->layers);
    if (spec->micro_batches < 1)
        return zs_err_set(e, ZS_EINPUT, "micro-batches", NULL, "need at least one micro-batch");
    if (nn > ZS_ITER_MAX_NANO)
        return zs_err_set(e, ZS_EINVALID, "nano-batches", NULL, "%d nano-batches (at most %d)", nn,
                          ZS_ITER_MAX_NANO);
    if (nn > 1 && spec->moved_tokens)
        return zs_err_set(e, ZS_EINVALID, "iteration builder", NULL,
                          "moved tokens and nano-batches cannot be combined");
    if (!zs_step_lora_rank_ok(m, spec->lora, d->tp))
        return zs_err_set(e, ZS_EINPUT, "lora",
                          "give a LoRA rank from 1 to the hidden size that tp divides (0: no LoRA)",
                          "LoRA rank %d with hidden %d and tp=%d", spec->lora, m->hidden, d->tp);
    if (spec->lora > 0 && spec->moved_tokens)
        return zs_err_set(e, ZS_EINVALID, "iteration builder", NULL,
                          "LoRA and moved tokens cannot be combined");
    zs_iter it;
    memset(&it, 0, sizeof it);
    it.s = s;
    it.cost = cost;
    it.sp = spec;
    it.m = m;
    it.tp = d->tp;
    it.cp = d->cp;
    it.pp = d->pp;
    it.dp = d->dp;
    it.nslots = d->dp * d->cp;
    it.M = spec->micro_batches;
    it.nano = nn;
    it.vp = vp;
    it.nano_tokens = nano ? nano->tokens : NULL;
    it.cur = -1;
    it.e = e;
    it.next_tag = 1000;
    it.tag_act = 1;
    it.tag_grad = 2;
    it.entry = malloc(sizeof(int64_t) * (size_t)it.nslots * it.nano);
    it.exit = malloc(sizeof(int64_t) * (size_t)it.nslots * it.nano);
    it.entry_moved = malloc(sizeof(int64_t) * (size_t)it.nslots);
    it.exit_moved = malloc(sizeof(int64_t) * (size_t)it.nslots);
    it.layer_first = malloc(sizeof(int64_t) * (size_t)it.nslots);
    it.moe_load = calloc((size_t)s->nranks, sizeof(double));
    it.tp_group = calloc((size_t)s->nranks, sizeof(int));
    int rc;
    if (!it.entry || !it.exit || !it.entry_moved || !it.exit_moved || !it.layer_first ||
        !it.moe_load || !it.tp_group) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    } else {
        it.pp_stream = ZS_STREAM_COMM;
        rc = ZS_OK;
        if (d->pp > 1 && (it.pp_stream = zs_schedule_add_stream(s, "pp")) < 0)
            rc = zs_err_set(e, ZS_EINVALID, "iteration builder",
                            "use at most 3 streams of your own with pipelining",
                            "no room for the pipeline stream");
        /* A planner that took every stream keeps the backward's TP
         * collectives on the compute stream, exposed (docs/methods.md) */
        it.tp_stream = ZS_STREAM_COMPUTE;
        if (!rc && d->tp > 1 && s->nstreams < ZS_MAX_STREAMS &&
            (it.tp_stream = zs_schedule_add_stream(s, "tp")) < 0)
            rc = zs_err_set(e, ZS_EINVALID, "iteration builder", NULL,
                            "no room for the tensor-parallel stream");
        it.zero3 = spec->zero_stage >= 3 && it.nslots > 1;
        s->dims = *d;
        s->layers = m->layers;
        s->heads = m->heads;
        s->micro_batches = spec->micro_batches;
        snprintf(s->model, sizeof s->model, "%s", m->name);
        snprintf(s->cluster, sizeof s->cluster, "%s", cost->cluster.name);
        snprintf(s->cost_desc, sizeof s->cost_desc, "%s", cost->desc);
        if (rc == ZS_OK)
            rc = build(&it);
    }
    free(it.entry);
    free(it.exit);
    free(it.entry_moved);
    free(it.exit_moved);
    free(it.layer_first);
    free(it.moe_load);
    free(it.tp_group);
    return rc;
}

int zs_iter_linear_time(const zs_cost *cost, int tp, int slots_per_node, double tokens,
                        double moved_tok, zs_iter_lin *out, zs_err *e)
{
    const zs_model *m = &cost->model;
    if (tp < 1 || m->heads % tp != 0 || !(tokens >= 0) || !(moved_tok >= 0) || moved_tok > tokens)
        return zs_err_set(e, ZS_EINVALID, "linear time", NULL, "bad tp %d or tokens %g (moved %g)",
                          tp, tokens, moved_tok);
    int64_t slot_ops[2] = {-1, -1};
    zs_iter_spec sp;
    memset(&sp, 0, sizeof sp);
    zs_iter it;
    memset(&it, 0, sizeof it);
    it.cost = cost;
    it.sp = &sp;
    it.m = m;
    it.tp = tp;
    it.cp = it.pp = it.dp = 1;
    it.nslots = 1;
    it.e = e;
    it.dry = 1;
    it.nano = 1;
    it.cur = -1;
    it.dry_ep = slots_per_node > 0 ? slots_per_node : 1;
    it.dry_tokens = tokens;
    it.dry_moved = moved_tok;
    it.entry = &slot_ops[0];
    it.exit = &slot_ops[1];
    int64_t mv_ops[2] = {-1, -1};
    it.entry_moved = &mv_ops[0];
    it.exit_moved = &mv_ops[1];
    body b;
    memset(&b, 0, sizeof b);
    zs_iter_lin r;
    chain c = {0, -1, 0};
    fwd_pre(&it, &b, &c, 0, "");
    r.fwd_entry = c.t;
    r.fwd_moved = moved_tok > 0 ? it.dry_mark : c.t;
    c.t = 0;
    fwd_post(&it, &b, &c, 0, "");
    r.fwd_post = c.t;
    r.fwd_kept = it.dry_mark;
    c.t = 0;
    bwd_pre(&it, &b, &c, 0);
    r.bwd_entry = c.t;
    r.bwd_moved = moved_tok > 0 ? it.dry_mark : c.t;
    c.t = 0;
    it.dry_mark = -1;
    bwd_post(&it, &b, &c, 0);
    r.bwd_post = c.t;
    /* Without moved tokens the QKV backward is one input-gradient GEMM:
     * "kept" ends with the whole backward GEMM pair. */
    r.bwd_kept = it.dry_mark >= 0 ? it.dry_mark : c.t;
    *out = r;
    return ZS_OK;
}
