/* Shared lowering of the 4D methods: see zs_plan4d.h.
 *
 * Per packed sequence the shards of both shardings are built up front
 * (token ranges per slot, attention blocks per slot and ring step), priced
 * with the cost model (kernel latency of the slowest slot per step, tile
 * padding included), and the chosen one is kept; the attention emitter then
 * replays it for every stage, micro-batch and direction. */
#include "zs_plan4d.h"

#include <stdlib.h>
#include <string.h>

#include "zs_iteration.h"
#include "zs_step.h"

/* WLB-LLM's Table 1: (model, context, GPUs) -> (TP, CP, PP, DP). */
static const struct {
    const char *model;
    int32_t ctx;
    int gpus, tp, cp, pp, dp;
} table1[] = {
    {"llama-550m", 65536, 32, 2, 2, 4, 2},   {"llama-550m", 131072, 32, 2, 4, 4, 1},
    {"llama-7b", 65536, 32, 4, 2, 4, 1},     {"llama-7b", 131072, 64, 8, 2, 4, 1},
    {"llama-30b", 65536, 64, 8, 2, 4, 1},    {"llama-30b", 131072, 128, 8, 4, 4, 1},
    {"llama3-70b", 65536, 256, 16, 4, 4, 1}, {"llama3-70b", 131072, 256, 16, 4, 4, 1},
};

#define TABLE1 "WLB-LLM's Table 1 when model, window and GPU count match, else "
const zs_opt_spec zs_p4d_opt_tp = {.key = "tp",
                                   .type = ZS_OPT_INT,
                                   .min = 1,
                                   .max = 64,
                                   .computed = TABLE1 "min(8, GPUs per node)",
                                   .help = "tensor-parallel degree (divides the GPUs of a node)"};
const zs_opt_spec zs_p4d_opt_cp = {.key = "cp",
                                   .type = ZS_OPT_INT,
                                   .min = 1,
                                   .max = 1024,
                                   .computed = TABLE1 "2",
                                   .help = "context-parallel degree"};
const zs_opt_spec zs_p4d_opt_pp = {.key = "pp",
                                   .type = ZS_OPT_INT,
                                   .min = 1,
                                   .max = 256,
                                   .computed = TABLE1 "4",
                                   .help = "pipeline stages"};
const zs_opt_spec zs_p4d_opt_vp = {.key = "vp",
                                   .type = ZS_OPT_INT,
                                   .min = 1,
                                   .max = 64,
                                   .def = 1,
                                   .help = "model chunks per pipeline stage: interleaved 1F1B "
                                           "(Megatron-LM's virtual pipeline; needs micro a "
                                           "multiple of pp)"};
const zs_opt_spec zs_p4d_opt_window = {.key = "window",
                                       .type = ZS_OPT_INT,
                                       .min = 1,
                                       .max = INT32_MAX / 4,
                                       .def = 131072,
                                       .help = "context window (tokens of one packed sequence)"};
const zs_opt_spec zs_p4d_opt_micro = {.key = "micro",
                                      .type = ZS_OPT_INT,
                                      .min = 0,
                                      .max = 4096,
                                      .def = 0,
                                      .help = "micro-batches per DP rank (0: as many as "
                                              "loader-order packing needs)"};
#undef TABLE1
const zs_opt_spec zs_p4d_opt_lora = {
    .key = "lora",
    .type = ZS_OPT_INT,
    .min = 0,
    .max = 65536,
    .def = 0,
    .help = "LoRA fine-tuning: rank of the adapters on every layer's QKV projection (NeMo's "
            "ParallelLinearAdapter; a multiple of tp), base weights frozen: no weight gradients "
            "for them, gradient sync, optimizer and memory over the adapters (0: every weight "
            "trained)"};

/* Tokens per GPU that fit o's layout (all in-flight micro-batches). */
static int p4d_capacity(const zs_plan_ctx *ctx, zs_p4d *o, zs_err *e)
{
    zs_mem_cfg mc = ctx->mem;
    mc.tp = o->dims.tp;
    mc.pp = o->dims.pp;
    mc.dp = o->dims.dp * o->dims.cp; /* optimizer state is sharded over DP x CP */
    mc.lora = o->lora;
    return zs_mem_token_capacity(ctx->model, &ctx->cluster->gpu, &mc,
                                 "use more pipeline stages, ZeRO sharding or recomputation",
                                 &o->max_tokens, e);
}

