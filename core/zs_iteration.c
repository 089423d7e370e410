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

struct zs_iter {
    zs_schedule *s;
    const zs_cost *cost;
    const zs_iter_spec *sp;
    const zs_model *m;
    int tp, cp, pp, dp, nslots, M;
    int64_t *entry, *exit;
    int next_tag;
    int tag_act, tag_grad;
    int pp_stream;    /* pipeline sends and receives: off the compute stream so
                       * a stage can post the next receive while its send waits */
    double *moe_load; /* per rank: expert load factor (mean 1) */
    int *tp_group;    /* per slot-rank: the TP group's id (leader ranks only) */
    zs_err *e;
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

/* ---- op helpers: every failure becomes one error message ---------------- */

static int chk(zs_iter *it, int64_t op, const char *what)
{
    if (op >= 0)
        return ZS_OK;
    return zs_err_set(it->e, op == ZS_ENOMEM ? ZS_ENOMEM : ZS_EINVALID, "iteration builder", NULL,
                      "could not append %s (status %d)", what, (int)op);
}

typedef struct chain {
    int rank;
    int64_t last; /* last op on the compute stream, -1 before the first */
} chain;

static int64_t gemm(zs_iter *it, chain *c, const char *label, double m, double n, double k,
                    int64_t extra_dep)
{
    int64_t deps[2];
    int nd = 0;
    if (c->last >= 0)
        deps[nd++] = c->last;
    if (extra_dep >= 0 && extra_dep != c->last)
        deps[nd++] = extra_dep;
    double t = m > 0 ? zs_cost_gemm(it->cost, m, n, k) : 0;
    int64_t op = zs_sched_gemm(it->s, c->rank, ZS_STREAM_COMPUTE, label, m, n, k, t, deps, nd);
    if (op >= 0)
        c->last = op;
    return op;
}

static int64_t elem(zs_iter *it, chain *c, const char *label, double bytes)
{
    int64_t deps[1] = {c->last};
    double t = bytes > 0 ? zs_cost_elementwise(it->cost, bytes) : 0;
    int64_t op = zs_sched_elementwise(it->s, c->rank, ZS_STREAM_COMPUTE, label, bytes, t, deps,
                                      c->last >= 0);
    if (op >= 0)
        c->last = op;
    return op;
}

/* A TP collective sits on the compute stream: sequence parallelism puts it
 * on the critical path between the norm and the GEMM. */
static int64_t tp_coll(zs_iter *it, chain *c, const char *label, zs_coll_kind k, double bytes)
{
    if (it->tp == 1)
        return c->last;
    int64_t deps[1] = {c->last};
    int64_t op = zs_sched_coll(it->s, c->rank, ZS_STREAM_COMPUTE, label, it->tp_group[c->rank], k,
                               bytes, deps, c->last >= 0);
    if (op >= 0)
        c->last = op;
    return op;
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
    int *ep_group;     /* per slot: schedule group id of its expert-parallel group */
    int *dp_group;     /* per slot: schedule group id for gradient sync */
    int64_t *param_ag; /* per slot: ZeRO-3 weight all-gather op of the layer (forward) */
} body;

static double tokens(const zs_iter *it, int micro, int slot)
{
    return (double)it->sp->linear_tokens[(size_t)micro * it->nslots + slot];
}

/* Forward linear ops before attention; sets entry[slot]. */
static int fwd_pre(zs_iter *it, body *b, chain *c, int slot, const char *pfx)
{
    const zs_model *m = it->m;
    double T = tokens(it, b->micro, slot), Tl = T / it->tp, h = m->hidden, by = m->dtype_bytes;
    double qkv_n = (double)(m->heads + 2 * m->kv_heads) * m->head_dim / it->tp;
    char l[64];
    snprintf(l, sizeof l, "%snorm1", pfx);
    int rc = chk(it, elem(it, c, l, 2 * Tl * h * by), l);
    snprintf(l, sizeof l, "%stp-ag-attn", pfx);
    if (!rc)
        rc = chk(it, tp_coll(it, c, l, ZS_COLL_ALLGATHER, Tl * h * by), l);
    snprintf(l, sizeof l, "%sqkv", pfx);
    int64_t pag = b->param_ag ? b->param_ag[slot] : -1;
    if (!rc)
        rc = chk(it, gemm(it, c, l, T, qkv_n, h, pag), l);
    it->entry[slot] = c->last;
    it->exit[slot] = -1;
    return rc;
}

/* Forward ops after attention. */
static int fwd_post(zs_iter *it, body *b, chain *c, int slot, const char *pfx)
{
    const zs_model *m = it->m;
    double T = tokens(it, b->micro, slot), Tl = T / it->tp, h = m->hidden, by = m->dtype_bytes;
    double ad = (double)m->heads * m->head_dim / it->tp;
    char l[64];
    int rc = ZS_OK;
    if (it->exit[slot] < 0)
        return zs_err_set(it->e, ZS_EINVALID, "attention emitter", NULL,
                          "slot %d has no attention exit op", slot);
    snprintf(l, sizeof l, "%so-proj", pfx);
    rc = chk(it, gemm(it, c, l, T, h, ad, it->exit[slot]), l);
    snprintf(l, sizeof l, "%stp-rs-attn", pfx);
    if (!rc)
        rc = chk(it, tp_coll(it, c, l, ZS_COLL_REDUCESCATTER, Tl * h * by), l);
    snprintf(l, sizeof l, "%sresidual-norm2", pfx);
    if (!rc)
        rc = chk(it, elem(it, c, l, 3 * Tl * h * by), l);
    snprintf(l, sizeof l, "%stp-ag-mlp", pfx);
    if (!rc)
        rc = chk(it, tp_coll(it, c, l, ZS_COLL_ALLGATHER, Tl * h * by), l);
    if (rc)
        return rc;
    if (zs_model_is_moe(m)) {
        double load = it->moe_load[c->rank];
        double Tk = T * m->top_k, f = (double)m->expert_ffn / it->tp;
        snprintf(l, sizeof l, "%smoe-router", pfx);
        rc = chk(it, gemm(it, c, l, T, m->experts, h, -1), l);
        snprintf(l, sizeof l, "%smoe-dispatch", pfx);
        int64_t deps[1] = {c->last};
        int64_t op = zs_sched_coll(it->s, c->rank, ZS_STREAM_COMPUTE, l, b->ep_group[slot],
                                   ZS_COLL_ALLTOALL, Tk * h * by, deps, 1);
        if (!rc && (rc = chk(it, op, l)) == ZS_OK)
            c->last = op;
        snprintf(l, sizeof l, "%sexpert-gate-up", pfx);
        if (!rc)
            rc = chk(it, gemm(it, c, l, Tk * load, 2 * f, h, -1), l);
        snprintf(l, sizeof l, "%sexpert-swiglu", pfx);
        if (!rc)
            rc = chk(it, elem(it, c, l, 3 * Tk * load * f * by), l);
        snprintf(l, sizeof l, "%sexpert-down", pfx);
        if (!rc)
            rc = chk(it, gemm(it, c, l, Tk * load, h, f, -1), l);
        snprintf(l, sizeof l, "%smoe-combine", pfx);
        deps[0] = c->last;
        op = zs_sched_coll(it->s, c->rank, ZS_STREAM_COMPUTE, l, b->ep_group[slot],
                           ZS_COLL_ALLTOALL, Tk * h * by, deps, 1);
        if (!rc && (rc = chk(it, op, l)) == ZS_OK)
            c->last = op;
    } else {
        double f = (double)m->ffn / it->tp;
        snprintf(l, sizeof l, "%smlp-gate-up", pfx);
        rc = chk(it, gemm(it, c, l, T, 2 * f, h, -1), l);
        snprintf(l, sizeof l, "%sswiglu", pfx);
        if (!rc)
            rc = chk(it, elem(it, c, l, 3 * T * f * by), l);
        snprintf(l, sizeof l, "%smlp-down", pfx);
        if (!rc)
            rc = chk(it, gemm(it, c, l, T, h, f, -1), l);
    }
    snprintf(l, sizeof l, "%stp-rs-mlp", pfx);
    if (!rc)
        rc = chk(it, tp_coll(it, c, l, ZS_COLL_REDUCESCATTER, Tl * h * by), l);
    snprintf(l, sizeof l, "%sresidual", pfx);
    if (!rc)
        rc = chk(it, elem(it, c, l, 2 * Tl * h * by), l);
    return rc;
}

/* A backward GEMM is the input-gradient and the weight-gradient GEMMs. */
static int gemm_bwd(zs_iter *it, chain *c, const char *name, double m, double n, double k,
                    int64_t extra_dep)
{
    char l[64];
    snprintf(l, sizeof l, "%s-dgrad", name);
    int rc = chk(it, gemm(it, c, l, m, k, n, extra_dep), l);
    snprintf(l, sizeof l, "%s-wgrad", name);
    if (!rc)
        rc = chk(it, gemm(it, c, l, k, n, m, -1), l);
    return rc;
}

/* Backward ops before attention backward (MLP, O projection). */
static int bwd_pre(zs_iter *it, body *b, chain *c, int slot)
{
    const zs_model *m = it->m;
    double T = tokens(it, b->micro, slot), Tl = T / it->tp, h = m->hidden, by = m->dtype_bytes;
    double ad = (double)m->heads * m->head_dim / it->tp;
    int rc = chk(it, elem(it, c, "residual-bwd", 2 * Tl * h * by), "residual-bwd");
    if (!rc)
        rc = chk(it, tp_coll(it, c, "tp-ag-mlp-bwd", ZS_COLL_ALLGATHER, Tl * h * by), "tp-ag");
    if (rc)
        return rc;
    if (zs_model_is_moe(m)) {
        double load = it->moe_load[c->rank];
        double Tk = T * m->top_k, f = (double)m->expert_ffn / it->tp;
        int64_t deps[1] = {c->last};
        int64_t op = zs_sched_coll(it->s, c->rank, ZS_STREAM_COMPUTE, "moe-combine-bwd",
                                   b->ep_group[slot], ZS_COLL_ALLTOALL, Tk * h * by, deps, 1);
        if ((rc = chk(it, op, "moe-combine-bwd")))
            return rc;
        c->last = op;
        rc = gemm_bwd(it, c, "expert-down", Tk * load, h, f, -1);
        if (!rc)
            rc = chk(it, elem(it, c, "expert-swiglu-bwd", 4 * Tk * load * f * by), "swiglu-bwd");
        if (!rc)
            rc = gemm_bwd(it, c, "expert-gate-up", Tk * load, 2 * f, h, -1);
        deps[0] = c->last;
        op = zs_sched_coll(it->s, c->rank, ZS_STREAM_COMPUTE, "moe-dispatch-bwd", b->ep_group[slot],
                           ZS_COLL_ALLTOALL, Tk * h * by, deps, 1);
        if (!rc && (rc = chk(it, op, "moe-dispatch-bwd")) == ZS_OK)
            c->last = op;
        if (!rc)
            rc = gemm_bwd(it, c, "moe-router", T, m->experts, h, -1);
    } else {
        double f = (double)m->ffn / it->tp;
        rc = gemm_bwd(it, c, "mlp-down", T, h, f, -1);
        if (!rc)
            rc = chk(it, elem(it, c, "swiglu-bwd", 4 * T * f * by), "swiglu-bwd");
        if (!rc)
            rc = gemm_bwd(it, c, "mlp-gate-up", T, 2 * f, h, -1);
    }
    if (!rc)
        rc = chk(it, tp_coll(it, c, "tp-rs-mlp-bwd", ZS_COLL_REDUCESCATTER, Tl * h * by), "rs");
    if (!rc)
        rc = chk(it, elem(it, c, "norm2-bwd", 3 * Tl * h * by), "norm2-bwd");
    if (!rc)
        rc = chk(it, tp_coll(it, c, "tp-ag-attn-bwd", ZS_COLL_ALLGATHER, Tl * h * by), "ag");
    if (!rc)
        rc = gemm_bwd(it, c, "o-proj", T, h, ad, -1);
    it->entry[slot] = c->last;
    it->exit[slot] = -1;
    return rc;
}

static int bwd_post(zs_iter *it, body *b, chain *c, int slot)
{
    const zs_model *m = it->m;
    double T = tokens(it, b->micro, slot), Tl = T / it->tp, h = m->hidden, by = m->dtype_bytes;
    double qkv_n = (double)(m->heads + 2 * m->kv_heads) * m->head_dim / it->tp;
    if (it->exit[slot] < 0)
        return zs_err_set(it->e, ZS_EINVALID, "attention emitter", NULL,
                          "slot %d has no attention backward exit op", slot);
    int rc = gemm_bwd(it, c, "qkv", T, qkv_n, h, it->exit[slot]);
    if (!rc)
        rc = chk(it, tp_coll(it, c, "tp-rs-attn-bwd", ZS_COLL_REDUCESCATTER, Tl * h * by), "rs");
    if (!rc)
        rc = chk(it, elem(it, c, "norm1-bwd", 3 * Tl * h * by), "norm1-bwd");
    if (rc || !b->last_micro)
        return rc;
    /* Gradients of this layer are final after the last micro-batch: sync
     * them on the comm stream while the next layer's backward runs. */
    double grads = zs_model_params_per_layer(m) / it->tp * by;
    int64_t deps[1] = {c->last};
    int n = it->s->groups[b->dp_group[slot]].n;
    int64_t op;
    if (it->sp->zero_stage >= 2)
        op = zs_sched_coll(it->s, c->rank, ZS_STREAM_COMM, "grad-reduce-scatter", b->dp_group[slot],
                           ZS_COLL_REDUCESCATTER, grads / n, deps, 1);
    else
        op = zs_sched_coll(it->s, c->rank, ZS_STREAM_COMM, "grad-all-reduce", b->dp_group[slot],
                           ZS_COLL_ALLREDUCE, grads, deps, 1);
    return chk(it, op, "gradient sync");
}

/* ---- chunks ------------------------------------------------------------------ */

static int begin_all(zs_iter *it, int stage, int repeat)
{
    for (int sl = 0; sl < it->nslots; sl++) {
        int rc = zs_schedule_begin_segment(it->s, zs_iter_rank(it, stage, sl), repeat);
        if (rc)
            return chk(it, rc, "segment");
    }
    return ZS_OK;
}

static int layer_forward(zs_iter *it, body *b, chain *ch, const char *pfx)
{
    int rc = ZS_OK;
    if (it->sp->zero_stage >= 3 && !pfx[0]) {
        /* ZeRO-3: prefetch the layer's weights on the comm stream. */
        double w = zs_model_params_per_layer(it->m) / it->tp * it->m->dtype_bytes;
        for (int sl = 0; sl < it->nslots && !rc; sl++) {
            int n = it->s->groups[b->dp_group[sl]].n;
            int64_t op = zs_sched_coll(it->s, ch[sl].rank, ZS_STREAM_COMM, "zero3-param-ag",
                                       b->dp_group[sl], ZS_COLL_ALLGATHER, w / n, NULL, 0);
            rc = chk(it, op, "zero3-param-ag");
            b->param_ag[sl] = op;
        }
    }
    for (int sl = 0; sl < it->nslots && !rc; sl++)
        rc = fwd_pre(it, b, &ch[sl], sl, pfx);
    if (!rc)
        rc = it->sp->emit_attn(it->sp->arg, it, b->stage, b->micro, 0, it->e);
    for (int sl = 0; sl < it->nslots && !rc; sl++) {
        ch[sl].last = it->exit[sl] > ch[sl].last ? it->exit[sl] : ch[sl].last;
        rc = fwd_post(it, b, &ch[sl], sl, pfx);
    }
    return rc;
}

/* Layer markers at the start of the stage's repeated layer segment, so
 * timelines can name each op's layer. dir 0: forward, counting up from the
 * stage's first layer; 1: backward, counting down from its last; -1: the
 * layers are over (layer -1). */
static int layer_markers(zs_iter *it, chain *ch, int dir, int stage)
{
    int first = zs_iter_stage_first_layer(it, stage), n = stage_layers(it, stage);
    zs_marker_kind kind = dir > 0 ? ZS_MARK_LAYER_DOWN : ZS_MARK_LAYER;
    int value = dir < 0 ? -1 : dir > 0 ? first + n - 1 : first;
    for (int sl = 0; sl < it->nslots; sl++) {
        int rc = chk(it, zs_sched_marker(it->s, ch[sl].rank, kind, value), "marker");
        if (rc)
            return rc;
    }
    return ZS_OK;
}

static int chunk(zs_iter *it, body *b, chain *ch)
{
    int stage = b->stage, first = stage == 0, last = stage == it->pp - 1;
    const zs_model *m = it->m;
    double h = m->hidden, by = m->dtype_bytes;
    int rc = begin_all(it, stage, 1);
    for (int sl = 0; sl < it->nslots && !rc; sl++) {
        chain *c = &ch[sl];
        double T = tokens(it, b->micro, sl), Tl = T / it->tp;
        int64_t mk = zs_sched_marker(it->s, c->rank, ZS_MARK_MICROBATCH, b->micro);
        if ((rc = chk(it, mk, "marker")))
            break;
        mk = zs_sched_marker(it->s, c->rank, ZS_MARK_PHASE,
                             b->backward ? ZS_PHASE_BACKWARD : ZS_PHASE_FORWARD);
        if ((rc = chk(it, mk, "marker")))
            break;
        if (!b->backward && first) {
            rc = chk(it, elem(it, c, "embedding", 2 * Tl * h * by), "embedding");
        } else if (b->backward && last) {
            rc = gemm_bwd(it, c, "lm-head", T, (double)m->vocab / it->tp, h, -1);
        } else {
            /* Activations (forward) or their gradients (backward) arrive from
             * the neighbouring stage. */
            int peer = zs_iter_rank(it, b->backward ? stage + 1 : stage - 1, sl);
            int64_t deps[1] = {c->last};
            int64_t op = zs_sched_recv(
                it->s, c->rank, it->pp_stream, b->backward ? "pp-recv-grad" : "pp-recv-act", peer,
                b->backward ? it->tag_grad : it->tag_act, Tl * h * by, NULL, 0);
            (void)deps;
            if ((rc = chk(it, op, "pipeline receive")) == ZS_OK)
                c->last = op; /* the chunk's first compute op waits for it */
        }
    }
    if (rc)
        return rc;
    if ((rc = begin_all(it, stage, stage_layers(it, stage))) ||
        (rc = layer_markers(it, ch, b->backward, stage)))
        return rc;
    if (!b->backward) {
        rc = layer_forward(it, b, ch, "");
    } else {
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
        }
        for (int sl = 0; sl < it->nslots && !rc; sl++)
            rc = bwd_pre(it, b, &ch[sl], sl);
        if (!rc)
            rc = it->sp->emit_attn(it->sp->arg, it, stage, b->micro, 1, it->e);
        for (int sl = 0; sl < it->nslots && !rc; sl++) {
            ch[sl].last = it->exit[sl] > ch[sl].last ? it->exit[sl] : ch[sl].last;
            rc = bwd_post(it, b, &ch[sl], sl);
        }
    }
    if (rc || (rc = begin_all(it, stage, 1)) || (rc = layer_markers(it, ch, -1, stage)))
        return rc;
    for (int sl = 0; sl < it->nslots && !rc; sl++) {
        chain *c = &ch[sl];
        double T = tokens(it, b->micro, sl), Tl = T / it->tp;
        if (!b->backward && last) {
            rc = chk(it, gemm(it, c, "lm-head", T, (double)m->vocab / it->tp, h, -1), "lm-head");
            if (!rc)
                rc = chk(it, elem(it, c, "loss", 2 * T * (double)m->vocab / it->tp * 4), "loss");
        } else if (b->backward && first) {
            rc = chk(it, elem(it, c, "embedding-bwd", 2 * Tl * h * by), "embedding-bwd");
        } else {
            int peer = zs_iter_rank(it, b->backward ? stage - 1 : stage + 1, sl);
            int64_t deps[1] = {c->last};
            int64_t op = zs_sched_send(
                it->s, c->rank, it->pp_stream, b->backward ? "pp-send-grad" : "pp-send-act", peer,
                b->backward ? it->tag_grad : it->tag_act, Tl * h * by, deps, c->last >= 0);
            rc = chk(it, op, "pipeline send");
        }
    }
    return rc;
}

