/* One attention pass under a CP layout, step by step: see
 * zs_cplayout_price.h. */
#include "zs_cplayout_price.h"

#include <stdlib.h>

typedef struct pricer {
    const zs_cost *c;
    const zs_cpl_pass *p;
    zs_attn_block *cost; /* docs x ZS_CPL_MAXBLK */
    double *kern;        /* g x g: member k's kernel seconds in step j */
    double *bytes;       /* per holder: KV bytes of its shard */
    double *t;           /* scratch: 6 x g */
} pricer;

static double kv_bytes(const zs_cpl_pass *p, const zs_model *m, double tokens)
{
    return (double)tokens * 2.0 * p->kv_heads * m->head_dim * m->dtype_bytes;
}

/* One launch over the documents' priced blocks of member k in step j (ring
 * layouts) or of its gathered attention (llama3, j ignored). */
static double launch(pricer *P, int k, int j)
{
    const zs_cpl_pass *p = P->p;
    int n = 0;
    for (int d = 0; d < p->docs; d++) {
        zs_attn_block tmp[ZS_CPL_MAXBLK];
        int nr, nc;
        if (zs_cpl_is_ring(p->layout))
            zs_cpl_step_blocks(p->layout, d, p->lens[d], p->g, p->pad, k, j, tmp, &nr, P->cost + n,
                               &nc);
        else
            zs_cpl_gather_blocks(d, p->lens[d], p->g, p->pad, k, tmp, &nr, P->cost + n, &nc);
        n += nc;
    }
    return n > 0 ? zs_cost_attn(P->c, P->cost, n, p->heads, p->backward) : 0;
}

/* Exact FLOPs and seconds of the documents on one GPU, each cut to
 * ceil(len / share) tokens (share 1: whole). */
static double whole(pricer *P, int share, double *flops)
{
    const zs_cpl_pass *p = P->p;
    for (int d = 0; d < p->docs; d++) {
        int32_t n = (p->lens[d] + share - 1) / share;
        P->cost[d] = (zs_attn_block){d, 0, n, 0, n};
    }
    zs_attn_work w = {0};
    double s = zs_cost_attn_work(P->c, P->cost, p->docs, p->heads, p->backward, &w);
    *flops = w.flops_exact;
    return s;
}

/* Tokens member k holds over all documents (priced geometry). */
static double held(const zs_cpl_pass *p, int k)
{
    double t = 0;
    for (int d = 0; d < p->docs; d++)
        t += (double)zs_cpl_member_tokens(p->layout, p->lens[d], p->g, p->pad, k);
    return t;
}

static double xfer(const pricer *P, int k, double bytes)
{
    int g = P->p->g, st = P->p->stride;
    return zs_cost_p2p(P->c, k * st, (k + 1) % g * st, bytes);
}

/* Ring layouts: the event recurrence of the header, members in lockstep
 * only through the KV (and dK/dV) they pass on. */
static void ring_time(pricer *P, zs_cpl_price *o)
{
    const zs_cpl_pass *p = P->p;
    const zs_model *m = &P->c->model;
    int g = p->g;
    double *ct = P->t, *mt = ct + g, *kv = mt + g, *kvn = kv + g, *dkv = kvn + g, *dkvn = dkv + g;
    double *exit = P->kern + (size_t)g * g; /* g more after the kernel table */
    for (int k = 0; k < g; k++)
        ct[k] = mt[k] = kv[k] = kvn[k] = dkv[k] = dkvn[k] = exit[k] = 0;
    double acc_el = (double)p->heads * m->head_dim * ZS_CPL_ACC_BYTES(m->dtype_bytes);
    double most_merge = 0, most_comm = 0;
    for (int k = 0; k < g; k++) { /* what member k does, in sum */
        double mg = 0, cm = 0;
        for (int j = 0; j < g; j++) {
            double b = P->bytes[((k - j) % g + g) % g];
            mg += j > 0 ? zs_cost_elementwise(P->c, acc_el * held(p, k)) : 0;
            mg += j > 0 && p->backward ? zs_cost_elementwise(P->c, 3 * b) : 0;
            cm += (j < g - 1 ? xfer(P, k, b) : 0) + (p->backward ? xfer(P, k, b) : 0);
        }
        most_merge = mg > most_merge ? mg : most_merge;
        most_comm = cm > most_comm ? cm : most_comm;
    }
    o->merge = most_merge;
    o->comm = most_comm;
    for (int j = 0; j < g; j++) {
        for (int k = 0; k < g && j < g - 1; k++) {
            double s = kv[k] > mt[k] ? kv[k] : mt[k];
            mt[k] = s + xfer(P, k, P->bytes[((k - j) % g + g) % g]);
            kvn[(k + 1) % g] = mt[k];
        }
        for (int k = 0; k < g; k++) {
            double s = ct[k] > kv[k] ? ct[k] : kv[k];
            double q = held(p, k);
            ct[k] = s + P->kern[(size_t)k * g + j] +
                    (j > 0 ? zs_cost_elementwise(P->c, acc_el * q) : 0);
        }
        for (int k = 0; k < g && p->backward && g > 1; k++) {
            double b = P->bytes[((k - j) % g + g) % g], ready = ct[k];
            if (j > 0) { /* add the dK/dV that came in (zs_ring's accumulation) */
                ready = (ct[k] > dkv[k] ? ct[k] : dkv[k]) + zs_cost_elementwise(P->c, 3 * b);
                ct[k] = ready;
            }
            double s = ready > mt[k] ? ready : mt[k];
            mt[k] = s + xfer(P, k, b);
            if (j == g - 1)
                exit[(k + 1) % g] = mt[k];
            else
                dkvn[(k + 1) % g] = mt[k];
        }
        for (int k = 0; k < g; k++) {
            kv[k] = kvn[k];
            dkv[k] = dkvn[k];
        }
    }
    o->time = 0;
    for (int k = 0; k < g; k++) {
        double e = ct[k] > exit[k] ? ct[k] : exit[k];
        o->time = e > o->time ? e : o->time;
    }
}