/* The layout options (all but the capacity). */
static int p4d_layout(const zs_plan_ctx *ctx, const char *method, zs_p4d *o, zs_err *e)
{
    memset(o, 0, sizeof *o);
    o->method = method;
    long window, micro, tp, cp, pp, vp;
    int rc = zs_opt_int(ctx->opts, &zs_p4d_opt_window, &window, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &zs_p4d_opt_micro, &micro, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &zs_p4d_opt_vp, &vp, e);
    if (rc)
        return rc;
    int gpus = zs_cluster_gpus(ctx->cluster), gpn = ctx->cluster->gpus_per_node;
    long dtp = gpn < 8 ? gpn : 8, dcp = 2, dpp = 4;
    for (size_t i = 0; i < sizeof table1 / sizeof table1[0]; i++)
        if (strcmp(table1[i].model, ctx->model->name) == 0 && table1[i].ctx == window &&
            table1[i].gpus == gpus && table1[i].tp <= gpn) {
            dtp = table1[i].tp;
            dcp = table1[i].cp;
            dpp = table1[i].pp;
        }
    rc = zs_plan_opt_tp(ctx, &zs_p4d_opt_tp, dtp, &tp, e);
    if (!rc)
        rc = zs_opt_int_def(ctx->opts, &zs_p4d_opt_cp, dcp, &cp, e);
    if (!rc)
        rc = zs_opt_int_def(ctx->opts, &zs_p4d_opt_pp, dpp, &pp, e);
    if (rc)
        return rc;
    if (gpus % (tp * cp * pp) != 0)
        return zs_err_set(e, ZS_EINPUT, "tp x cp x pp",
                          "choose tp, cp and pp whose product divides the GPU count",
                          "tp=%ld x cp=%ld x pp=%ld = %ld does not divide %d GPUs", tp, cp, pp,
                          tp * cp * pp, gpus);
    if (pp > ctx->model->layers)
        return zs_err_set(e, ZS_EINPUT, "pp", "use at most one pipeline stage per layer",
                          "pp=%ld exceeds the model's %d layers", pp, ctx->model->layers);
    o->dims = (zs_layout_dims){(int)tp, (int)cp, (int)pp, gpus / (int)(tp * cp * pp)};
    o->window = (int32_t)window;
    o->micro = (int)micro;
    o->vp = (int)vp;
    return ZS_OK;
}

int zs_p4d_options(const zs_plan_ctx *ctx, const char *method, zs_p4d *o, zs_err *e)
{
    int rc = p4d_layout(ctx, method, o, e);
    return rc ? rc : p4d_capacity(ctx, o, e);
}

/* The option lora, before the capacity: frozen weights are what let a
 * model fit that full training would not (no gradients, no Adam state). */
int zs_p4d_options_lora(const zs_plan_ctx *ctx, const char *method, zs_p4d *o, zs_err *e)
{
    long r;
    int rc = p4d_layout(ctx, method, o, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &zs_p4d_opt_lora, &r, e);
    if (rc)
        return rc;
    int tp = o->dims.tp, h = ctx->model->hidden;
    /* linear_in is column-parallel: each TP rank holds rank / tp of it */
    if (r % tp || r > h)
        return zs_err_set(e, ZS_EUSAGE, "lora",
                          "give a rank from 1 to the hidden size that tp divides (0: no LoRA)",
                          "LoRA rank %ld with tp=%d and hidden %d", r, tp, h);
    o->lora = (int)r;
    return p4d_capacity(ctx, o, e);
}

int zs_p4d_loader(const zs_plan_ctx *ctx, const char *method, int lora, zs_p4d *o, int *nmicro,
                  zs_err *e)
{
    int rc = lora ? zs_p4d_options_lora(ctx, method, o, e) : zs_p4d_options(ctx, method, o, e);
    if (rc)
        return rc;
    int n = o->dims.pp * o->dims.dp * (o->micro > 0 ? o->micro / o->dims.pp : 1);
    *nmicro = n >= 1 ? n : o->dims.pp * o->dims.dp;
    return ZS_OK;
}

int zs_p4d_shape(const zs_plan_ctx *ctx, const char *method, zs_batch_shape *shape, zs_err *e)
{
    zs_p4d o;
    int nmicro;
    int rc = zs_p4d_loader(ctx, method, 0, &o, &nmicro, e);
    if (rc)
        return rc;
    shape->budget = (int64_t)nmicro * o.window;
    shape->window = o.window;
    return ZS_OK;
}

