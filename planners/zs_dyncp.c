/* The `dyn-cp` planner: Megatron-Core Dynamic Context Parallelism
 * (Megatron-LM `--dynamic-context-parallel --max-seqlen-per-dp-cp-rank N
 * --sequence-packing-scheduler default_dynamic_cp`), reconstructed from
 * Megatron-LM's documented scheduler and NVIDIA's description of it
 * (docs/methods.md says what is reconstructed and what assumed).
 *
 * The global batch is cut into micro-batches ("waves") by the scheduler in
 * zs_dyncp_sched_internal.h: in each, every document runs on its own power-of-two
 * group of consecutive GPUs drawn from all DP x CP GPUs (the smallest group
 * whose per-GPU share fits max_seqlen, or a larger one when that balances
 * the wave better), several documents may share a group (packed, at most
 * max_seqlen tokens per GPU), and every GPU belongs to exactly one group of
 * the wave. A group of one GPU runs local attention; a larger one runs
 * TransformerEngine's ring (zigzag chunks padded to a multiple of 2n, one
 * ring over the group's documents, KV moving while each step computes), as
 * te-cp does on its fixed group. The linear modules run on the same tokens.
 * Micro-batches run one after the other (forward, backward) with gradient
 * accumulation; gradients are reduced over all GPUs after the last, as
 * Megatron does with its DP x CP gradient group.
 *
 * sched=static is Megatron's baseline for the same flags
 * (`--sequence-packing-scheduler dp_balanced`): documents in batch order
 * packed up to max_seqlen tokens per GPU of a fixed CP group of cp GPUs,
 * packs dealt round robin over the DP groups, one pack per group and
 * micro-batch.
 * Options: tp=N (default 1), cp=N (static CP size, default 16),
 * max_seqlen=N (default: one GPU's capacity), min_cp=N (default 1),
 * sched=dynamic|static (default dynamic). */
#include <limits.h>
#include <stdlib.h>

#include "zs_cpgroup.h"
#include "zs_dyncp_sched_internal.h"
#include "zs_groups_internal.h"

static const zs_opt_spec opt_cp =
    ZS__CPB_OPT_CP("16, or all GPUs / tp when fewer",
                   "Megatron's --context-parallel-size: the CP group of sched=static (dynamic "
                   "groups are drawn from all DP x CP GPUs)");
/* Its upper bound, one GPU's capacity, depends on the model and cluster:
 * read_options() checks it. */
static const zs_opt_spec opt_max_seqlen = {
    .key = "max_seqlen",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = LONG_MAX,
    .computed = "one GPU's token capacity (the memory model)",
    .help = "Megatron's --max-seqlen-per-dp-cp-rank: tokens one GPU holds of a micro-batch "
            "(padded shares)"};
static const zs_opt_spec opt_min_cp = {
    .key = "min_cp",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = 1L << 20,
    .def = 1,
    .help = "Megatron's --min-dynamic-context-parallel-size: the smallest group (a power of two)"};
/* The values in the order of the scheduler modes (0: dynamic). */
static const zs_opt_spec opt_sched = {
    .key = "sched",
    .type = ZS_OPT_ENUM,
    .values = "dynamic|static",
    .def = 0,
    .help = "Megatron's --sequence-packing-scheduler: default_dynamic_cp, or dp_balanced "
            "(static CP of cp GPUs, the baseline)"};

typedef zs_groups dyncp;

/* max_seqlen (at most one GPU's capacity), min_cp (a power of two that
 * fits the GPUs) and sched. */
static int read_options(const zs_plan_ctx *ctx, const zs_cpg *c, long *max_seqlen, long *min_cp,
                        int *sched, zs_err *e)
{
    int rc = zs_opt_int_def(ctx->opts, &opt_max_seqlen, c->cap, max_seqlen, e);
    if (!rc && *max_seqlen > c->cap) {
        char fix[128];
        snprintf(fix, sizeof fix, "give an integer in [1, %ld]", c->cap);
        return zs_err_set(e, ZS_EUSAGE, opt_max_seqlen.key, fix,
                          "max_seqlen=%ld is more than one GPU holds (%ld tokens)", *max_seqlen,
                          c->cap);
    }
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_min_cp, min_cp, e);
    if (!rc && ((*min_cp & (*min_cp - 1)) != 0 || *min_cp > c->nslots)) {
        char fix[128];
        snprintf(fix, sizeof fix, "give a power of two of at most %d (GPUs / tp)", c->nslots);
        return zs_err_set(e, ZS_EUSAGE, opt_min_cp.key, fix,
                          "min_cp=%ld is not a power of two that fits the %d GPU groups", *min_cp,
                          c->nslots);
    }
    if (!rc)
        rc = zs_opt_enum(ctx->opts, &opt_sched, sched, e);
    return rc;
}

