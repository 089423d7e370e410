/* Synthetic CP ring-attention iteration: see zs_synth.h. */
#include "zs_synth.h"

#include <stdio.h>
#include <string.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) < 0)                                                                               \
            goto oom;                                                                              \
    } while (0)

/* Deterministic jitter in [0.95, 1.05] per rank (splitmix64). */
static double jitter(uint64_t seed, int rank)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return 0.95 + 0.1 * (double)(z >> 11) / 9007199254740992.0;
}

/* One rank's ring attention (forward or backward): `cp` blocks, the first
 * on the local shard (causal), the others on shards arriving from the
 * previous rank, each transfer overlapping the previous block. Returns the
 * last compute op. */
static int64_t ring(zs_schedule *s, const zs_cost *cost, int rank, int cp0, int cp, int tokens,
                    double jit, int backward, int64_t entry)
{
    const zs_model *m = &cost->model;
    int me = rank - cp0;
    int next = cp0 + (me + 1) % cp, prev = cp0 + (me + cp - 1) % cp;
    double kv = (double)tokens * 2 * m->kv_heads * m->head_dim * m->dtype_bytes;
    if (backward)
        kv *= 2; /* KV and its gradient travel together */
    zs_attn_block b = {0, me * tokens, (me + 1) * tokens, me * tokens, (me + 1) * tokens};
    double t = zs_cost_attn(cost, &b, 1, m->heads, backward) * jit;
    int64_t prev_op = entry;
    int64_t c = zs_sched_attn(s, rank, ZS_STREAM_COMPUTE, backward ? "attn-bwd" : "attn-fwd",
                              backward, &b, 1, m->heads, t, &prev_op, 1);
    if (c < 0)
        return c;
    int64_t last_recv = entry;
    for (int k = 1; k < cp; k++) {
        /* Step k: pass on the shard of step k-1, receive the next one. */
        int64_t sd = zs_sched_send(s, rank, ZS_STREAM_COMM, "kv-send", next, k, kv, &last_recv, 1);
        int64_t rv = zs_sched_recv(s, rank, ZS_STREAM_COMM, "kv-recv", prev, k, kv, NULL, 0);
        if (sd < 0 || rv < 0)
            return -1;
        last_recv = rv;
        int src = (me + cp - k) % cp; /* whose shard arrived */
        /* Zigzag CP gives every off-diagonal step half a full block; keep
         * that cost with half the queries of the later shard. */
        int hi = src > me ? src : me, lo = src > me ? me : src;
        zs_attn_block f = {0, hi * tokens, hi * tokens + tokens / 2, lo * tokens,
                           (lo + 1) * tokens};
        int64_t dep[2] = {rv, c};
        t = zs_cost_attn(cost, &f, 1, m->heads, backward) * jit;
        c = zs_sched_attn(s, rank, ZS_STREAM_COMPUTE, backward ? "attn-bwd" : "attn-fwd", backward,
                          &f, 1, m->heads, t, dep, 2);
        if (c < 0)
            return c;
    }
    return c;
}