/* A document longer than the window cannot be one context window's worth
 * of a packed sequence. */
int zs_p4d_check_window(const zs_batch *b, int32_t window, zs_err *e)
{
    for (int32_t d = 0; d < b->ndocs; d++)
        if (b->len[d] > window) {
            char w[64];
            snprintf(w, sizeof w, "document %d of the batch", d);
            return zs_err_set(e, ZS_EINPUT, w,
                              "raise --opt window=, or cut documents at the window (--long split)",
                              "a document of %d tokens is longer than the context window of %d",
                              b->len[d], window);
        }
    return ZS_OK;
}

double zs_p4d_doc_cost_fn(void *arg, int32_t len)
{
    const zs_p4d_doc_cost *c = arg;
    const zs_model *m = c->ctx->model;
    int tp = c->o->dims.tp, cp = c->o->dims.cp;
    zs_attn_block b = {0, 0, len, 0, len};
    double attn = zs_cost_attn(c->ctx->cost, &b, 1, m->heads / tp, 0) / cp;
    /* W_l is linear in the tokens (WLB-LLM's model): every document of a
     * micro-batch goes through the same GEMMs, so a document costs its
     * tokens at the per-token time of a full window's GEMM, not the time
     * of a GEMM of its own (a short one is latency-bound). */
    double win = (double)c->o->window / cp > 1 ? (double)c->o->window / cp : 1;
    double lin =
        zs_cost_gemm(c->ctx->cost, win, zs_model_linear_flops_per_token(m) / (2.0 * m->hidden) / tp,
                     m->hidden) /
        win * ((double)len / cp);
    return attn + lin;
}

/* ---- shards --------------------------------------------------------------------- */

typedef struct range {
    int32_t doc, t0, t1;
} range;

typedef struct shard {
    int g, mode;
    range *rg;
    int64_t nrg, *rg0;  /* slot i: rg[rg0[i] .. rg0[i+1]) */
    zs_attn_block *blk; /* slot i, step j: blk[bk0[i*g+j] .. bk0[i*g+j+1]) */
    int64_t nblk, cblk, *bk0;
    int64_t *kv_tokens; /* per slot: tokens of its KV shard (padding included) */
    int64_t *tokens;    /* per slot: tokens of the plan */
    double lat_fwd, lat_bwd;
} shard;

static void shard_free(shard *s)
{
    free(s->rg);
    free(s->rg0);
    free(s->blk);
    free(s->bk0);
    free(s->kv_tokens);
    free(s->tokens);
    memset(s, 0, sizeof *s);
}

static int push_range(shard *s, int64_t *cap, int32_t doc, int32_t t0, int32_t t1)
{
    if (t1 <= t0)
        return ZS_OK;
    if (s->nrg == *cap) {
        int64_t nc = *cap ? *cap * 2 : 64;
        range *v = realloc(s->rg, sizeof *v * (size_t)nc);
        if (!v)
            return ZS_ENOMEM;
        s->rg = v;
        *cap = nc;
    }
    s->rg[s->nrg++] = (range){doc, t0, t1};
    return ZS_OK;
}

static int push_block(shard *s, zs_attn_block b)
{
    if (s->nblk == s->cblk) {
        int64_t nc = s->cblk ? s->cblk * 2 : 64;
        zs_attn_block *v = realloc(s->blk, sizeof *v * (size_t)nc);
        if (!v)
            return ZS_ENOMEM;
        s->blk = v;
        s->cblk = nc;
    }
    s->blk[s->nblk++] = b;
    return ZS_OK;
}

static int cmp_range(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->doc != y->doc)
        return x->doc < y->doc ? -1 : 1;
    return x->t0 < y->t0 ? -1 : (x->t0 > y->t0);
}

/* Token range of chunk c of 2g chunks of a document (per-document
 * sharding: remainder tokens one each to the first chunks). */
static void doc_chunk(int32_t len, int g, int c, int32_t *t0, int32_t *t1)
{
    int32_t base = len / (2 * g), rem = len % (2 * g);
    *t0 = c * base + (c < rem ? c : rem);
    *t1 = *t0 + base + (c < rem);
}

/* Builds the shard of one packed sequence (docs[0..n) in order) over g
 * slots. */