/* The optimizer step after the last backward (and the ZeRO weight
 * all-gather that follows it). */
static int optimizer(zs_iter *it, body *b, chain *ch, int stage)
{
    const zs_model *m = it->m;
    double params = zs_model_params(m) / ((double)it->tp * it->pp);
    int rc = begin_all(it, stage, 1);
    for (int sl = 0; sl < it->nslots && !rc; sl++) {
        chain *c = &ch[sl];
        int n = it->s->groups[b->dp_group[sl]].n;
        double shard = it->sp->zero_stage >= 1 ? params / n : params;
        int64_t mk = zs_sched_marker(it->s, c->rank, ZS_MARK_PHASE, ZS_PHASE_OPTIMIZER);
        if ((rc = chk(it, mk, "marker")))
            break;
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
        int nd = 0;
        if (c->last >= 0)
            deps[nd++] = c->last;
        if (last_comm >= 0)
            deps[nd++] = last_comm;
        /* Adam on fp32 master weights: read and write 16 bytes per parameter. */
        double bytes = shard * 32.0;
        int64_t op = zs_sched_elementwise(it->s, c->rank, ZS_STREAM_COMPUTE, "optimizer", bytes,
                                          zs_cost_elementwise(it->cost, bytes), deps, nd);
        if ((rc = chk(it, op, "optimizer")))
            break;
        c->last = op;
        if (it->sp->zero_stage >= 1 && n > 1) {
            /* On the comm stream, like every other collective of the DP
             * group (one communicator, one stream). */
            int64_t d1[1] = {c->last};
            op = zs_sched_coll(it->s, c->rank, ZS_STREAM_COMM, "zero-param-all-gather",
                               b->dp_group[sl], ZS_COLL_ALLGATHER, shard * m->dtype_bytes, d1, 1);
            rc = chk(it, op, "param all-gather");
        }
    }
    return rc;
}

