/* The `bytescale` planner: ByteScale's Hybrid Data Parallelism (Ge et al.,
 * arXiv 2502.21231, ByteDance), reconstructed from the paper's description
 * (docs/methods.md says what is reconstructed and what assumed).
 *
 * All DP x CP GPUs form one pool (the paper's dynamic mesh). The scheduler
 * in zs_bytescale_sched_internal.h shards each document over the fewest
 * GPUs that hold it (data-aware sharding: a document that fits one GPU runs
 * there alone, with no CP communication; a longer one runs a ring over
 * exactly as many consecutive GPUs as its padded shares need, not a power
 * of two) and balances the estimated work over the GPUs with a different
 * number of micro-batches per GPU (the balance scheduler). A group of one
 * GPU runs local attention; a larger one runs TransformerEngine's ring
 * (zigzag chunks padded to a multiple of 2n, KV moving while each step
 * computes), as te-cp and dyn-cp do. The linear modules run on the same
 * tokens. Each GPU runs its own micro-batches one after the other; a ring
 * ties its GPUs' micro-batches together; gradients are reduced over all
 * GPUs after the last.
 *
 * Selective activation offloading (offload=on, zs_bytescale_offload_internal.h):
 * a document that does not fit its GPUs' HBM may still take them when
 * part of its activations goes to host memory with copies hidden under
 * its compute; the copies run on a stream of their own ("offload").
 * Off by default (the HBM capacity only, as before). Not modelled: the
 * paper's pipeline-parallel variant of the scheduler.
 * Options: tp=N (default 1), max_cp=N (the widest CP group, default all
 * GPUs / tp), max_seqlen=N (default: one GPU's capacity), offload=off|on. */
#include <limits.h>
#include <stdlib.h>

#include "zs_bytescale_offload_internal.h"
#include "zs_bytescale_sched_internal.h"
#include "zs_cpgroup.h"
#include "zs_groups_internal.h"

/* The layout's cp: every GPU is in one pool, so it is the widest group a
 * document may take (and gradients reduce over all GPUs either way). */
static const zs_opt_spec opt_max_cp = {
    .key = "max_cp",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = 1L << 20,
    .def = 1L << 20,
    .computed = "all GPUs / tp",
    .help = "the widest CP group a document may span (it must divide GPUs / tp)"};
/* Its upper bound, one GPU's capacity, depends on the model and cluster:
 * read_options() checks it. */
static const zs_opt_spec opt_max_seqlen = {
    .key = "max_seqlen",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = LONG_MAX,
    .computed = "one GPU's token capacity (the memory model)",
    .help = "tokens one GPU holds of a micro-batch (padded shares): the sharding's capacity"};

static const zs_opt_spec opt_offload = {
    .key = "offload",
    .type = ZS_OPT_ENUM,
    .values = "off|on",
    .def = 0,
    .help = "selective activation offloading to host memory: long documents on fewer GPUs, "
            "copies hidden under compute (docs/methods.md)"};

typedef struct bytescale {
    zs_groups g;
    zs_bs_offload off;
} bytescale;

/* The work weights of the balance scheduler, from the model's forward
 * FLOPs per layer and TP rank: the projections and the MLP per token, and
 * causal attention (half the len x len scores, QK^T and PV) per token
 * pair. The paper balances measured execution time; FLOPs are the
 * reconstruction's stand-in for it (assumed). */
static zs_bytescale_work work_of(const zs_model *m)
{
    double h = m->hidden, qd = (double)m->heads * m->head_dim;
    double kvd = (double)m->kv_heads * m->head_dim;
    double f = m->experts > 0 ? (double)m->top_k * m->expert_ffn : m->ffn;
    double mats = zs_model_mlp(m) == ZS_MLP_SWIGLU ? 3 : 2;
    zs_bytescale_work w = {.lin_w = 2 * (h * (2 * qd + 2 * kvd) + mats * h * f), .attn_w = 2 * qd};
    return w;
}

/* The footprint zs_cpg_init checks documents against: none here (the
 * scheduler checks each document against max_cp GPUs). */
static int64_t no_footprint(int32_t len, int cp)
{
    (void)len;
    (void)cp;
    return 0;
}