static int shard_build(shard *s, int g, int mode, const int32_t *docs, int32_t n,
                       const int32_t *len, const zs_cost *cost, int heads)
{
    memset(s, 0, sizeof *s);
    s->g = g;
    s->mode = mode;
    s->rg0 = calloc((size_t)g + 1, sizeof(int64_t));
    s->bk0 = calloc((size_t)g * g + 1, sizeof(int64_t));
    s->kv_tokens = calloc((size_t)g, sizeof(int64_t));
    s->tokens = calloc((size_t)g, sizeof(int64_t));
    if (!s->rg0 || !s->bk0 || !s->kv_tokens || !s->tokens)
        return ZS_ENOMEM;
    int64_t cap = 0, S = 0;
    for (int32_t k = 0; k < n; k++)
        S += len[docs[k]];
    int64_t c = (S + 2 * g - 1) / (2 * g); /* per-sequence chunk (padded) */
    for (int i = 0; i < g; i++) {
        s->rg0[i] = s->nrg;
        int ch[2] = {i, 2 * g - 1 - i};
        for (int h = 0; h < 2; h++) {
            if (mode == ZS__SHARD_SEQ) {
                int64_t lo = ch[h] * c, hi = lo + c, off = 0;
                for (int32_t k = 0; k < n; k++) {
                    int32_t d = docs[k];
                    int64_t a = lo > off ? lo : off, b = hi < off + len[d] ? hi : off + len[d];
                    if (a < b && push_range(s, &cap, d, (int32_t)(a - off), (int32_t)(b - off)))
                        return ZS_ENOMEM;
                    off += len[d];
                }
                s->kv_tokens[i] += c;
            } else
                for (int32_t k = 0; k < n; k++) {
                    int32_t t0, t1;
                    doc_chunk(len[docs[k]], g, ch[h], &t0, &t1);
                    if (push_range(s, &cap, docs[k], t0, t1))
                        return ZS_ENOMEM;
                    s->kv_tokens[i] += t1 - t0;
                }
        }
        s->rg0[i + 1] = s->nrg;
        qsort(s->rg + s->rg0[i], (size_t)(s->nrg - s->rg0[i]), sizeof(range), cmp_range);
        for (int64_t r = s->rg0[i]; r < s->nrg; r++)
            s->tokens[i] += s->rg[r].t1 - s->rg[r].t0;
    }
    /* Blocks: slot i's queries against the KV of slot i-j at step j, every
     * pair of ranges of one document with at least one causal pair. */
    for (int i = 0; i < g; i++)
        for (int j = 0; j < g; j++) {
            s->bk0[i * g + j] = s->nblk;
            int src = (i - j + g) % g;
            int64_t k0 = s->rg0[src], k1 = s->rg0[src + 1];
            for (int64_t q = s->rg0[i]; q < s->rg0[i + 1]; q++) {
                const range *Q = &s->rg[q];
                int64_t lo = k0, hi = k1; /* first KV range with doc >= Q->doc */
                while (lo < hi) {
                    int64_t mid = (lo + hi) / 2;
                    if (s->rg[mid].doc < Q->doc)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                for (int64_t k = lo; k < k1 && s->rg[k].doc == Q->doc; k++) {
                    const range *K = &s->rg[k];
                    if (K->t0 >= Q->t1)
                        break;
                    zs_attn_block b = {Q->doc, Q->t0, Q->t1, K->t0, K->t1 < Q->t1 ? K->t1 : Q->t1};
                    if (push_block(s, b))
                        return ZS_ENOMEM;
                }
            }
        }
    s->bk0[g * g] = s->nblk;
    for (int j = 0; j < g; j++) {
        double mf = 0, mb = 0;
        for (int i = 0; i < g; i++) {
            int64_t b0 = s->bk0[i * g + j], nb = s->bk0[i * g + j + 1] - b0;
            if (nb == 0)
                continue;
            double f = zs_cost_attn(cost, s->blk + b0, (int)nb, heads, 0);
            double b = zs_cost_attn(cost, s->blk + b0, (int)nb, heads, 1);
            mf = f > mf ? f : mf;
            mb = b > mb ? b : mb;
        }
        s->lat_fwd += mf;
        s->lat_bwd += mb;
    }
    return ZS_OK;
}

/* ---- the emitter ------------------------------------------------------------------ */

typedef struct lower {
    const zs_p4d *o;
    int nseq, micro, stream;
    shard *sh;                 /* per sequence (g = 0: empty) */
    double kv_bytes_per_token; /* K and V, per GPU */
    int64_t *last, *ready, *nready, *dkv;
} lower;

static int oom(zs_err *e)
{
    return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
}

static void ring(lower *L, zs_iter *it, int stage, int base, const shard *s, int backward)
{
    zs_schedule *S = zs_iter_schedule(it);
    const zs_cost *cost = zs_iter_cost(it);
    int g = s->g, heads = zs_iter_heads(it);
    int tag_kv = g > 1 ? zs_iter_tag(it) : 0, tag_dkv = g > 1 && backward ? zs_iter_tag(it) : 0;
    double kvb = L->kv_bytes_per_token * (double)zs_iter_kv_heads(it);
    for (int i = 0; i < g; i++)
        L->last[i] = L->ready[i] = zs_iter_entry(it, base + i);
    for (int j = 0; j < g; j++) {
        for (int i = 0; i < g && j < g - 1; i++) {
            int r = zs_iter_rank(it, stage, base + i);
            int nx = zs_iter_rank(it, stage, base + (i + 1) % g);
            int pv = zs_iter_rank(it, stage, base + (i - 1 + g) % g);
            int64_t dep[1] = {L->ready[i]};
            zs_sched_send(S, r, L->stream, "cp-kv", nx, tag_kv,
                          kvb * (double)s->kv_tokens[(i - j + g) % g], dep, 1);
            L->nready[i] =
                zs_sched_recv(S, r, L->stream, "cp-kv", pv, tag_kv,
                              kvb * (double)s->kv_tokens[(i - 1 - j + 2 * g) % g], dep, 1);
        }
        for (int i = 0; i < g; i++) {
            int r = zs_iter_rank(it, stage, base + i);
            int64_t b0 = s->bk0[i * g + j], nb = s->bk0[i * g + j + 1] - b0;
            if (nb > 0) {
                int64_t dep[2] = {L->last[i], L->ready[i]};
                double t = zs_cost_attn(cost, s->blk + b0, (int)nb, heads, backward);
                L->last[i] = zs_sched_attn(
                    S, r, ZS_STREAM_COMPUTE, backward ? "cp-attn-bwd" : "cp-attn-fwd", backward,
                    s->blk + b0, (int)nb, heads, t, dep, dep[1] == dep[0] ? 1 : 2);
            }
            if (backward && g > 1) {
                /* The dK/dV accumulated for the KV held at this step goes on
                 * with it; after the last step it reaches its owner. */
                int nx = zs_iter_rank(it, stage, base + (i + 1) % g);
                int pv = zs_iter_rank(it, stage, base + (i - 1 + g) % g);
                int64_t dep[1] = {L->last[i]};
                zs_sched_send(S, r, L->stream, "cp-dkv", nx, tag_dkv,
                              kvb * (double)s->kv_tokens[(i - j + g) % g], dep, 1);
                L->dkv[i] =
                    zs_sched_recv(S, r, L->stream, "cp-dkv", pv, tag_dkv,
                                  kvb * (double)s->kv_tokens[(i - 1 - j + 2 * g) % g], dep, 1);
            }
        }
        for (int i = 0; i < g && j < g - 1; i++)
            L->ready[i] = L->nready[i];
    }
    for (int i = 0; i < g; i++) {
        int64_t exit = L->last[i];
        if (backward && g > 1) {
            /* Adding the returned dK/dV to the local one (read two, write one). */
            int r = zs_iter_rank(it, stage, base + i);
            double by = 3 * kvb * (double)s->kv_tokens[i];
            int64_t dep[2] = {L->last[i], L->dkv[i]};
            exit = zs_sched_elementwise(S, r, ZS_STREAM_COMPUTE, "cp-dkv-add", by,
                                        zs_cost_elementwise(cost, by), dep, 2);
        }
        zs_iter_set_exit(it, base + i, exit);
    }
}

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    lower *L = arg;
    int cp = L->o->dims.cp;
    for (int d = 0; d < L->o->dims.dp; d++) {
        int k = d * L->micro + micro;
        if (k >= L->nseq || L->sh[k].g == 0) {
            for (int i = 0; i < cp; i++)
                zs_iter_set_exit(it, d * cp + i, zs_iter_entry(it, d * cp + i));
            continue;
        }
        ring(L, it, stage, d * cp, &L->sh[k], backward);
    }
    return zs_schedule_check(zs_iter_schedule(it), e);
}

