/* One attention pass under a CP layout, step by step: see
 * zs_cplayout_price.h. */
#include "zs_cplayout_price.h"

#include <stdlib.h>
#include <string.h>

typedef struct pricer {
    const zs_cost *c;
    const zs_cpl_pass *p;
    zs_attn_block *cost; /* docs x ZS_CPL_MAXBLK */
    double *kern;        /* g x g: member k's kernel seconds in step j */
    double *bytes;       /* per holder: KV bytes of its shard */
    double *t;           /* scratch: 8 x g */
} pricer;

static const char *const impl_names[] = {"fused", "ring-flash-attn", "ring-flash-attn-eager"};

const char *zs_cpl_impl_name(zs_cpl_impl i)
{
    return i >= ZS_CPL_IMPL_FUSED && i <= ZS_CPL_IMPL_RFA_EAGER ? impl_names[i] : "?";
}

int zs_cpl_impl_parse(const char *s, const char *what, zs_cpl_impl *out, zs_err *e)
{
    for (int i = 0; i <= ZS_CPL_IMPL_RFA_EAGER; i++)
        if (strcmp(s, impl_names[i]) == 0) {
            *out = (zs_cpl_impl)i;
            return ZS_OK;
        }
    return zs_err_set(e, ZS_EUSAGE, what, "use " ZS_CPL_IMPL_VALUES,
                      "unknown CP layout implementation '%s'", s);
}

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

/* What a member runs around its kernel in one ring step (seconds, each
 * memory-bound kernel priced by the elementwise model): pre before the
 * kernel (gathers), post after it (casts, the correction or the dQ sum,
 * copies back), kv the dK/dV sums once the incoming dK/dV is there
 * (backward). */
typedef struct step_x {
    double pre, post, kv;
} step_x;

/* Per token: output (and dQ) elements, K or V elements, log-sum-exp
 * elements (fp32), and the model's dtype bytes. */
typedef struct geo {
    double eq, ekv, el, dt;
} geo;

static double ew(const pricer *P, double bytes)
{
    return zs_cost_elementwise(P->c, bytes);
}

/* Tokens of member k's i-th owned chunk, over the documents (zigzag: 0 the
 * early chunk, 1 the late one). */
static double chunk_tokens(const zs_cpl_pass *p, int k, int i)
{
    double t = 0;
    int n = zs_cpl_nchunks(p->layout, p->g), c = zs_cpl_owned(p->layout, p->g, k, i);
    for (int d = 0; d < p->docs; d++) {
        int32_t t0, t1;
        zs_cpl_chunk(p->lens[d], n, p->pad, c, &t0, &t1);
        t += t1 - t0;
    }
    return t;
}

/* ring-flash-attention's step kinds: the contiguous ring skips the steps
 * whose KV is later than its queries; zigzag and stripe compute in every
 * step, on a slice of their output when the KV comes from a later member
 * (zigzag: the late half; stripe: all but the first token); the varlen
 * zigzag cuts packed documents' halves with index gathers, not slices. */
static int rfa_computes(const zs_cpl_pass *p, int k, int j)
{
    return p->layout != ZS_CPL_RING || j <= k;
}
static int rfa_sliced(const zs_cpl_pass *p, int k, int j)
{
    return p->layout != ZS_CPL_RING && j > k;
}
static int rfa_gathers(const zs_cpl_pass *p)
{
    return p->layout == ZS_CPL_ZIGZAG && p->docs > 1;
}

/* Tokens of member k's output a step-j update covers, and tokens of the
 * step's KV shard its dK/dV sum covers. */
static double upd_tokens(const zs_cpl_pass *p, int k, int j)
{
    if (!rfa_sliced(p, k, j))
        return held(p, k);
    return p->layout == ZS_CPL_ZIGZAG ? chunk_tokens(p, k, 1) : held(p, k) - p->docs;
}
static double kv_tokens(const zs_cpl_pass *p, int k, int j)
{
    int h = ((k - j) % p->g + p->g) % p->g;
    if (p->layout == ZS_CPL_ZIGZAG && j <= k)
        return chunk_tokens(p, h, 0);
    return p->layout == ZS_CPL_STRIPE && j > k ? held(p, h) - p->docs : held(p, h);
}

/* The forward correction of nu tokens (utils.py _update_out_and_lse). The
 * TensorExpr fuser makes one kernel of the output's ops (read out fp32, the
 * step's output, both log-sum-exps; write out) and leaves the log-sum-exp's
 * three (aten::log_sigmoid is not in its elementwise set); eager, every op
 * is a kernel: the fp32 cast, block_lse - lse, sigmoid, out - block_out,
 * the product, out - product, and the same three. */