static void notes(const bytescale *BS, long cap, int64_t pad, zs_plan_report *rep)
{
    const zs_groups *B = &BS->g;
    const zs_dyncp_plan *p = &B->p;
    const zs_cpg *c = &B->c;
    int local = 0, wide = 0, largest = 1, fewest = p->nwaves, most = 0;
    for (int g = 0; g < p->ngroups; g++) {
        if (p->size[g] > 1)
            wide++;
        else
            local++;
        if (p->size[g] > largest)
            largest = p->size[g];
    }
    for (int sl = 0; sl < p->nslots; sl++) {
        int last = 0; /* micro-batches up to the GPU's last group */
        for (int m = 0; m < p->nwaves; m++)
            for (int g = p->wave_start[m]; g < p->wave_start[m + 1]; g++)
                if (sl >= p->first[g] && sl < p->first[g] + p->size[g])
                    last = m + 1;
        fewest = last < fewest ? last : fewest;
        most = last > most ? last : most;
    }
    zs_plan_report_note(rep,
                        "bytescale (HDP, reconstructed): tp=%d, one pool of %d GPUs; each document "
                        "on the fewest GPUs that hold it (%ld tokens each), local attention when "
                        "one does, a TE ring over up to %d GPUs otherwise",
                        c->tp, c->nslots, cap, c->cp);
    zs_plan_report_note(rep,
                        "%d local micro-batches, %d CP rings (largest %d GPUs); balance scheduler: "
                        "%d to %d micro-batches per GPU; padding: %lld tokens",
                        local, wide, largest, fewest, most, (long long)pad);
    if (!BS->off.ratio) {
        zs_plan_report_note(rep, "no activation offloading (HBM capacity only; offload=on "
                                 "offloads what does not fit)");
        return;
    }
    int k = 0;
    double rmax = 0, bmax = 0;
    for (int g = 0; g < BS->off.ngroups; g++)
        if (BS->off.ratio[g] > 0) {
            k++;
            rmax = BS->off.ratio[g] > rmax ? BS->off.ratio[g] : rmax;
            bmax = BS->off.bytes[g] > bmax ? BS->off.bytes[g] : bmax;
        }
    zs_plan_report_note(rep,
                        "selective offloading on (%.1f GB/s host link): %d micro-batch groups "
                        "offload, up to %.1f%% of their activations (%.0f MiB per GPU per layer "
                        "each way, %.2f ms), copies hidden under each layer's forward by the "
                        "ratio's choice; peak_mem_gib counts what stays on the GPU",
                        BS->off.host_bps / 1e9, k, 100 * rmax, bmax / 1048576.0,
                        1e3 * zs_bs_offload_copy_s(&BS->off, bmax));
}

/* The groups' hook: the copies of the groups that offload. */
static int offload_hook(void *arg, zs_iter *it, int stage, int micro, int backward, int g,
                        int first, int n, int64_t *dep, zs_err *e)
{
    bytescale *BS = arg;
    if (g < 0) {
        BS->off.stream = BS->g.hook_stream_id;
        zs_bs_offload_pass(&BS->off, micro, backward);
        return ZS_OK;
    }
    return zs_bs_offload_emit(&BS->off, it, stage, micro, backward, g, first, n, dep, e);
}

/* With offloading: the fewest GPUs each document needs (its copies hidden),
 * in a new array *need. */
static int offload_need(bytescale *BS, const zs_plan_ctx *ctx, long cap, int **need, zs_err *e)
{
    const zs_cpg *c = &BS->g.c;
    int rc = zs_bs_offload_init(&BS->off, ctx->cost, &c->mc, c->tp, cap, e);
    if (rc)
        return rc;
    *need = malloc(sizeof(int) * (size_t)(c->ndocs > 0 ? c->ndocs : 1));
    if (!*need)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int max_n = c->cp < c->nslots ? c->cp : c->nslots;
    for (int32_t d = 0; d < c->ndocs; d++) {
        double r;
        (*need)[d] = zs_bs_offload_needed(&BS->off, c->len[d], max_n, &r);
    }
    return ZS_OK;
}

static int read_seqlen(const zs_plan_ctx *ctx, const zs_cpg *c, long *max_seqlen, zs_err *e)
{
    int rc = zs_opt_int_def(ctx->opts, &opt_max_seqlen, c->cap, max_seqlen, e);
    if (!rc && *max_seqlen > c->cap) {
        char fix[128];
        snprintf(fix, sizeof fix, "give an integer in [1, %ld]", c->cap);
        return zs_err_set(e, ZS_EUSAGE, opt_max_seqlen.key, fix,
                          "max_seqlen=%ld is more than one GPU holds (%ld tokens)", *max_seqlen,
                          c->cap);
    }
    return rc;
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    bytescale BS = {0};
    zs_groups *B = &BS.g;
    int rc = zs_cpg_init(ctx, batch, &opt_max_cp, 1L << 20, no_footprint, &B->c, e);
    if (rc)
        return rc;
    zs_cpg *c = &B->c;
    zs_schedule *s = NULL;
    int64_t pad = 0;
    long cap;
    int offload = 0, *need = NULL;
    if ((rc = read_seqlen(ctx, c, &cap, e)) ||
        (rc = zs_opt_enum(ctx->opts, &opt_offload, &offload, e)) ||
        (offload && (rc = offload_need(&BS, ctx, cap, &need, e))) ||
        (rc = zs_bytescale_schedule_need(c->len, c->ndocs, c->nslots, cap, c->cp,
                                         work_of(ctx->model), need, &B->p, e)))
        goto out;
    if (offload) {
        if ((rc = zs_bs_offload_assign(&BS.off, &B->p, c->len, e)))
            goto out;
        B->hook = offload_hook;
        B->hook_arg = &BS;
        B->hook_stream = "offload";
    }
    if ((rc = zs_groups_build(B, ctx, "bytescale", &s, &pad, e)))
        goto out;
    if (offload)
        rep->max_resident_tokens = zs_bs_offload_resident(&BS.off, &B->p, c->len);
    notes(&BS, cap, pad, rep);
out:
    free(need);
    zs_bs_offload_free(&BS.off);
    zs_dyncp_plan_free(&B->p);
    return zs_cpg_finish(&B->c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_max_seqlen, &opt_max_cp, &zs_opt_tp, &opt_offload,
                                             NULL};

const zs_planner_ops zs_planner_bytescale = {
    .name = "bytescale",
    .summary = "ByteScale HDP: each document on the fewest GPUs that hold it (local when one "
               "does), work balanced with a different micro-batch count per GPU",
    .options = options,
    .plan = plan};