/* ---- lowering ------------------------------------------------------------------- */

static int cmp_i64_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x > y ? -1 : (x < y);
}

/* Documents grouped by sequence, batch order inside: sequence k's are
 * docs[first[k] .. first[k] + ndoc[k]). */
static int group_docs(const zs_p4d *o, const zs_batch *b, const int32_t *seq_of, int32_t nseq,
                      int32_t *docs, int32_t *ndoc, int32_t *first, zs_err *e)
{
    for (int32_t d = 0; d < b->ndocs; d++) {
        if (seq_of[d] < 0 || seq_of[d] >= nseq)
            return zs_err_set(e, ZS_EINVALID, o->method, NULL,
                              "document %d has no micro-batch (%d of %d)", d, seq_of[d], nseq);
        ndoc[seq_of[d]]++;
    }
    for (int32_t k = 0; k < nseq; k++)
        first[k + 1] = first[k] + ndoc[k];
    memset(ndoc, 0, sizeof(int32_t) * (size_t)nseq);
    for (int32_t d = 0; d < b->ndocs; d++)
        docs[first[seq_of[d]] + ndoc[seq_of[d]]++] = d;
    return ZS_OK;
}

/* Shards: both shardings per sequence, then the choice into L->sh. Counts
 * the sequences sharded per document and the non-empty ones. */