/* The footprint zs_cpg_init checks documents against: none here (the
 * scheduler checks each document against max_seqlen on its own group). */
static int64_t no_footprint(int32_t len, int cp)
{
    (void)len;
    (void)cp;
    return 0;
}

static void notes(const dyncp *D, int sched, long max_seqlen, int64_t pad, zs_plan_report *rep)
{
    const zs_dyncp_plan *p = &D->p;
    const zs_cpg *c = &D->c;
    if (sched == 1) {
        zs_plan_report_note(rep,
                            "dyn-cp sched=static (Megatron dp_balanced): layout tp=%d x cp=%d x "
                            "dp=%d; documents in batch order packed up to %ld tokens per GPU of a "
                            "CP group, packs round robin over the DP groups, TE ring per pack",
                            c->tp, c->cp, c->dp, max_seqlen);
    } else {
        int hist[32] = {0}, largest = 0;
        for (int g = 0; g < p->ngroups; g++) {
            int b = 0;
            while ((1 << b) < p->size[g] && b < 31)
                b++;
            hist[b]++;
            if (p->size[g] > largest)
                largest = p->size[g];
        }
        char h[256] = "";
        size_t at = 0;
        for (int b = 0; b < 32 && at < sizeof h; b++)
            if (hist[b])
                at += (size_t)snprintf(h + at, sizeof h - at, "%s%d x %d", at ? ", " : "", hist[b],
                                       1 << b);
        zs_plan_report_note(rep,
                            "dyn-cp (Megatron default_dynamic_cp): tp=%d, groups drawn from all "
                            "%d DP x CP GPUs per micro-batch; documents longest first to the "
                            "power-of-two group that keeps the busiest GPU lowest, up to %ld "
                            "tokens per GPU; TE ring per group, local attention on groups of one",
                            c->tp, c->nslots, max_seqlen);
        zs_plan_report_note(rep, "groups (count x GPUs): %s; largest %d GPUs", h, largest);
    }
    zs_plan_report_note(rep,
                        "%d micro-batches (every GPU runs each), %d documents; padding: %lld "
                        "tokens computed and moved but not trained",
                        p->nwaves, c->ndocs, (long long)pad);
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    dyncp D = {0};
    int rc = zs_cpg_init(ctx, batch, &opt_cp, 16, no_footprint, &D.c, e);
    if (rc)
        return rc;
    zs_cpg *c = &D.c;
    zs_schedule *s = NULL;
    int64_t pad = 0;
    long max_seqlen, min_cp;
    int sched;
    if ((rc = read_options(ctx, c, &max_seqlen, &min_cp, &sched, e)))
        goto out;
    rc = sched == 1
             ? zs_dyncp_static(c->len, c->ndocs, c->cp, c->dp, max_seqlen, &D.p, e)
             : zs_dyncp_dynamic(c->len, c->ndocs, c->nslots, max_seqlen, (int)min_cp, &D.p, e);
    if (rc)
        goto out;
    if ((rc = zs_groups_build(&D, ctx, "dyn-cp", &s, &pad, e)))
        goto out;
    notes(&D, sched, max_seqlen, pad, rep);
out:
    zs_dyncp_plan_free(&D.p);
    return zs_cpg_finish(&D.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_max_seqlen, &opt_sched, &opt_cp,
                                             &opt_min_cp,     &zs_opt_tp, NULL};

const zs_planner_ops zs_planner_dyncp = {
    .name = "dyn-cp",
    .summary = "Megatron-Core Dynamic CP: per micro-batch power-of-two CP groups drawn from all "
               "DP x CP GPUs, balanced by a greedy scheduler",
    .options = options,
    .plan = plan};
