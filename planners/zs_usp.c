/* The `usp` planner: 2-D head x ring attention (USP / LoongTrain). A CP
 * group of cp GPUs is r = cp/u Ulysses groups of u consecutive GPUs (inside
 * a node); Ulysses group i holds ring shard i of every document of the
 * group, i.e. zigzag chunks i and 2r-1-i of a cut into 2r chunks (padded to
 * a multiple of 2r), and each of its u GPUs holds one contiguous u-th of
 * each of those chunks for the linear modules. Attention: an all-to-all
 * inside each Ulysses group turns "my tokens, all heads" into "the group's
 * tokens, heads/u heads" (Q, K, V), then u rings run side by side across
 * the Ulysses groups (GPU j of every group, head subset j), each a zigzag
 * ring of r steps over the whole shard with KV transfers overlapped with the
 * step's attention, and an all-to-all brings O back. Backward mirrors it
 * (dO forward, ring backward, dQ/dK/dV back). The head dimension stays on
 * NVLink and only the ring crosses nodes; u <= KV heads per GPU.
 * Options: cp=N (default 16), ulysses=U (default: the largest divisor of cp
 * that fits a node and divides the heads), tp=N (default 1). */
#include <stdlib.h>

#include "zs_cpgroup.h"
#include "zs_ring.h"

static const zs_opt_spec opt_cp =
    ZS__CPB_OPT_CP("16, or all GPUs / tp when fewer", "context-parallel degree (ulysses x ring)");
static const zs_opt_spec opt_ulysses = {
    .key = "ulysses",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = 64,
    .computed = "the largest divisor of cp that fits a node and divides the KV heads",
    .help = "head-parallel degree inside a node"};

typedef struct usp {
    zs_cpg c;
    int cp_stream;
    int u, r;
    int *ring_slots; /* per group g and head subset j: r slots, [(g * u + j) * r + i] */
    int64_t *lin;    /* per slot: tokens for the linear modules (padded share) */
} usp;

static int64_t a2a(zs_schedule *s, int rank, int stream, const char *label, int grp, double bytes,
                   int64_t dep)
{
    int64_t d1[1] = {dep};
    return zs_sched_coll(s, rank, stream, label, grp, ZS_COLL_ALLTOALL, bytes, d1, dep >= 0);
}

/* The all-to-all of every Ulysses group of CP group g. */
static void uly_a2a(usp *U, zs_iter *it, int stage, int g, const char *label, double per_tok,
                    int64_t *dep)
{
    const zs_cpg *c = &U->c;
    zs_schedule *s = zs_iter_schedule(it);
    if (U->u == 1)
        return;
    int ranks[64];
    for (int i = 0; i < U->r; i++) {
        int first = zs_cpg_slot(c, g, i * U->u);
        for (int j = 0; j < U->u; j++)
            ranks[j] = zs_iter_rank(it, stage, first + j);
        int grp = zs_schedule_group(s, ranks, U->u);
        for (int j = 0; j < U->u; j++) {
            int sl = first + j;
            dep[sl] = a2a(s, ranks[j], U->cp_stream, label, grp, (double)U->lin[first] * per_tok,
                          dep[sl]);
        }
    }
}

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    usp *U = arg;
    const zs_cpg *c = &U->c;
    const zs_model *m = &zs_iter_cost(it)->model;
    (void)micro;
    int hq = zs_iter_heads(it), hkv = zs_iter_kv_heads(it);
    double tok_q = (double)hq * m->head_dim * m->dtype_bytes;
    double tok_qkv = (double)(hq + 2 * hkv) * m->head_dim * m->dtype_bytes;
    int64_t *dep = malloc(sizeof(int64_t) * (size_t)c->nslots);
    int64_t *rdep = malloc(sizeof(int64_t) * (size_t)U->r);
    if (!dep || !rdep) {
        free(dep);
        free(rdep);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    int rc = ZS_OK;
    for (int sl = 0; sl < c->nslots; sl++)
        dep[sl] = zs_iter_entry(it, sl);
    for (int g = 0; g < c->dp && rc == ZS_OK; g++) {
        int n = c->gstart[g + 1] - c->gstart[g];
        const int32_t *docs = c->gdocs + c->gstart[g];
        if (n == 0)
            continue;
        uly_a2a(U, it, stage, g, backward ? "usp-a2a-do" : "usp-a2a-qkv",
                backward ? tok_q : tok_qkv, dep);
        for (int j = 0; j < U->u && rc == ZS_OK; j++) {
            const int *slots = U->ring_slots + (size_t)(g * U->u + j) * U->r;
            if (U->r == 1) {
                rc = zs_cpg_local_attn(it, stage, slots[0], docs, n, hq / U->u, backward,
                                       &dep[slots[0]], e);
                continue;
            }
            for (int i = 0; i < U->r; i++)
                rdep[i] = dep[slots[i]];
            zs_ring_spec rs = {U->r,         slots,      n,    docs, ZS_RING_PAD,
                               U->cp_stream, "usp-ring", NULL, NULL, ZS_CPL_ZIGZAG};
            rc = zs_ring_emit_heads(it, stage, &rs, hq / U->u, hkv / U->u, backward, rdep, e);
            for (int i = 0; i < U->r && rc == ZS_OK; i++)
                dep[slots[i]] = rdep[i];
        }
        if (rc == ZS_OK)
            uly_a2a(U, it, stage, g, backward ? "usp-a2a-dqkv" : "usp-a2a-o",
                    backward ? tok_qkv : tok_q, dep);
    }
    for (int sl = 0; sl < c->nslots && rc == ZS_OK; sl++)
        zs_iter_set_exit(it, sl, dep[sl]);
    free(dep);
    free(rdep);
    return rc ? rc : zs_schedule_check(zs_iter_schedule(it), e);
}