static int choose_shards(const zs_plan_ctx *ctx, const zs_batch *b, lower *L,
                         zs_p4d_shard shard_mode, const int32_t *docs, const int32_t *ndoc,
                         const int32_t *first, int *ndocmode, int *nused, zs_err *e)
{
    int g = L->o->dims.cp, heads = ctx->model->heads / L->o->dims.tp, rc = ZS_OK;
    int32_t nseq = L->nseq;
    double tot[2] = {0, 0};
    shard *alt = calloc((size_t)nseq + 1, sizeof(shard));
    if (!alt)
        return oom(e);
    for (int32_t k = 0; k < nseq && rc == ZS_OK; k++) {
        if (ndoc[k] == 0)
            continue;
        if (shard_build(&L->sh[k], g, ZS__SHARD_SEQ, docs + first[k], ndoc[k], b->len, ctx->cost,
                        heads) ||
            shard_build(&alt[k], g, ZS__SHARD_DOC, docs + first[k], ndoc[k], b->len, ctx->cost,
                        heads))
            rc = oom(e);
        tot[0] += L->sh[k].lat_fwd + L->sh[k].lat_bwd;
        tot[1] += alt[k].lat_fwd + alt[k].lat_bwd;
    }
    *ndocmode = *nused = 0;
    for (int32_t k = 0; k < nseq && rc == ZS_OK; k++) {
        if (ndoc[k] == 0)
            continue;
        (*nused)++;
        int use_doc = shard_mode == ZS__SHARD_DOC ||
                      (shard_mode == ZS__SHARD_STATIC && tot[1] < tot[0]) ||
                      (shard_mode == ZS__SHARD_ADAPTIVE &&
                       alt[k].lat_fwd + alt[k].lat_bwd < L->sh[k].lat_fwd + L->sh[k].lat_bwd);
        if (use_doc) {
            shard t = L->sh[k];
            L->sh[k] = alt[k];
            alt[k] = t;
            (*ndocmode)++;
        }
        shard_free(&alt[k]);
    }
    for (int32_t k = 0; k < nseq; k++)
        shard_free(&alt[k]);
    free(alt);
    return rc;
}

/* Plan pieces, linear tokens per micro-batch and slot, and each sequence's
 * predicted forward latency (lat; sum and largest in lat_sum, lat_max). */