int zs_synth_cp_ring(const zs_cost *cost, const zs_synth_spec *sp, zs_schedule **out, zs_err *e)
{
    const zs_model *m = &cost->model;
    if (sp->cp < 1 || sp->gpus < sp->cp || sp->gpus % sp->cp != 0 || sp->layers < 1 ||
        sp->tokens < 1)
        return zs_err_set(e, ZS_EINPUT, "bench",
                          "use a GPU count that is a multiple of the CP size",
                          "synthetic schedule: %d GPUs, CP %d, %d layers, %d tokens per rank",
                          sp->gpus, sp->cp, sp->layers, sp->tokens);
    zs_schedule *s = zs_schedule_new(sp->gpus);
    if (!s)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    snprintf(s->method, sizeof s->method, "synthetic-cp-ring");
    snprintf(s->model, sizeof s->model, "%s", m->name);
    snprintf(s->cluster, sizeof s->cluster, "%s", cost->cluster.name);
    snprintf(s->cost_desc, sizeof s->cost_desc, "%s", cost->desc);
    int dp = sp->gpus / sp->cp;
    s->dims = (zs_layout_dims){1, sp->cp, 1, dp};
    s->layers = sp->layers;
    double t = sp->tokens, h = m->hidden, hd = (double)m->heads * m->head_dim;
    double kvd = (double)m->kv_heads * m->head_dim;
    double params = 0;
    int *grp = NULL;
    for (int r = 0; r < sp->gpus; r++) {
        double jit = jitter(sp->seed, r);
        int cp0 = r - r % sp->cp;
        /* forward, one layer per repeat */
        CHECK(zs_schedule_begin_segment(s, r, sp->layers));
        CHECK(zs_sched_marker(s, r, ZS_MARK_LAYER, 0));
        int64_t q = zs_sched_gemm(s, r, 0, "qkv", t, hd + 2 * kvd, h,
                                  zs_cost_gemm(cost, t, hd + 2 * kvd, h), NULL, 0);
        CHECK(q);
        int64_t a = ring(s, cost, r, cp0, sp->cp, sp->tokens, jit, 0, q);
        CHECK(a);
        int64_t o = zs_sched_gemm(s, r, 0, "o-proj", t, h, hd, zs_cost_gemm(cost, t, h, hd), &a, 1);
        CHECK(o);
        CHECK(zs_sched_gemm(s, r, 0, "mlp-up", t, 2.0 * m->ffn, h,
                            zs_cost_gemm(cost, t, 2.0 * m->ffn, h), NULL, 0));
        CHECK(zs_sched_gemm(s, r, 0, "mlp-down", t, h, m->ffn, zs_cost_gemm(cost, t, h, m->ffn),
                            NULL, 0));
        /* backward: GEMMs cost twice the forward, ring mirrored */
        CHECK(zs_schedule_begin_segment(s, r, sp->layers));
        CHECK(zs_sched_marker(s, r, ZS_MARK_LAYER, 0));
        CHECK(zs_sched_gemm(s, r, 0, "mlp-bwd", t, 3.0 * m->ffn, h,
                            2 * zs_cost_gemm(cost, t, 3.0 * m->ffn, h), NULL, 0));
        int64_t ob = zs_sched_gemm(s, r, 0, "o-proj-bwd", t, h, hd,
                                   2 * zs_cost_gemm(cost, t, h, hd), NULL, 0);
        CHECK(ob);
        int64_t ab = ring(s, cost, r, cp0, sp->cp, sp->tokens, jit, 1, ob);
        CHECK(ab);
        int64_t qb = zs_sched_gemm(s, r, 0, "qkv-bwd", t, hd + 2 * kvd, h,
                                   2 * zs_cost_gemm(cost, t, hd + 2 * kvd, h), &ab, 1);
        CHECK(qb);
        /* gradient sync over the data-parallel replicas of this CP index */
        CHECK(zs_schedule_begin_segment(s, r, 1));
        if (dp > 1) {
            if (!grp && !(grp = malloc(sizeof(int) * (size_t)dp)))
                goto oom;
            for (int d = 0; d < dp; d++)
                grp[d] = d * sp->cp + r % sp->cp;
            int g = zs_schedule_group(s, grp, dp);
            CHECK(g);
            params = (double)sp->layers *
                     (h * (hd + 2 * kvd) + hd * h + 3.0 * h * m->ffn); /* per-layer weights */
            CHECK(zs_sched_coll(s, r, ZS_STREAM_COMM, "grad-allreduce", g, ZS_COLL_ALLREDUCE,
                                params * m->dtype_bytes, &qb, 1));
        }
    }
    free(grp);
    *out = s;
    return ZS_OK;
oom:
    free(grp);
    /* The builder's first failure when it was one, else the malloc above. */
    int rc = zs_schedule_check(s, e);
    if (!rc)
        rc = zs_err_set(e, ZS_ENOMEM, "synthetic schedule", NULL, "out of memory");
    zs_schedule_free(s);
    return rc;
}