/* Ulysses degree: the option, checked, or the largest divisor of cp that
 * fits a node and splits both head counts. */
static int choose_u(const zs_plan_ctx *ctx, const zs_cpg *c, int *u_out, zs_err *e)
{
    const zs_model *m = ctx->model;
    int hq = m->heads / c->tp, hkv = m->kv_heads / c->tp > 0 ? m->kv_heads / c->tp : 1;
    int gpn = ctx->cluster->gpus_per_node / c->tp;
    int def = 1;
    for (int u = 1; u <= c->cp && u <= 64; u++)
        if (c->cp % u == 0 && gpn % u == 0 && hq % u == 0 && hkv % u == 0)
            def = u;
    long u;
    int rc = zs_opt_int_def(ctx->opts, &opt_ulysses, def, &u, e);
    if (rc)
        return rc;
    if (c->cp % u != 0)
        return zs_err_set(e, ZS_EINPUT, "ulysses", "use a Ulysses degree that divides cp",
                          "ulysses=%ld does not divide cp=%d", u, c->cp);
    if (u > hkv || hq % u != 0 || hkv % u != 0)
        return zs_err_set(e, ZS_EINPUT, "ulysses",
                          "use a Ulysses degree that divides the KV heads per GPU",
                          "ulysses=%ld but %s has %d query and %d KV heads per GPU with tp=%d "
                          "(at most %d, dividing both)",
                          u, m->name, hq, hkv, c->tp, hkv);
    if (gpn % u != 0)
        return zs_err_set(e, ZS_EINPUT, "ulysses",
                          "use a Ulysses degree that divides the GPUs of a node (per TP group)",
                          "ulysses=%ld: the head-parallel group must lie inside a node of %d "
                          "TP groups",
                          u, gpn);
    *u_out = (int)u;
    return ZS_OK;
}

static int place(usp *U, zs_schedule *s, zs_err *e)
{
    const zs_cpg *c = &U->c;
    int u = U->u, r = U->r, rc = ZS_OK;
    for (int g = 0; g < c->dp; g++)
        for (int j = 0; j < u; j++)
            for (int i = 0; i < r; i++)
                U->ring_slots[(size_t)(g * u + j) * r + i] = zs_cpg_slot(c, g, i * u + j);
    for (int g = 0; g < c->dp && !rc; g++)
        for (int x = c->gstart[g]; x < c->gstart[g + 1] && !rc; x++) {
            int d = c->gdocs[x];
            for (int i = 0; i < r && !rc; i++) {
                int chunks[2] = {i, 2 * r - 1 - i};
                for (int h = 0; h < 2 && !rc; h++) {
                    int32_t t0, t1;
                    zs_ring_chunk(c->len[d], r, ZS_RING_PAD, chunks[h], &t0, &t1);
                    /* A contiguous u-th of the chunk per GPU of the group. */
                    int32_t n = t1 - t0, base = n / u, rem = n % u, a = t0;
                    for (int j = 0; j < u && !rc; j++) {
                        int32_t b = a + base + (j < rem);
                        rc = zs_cpg_piece(s, c, d, a, b, zs_cpg_slot(c, g, i * u + j), e);
                        a = b;
                    }
                }
                for (int j = 0; j < u; j++)
                    U->lin[zs_cpg_slot(c, g, i * u + j)] += zs_cpg_fp_zigzag(c->len[d], c->cp);
            }
        }
    return rc;
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    usp U = {0};
    int rc = zs_cpg_init(ctx, batch, &opt_cp, 16, zs_cpg_fp_zigzag, &U.c, e);
    if (rc)
        return rc;
    zs_cpg *c = &U.c;
    zs_schedule *s = NULL;
    if ((rc = choose_u(ctx, c, &U.u, e)))
        goto out;
    U.r = c->cp / U.u;
    U.ring_slots = malloc(sizeof(int) * (size_t)c->nslots);
    U.lin = calloc((size_t)c->nslots, sizeof(int64_t));
    if (!U.ring_slots || !U.lin) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    if ((rc = zs_cpg_schedule(c, &s, &U.cp_stream, e)) || (rc = place(&U, s, e)))
        goto out;
    zs_cpg_note(c, rep,
                "usp: Ulysses groups of consecutive GPUs inside a node (all-to-all of Q/K/V "
                "and O) x zigzag rings across them, one ring per head subset; documents "
                "padded to a multiple of 2*ring for attention, 2*cp for the linear modules");
    zs_plan_report_note(rep, "ulysses=%d x ring=%d", U.u, U.r);
    rc = zs_cpg_build(c, ctx, s, U.lin, emit, &U, e);
out:
    free(U.ring_slots);
    free(U.lin);
    return zs_cpg_finish(&U.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_cp, &opt_ulysses, &zs_opt_tp, NULL};

const zs_planner_ops zs_planner_usp = {
    .name = "usp",
    .summary = "USP / LoongTrain 2-D attention: Ulysses inside a node x ring across nodes",
    .options = options,
    .plan = plan};