static int place(const zs_plan_ctx *ctx, const zs_batch *b, const lower *L, zs_schedule *S,
                 int64_t *lin, double *lat, double *lat_sum, double *lat_max, zs_err *e)
{
    const zs_layout_dims *D = &L->o->dims;
    int g = D->cp, nslots = D->dp * D->cp, micro = L->micro;
    zs_schedule_set_docs(S, b->len, b->ndocs);
    double lin_n = zs_model_linear_flops_per_token(ctx->model) / (2.0 * ctx->model->hidden) / D->tp;
    *lat_sum = *lat_max = 0;
    for (int32_t k = 0; k < L->nseq; k++) {
        const shard *s = &L->sh[k];
        if (s->g == 0)
            continue;
        int dp = k / micro, m = k % micro;
        int64_t maxtok = 0;
        for (int i = 0; i < g; i++) {
            int slot = dp * g + i, rank = zs_slot_rank(D, 0, slot);
            lin[(size_t)m * nslots + slot] = s->tokens[i];
            maxtok = s->tokens[i] > maxtok ? s->tokens[i] : maxtok;
            for (int64_t r = s->rg0[i]; r < s->rg0[i + 1]; r++) {
                zs_schedule_add_piece(S, s->rg[r].doc, s->rg[r].t0, s->rg[r].t1, rank,
                                      ZS_LAYOUT_ATTN, m);
                zs_schedule_add_piece(S, s->rg[r].doc, s->rg[r].t0, s->rg[r].t1, rank,
                                      ZS_LAYOUT_LINEAR, m);
            }
        }
        lat[k] = s->lat_fwd + zs_cost_gemm(ctx->cost, (double)maxtok, lin_n, ctx->model->hidden);
        *lat_sum += lat[k];
        *lat_max = lat[k] > *lat_max ? lat[k] : *lat_max;
    }
    return zs_schedule_check(S, e);
}

/* The model chunks whose activations the first stage holds at once:
 * 1F1B keeps min(pp, micro) micro-batches of the whole stage; Megatron's
 * interleaved schedule runs (pp - 1) x 2 + (vp - 1) x pp warm-up forwards
 * of chunks of 1 / vp of the stage's layers, then one more before its
 * first backward (forward_backward_pipelining_with_interleaving), at most
 * micro x vp chunks. */
int zs_p4d_inflight_chunks(int pp, int vp, int micro)
{
    if (vp <= 1)
        return pp < micro ? pp : micro;
    long k = 2L * (pp - 1) + (long)(vp - 1) * pp + 1, all = (long)micro * vp;
    return (int)(k < all ? k : all);
}

/* The largest micro-batches' activations in flight on the first stage must
 * fit together (chunks of 1 / vp of a micro-batch's, the largest first).
 * per: micro scratch entries. */
static int check_inflight(const lower *L, const int64_t *lin, int64_t *per, const int32_t *docs,
                          const int32_t *ndoc, const int32_t *first, zs_err *e)
{
    const zs_layout_dims *D = &L->o->dims;
    int g = D->cp, nslots = D->dp * D->cp, micro = L->micro;
    int vp = L->o->vp > 1 ? L->o->vp : 1;
    int chunks = zs_p4d_inflight_chunks(D->pp, vp, micro);
    int inflight = (chunks + vp - 1) / vp;
    for (int slot = 0; slot < nslots; slot++) {
        for (int m = 0; m < micro; m++)
            per[m] = lin[(size_t)m * nslots + slot];
        qsort(per, (size_t)micro, sizeof(int64_t), cmp_i64_desc);
        int64_t sum = 0;
        for (int c = 0; c < chunks; c++) /* the c-th chunk is of the (c / vp)-th largest */
            sum += per[c / vp] / vp;
        if (sum <= L->o->max_tokens)
            continue;
        int32_t worst = (slot / g) * micro;
        for (int32_t q = worst; q < (slot / g + 1) * micro && q < L->nseq; q++)
            if (L->sh[q].g &&
                (!L->sh[worst].g || L->sh[q].tokens[slot % g] > L->sh[worst].tokens[slot % g]))
                worst = q;
        char w[96];
        snprintf(w, sizeof w, "micro-batch %d (document %d first)", worst,
                 ndoc[worst] ? docs[first[worst]] : -1);
        char how[64] = "";
        if (vp > 1)
            snprintf(how, sizeof how, " (%d model chunks of 1/%d, interleaved)", chunks, vp);
        return zs_err_set(e, ZS_EINPUT, w,
                          "use a smaller window or smax, more CP, recomputation or ZeRO",
                          "%lld tokens of %d in-flight micro-batches%s on one GPU exceed the %ld "
                          "that fit in its memory",
                          (long long)sum, inflight, how, L->o->max_tokens);
    }
    return ZS_OK;
}