static int price(pricer *P, zs_cpl_price *o, zs_err *e)
{
    const zs_cpl_pass *p = P->p;
    int g = p->g, ring = zs_cpl_is_ring(p->layout);
    double sum = 0;
    o->compute = -1;
    for (int k = 0; k < g; k++) {
        double t = 0;
        for (int j = 0; j < (ring ? g : 1); j++) {
            double s = launch(P, k, j);
            P->kern[(size_t)k * g + j] = s;
            t += s;
        }
        P->bytes[k] = kv_bytes(p, &P->c->model, held(p, k));
        o->kv_bytes = P->bytes[k] > o->kv_bytes ? P->bytes[k] : o->kv_bytes;
        sum += t;
        if (t > o->compute) {
            o->compute = t;
            o->busiest = k;
        }
    }
    o->compute_mean = sum / g;
    if (ring) {
        ring_time(P, o);
        return ZS_OK;
    }
    int *ranks = malloc(sizeof(int) * (size_t)g);
    if (!ranks)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int k = 0; k < g; k++)
        ranks[k] = k * p->stride;
    double ag = g > 1 ? zs_cost_collective(P->c, ZS_COLL_ALLGATHER, ranks, g, o->kv_bytes) : 0;
    double rs = g > 1 && p->backward
                    ? zs_cost_collective(P->c, ZS_COLL_REDUCESCATTER, ranks, g, o->kv_bytes)
                    : 0;
    free(ranks);
    o->comm = ag + rs;
    o->time = ag + o->compute + rs;
    return ZS_OK;
}

int zs_cpl_price_pass(const zs_cost *c, const zs_cpl_pass *p, zs_cpl_price *out, zs_err *e)
{
    if (p->g < 1 || p->docs < 1 || p->heads < 1 || p->kv_heads < 1 || p->stride < 1)
        return zs_err_set(e, ZS_EUSAGE, "--cp", "give a CP group, documents and heads",
                          "nothing to price");
    for (int d = 0; d < p->docs; d++)
        if (p->lens[d] < 2 * p->g)
            return zs_err_set(e, ZS_EUSAGE, "--cp", "use fewer CP ranks or longer documents",
                              "a document of %d tokens cannot be cut into the chunks of %d CP "
                              "ranks",
                              p->lens[d], p->g);
    *out = (zs_cpl_price){0};
    size_t g = (size_t)p->g;
    pricer P = {c, p, NULL, NULL, NULL, NULL};
    P.cost = malloc(sizeof(zs_attn_block) * (size_t)p->docs * ZS_CPL_MAXBLK);
    P.kern = malloc(sizeof(double) * (g * g + g));
    P.bytes = malloc(sizeof(double) * g);
    P.t = malloc(sizeof(double) * 6 * g);
    int rc = ZS_OK;
    if (!P.cost || !P.kern || !P.bytes || !P.t) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    if ((rc = price(&P, out, e)))
        goto out;
    /* The ideal: this pass's FLOPs over g GPUs at the rate of a 1/g share. */
    double share_flops = 0, share = whole(&P, p->g, &share_flops);
    whole(&P, 1, &out->flops);
    out->ideal = share_flops > 0 ? out->flops / p->g * share / share_flops : 0;
out:
    free(P.cost);
    free(P.kern);
    free(P.bytes);
    free(P.t);
    return rc;
}