static double correct(const pricer *P, const geo *G, double nu)
{
    double o = nu * G->eq, l = nu * G->el;
    double lse = ew(P, 12 * l) + ew(P, 8 * l) + ew(P, 12 * l);
    if (P->p->impl == ZS_CPL_IMPL_RFA)
        return ew(P, o * (8 + G->dt) + 8 * l) + lse;
    return ew(P, o * (4 + G->dt)) + ew(P, 12 * l) + ew(P, 8 * l) + ew(P, 12 * o) +
           ew(P, 8 * o + 4 * l) + ew(P, 12 * o) + lse;
}

/* An fp32 sum of m elements of the step's dtype buffer (dq += ..., dk +
 * next_dk); through an index (gather, add, scatter back) when gathered. */
static double acc_sum(const pricer *P, const geo *G, double m, int gathered)
{
    double a = ew(P, m * (8 + G->dt));
    return gathered ? ew(P, 8 * m) + a + ew(P, 8 * m) : a;
}

static step_x rfa_fwd(const pricer *P, const geo *G, int k, int j)
{
    const zs_cpl_pass *p = P->p;
    step_x x = {0, 0, 0};
    if (!rfa_computes(p, k, j))
        return x;
    if (j == 0) { /* out = block_out.to(float32) */
        x.post = ew(P, held(p, k) * G->eq * (G->dt + 4));
        return x;
    }
    double nu = upd_tokens(p, k, j);
    x.post = correct(P, G, nu);
    if (!rfa_sliced(p, k, j)) {
        if (rfa_gathers(p)) { /* k0 = k[half_index0], v0 likewise */
            int h = ((k - j) % p->g + p->g) % p->g;
            x.pre = 2 * ew(P, chunk_tokens(p, h, 0) * G->ekv * 2 * G->dt);
        }
        return x;
    }
    /* the slice's out and lse: copied back (out[slice_] = ...), or gathered
     * before and scattered back after (varlen out[half_index1]) */
    double cp = ew(P, 8 * nu * G->eq) + ew(P, 8 * nu * G->el);
    x.pre = rfa_gathers(p) ? cp : 0;
    x.post += cp;
    return x;
}

static step_x rfa_bwd(const pricer *P, const geo *G, int k, int j)
{
    const zs_cpl_pass *p = P->p;
    step_x x = {0, 0, 0};
    double n = held(p, k);
    if (j == 0) { /* dq, dk, dv = the buffers .to(float32) */
        x.post = ew(P, n * G->eq * (G->dt + 4)) + 2 * ew(P, n * G->ekv * (G->dt + 4));
        return x;
    }
    if (!rfa_computes(p, k, j))
        return x; /* dk = next_dk: no op */
    int s = rfa_sliced(p, k, j), gz = rfa_gathers(p);
    x.post = acc_sum(P, G, upd_tokens(p, k, j) * G->eq, gz && s);
    x.kv = 2 * acc_sum(P, G, kv_tokens(p, k, j) * G->ekv, gz && !s);
    if (gz && !s) {
        int h = ((k - j) % p->g + p->g) % p->g;
        x.pre = 2 * ew(P, chunk_tokens(p, h, 0) * G->ekv * 2 * G->dt);
    }
    if (p->layout == ZS_CPL_STRIPE && s) /* softmax_lse[:, :, 1:].contiguous() */
        x.pre += ew(P, 8 * n * G->el);
    return x;
}

/* Once per pass, before the first step (head) and after the last (tail,
 * backward after the last dK/dV has come home). */
static double rfa_head(const pricer *P, const geo *G, int k)
{
    const zs_cpl_pass *p = P->p;
    if (p->layout != ZS_CPL_ZIGZAG)
        return 0;
    double h1 = chunk_tokens(p, k, 1);
    if (!rfa_gathers(p)) /* backward: softmax_lse.chunk(2)[1].contiguous() */
        return p->backward ? ew(P, 8 * h1 * G->el) : 0;
    if (!p->backward) /* q1 = q[half_index1] */
        return ew(P, h1 * G->eq * 2 * G->dt);
    /* dout1, q1, out1 gathered; get_half_lse copies each document's half */
    double t = 3 * ew(P, h1 * G->eq * 2 * G->dt);
    int n = zs_cpl_nchunks(p->layout, p->g), c = zs_cpl_owned(p->layout, p->g, k, 1);
    for (int d = 0; d < p->docs; d++) {
        int32_t t0, t1;
        zs_cpl_chunk(p->lens[d], n, p->pad, c, &t0, &t1);
        t += ew(P, 8.0 * (t1 - t0) * G->el);
    }
    return t;
}
static double rfa_tail(const pricer *P, const geo *G, int k)
{
    double n = held(P->p, k), t = ew(P, n * G->eq * (4 + G->dt)); /* out or dq .to(dtype) */
    return P->p->backward ? t + 2 * ew(P, n * G->ekv * (4 + G->dt)) : t;
}