int zs_p4d_lower(const zs_plan_ctx *ctx, const zs_batch *b, const zs_p4d *o, const int32_t *seq_of,
                 int32_t nseq, zs_p4d_shard shard_mode, zs_schedule **out, zs_plan_report *rep,
                 zs_err *e)
{
    const zs_layout_dims *D = &o->dims;
    int g = D->cp;
    int micro = o->micro > 0 ? o->micro : (nseq + D->dp - 1) / D->dp;
    if (micro < 1)
        micro = 1;
    if (nseq > micro * D->dp)
        return zs_err_set(e, ZS_EINPUT, "micro", "raise micro, or give the planner a smaller batch",
                          "the packing needs %d micro-batches but micro=%d x dp=%d holds %d", nseq,
                          micro, D->dp, micro * D->dp);
    int nslots = D->dp * D->cp;
    lower L = {o, nseq, micro, 0, NULL, 0, NULL, NULL, NULL, NULL};
    int32_t *docs = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1));
    int32_t *ndoc = calloc((size_t)nseq + 1, sizeof(int32_t));
    int32_t *first = calloc((size_t)nseq + 2, sizeof(int32_t));
    int64_t *lin = calloc((size_t)micro * nslots, sizeof(int64_t));
    int64_t *per = calloc((size_t)micro, sizeof(int64_t));
    double *lat = calloc((size_t)nseq + 1, sizeof(double));
    L.sh = calloc((size_t)nseq + 1, sizeof(shard));
    L.last = malloc(sizeof(int64_t) * 4 * (size_t)g);
    zs_schedule *S = zs_schedule_new(zs_cluster_gpus(ctx->cluster));
    int rc = ZS_OK, ndocmode = 0, nused = 0;
    double lat_sum = 0, lat_max = 0;
    if (!docs || !ndoc || !first || !lin || !per || !lat || !L.sh || !L.last || !S) {
        rc = oom(e);
        goto done;
    }
    L.ready = L.last + g;
    L.nready = L.last + 2 * g;
    L.dkv = L.last + 3 * g;
    if ((rc = group_docs(o, b, seq_of, nseq, docs, ndoc, first, e)) ||
        (rc = choose_shards(ctx, b, &L, shard_mode, docs, ndoc, first, &ndocmode, &nused, e)) ||
        (rc = place(ctx, b, &L, S, lin, lat, &lat_sum, &lat_max, e)) ||
        (rc = check_inflight(&L, lin, per, docs, ndoc, first, e)))
        goto done;
    L.stream = zs_schedule_add_stream(S, "cp");
    if ((rc = zs_schedule_check(S, e)))
        goto done;
    L.kv_bytes_per_token = 2.0 * ctx->model->head_dim * ctx->model->dtype_bytes;
    zs_iter_spec spec = {
        *D, micro, lin,     ctx->mem.recompute, ctx->mem.zero_stage, ctx->seed, emit,
        &L, NULL,  o->lora, ctx->mem.fsdp};
    if ((rc = zs_iter_build_interleaved(S, ctx->cost, &spec, o->vp, e)))
        goto done;
    zs_plan_report_note(rep, "4D layout tp=%d cp=%d pp=%d dp=%d, %d micro-batches per DP rank",
                        D->tp, D->cp, D->pp, D->dp, micro);
    rep->lora = o->lora;
    if (o->lora)
        zs_plan_report_note(rep,
                            "LoRA: rank-%d adapters on QKV trained (%.0f parameters), base "
                            "weights frozen (no weight gradients)",
                            o->lora, zs_step_trained_params(ctx->model, o->lora));
    if (o->vp > 1)
        zs_plan_report_note(rep,
                            "interleaved 1F1B: %d model chunks per stage of %d layers each "
                            "(Megatron-LM's virtual pipeline)",
                            o->vp, ctx->model->layers / (D->pp * o->vp));
    const char *how = shard_mode == ZS__SHARD_SEQ        ? "per-sequence"
                      : shard_mode == ZS__SHARD_DOC      ? "per-document"
                      : shard_mode == ZS__SHARD_ADAPTIVE ? "adaptive per micro-batch"
                                                         : "one static choice";
    zs_plan_report_note(rep, "CP sharding %s: per-document in %d of %d micro-batches", how,
                        ndocmode, nused);
    rep->imbalance_degree = lat_sum > 0 ? lat_max * (micro * D->dp) / lat_sum : 1.0;
    zs_plan_report_note(rep,
                        "imbalance degree %.3f (largest predicted micro-batch forward latency x "
                        "%d / total)",
                        rep->imbalance_degree, micro * D->dp);
done:
    for (int32_t k = 0; L.sh && k < nseq; k++)
        shard_free(&L.sh[k]);
    free(L.sh);
    free(L.last);
    free(docs);
    free(ndoc);
    free(first);
    free(lin);
    free(per);
    free(lat);
    if (rc) {
        zs_schedule_free(S);
        return rc;
    }
    *out = S;
    return ZS_OK;
}