/* ---- groups ------------------------------------------------------------------ */

static int make_groups(zs_iter *it, int stage, body *b)
{
    const zs_cluster *cl = &it->cost->cluster;
    int *ranks = malloc(sizeof(int) * (size_t)(it->nslots + it->tp));
    int *epid = malloc(sizeof(int) * (size_t)it->nslots);
    if (!ranks || !epid) {
        free(ranks);
        free(epid);
        return zs_err_set(it->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    int rc = ZS_OK;
    /* Gradient sync: every slot of the stage holds a replica of its weights. */
    for (int sl = 0; sl < it->nslots; sl++)
        ranks[sl] = zs_iter_rank(it, stage, sl);
    int g = zs_schedule_group_tagged(it->s, ranks, it->nslots, ZS_GROUP_TAG_DP);
    if (g < 0)
        rc = chk(it, g, "group");
    for (int sl = 0; sl < it->nslots; sl++)
        b->dp_group[sl] = g;
    /* TP groups. */
    for (int sl = 0; sl < it->nslots && !rc; sl++) {
        int r0 = zs_iter_rank(it, stage, sl);
        for (int t = 0; t < it->tp; t++)
            ranks[t] = r0 + t;
        int tg = zs_schedule_group_tagged(it->s, ranks, it->tp, ZS_GROUP_TAG_TP);
        if (tg < 0)
            rc = chk(it, tg, "group");
        it->tp_group[r0] = tg;
    }
    /* Expert parallelism inside a node: the stage's slots on the same node. */
    int ngroups = 0;
    for (int sl = 0; sl < it->nslots && !rc; sl++)
        epid[sl] = -1;
    for (int sl = 0; sl < it->nslots && !rc; sl++) {
        if (epid[sl] >= 0)
            continue;
        int node = zs_cluster_node_of(cl, zs_iter_rank(it, stage, sl)), n = 0;
        for (int s2 = sl; s2 < it->nslots; s2++)
            if (epid[s2] < 0 && zs_cluster_node_of(cl, zs_iter_rank(it, stage, s2)) == node) {
                epid[s2] = ngroups;
                ranks[n++] = zs_iter_rank(it, stage, s2);
            }
        int eg = zs_schedule_group_tagged(it->s, ranks, n, ZS_GROUP_TAG_EP);
        if (eg < 0)
            rc = chk(it, eg, "group");
        for (int s2 = sl; s2 < it->nslots; s2++)
            if (epid[s2] == ngroups)
                b->ep_group[s2] = eg;
        ngroups++;
    }
    if (!rc && zs_model_is_moe(it->m))
        moe_loads(it, stage, epid, ngroups);
    free(ranks);
    free(epid);
    return rc;
}

/* Copies every TP group's rank-0 program to its other ranks. */
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
    int rc = ZS_OK;
    for (int o = 1; o < it->tp && !rc; o++) {
        for (int32_t g = 0; g < ng0 && !rc; g++) {
            const zs_group *gr = &s->groups[g];
            /* TP groups stay; every other group moves with the TP rank. */
            int inside = gr->n == it->tp && gr->ranks[0] % it->tp == 0 &&
                         gr->ranks[gr->n - 1] == gr->ranks[0] + it->tp - 1;
            if (inside) {
                map[g] = g;
                continue;
            }
            for (int i = 0; i < gr->n; i++)
                ranks[i] = gr->ranks[i] + o;
            map[g] = zs_schedule_group_tagged(s, ranks, gr->n, gr->tag);
            if (map[g] < 0)
                rc = chk(it, map[g], "group");
        }
        for (int r0 = 0; r0 < s->nranks && !rc; r0 += it->tp) {
            const zs_rank_prog *src = &s->ranks[r0];
            zs_rank_prog *dst = &s->ranks[r0 + o];
            zs_rank_prog copy = {0};
            copy.ops = malloc(sizeof(zs_op) * (size_t)(src->nops ? src->nops : 1));
            copy.deps = malloc(sizeof(int32_t) * (size_t)(src->ndeps ? src->ndeps : 1));
            copy.segs = malloc(sizeof(zs_segment) * (size_t)(src->nsegs ? src->nsegs : 1));
            if (!copy.ops || !copy.deps || !copy.segs) {
                free(copy.ops);
                free(copy.deps);
                free(copy.segs);
                rc = zs_err_set(it->e, ZS_ENOMEM, NULL, NULL, "out of memory");
                break;
            }
            memcpy(copy.ops, src->ops, sizeof(zs_op) * (size_t)src->nops);
            memcpy(copy.deps, src->deps, sizeof(int32_t) * (size_t)src->ndeps);
            memcpy(copy.segs, src->segs, sizeof(zs_segment) * (size_t)src->nsegs);
            copy.nops = copy.ops_cap = src->nops;
            copy.ndeps = copy.deps_cap = src->ndeps;
            copy.nsegs = copy.segs_cap = src->nsegs;
            for (int64_t i = 0; i < copy.nops; i++) {
                zs_op *op = &copy.ops[i];
                if (op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV)
                    op->u.p2p.peer += o;
                else if (op->kind == ZS_OP_COLL)
                    op->u.coll.group = map[op->u.coll.group];
            }
            free(dst->ops);
            free(dst->deps);
            free(dst->segs);
            *dst = copy;
        }
    }
    free(map);
    free(ranks);
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
        /* 1F1B: warm-up forwards, then one forward and one backward in
         * turn, then the remaining backwards. */
        int M = it->M, warm = it->pp - stage - 1;
        if (warm > M)
            warm = M;
        int f = 0, bk = 0;
        b.stage = stage;
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
    it.e = e;
    it.next_tag = 1000;
    it.tag_act = 1;
    it.tag_grad = 2;
    it.entry = malloc(sizeof(int64_t) * (size_t)it.nslots);
    it.exit = malloc(sizeof(int64_t) * (size_t)it.nslots);
    it.moe_load = calloc((size_t)s->nranks, sizeof(double));
    it.tp_group = calloc((size_t)s->nranks, sizeof(int));
    int rc;
    if (!it.entry || !it.exit || !it.moe_load || !it.tp_group) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    } else {
        it.pp_stream = ZS_STREAM_COMM;
        rc = ZS_OK;
        if (d->pp > 1 && (it.pp_stream = zs_schedule_add_stream(s, "pp")) < 0)
            rc = zs_err_set(e, ZS_EINVALID, "iteration builder",
                            "use at most 3 streams of your own with pipelining",
                            "no room for the pipeline stream");
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
    free(it.moe_load);
    free(it.tp_group);
    return rc;
}