/* Member k's work around its step-j kernel under the pass's implementation
 * (zs_cpl_impl): the generic model keeps one fused pass per step after the
 * first and three KV-sized passes per dK/dV sum. */
static step_x step_extra(const pricer *P, const geo *G, int k, int j)
{
    const zs_cpl_pass *p = P->p;
    if (p->impl != ZS_CPL_IMPL_FUSED)
        return p->backward ? rfa_bwd(P, G, k, j) : rfa_fwd(P, G, k, j);
    double acc_el = G->eq * ZS_CPL_ACC_BYTES(G->dt);
    step_x x = {0, 0, 0};
    x.post = j > 0 ? ew(P, acc_el * held(p, k)) : 0;
    x.kv = j > 0 && p->backward ? ew(P, 3 * P->bytes[((k - j) % p->g + p->g) % p->g]) : 0;
    return x;
}

/* Ring layouts: the event recurrence of the header, members in lockstep
 * only through the KV (and dK/dV) they pass on. */
static void ring_time(pricer *P, zs_cpl_price *o)
{
    const zs_cpl_pass *p = P->p;
    const zs_model *m = &P->c->model;
    int g = p->g, rfa = p->impl != ZS_CPL_IMPL_FUSED;
    geo G = {(double)p->heads * m->head_dim, (double)p->kv_heads * m->head_dim, p->heads,
             m->dtype_bytes};
    /* ring-flash-attention sends the fp32 dK/dV sums */
    double dscale = rfa ? 4.0 / m->dtype_bytes : 1.0;
    double *ct = P->t, *mt = ct + g, *kv = mt + g, *kvn = kv + g, *dkv = kvn + g, *dkvn = dkv + g;
    double *exit = P->kern + (size_t)g * g;       /* g more after the kernel table */
    double *tail = P->t + 6 * g, *add = tail + g; /* add: this step's dK/dV sums */
    double most_merge = 0, most_comm = 0;
    for (int k = 0; k < g; k++) { /* what member k does, in sum */
        ct[k] = rfa ? rfa_head(P, &G, k) : 0;
        tail[k] = rfa ? rfa_tail(P, &G, k) : 0;
        mt[k] = kv[k] = kvn[k] = dkv[k] = dkvn[k] = exit[k] = 0;
        double mg = ct[k] + tail[k], cm = 0;
        for (int j = 0; j < g; j++) {
            double b = P->bytes[((k - j) % g + g) % g];
            step_x x = step_extra(P, &G, k, j);
            mg += x.pre + x.post;
            mg += x.kv;
            cm += (j < g - 1 ? xfer(P, k, b) : 0) + (p->backward ? xfer(P, k, b * dscale) : 0);
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
            step_x x = step_extra(P, &G, k, j);
            ct[k] = s + x.pre + P->kern[(size_t)k * g + j] + x.post;
            add[k] = x.kv;
        }
        for (int k = 0; k < g && p->backward && g > 1; k++) {
            double b = P->bytes[((k - j) % g + g) % g], ready = ct[k];
            if (j > 0) { /* add the dK/dV that came in (zs_ring's accumulation) */
                ready = (ct[k] > dkv[k] ? ct[k] : dkv[k]) + add[k];
                ct[k] = ready;
            }
            double s = ready > mt[k] ? ready : mt[k];
            mt[k] = s + xfer(P, k, b * dscale);
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
        double e = (ct[k] > exit[k] ? ct[k] : exit[k]) + tail[k];
        o->time = e > o->time ? e : o->time;
    }
}

/* ring-flash-attention's llama3 (llama3_flash_attn_varlen_func at
 * 01c8baf5): contiguous placement over the pack (zs_cpl_pack_blocks); K and
 * V all-gathered HEADS_K_STRIDE KV heads at a time, each group's gathers
 * (one for K, one for V, async on NCCL's stream) issued before the previous
 * group's kernel so they overlap it, after a .contiguous() copy of the
 * local shard's heads; one varlen kernel per group. The backward gathers
 * again, zeroes the group's gathered dK/dV buffer, and reduce-scatters
 * dK and dV synchronously after each group's kernel (queued behind the
 * next group's gathers on the same stream), then copies them into dK and
 * dV; the forward concatenates the groups' outputs. Every member runs the
 * same steps and the collectives start when the last member issues them. */
#define RFA_HEADS_K_STRIDE 4 /* the value its benchmark passes */

static int rfa_llama3(const zs_cpl_pass *p)
{
    return p->layout == ZS_CPL_LLAMA3 && p->impl != ZS_CPL_IMPL_FUSED;
}

/* A collective over the group's members of bytes per member; ranks: the
 * members (group_ranks). */
static double coll(const pricer *P, const int *ranks, zs_coll_kind kind, double bytes)
{
    return P->p->g > 1 ? zs_cost_collective(P->c, kind, ranks, P->p->g, bytes) : 0;
}

/* The members' ranks (malloc'd; NULL when out of memory, error set). */
static int *group_ranks(const zs_cpl_pass *p, zs_err *e)
{
    int *ranks = malloc(sizeof(int) * (size_t)p->g);
    if (!ranks) {
        zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        return NULL;
    }
    for (int k = 0; k < p->g; k++)
        ranks[k] = k * p->stride;
    return ranks;
}

static int rfa_llama3_price(pricer *P, zs_cpl_price *o, zs_err *e)
{
    const zs_cpl_pass *p = P->p;
    int *ranks = group_ranks(p, e);
    if (!ranks)
        return e->code;
    const zs_model *m = &P->c->model;
    int g = p->g, ng = p->kv_heads % RFA_HEADS_K_STRIDE ? 1 : p->kv_heads / RFA_HEADS_K_STRIDE;
    double L = 0, sum = 0;
    for (int d = 0; d < p->docs; d++)
        L += p->lens[d];
    double *c = P->t; /* one group's kernel seconds per member */
    o->compute = -1;
    for (int k = 0; k < g; k++) {
        int n = zs_cpl_pack_blocks(p->lens, p->docs, g, k, P->cost);
        c[k] = n > 0 ? zs_cost_attn(P->c, P->cost, n, p->heads / ng, p->backward) : 0;
        sum += ng * c[k];
        if (ng * c[k] > o->compute) {
            o->compute = ng * c[k];
            o->busiest = k;
        }
    }
    o->compute_mean = sum / g;
    o->kv_bytes = kv_bytes(p, m, L / g);
    double half = o->kv_bytes / ng / 2, hd = (double)m->head_dim * m->dtype_bytes;
    double ag = 2 * coll(P, ranks, ZS_COLL_ALLGATHER, half);
    double rs = p->backward ? 2 * coll(P, ranks, ZS_COLL_REDUCESCATTER, half) : 0;
    free(ranks);
    double cont = ew(P, 2 * 2 * half); /* k[:, heads].contiguous(), v likewise */
    double zero = ew(P, 2 * L * (p->kv_heads / ng) * hd), back = ng > 1 ? ew(P, 4 * half) : 0;
    double cat = ng > 1 && !p->backward ? ew(P, 2 * (L / g) * p->heads * hd) : 0;
    /* lockstep over the members: tc[k] each one's compute stream */
    double *tc = P->t + g, done = cont + ag, worst = 0;
    for (int k = 0; k < g; k++)
        tc[k] = cont;
    for (int i = 0; i < ng; i++) {
        double next = 0, issue = 0;
        for (int k = 0; k < g; k++) {
            tc[k] += p->backward ? zero : 0;
            tc[k] = (tc[k] > done ? tc[k] : done) + (i < ng - 1 ? cont : 0);
            issue = tc[k] > issue ? tc[k] : issue;
            tc[k] += c[k];
        }
        next = i < ng - 1 ? issue + ag : issue;
        double rs_start = next;
        for (int k = 0; k < g && p->backward; k++)
            rs_start = tc[k] > rs_start ? tc[k] : rs_start;
        for (int k = 0; k < g && p->backward; k++)
            tc[k] = rs_start + rs + back;
        done = next;
    }
    for (int k = 0; k < g; k++)
        worst = tc[k] + cat > worst ? tc[k] + cat : worst;
    o->comm = ng * (ag + rs);
    o->merge = ng * (cont + (p->backward ? zero : 0) + back) + cat;
    o->time = worst;
    return ZS_OK;
}

static int price(pricer *P, zs_cpl_price *o, zs_err *e)
{
    const zs_cpl_pass *p = P->p;
    if (rfa_llama3(p))
        return rfa_llama3_price(P, o, e);
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
    int *ranks = group_ranks(p, e);
    if (!ranks)
        return e->code;
    double ag = coll(P, ranks, ZS_COLL_ALLGATHER, o->kv_bytes);
    double rs = p->backward ? coll(P, ranks, ZS_COLL_REDUCESCATTER, o->kv_bytes) : 0;
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
    P.t = malloc(sizeof(double) * 8 * g);
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
