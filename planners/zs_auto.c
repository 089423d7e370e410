/* The `auto` planner: a layout per document, chosen by predicted time on
 * the cost model the backends execute with (calibrated under --calib).
 * The search (zs_auto_search_internal.h) sends documents of more than a node's share of
 * the work to head x ring units over windows of nodes (Ulysses inside each
 * node, a zigzag ring across them: USP's layout for one document), the
 * rest to nodes by LPT, and per node puts the k documents of most work
 * head-parallel over the node's GPUs (Ulysses through NVLink) or on a ring
 * over the node's GPUs (zigzag, NVLink; with u > 1 Ulysses inside it) and
 * the rest whole on one GPU (LPT), k and that layout searched by predicted
 * makespan. Variants (how readily documents span nodes, no spanning) are
 * searched, the cheapest plan wins, and the notes print the runner-ups
 * (with the chosen partition's uniform layouts: every node local,
 * head-parallel, or on its ring). Lowering reuses the ring emitter
 * (zs_ring.h) and the baselines' local attention (zs_cpgroup.h); a node's
 * first all-to-all runs under its local attention, and its head unit runs
 * in two waves of heads where they split, each wave's all-to-alls under
 * the other's attention. Remapping inside nodes (zs_remap.h's
 * plan: a node's local documents placed on attention alone, the linear
 * tokens above the node's mean sent to the GPUs below it and their outputs
 * back) and routing of the span units' inter-node ring hops over a node's
 * NICs (zs_route.h) are weighed on the same prices and taken
 * where the predicted time drops; the notes say which and by how much.
 * Options: tp, ulysses (the node's head-parallel degree), span=0|1,
 * layout=auto|local|heads|ring, remap=0|1, routing=0|1. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_auto_search_internal.h"
#include "zs_cpgroup.h"
#include "zs_ring.h"
#include "zs_sort.h"
#include "zs_crossover.h"
#include "zs_remap.h"
#include "zs_route.h"

static const zs_opt_spec opt_ulysses = {
    .key = "ulysses",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = 64,
    .computed = "the largest divisor of a node's GPUs (per TP group) that divides the query and "
                "KV heads per GPU",
    .help = "head-parallel degree inside a node (1: no head parallelism)"};
static const zs_opt_spec opt_span = {.key = "span",
                                     .type = ZS_OPT_BOOL,
                                     .max = 1,
                                     .def = 1,
                                     .help = "documents of more than a node's share of the work "
                                             "may span nodes (Ulysses x ring)"};
static const zs_opt_spec opt_remap = {.key = "remap",
                                      .type = ZS_OPT_BOOL,
                                      .max = 1,
                                      .def = 1,
                                      .help = "weigh remapping linear tokens between a node's GPUs "
                                              "(taken where predicted to pay)"};
static const zs_opt_spec opt_routing = {.key = "routing",
                                        .type = ZS_OPT_BOOL,
                                        .max = 1,
                                        .def = 1,
                                        .help =
                                            "weigh routing the rings' inter-node transfers over "
                                            "a node's NICs (taken where predicted to pay)"};
static const zs_opt_spec opt_layout = {.key = "layout",
                                       .type = ZS_OPT_ENUM,
                                       .max = 3,
                                       .def = 0,
                                       .values = "auto|local|heads|ring",
                                       .help = "per-node layout: searched, documents whole on a "
                                               "GPU where they fit, all head-parallel, or all on "
                                               "a ring over the node's GPUs"};

/* Planners use tag 0 for their groups; the builder's are 1-3. */
enum { GROUP_TAG_SPAN = 8 };
/* The all-to-all price table: 8 points per octave up to 2^31 tokens. */
enum { A2A_STEPS = 8, A2A_TAB = 31 * A2A_STEPS };

typedef struct ap {
    const zs_plan_ctx *ctx;
    const int32_t *len;
    zs_layout_dims dims;
    int G, S, u, hq, hkv, passes; /* passes: forward attention passes (2 with recompute) */
    int waves;                    /* a node head unit runs its heads in this many waves (1 or 2) */
    int kv_split; /* its KV heads split over the waves too (else the first brings them all) */
    long cap;
    int a2a_stream, span_stream;
    double tok_q, tok_qkv;     /* bytes per token of Q (or O) and of Q, K, V */
    double *af, *ab, *hf, *hb; /* per document: attention fwd / bwd, all heads and heads / u */
    double *full, *heads;      /* per document, per layer: passes x fwd + bwd */
    const zs_auto_plan *plan;
    int *slot_head, *slot_local; /* per slot: its head unit and local unit, -1 */
    int64_t *lin;
    /* Remapping (zs_remap.h's plan per remapped node): flows
     * between slots, tokens per linear holder whose attention is elsewhere,
     * per document whether some of its tokens' linear modules run on
     * another GPU (its attention then waits for their inputs). */
    int remap_opt, nflows;
    int32_t ndocs;
    zs_remap_flow *flows;
    int64_t *moved, moved_total;
    uint8_t *doc_imp;
    int remap_stream;
    /* Routing (zs_route.h) of the span units' inter-node ring hops. */
    int routing_opt, k;
    double chunk;
    zs_route *route;
    uint8_t *unit_routed; /* per unit */
    int span_units, routed_units;
    double span_direct_s, span_routed_s; /* the span units' predicted seconds per layer, summed */
    double mk_plain, mk_remap; /* the chosen variant's makespan without and with remapping */
    /* What cutting a GPU's linear ops in two (moved tokens' part, the
     * rest; zs_iter_spec.moved_tokens) adds to its layer, at the mean
     * share, by moved tokens: 2^(i / A2A_STEPS), up to the share. */
    double split_tab[A2A_TAB];
    int split_n;
    double a2a_tab[A2A_TAB], a2a_hid[A2A_TAB]; /* a2a_exact at 2^(i / A2A_STEPS) tokens */
} ap;

/* The two all-to-alls of one pass with `tokens` per GPU over a group of u
 * GPUs: Q/K/V-sized (qkv) and Q-sized (q). */
static void a2a_pair(const ap *A, int u, double tokens, double *qkv, double *q)
{
    *qkv = *q = 0;
    if (u < 2 || tokens <= 0)
        return;
    int ranks[64];
    for (int j = 0; j < u; j++)
        ranks[j] = zs_slot_rank(&A->dims, 0, j);
    const zs_cost *c = A->ctx->cost;
    *qkv = zs_cost_collective(c, ZS_COLL_ALLTOALL, ranks, u, tokens * A->tok_qkv);
    *q = zs_cost_collective(c, ZS_COLL_ALLTOALL, ranks, u, tokens * A->tok_q);
}

/* Seconds per layer of a Ulysses group's all-to-alls with `tokens` per GPU
 * (per forward pass Q/K/V out and O back, backward dO out and dQ/dK/dV
 * back), and in *hidden the part local attention can run under (the first
 * of each pass: Q/K/V forward, dO backward). */
static double a2a_exact(const ap *A, double tokens, double *hidden)
{
    double qkv, q;
    a2a_pair(A, A->u, tokens, &qkv, &q);
    *hidden = A->passes * qkv + q;
    return (A->passes + 1) * (qkv + q);
}

/* The same as far as a node's head unit exposes it: with w waves only the
 * first wave's first all-to-all waits (local attention can hide it) and
 * only the last wave's second one is exposed; the others run under the
 * neighbouring wave's attention. */
static double a2a_waves(const ap *A, double tokens, double *hidden)
{
    double t = a2a_exact(A, tokens, hidden);
    *hidden /= A->waves;
    return t / A->waves;
}

/* The search asks for a2a_waves once per candidate and node, so it reads
 * a table of A2A_STEPS points per octave of tokens, interpolated linearly
 * (collective times are piecewise linear in bytes; the planner's choice,
 * not the schedule, sees the interpolation). */
static double a2a_time(void *arg, double tokens, double *hidden)
{
    const ap *A = arg;
    double x = tokens > 1 ? log2(tokens) * A2A_STEPS : 0;
    int i = (int)x;
    if (tokens <= 1 || i + 1 >= A2A_TAB)
        return a2a_waves(A, tokens, hidden);
    double t0 = exp2((double)i / A2A_STEPS), t1 = exp2((double)(i + 1) / A2A_STEPS);
    double f = (tokens - t0) / (t1 - t0);
    *hidden = A->a2a_hid[i] + f * (A->a2a_hid[i + 1] - A->a2a_hid[i]);
    return A->a2a_tab[i] + f * (A->a2a_tab[i + 1] - A->a2a_tab[i]);
}

static void a2a_table(ap *A)
{
    for (int i = 0; i < A2A_TAB; i++)
        A->a2a_tab[i] = a2a_waves(A, exp2((double)i / A2A_STEPS), &A->a2a_hid[i]);
}

/* Seconds per layer per GPU of document d over a window of m nodes: per
 * pass r ring steps, each the slower of its attention (the document's
 * attention with heads / u over r members and r steps) and its KV transfer
 * (backward: KV and dK/dV, then dK/dV home), plus the group's all-to-alls.
 * Direct, transfers across a node boundary leave from the last Ulysses
 * group of a node: its u slots of tp GPUs each send at once, so a NIC
 * carries as many transfers as it has GPUs of that group behind it (u x tp
 * consecutive GPUs, at most the GPUs per NIC; every TP rank moves its own
 * KV heads). Routed (routed = 1; zs_route.h), each transfer is
 * cut over k NICs through NVLink relays, so the node's u x tp transfers
 * share min(NICs, u x tp x k) NICs, plus the relay pipeline's fill and
 * drain (a chunk over NVLink each way) per step, and the relaying GPUs
 * lose the SM time their forwarding kernels hold (the slices not on the
 * sender's own NIC, spread over the node's slots) from each step's
 * attention. m = 1 is the node's ring: NVLink between neighbouring slots,
 * never routed. */
static double span_time_as(const ap *A, int32_t d, int m, int routed)
{
    const zs_cluster *cl = A->ctx->cluster;
    const zs_model *md = A->ctx->model;
    int r = m * A->G / A->u;
    double shard = 2.0 * ceil((double)A->len[d] / (2.0 * r));
    double kv =
        shard * 2.0 * (A->hkv / A->u > 0 ? A->hkv / A->u : 1) * md->head_dim * md->dtype_bytes;
    int tp = A->dims.tp;
    int dst = m > 1 ? A->G : (A->S > 1 ? 1 : 0);
    int r0 = zs_slot_rank(&A->dims, 0, 0), far = dst > 0 ? zs_slot_rank(&A->dims, 0, dst) : 0;
    double x = 0, relay = 0;
    if (r > 1 && dst > 0 && routed && m > 1) {
        int n = A->u * tp, nics = cl->nics_per_node > 1 ? cl->nics_per_node : 1;
        int lanes = n * A->k < nics ? n * A->k : nics;
        double slice = kv / A->k, chunk = A->chunk < slice ? A->chunk : slice;
        x = zs_cost_p2p(A->ctx->cost, r0, far, kv * n / lanes) +
            2 * zs_cost_p2p(A->ctx->cost, r0, zs_slot_rank(&A->dims, 0, 1), chunk);
        relay = zs_route_relay_compute_s(cl, kv * n * (A->k - 1) / A->k / A->G);
    } else if (r > 1 && dst > 0) {
        x = zs_cost_p2p(A->ctx->cost, r0, far, kv);
        int gpn = zs_cluster_gpus_per_nic(cl), senders = A->u * tp < gpn ? A->u * tp : gpn;
        if (m > 1 && senders > 1)
            x *= senders;
    }
    double cf = A->hf[d] / ((double)r * r), cb = A->hb[d] / ((double)r * r);
    double fwd = (r - 1) * fmax(cf + relay, x) + cf;
    double bwd = (r - 1) * fmax(cb + 2 * relay, 2 * x) + cb + x + relay;
    double lin_share = 2.0 * ceil((double)A->len[d] / (2.0 * m * A->G)), hidden;
    return A->passes * fwd + bwd + a2a_exact(A, lin_share, &hidden);
}

/* Routing is weighed where it can change something (a window of nodes,
 * k > 1 NICs per transfer, the option on) and where a span unit is one
 * ring (u = 1): with u > 1 its u rings are emitted one after the other, and
 * a relay's forwarding kernels of one ring sit on its compute stream ahead
 * of its own ring's steps, which then wait for them (measured: a 1.2M-token
 * document over 2 nodes, ulysses=2, analytic: 1,994 tokens/s routed
 * against 2,946 direct; ulysses=1: 2,952 against 2,947). */
static int can_route(const ap *A, int m)
{
    return A->routing_opt && A->k > 1 && A->u == 1 && m > 1 && A->ctx->cluster->nodes > 1;
}

/* The search's price: direct. Routing is decided per span unit once the
 * layout is chosen (decide_routing): priced into the search, it made
 * documents span nodes that the simulation then ran slower (GitHub, 2
 * nodes, ulysses=2: 12,387 against 18,835 tokens/s on SimGrid), because a
 * span unit's u rings are emitted one after the other and a relay's
 * forwarding kernels of one ring sit on the compute stream ahead of its own
 * ring's steps (routing is now weighed for u = 1 only, can_route). */
static double span_time(void *arg, int32_t d, int m)
{
    return span_time_as(arg, d, m, 0);
}

/* Seconds per layer of moving `tokens` tokens' activations between a
 * node's GPUs and back, every pass: forward Q, K, V in and O out (twice
 * with recomputation), backward dO in and dQ, dK, dV out, over NVLink. */
static double remap_time(void *arg, double tokens)
{
    const ap *A = arg;
    int r0 = zs_slot_rank(&A->dims, 0, 0), r1 = zs_slot_rank(&A->dims, 0, 1);
    const zs_cost *c = A->ctx->cost;
    double x = (A->passes + 1) * (zs_cost_p2p(c, r0, r1, tokens * A->tok_qkv) +
                                  zs_cost_p2p(c, r0, r1, tokens * A->tok_q));
    /* The split linear ops, interpolated in the table (its last entry
     * beyond the share). */
    double f = tokens > 1 ? log2(tokens) * A2A_STEPS : 0;
    int i = (int)f;
    if (A->split_n < 1)
        return x;
    if (i + 1 >= A->split_n)
        return x + A->split_tab[A->split_n - 1];
    return x + A->split_tab[i] + (f - i) * (A->split_tab[i + 1] - A->split_tab[i]);
}

static int64_t a2a_op(zs_schedule *s, int rank, int stream, const char *label, int grp,
                      double bytes, int64_t dep)
{
    int64_t d1[1] = {dep};
    return zs_sched_coll(s, rank, stream, label, grp, ZS_COLL_ALLTOALL, bytes, d1, dep >= 0);
}

/* The all-to-all of a Ulysses group of u consecutive slots from `first`
 * (first = 1: Q/K/V forward, dO backward; else O forward, dQ/dK/dV
 * backward), each after dep[slot], op into out[slot]. */
static void group_a2a(ap *A, zs_iter *it, int stage, int first_slot, int u, double tokens,
                      int first, int backward, int wave, const char *pfx, int stream,
                      const int64_t *dep, int64_t *out)
{
    zs_schedule *s = zs_iter_schedule(it);
    int ranks[64];
    for (int j = 0; j < u; j++)
        ranks[j] = zs_iter_rank(it, stage, first_slot + j);
    /* The span units' groups are other communicators than the node's (a
     * communicator belongs to one stream). */
    int grp = zs_schedule_group_tagged(s, ranks, u, stream == A->span_stream ? GROUP_TAG_SPAN : 0);
    int big = first != backward; /* fwd first: Q/K/V; bwd second: dQ/dK/dV */
    const char *what = backward ? (first ? "a2a-do" : "a2a-dqkv") : (first ? "a2a-qkv" : "a2a-o");
    char label[48];
    snprintf(label, sizeof label, "%s%s", pfx, what);
    double q = tokens * A->tok_q, kv = big ? tokens * (A->tok_qkv - A->tok_q) : 0;
    if (wave >= 0) {
        /* A wave moves its share of the query heads; KV heads too when
         * they split, else the first wave brings them all and the last
         * takes their gradients back (both waves' queries use them). */
        q /= A->waves;
        if (A->kv_split)
            kv /= A->waves;
        else if (wave != (backward ? A->waves - 1 : 0))
            kv = 0;
    }
    for (int j = 0; j < u; j++)
        out[first_slot + j] = a2a_op(s, ranks[j], stream, label, grp, q + kv, dep[first_slot + j]);
}

static int64_t unit_tokens(const ap *A, const zs_auto_unit *un)
{
    int64_t t = 0;
    for (int i = 0; i < un->n; i++) {
        int32_t len = A->len[A->plan->docs[un->start + i]];
        t += un->kind == ZS_AUTO_UNIT_SPAN || un->kind == ZS_AUTO_UNIT_RING
                 ? zs_cpg_fp_zigzag(len, un->u * un->r)
                 : len;
    }
    return t;
}

/* A span unit or a node's ring: all-to-alls inside its Ulysses groups
 * around u rings of r. */
static int emit_span(ap *A, zs_iter *it, int stage, const zs_auto_unit *un, int backward,
                     int64_t *dep, int *slots, int64_t *rdep, zs_err *e)
{
    int u = un->u, r = un->r, rc = ZS_OK;
    int routed = A->unit_routed && A->unit_routed[un - A->plan->unit];
    double share = (double)unit_tokens(A, un);
    const int32_t *docs = A->plan->docs + un->start;
    if (u > 1)
        for (int i = 0; i < r; i++)
            group_a2a(A, it, stage, un->first + i * u, u, share, 1, backward, -1, "auto-span-",
                      A->span_stream, dep, dep);
    for (int j = 0; j < u && rc == ZS_OK; j++) {
        for (int i = 0; i < r; i++) {
            slots[i] = un->first + i * u + j;
            rdep[i] = dep[slots[i]];
        }
        zs_ring_spec rs = {r,
                           slots,
                           un->n,
                           docs,
                           ZS_RING_PAD,
                           A->span_stream,
                           "auto-ring",
                           routed ? zs_route_xfer : NULL,
                           routed ? A->route : NULL,
                           ZS_CPL_ZIGZAG};
        rc = zs_ring_emit_heads(it, stage, &rs, A->hq / u, A->hkv / u > 0 ? A->hkv / u : 1,
                                backward, rdep, e);
        for (int i = 0; i < r && rc == ZS_OK; i++)
            dep[slots[i]] = rdep[i];
    }
    if (u > 1 && rc == ZS_OK)
        for (int i = 0; i < r; i++)
            group_a2a(A, it, stage, un->first + i * u, u, share, 0, backward, -1, "auto-span-",
                      A->span_stream, dep, dep);
    return rc;
}

/* A wave of a head unit's attention: every GPU of the group, whole
 * documents with heads / u / waves heads, after its wave's first
 * all-to-all (q1) and its chain (dep). */
static int emit_heads_attn(ap *A, zs_iter *it, int stage, const zs_auto_unit *un, int backward,
                           const int64_t *q1, int64_t *dep, zs_err *e)
{
    zs_schedule *s = zs_iter_schedule(it);
    zs_attn_block *blk = malloc(sizeof(zs_attn_block) * (size_t)un->n);
    if (!blk)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0; i < un->n; i++) {
        int32_t d = A->plan->docs[un->start + i];
        blk[i] = (zs_attn_block){d, 0, A->len[d], 0, A->len[d]};
    }
    int heads = A->hq / un->u / A->waves;
    double t = zs_cost_attn(zs_iter_cost(it), blk, un->n, heads, backward);
    for (int j = 0; j < un->u; j++) {
        int sl = un->first + j;
        int64_t deps[2] = {q1[sl], dep[sl]};
        int nd = deps[1] >= 0 ? 2 : 1;
        dep[sl] = zs_sched_attn(s, zs_iter_rank(it, stage, sl), ZS_STREAM_COMPUTE,
                                backward ? "auto-heads-attn-bwd" : "auto-heads-attn-fwd", backward,
                                blk, un->n, heads, t, deps, nd);
    }
    free(blk);
    return ZS_OK;
}

typedef struct emit_ws {
    int64_t *dep, *q1, *ex, *rdep;
    int *slots;
    int64_t *fin, *fout; /* per remap flow: its input's and its output's receive */
    int32_t *docs;       /* a local unit's documents, split */
    int tag_in, tag_out;
} emit_ws;

/* Remap inputs: each flow's tokens leave their linear holder once their
 * own pre-attention ops are done (Q, K, V forward; dO backward). */
static void remap_in(ap *A, zs_iter *it, int stage, int backward, emit_ws *w)
{
    zs_schedule *s = zs_iter_schedule(it);
    for (int i = 0; i < A->nflows; i++) {
        const zs_remap_flow *f = &A->flows[i];
        int rl = zs_iter_rank(it, stage, f->to), ra = zs_iter_rank(it, stage, f->from);
        double bytes = (double)f->tokens * (backward ? A->tok_q : A->tok_qkv);
        int64_t sd = zs_iter_entry_moved(it, f->to), rd = zs_iter_rank_layer_start(it, ra);
        zs_sched_send(s, rl, A->remap_stream, "auto-remap-in", ra, w->tag_in, bytes, &sd, sd >= 0);
        w->fin[i] = zs_sched_recv(s, ra, A->remap_stream, "auto-remap-in", rl, w->tag_in, bytes,
                                  &rd, rd >= 0);
    }
}

/* A slot's local documents: those whose tokens all stay first; then, once
 * the remap inputs of the others arrived, those, and their outputs back to
 * their linear holders. */
static int emit_local(ap *A, zs_iter *it, int stage, int sl, const zs_auto_unit *un, int backward,
                      emit_ws *w, zs_err *e)
{
    const int32_t *docs = A->plan->docs + un->start;
    int nk = 0, ni = 0, rc;
    for (int i = 0; A->doc_imp && i < un->n; i++)
        ni += A->doc_imp[docs[i]];
    if (ni == 0)
        return zs_cpg_local_attn(it, stage, sl, docs, un->n, 0, backward, &w->dep[sl], e);
    for (int i = 0; i < un->n; i++)
        if (!A->doc_imp[docs[i]])
            w->docs[nk++] = docs[i];
    for (int i = 0, j = nk; i < un->n; i++)
        if (A->doc_imp[docs[i]])
            w->docs[j++] = docs[i];
    if ((rc = zs_cpg_local_attn(it, stage, sl, w->docs, nk, 0, backward, &w->dep[sl], e)))
        return rc;
    zs_schedule *s = zs_iter_schedule(it);
    int ra = zs_iter_rank(it, stage, sl), nd = 0;
    int64_t *deps = w->rdep; /* scratch: at most the node's slots + 1 */
    deps[nd++] = w->dep[sl];
    for (int i = 0; i < A->nflows; i++)
        if (A->flows[i].from == sl && w->fin[i] >= 0)
            deps[nd++] = w->fin[i];
    int64_t join = zs_route_sync(s, ra, ZS_STREAM_COMPUTE, deps, nd);
    if ((rc = zs_cpg_local_attn(it, stage, sl, w->docs + nk, ni, 0, backward, &join, e)))
        return rc;
    w->dep[sl] = join;
    for (int i = 0; i < A->nflows; i++) {
        const zs_remap_flow *f = &A->flows[i];
        if (f->from != sl)
            continue;
        int rl = zs_iter_rank(it, stage, f->to);
        int64_t rd = zs_iter_rank_layer_start(it, rl);
        double bytes = (double)f->tokens * (backward ? A->tok_qkv : A->tok_q);
        zs_sched_send(s, ra, A->remap_stream, "auto-remap-out", rl, w->tag_out, bytes, &join, 1);
        w->fout[i] = zs_sched_recv(s, rl, A->remap_stream, "auto-remap-out", ra, w->tag_out, bytes,
                                   &rd, rd >= 0);
    }
    return zs_schedule_check(s, e);
}

/* Each linear holder's moved tokens continue once all their outputs are
 * back. */
static void remap_out_joins(ap *A, zs_iter *it, int stage, emit_ws *w)
{
    zs_schedule *s = zs_iter_schedule(it);
    for (int l = 0; l < A->S; l++) {
        if (A->moved[l] == 0)
            continue;
        int nd = 0;
        for (int i = 0; i < A->nflows; i++)
            if (A->flows[i].to == l && w->fout[i] >= 0)
                w->rdep[nd++] = w->fout[i];
        zs_iter_set_exit_moved(
            it, l, zs_route_sync(s, zs_iter_rank(it, stage, l), A->remap_stream, w->rdep, nd));
    }
}

/* Order per slot: span units and the node's ring, local documents (under
 * the head unit's first all-to-all, Q/K/V forward and dO backward), the
 * head unit (its second all-to-all exposed). Local attention stays whole
 * before the head unit in both directions: the all-to-alls are barriers of
 * the node, and work split around them would have to balance per segment,
 * not per layer (measured: splitting loses up to 3% on ProLong). */
static int emit_all(ap *A, zs_iter *it, int stage, int backward, emit_ws *w, zs_err *e)
{
    const zs_auto_plan *p = A->plan;
    int rc = ZS_OK;
    if (A->nflows > 0)
        remap_in(A, it, stage, backward, w);
    for (int i = 0; i < p->nunits; i++)
        if (p->unit[i].kind == ZS_AUTO_UNIT_HEADS) {
            const zs_auto_unit *un = &p->unit[i];
            double most = ceil((double)unit_tokens(A, un) / un->u);
            for (int v = 0; v < A->waves; v++)
                group_a2a(A, it, stage, un->first, un->u, most, 1, backward, v, "auto-",
                          A->a2a_stream, w->dep, w->q1 + (size_t)v * A->S);
        }
    for (int i = 0; i < p->nunits && rc == ZS_OK; i++)
        if (p->unit[i].kind == ZS_AUTO_UNIT_SPAN || p->unit[i].kind == ZS_AUTO_UNIT_RING)
            rc = emit_span(A, it, stage, &p->unit[i], backward, w->dep, w->slots, w->rdep, e);
    for (int sl = 0; sl < A->S && rc == ZS_OK; sl++) {
        int lu = A->slot_local[sl];
        if (lu >= 0)
            rc = emit_local(A, it, stage, sl, &p->unit[lu], backward, w, e);
    }
    for (int i = 0; i < p->nunits && rc == ZS_OK; i++)
        if (p->unit[i].kind == ZS_AUTO_UNIT_HEADS) {
            const zs_auto_unit *un = &p->unit[i];
            double most = ceil((double)unit_tokens(A, un) / un->u);
            for (int v = 0; v < A->waves && rc == ZS_OK; v++) {
                rc = emit_heads_attn(A, it, stage, un, backward, w->q1 + (size_t)v * A->S, w->dep,
                                     e);
                /* The second all-to-all reads the attention's exit; the
                 * next wave's attention runs under it. */
                if (rc == ZS_OK)
                    group_a2a(A, it, stage, un->first, un->u, most, 0, backward, v, "auto-",
                              A->a2a_stream, w->dep, w->ex);
            }
        }
    if (A->nflows > 0 && rc == ZS_OK)
        remap_out_joins(A, it, stage, w);
    return rc;
}

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    ap *A = arg;
    (void)micro;
    size_t S = (size_t)A->S, nf = (size_t)A->nflows + 1;
    emit_ws w = {malloc(sizeof(int64_t) * S),
                 malloc(sizeof(int64_t) * S * 2),
                 malloc(sizeof(int64_t) * S),
                 malloc(sizeof(int64_t) * S),
                 malloc(sizeof(int) * S),
                 malloc(sizeof(int64_t) * nf),
                 malloc(sizeof(int64_t) * nf),
                 malloc(sizeof(int32_t) * ((size_t)A->ndocs + 1)),
                 0,
                 0};
    int rc = ZS_OK;
    if (!w.dep || !w.q1 || !w.ex || !w.rdep || !w.slots || !w.fin || !w.fout || !w.docs) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nf; i++)
        w.fin[i] = w.fout[i] = -1;
    if (A->nflows > 0) {
        w.tag_in = zs_iter_tag(it);
        w.tag_out = zs_iter_tag(it);
    }
    if (A->route) /* a pass: the NICs' planned bytes start again */
        zs_route_phase(A->route);
    for (int sl = 0; sl < A->S; sl++) {
        w.dep[sl] = zs_iter_entry(it, sl);
        w.q1[sl] = w.q1[sl + A->S] = w.ex[sl] = -1;
    }
    rc = emit_all(A, it, stage, backward, &w, e);
    for (int sl = 0; sl < A->S && rc == ZS_OK; sl++)
        zs_iter_set_exit(it, sl, w.ex[sl] >= 0 ? w.ex[sl] : w.dep[sl]);
    if (rc == ZS_OK)
        rc = zs_schedule_check(zs_iter_schedule(it), e);
out:
    free(w.dep);
    free(w.q1);
    free(w.ex);
    free(w.rdep);
    free(w.slots);
    free(w.fin);
    free(w.fout);
    free(w.docs);
    return rc;
}

/* ---- placement ------------------------------------------------------------------ */

/* Tokens [t0, t1) of document d on a slot: for attention and the linear
 * modules (both = 1) or attention only (its linear pieces follow the remap
 * plan). */
static int piece_as(ap *A, zs_schedule *s, int32_t d, int32_t t0, int32_t t1, int slot, int count,
                    int both, zs_err *e)
{
    if (t1 <= t0)
        return ZS_OK;
    int rank = zs_slot_rank(&A->dims, 0, slot);
    zs_schedule_add_piece(s, d, t0, t1, rank, ZS_LAYOUT_ATTN, 0);
    if (both)
        zs_schedule_add_piece(s, d, t0, t1, rank, ZS_LAYOUT_LINEAR, 0);
    if (count)
        A->lin[slot] += t1 - t0;
    return zs_schedule_check(s, e);
}

static int piece(ap *A, zs_schedule *s, int32_t d, int32_t t0, int32_t t1, int slot, int count,
                 zs_err *e)
{
    return piece_as(A, s, d, t0, t1, slot, count, 1, e);
}

static int linear_piece(ap *A, zs_schedule *s, int32_t d, int32_t t0, int32_t t1, int slot,
                        zs_err *e)
{
    if (t1 <= t0)
        return ZS_OK;
    zs_schedule_add_piece(s, d, t0, t1, zs_slot_rank(&A->dims, 0, slot), ZS_LAYOUT_LINEAR, 0);
    return zs_schedule_check(s, e);
}

static int search_bug(int slot, const char *what, zs_err *e)
{
    char w[32];
    snprintf(w, sizeof w, "slot %d", slot);
    return zs_err_set(e, ZS_EINVALID, w, NULL, "auto remap: %s (a search bug)", what);
}

/* The linear pieces of one remapped node's local documents: the remap plan
 * (zs_remap_plan_nodes: every slot its node's mean tokens) over the
 * slots' tokens; a slot above the mean keeps its local documents' tokens
 * longest document first and sends the rest (its shortest documents, whose
 * attention waits least for them) to the slots below, flow by flow. */
static int remap_node(ap *A, zs_schedule *s, int x, int32_t *tmp, zs_err *e)
{
    const zs_auto_plan *p = A->plan;
    int G = A->G, rc;
    zs_remap *rm = NULL;
    if ((rc = zs_remap_plan_nodes(A->lin + (size_t)x * G, G, G, 1.0, &rm, e)))
        return rc;
    int f0 = 0;
    for (int g = 0; g < G && !rc; g++) {
        int sl = x * G + g, lu = A->slot_local[sl];
        int64_t out = 0;
        while (f0 < rm->nflows && rm->flows[f0].from < g)
            f0++;
        for (int i = f0; i < rm->nflows && rm->flows[i].from == g; i++)
            out += rm->flows[i].tokens;
        if (lu < 0) {
            if (out > 0)
                rc = search_bug(sl, "a slot without local documents sends tokens", e);
            continue;
        }
        const zs_auto_unit *un = &p->unit[lu];
        int64_t ltok = 0;
        for (int i = 0; i < un->n; i++) {
            tmp[i] = p->docs[un->start + i];
            ltok += A->len[tmp[i]];
        }
        if (out > ltok) {
            rc = search_bug(sl, "more tokens to send than local documents hold", e);
            break;
        }
        if (zs_sort_longest_first(tmp, un->n, A->len)) {
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory ordering a remapped node");
            break;
        }
        int64_t keep = ltok - out, pos = 0;
        int fi = f0;
        int64_t left = out > 0 ? rm->flows[fi].tokens : 0;
        for (int i = 0; i < un->n && !rc; i++) {
            int32_t d = tmp[i], len = A->len[d];
            int32_t k0 = keep - pos >= len ? len : (int32_t)(keep > pos ? keep - pos : 0);
            rc = linear_piece(A, s, d, 0, k0, sl, e);
            for (int32_t t = k0; t < len && !rc;) {
                if (left == 0) {
                    fi++;
                    left = rm->flows[fi].tokens;
                }
                int32_t n = (int64_t)(len - t) < left ? len - t : (int32_t)left;
                rc = linear_piece(A, s, d, t, t + n, x * G + rm->flows[fi].to, e);
                A->doc_imp[d] = 1;
                t += n;
                left -= n;
            }
            pos += len;
        }
    }
    for (int i = 0; i < rm->nflows && !rc; i++) {
        zs_remap_flow f = rm->flows[i];
        f.from += x * G;
        f.to += x * G;
        A->flows[A->nflows++] = f;
        A->moved[f.to] += f.tokens;
        A->moved_total += f.tokens;
    }
    for (int g = 0; g < G && !rc; g++)
        A->lin[x * G + g] = rm->target[g];
    zs_remap_free(rm);
    return rc;
}

/* Span: Ulysses group i holds zigzag chunks i and 2r-1-i (padded), each of
 * its GPUs a contiguous u-th of each (USP's placement); the linear modules
 * are charged the padded share, as in usp. */
static int place_span(ap *A, zs_schedule *s, const zs_auto_unit *un, zs_err *e)
{
    int u = un->u, r = un->r, rc = ZS_OK;
    for (int x = 0; x < un->n && !rc; x++) {
        int32_t d = A->plan->docs[un->start + x], len = A->len[d];
        for (int i = 0; i < r && !rc; i++) {
            int chunks[2] = {i, 2 * r - 1 - i};
            for (int h = 0; h < 2 && !rc; h++) {
                int32_t t0, t1;
                zs_ring_chunk(len, r, ZS_RING_PAD, chunks[h], &t0, &t1);
                int32_t n = t1 - t0, base = n / u, rem = n % u, a = t0;
                for (int j = 0; j < u && !rc; j++) {
                    int32_t b = a + base + (j < rem);
                    rc = piece(A, s, d, a, b, un->first + i * u + j, 0, e);
                    a = b;
                }
            }
        }
        for (int g = 0; g < u * r; g++)
            A->lin[un->first + g] += zs_cpg_fp_zigzag(len, u * r);
    }
    return rc;
}

/* Heads: the unit's documents packed in batch order and cut into u
 * contiguous equal shards (Ulysses' placement). */
static int place_heads(ap *A, zs_schedule *s, const zs_auto_unit *un, zs_err *e)
{
    int64_t T = unit_tokens(A, un), base = T / un->u, rem = T % un->u, pos = 0;
    int k = 0, rc = ZS_OK;
    int64_t end = base + (rem > 0);
    for (int x = 0; x < un->n && !rc; x++) {
        int32_t d = A->plan->docs[un->start + x];
        int64_t d0 = pos, d1 = pos + A->len[d];
        while (pos < d1 && !rc) {
            while (pos >= end) {
                k++;
                end += base + (k < rem);
            }
            int64_t stop = d1 < end ? d1 : end;
            rc = piece(A, s, d, (int32_t)(pos - d0), (int32_t)(stop - d0), un->first + k, 1, e);
            pos = stop;
        }
    }
    return rc;
}

static int place(ap *A, zs_schedule *s, zs_err *e)
{
    const zs_auto_plan *p = A->plan;
    int rc = ZS_OK;
    for (int sl = 0; sl < A->S; sl++)
        A->slot_head[sl] = A->slot_local[sl] = -1;
    for (int i = 0; i < p->nunits && !rc; i++) {
        const zs_auto_unit *un = &p->unit[i];
        if (un->kind == ZS_AUTO_UNIT_SPAN || un->kind == ZS_AUTO_UNIT_RING) {
            rc = place_span(A, s, un, e);
        } else if (un->kind == ZS_AUTO_UNIT_HEADS) {
            rc = place_heads(A, s, un, e);
            for (int j = 0; j < un->u; j++)
                A->slot_head[un->first + j] = i;
        } else {
            int both = !(p->node_remap && p->node_remap[un->first / A->G]);
            A->slot_local[un->first] = i;
            for (int x = 0; x < un->n && !rc; x++) {
                int32_t d = p->docs[un->start + x];
                rc = piece_as(A, s, d, 0, A->len[d], un->first, 1, both, e);
            }
        }
    }
    if (!rc && p->remap_nodes > 0) {
        int32_t *tmp = malloc(sizeof(int32_t) * ((size_t)A->ndocs + 1));
        A->flows = malloc(sizeof(zs_remap_flow) * (size_t)(2 * A->S + 1));
        A->moved = calloc((size_t)A->S, sizeof(int64_t));
        A->doc_imp = calloc((size_t)A->ndocs + 1, 1);
        if (!tmp || !A->flows || !A->moved || !A->doc_imp)
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        for (int x = 0; x < A->ctx->cluster->nodes && !rc; x++)
            if (p->node_remap[x])
                rc = remap_node(A, s, x, tmp, e);
        free(tmp);
    }
    for (int sl = 0; sl < A->S && !rc; sl++)
        if (A->lin[sl] > A->cap) {
            char w[32];
            snprintf(w, sizeof w, "slot %d", sl);
            rc = zs_err_set(e, ZS_EINVALID, w, NULL,
                            "auto placed %lld tokens on a GPU that holds %ld (a search bug)",
                            (long long)A->lin[sl], A->cap);
        }
    return rc;
}

/* ---- prices and options --------------------------------------------------------- */

/* Seconds of one layer's linear modules for T tokens on a GPU: the
 * iteration builder's own ops priced dry (zs_iter_linear_time: norms,
 * residuals, SwiGLU, the QKV, O and MLP GEMMs or the router, experts at
 * mean load and their node all-to-alls, and the TP collectives that
 * sequence parallelism puts on the compute stream), the forward once per
 * pass and the backward. */
static int layer_linear(const ap *A, double T, double *out, zs_err *e)
{
    zs_iter_lin l;
    int rc = zs_iter_linear_time(A->ctx->cost, A->dims.tp, A->G, T, 0, &l, e);
    if (!rc)
        *out = A->passes * (l.fwd_entry + l.fwd_post) + l.bwd_entry + l.bwd_post;
    return rc;
}

/* One layer's linear ops at T tokens of which `moved` are moved (the
 * iteration builder's dry run, as layer_linear). */
static int layer_linear_moved(const ap *A, double T, double moved, double *out, zs_err *e)
{
    zs_iter_lin l;
    int rc = zs_iter_linear_time(A->ctx->cost, A->dims.tp, A->G, T, moved, &l, e);
    if (!rc)
        *out = A->passes * (l.fwd_entry + l.fwd_post) + l.bwd_entry + l.bwd_post;
    return rc;
}

static int split_table(ap *A, const zs_batch *b, zs_err *e)
{
    double T = (double)b->tokens / A->S > 1 ? (double)b->tokens / A->S : 1, t0 = 0, t;
    int rc = layer_linear_moved(A, T, 0, &t0, e);
    A->split_n = 0;
    for (int i = 0; i < A2A_TAB && !rc; i++) {
        double m = exp2((double)i / A2A_STEPS);
        if (m > T)
            break;
        if (!(rc = layer_linear_moved(A, T, m, &t, e)))
            A->split_tab[A->split_n++] = t > t0 ? t - t0 : 0;
    }
    return rc;
}

static int prices(ap *A, const zs_batch *b, double *lin_tok, zs_err *e)
{
    size_t n = (size_t)b->ndocs + 1;
    A->af = malloc(sizeof(double) * n);
    A->ab = malloc(sizeof(double) * n);
    A->hf = malloc(sizeof(double) * n);
    A->hb = malloc(sizeof(double) * n);
    A->full = malloc(sizeof(double) * n);
    A->heads = malloc(sizeof(double) * n);
    if (!A->af || !A->ab || !A->hf || !A->hb || !A->full || !A->heads)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    const zs_cost *c = A->ctx->cost;
    for (int32_t d = 0; d < b->ndocs; d++) {
        zs_attn_block blk = {d, 0, b->len[d], 0, b->len[d]};
        A->af[d] = zs_cost_attn(c, &blk, 1, A->hq, 0);
        A->ab[d] = zs_cost_attn(c, &blk, 1, A->hq, 1);
        A->hf[d] = A->u > 1 ? zs_cost_attn(c, &blk, 1, A->hq / A->u, 0) : A->af[d];
        A->hb[d] = A->u > 1 ? zs_cost_attn(c, &blk, 1, A->hq / A->u, 1) : A->ab[d];
        A->full[d] = A->passes * A->af[d] + A->ab[d];
        A->heads[d] = A->passes * A->hf[d] + A->hb[d];
    }
    /* Linear modules per token: the iteration builder's ops of one layer
     * for a GPU's even share of the batch, divided by it. */
    double T = (double)b->tokens / A->S > 1 ? (double)b->tokens / A->S : 1, t = 0;
    int rc = layer_linear(A, T, &t, e);
    if (!rc)
        *lin_tok = t / T;
    return rc;
}

static int read_opts(const zs_plan_ctx *ctx, ap *A, int *span, int *layout, zs_err *e)
{
    const zs_model *m = ctx->model;
    long tp, u;
    int rc = zs_plan_opt_tp(ctx, &zs_opt_tp, 0, &tp, e);
    if (rc)
        return rc;
    A->G = ctx->cluster->gpus_per_node / (int)tp;
    A->S = ctx->cluster->nodes * A->G;
    A->hq = m->heads / (int)tp;
    A->hkv = m->kv_heads / (int)tp > 0 ? m->kv_heads / (int)tp : 1;
    int def = 1;
    for (int v = 1; v <= A->G && v <= 64; v++)
        if (A->G % v == 0 && A->hq % v == 0 && A->hkv % v == 0)
            def = v;
    if ((rc = zs_opt_int_def(ctx->opts, &opt_ulysses, def, &u, e)))
        return rc;
    if (A->G % u != 0 || A->hq % u != 0 || A->hkv % u != 0)
        return zs_err_set(e, ZS_EINPUT, "ulysses",
                          "use a degree that divides the GPUs of a node (per TP group) and the "
                          "query and KV heads per GPU",
                          "ulysses=%ld: a node has %d TP groups, %s %d query and %d KV heads per "
                          "GPU with tp=%ld",
                          u, A->G, m->name, A->hq, A->hkv, tp);
    A->u = (int)u;
    /* Two waves of heads when the query heads per GPU of a group split in
     * two. */
    A->waves = u > 1 && (A->hq / u) % 2 == 0 ? 2 : 1;
    A->kv_split = (A->hkv / u) % 2 == 0;
    A->dims = (zs_layout_dims){(int)tp, 1, 1, A->S};
    A->passes = ctx->mem.recompute == ZS_RECOMPUTE_FULL ? 2 : 1;
    A->tok_q = (double)A->hq * m->head_dim * m->dtype_bytes;
    A->tok_qkv = (double)(A->hq + 2 * A->hkv) * m->head_dim * m->dtype_bytes;
    if ((rc = zs_opt_bool(ctx->opts, &opt_span, span, e)) ||
        (rc = zs_opt_enum(ctx->opts, &opt_layout, layout, e)) ||
        (rc = zs_opt_bool(ctx->opts, &opt_remap, &A->remap_opt, e)) ||
        (rc = zs_opt_bool(ctx->opts, &opt_routing, &A->routing_opt, e)))
        return rc;
    A->k = zs_route_default_k(ctx->cluster, (int)tp);
    A->chunk = zs_route_default_chunk(ctx->cluster);
    if (*layout == 3 && A->G / A->u < 2)
        return zs_err_set(e, ZS_EINPUT, "layout",
                          "use ulysses=1 (or a degree below the node's TP groups), or another "
                          "layout",
                          "layout=ring: a node's ring needs two Ulysses groups in a node; it has "
                          "%d TP groups (tp=%ld), ulysses=%d",
                          A->G, tp, A->u);
    return ZS_OK;
}

/* ---- the plan ------------------------------------------------------------------- */

/* The searched variants: how readily documents span nodes (a document
 * spans when its work exceeds frac x a node's share), and no spanning;
 * then the chosen partition with every node local or head-parallel
 * (runner-ups only: the per-node search already weighs both). */
enum { NSEARCH = 6, NOSPAN = 5, NVAR = 9, VAR_LOCAL = 6, VAR_HEADS = 7, VAR_RING = 8 };
static const double var_frac[NSEARCH] = {1, 0.5, 0.25, 0.125, 0.0625, 1};
static const char *const var_name[NVAR] = {
    "span above a node's share", "span above 1/2 of it", "span above 1/4", "span above 1/8",
    "span above 1/16",           "no spanning",          "all local",      "all head-parallel",
    "all on the node's ring"};

/* Runs the search variants the options allow (the threshold ladder down
 * to where spanning more stops paying, then no spanning); the cheapest
 * predicted plan into *best (its index into *which), every variant's
 * makespan into mk[] (HUGE_VAL: not run or not feasible). A forced layout
 * runs alone. */
static int search(ap *A, const zs_batch *b, double lin_tok, int span, int layout,
                  zs_auto_plan **best, int *which, double *mk, zs_err *e)
{
    zs_auto_in in = {A->ctx->cluster->nodes,
                     A->G,
                     A->u,
                     A->cap,
                     span,
                     1,
                     layout == 1   ? ZS_AUTO_LOCAL
                     : layout == 2 ? ZS_AUTO_HEADS
                     : layout == 3 ? ZS_AUTO_RING
                                   : ZS_AUTO_SEARCH,
                     b->ndocs,
                     b->len,
                     A->full,
                     A->heads,
                     lin_tok,
                     zs_model_is_moe(A->ctx->model),
                     a2a_time,
                     span_time,
                     A,
                     0,
                     NULL};
    *best = NULL;
    for (int v = 0; v < NVAR; v++)
        mk[v] = HUGE_VAL;
    for (int v = 0; v < NSEARCH; v++) {
        int alone = layout != 0 || !span || in.nodes < 2;
        if (v > 0 && alone)
            break;
        in.span = v == NOSPAN ? 0 : span;
        in.span_frac = var_frac[v];
        zs_auto_plan *p = NULL;
        zs_err e2;
        zs_err_clear(&e2);
        if (zs_auto_search(&in, &p, v == 0 ? e : &e2)) {
            if (v == 0)
                return e->code ? e->code : ZS_EINVALID;
            continue;
        }
        mk[v] = p->makespan;
        int worse = v > 0 && v < NOSPAN && p->makespan > mk[v - 1];
        if (!*best || p->makespan < (*best)->makespan) {
            zs_auto_plan_free(*best);
            *best = p;
            *which = v;
        } else {
            zs_auto_plan_free(p);
        }
        /* Lower thresholds only span more: once spanning more costs more,
         * the rest of the ladder is skipped. */
        if (worse)
            v = NOSPAN - 1;
    }
    mk[VAR_LOCAL] = (*best)->makespan_local;
    mk[VAR_HEADS] = (*best)->makespan_heads;
    mk[VAR_RING] = (*best)->makespan_ring;
    /* Remapping, on the chosen variant: every node weighs its layouts with
     * and without it; the plan is taken when the slowest GPU's predicted
     * time drops. */
    A->mk_plain = (*best)->makespan;
    A->mk_remap = HUGE_VAL;
    if (A->remap_opt && A->G > 1) {
        in.span = *which == NOSPAN ? 0 : span;
        in.span_frac = var_frac[*which];
        in.remap = 1;
        in.remap_time = remap_time;
        zs_auto_plan *q = NULL;
        zs_err e2;
        zs_err_clear(&e2);
        if (zs_auto_search(&in, &q, &e2) == ZS_OK) {
            A->mk_remap = q->remap_nodes > 0 ? q->makespan : HUGE_VAL;
            if (q->remap_nodes > 0 && q->makespan < (*best)->makespan) {
                zs_auto_plan_free(*best);
                *best = q;
                q = NULL;
            }
        }
        zs_auto_plan_free(q);
    }
    return ZS_OK;
}

static void notes(const ap *A, const zs_auto_plan *p, int which, const double *mk,
                  zs_plan_report *rep)
{
    zs_plan_report_note(rep,
                        "auto: documents whole on a GPU (LPT), head-parallel over u=%d GPUs of "
                        "a node, on a node's ring (Ulysses %d x ring %d) or over windows of "
                        "nodes (Ulysses x ring); nodes by LPT on predicted time, per node k and "
                        "the layout searched; capacity %ld tokens/GPU",
                        A->u, A->u, A->G / A->u, A->cap);
    zs_plan_report_note(rep,
                        "chosen (%s): %d documents local, %d head-parallel in a node, %d on a "
                        "node's ring, %d spanning nodes (widest %d); nodes %d local, %d "
                        "head-parallel, %d ring, %d mixed",
                        var_name[which], p->local_docs, p->heads_docs, p->ring_docs, p->nspan,
                        p->max_m, p->nodes_local, p->nodes_heads, p->nodes_ring, p->nodes_mixed);
    char buf[640];
    size_t o = 0;
    buf[0] = 0;
    for (int v = 0; v < NVAR; v++) {
        if (v == which || !isfinite(mk[v]) || o >= sizeof buf)
            continue;
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s %.2f ms (+%.1f%%)", o ? ", " : "",
                              var_name[v], mk[v] * 1e3, (mk[v] / mk[which] - 1) * 100);
    }
    zs_plan_report_note(rep,
                        "predicted slowest GPU per layer (cost model, no contention): %.2f ms; "
                        "runner-ups: %s",
                        mk[which] * 1e3, o ? buf : "none");
    if (!A->remap_opt || A->G < 2)
        zs_plan_report_note(rep, "remap in nodes: not weighed (%s)",
                            A->G < 2 ? "one GPU per node" : "remap=0");
    else if (p->remap_nodes > 0)
        zs_plan_report_note(rep,
                            "remap in nodes: taken in %d of %d nodes, %lld linear tokens moved "
                            "(%d flows), predicted %.2f ms/layer against %.2f without (-%.2f%%)",
                            p->remap_nodes, A->ctx->cluster->nodes, (long long)A->moved_total,
                            A->nflows, A->mk_remap * 1e3, A->mk_plain * 1e3,
                            (1 - A->mk_remap / A->mk_plain) * 100);
    else if (isfinite(A->mk_remap))
        zs_plan_report_note(rep,
                            "remap in nodes: not taken (predicted %.2f ms/layer with it, %.2f "
                            "without: the slowest GPU gains nothing)",
                            A->mk_remap * 1e3, A->mk_plain * 1e3);
    else
        zs_plan_report_note(rep, "remap in nodes: not taken (no node prices lower with it)");
    if (A->span_units == 0)
        zs_plan_report_note(rep, "routing: nothing crosses nodes");
    else if (!A->routing_opt || A->k < 2)
        zs_plan_report_note(rep, "routing: not weighed (%s)", A->routing_opt ? "k=1" : "routing=0");
    else
        zs_plan_report_note(rep,
                            "routing (k=%d): %s, %d/%d span units (attention %.2f ms/layer "
                            "direct, %.2f routed%s)",
                            A->k, A->routed_units > 0 ? "taken" : "not taken", A->routed_units,
                            A->span_units, A->span_direct_s * 1e3, A->span_routed_s * 1e3,
                            A->u > 1 ? ", taken with u=1 only" : "");
    zs_plan_report_note(rep, "approximations: attention per document, linear per token at the "
                             "mean share's rate, a NIC shared by its GPUs, remap whole on both "
                             "GPUs");
}

static void ap_free(ap *A)
{
    free(A->af);
    free(A->ab);
    free(A->hf);
    free(A->hb);
    free(A->full);
    free(A->heads);
    free(A->slot_head);
    free(A->slot_local);
    free(A->lin);
    free(A->flows);
    free(A->moved);
    free(A->doc_imp);
    free(A->unit_routed);
    zs_route_free(A->route);
}

/* Per span unit over a window of nodes: its ring hops routed when that
 * prices its documents lower (span_time_as); the routing layer and its
 * streams only when some unit is. */
static int decide_routing(ap *A, zs_schedule *s, zs_err *e)
{
    const zs_auto_plan *p = A->plan;
    A->unit_routed = calloc((size_t)p->nunits + 1, 1);
    if (!A->unit_routed)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0; i < p->nunits; i++) {
        const zs_auto_unit *un = &p->unit[i];
        int m = un->u * un->r / A->G;
        if (un->kind != ZS_AUTO_UNIT_SPAN || m < 2)
            continue;
        A->span_units++;
        double td = 0, tr = 0;
        for (int j = 0; j < un->n; j++) {
            int32_t d = p->docs[un->start + j];
            td += span_time_as(A, d, m, 0);
            tr += A->routing_opt && A->k > 1 ? span_time_as(A, d, m, 1) : HUGE_VAL;
        }
        A->span_direct_s += td;
        A->span_routed_s += tr;
        if (can_route(A, m) && tr < td) {
            A->unit_routed[i] = 1;
            A->routed_units++;
        }
    }
    if (A->routed_units == 0)
        return ZS_OK;
    int route_stream = zs_schedule_add_stream(s, "route");
    int send_stream = zs_schedule_add_stream(s, "route-send");
    int join_stream = zs_schedule_add_stream(s, "route-join");
    A->route = zs_route_new(A->ctx->cluster, A->dims.tp, A->k, A->chunk, route_stream);
    if (!A->route)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    zs_route_set_streams(A->route, send_stream, join_stream);
    return ZS_OK;
}

static int lower(ap *A, const zs_batch *b, zs_schedule **out, zs_err *e)
{
    const zs_plan_ctx *ctx = A->ctx;
    size_t S = (size_t)A->S;
    A->slot_head = malloc(sizeof(int) * S);
    A->slot_local = malloc(sizeof(int) * S);
    A->lin = calloc(S, sizeof(int64_t));
    zs_schedule *s = zs_schedule_new(zs_cluster_gpus(ctx->cluster));
    if (!A->slot_head || !A->slot_local || !A->lin || !s) {
        zs_schedule_free(s);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    A->a2a_stream = zs_schedule_add_stream(s, "auto-a2a");
    A->span_stream = zs_schedule_add_stream(s, "auto-span");
    int rc = decide_routing(A, s, e);
    if (!rc && A->plan->remap_nodes > 0)
        A->remap_stream = zs_schedule_add_stream(s, "auto-remap");
    zs_schedule_set_docs(s, b->len, b->ndocs);
    if (!rc)
        rc = zs_schedule_check(s, e);
    if (!rc)
        rc = place(A, s, e);
    if (!rc) {
        zs_mem_cfg mc = ctx->mem;
        zs_iter_spec spec = {A->dims,
                             1,
                             A->lin,
                             mc.recompute,
                             mc.zero_stage,
                             ctx->seed,
                             emit,
                             A,
                             A->nflows > 0 ? A->moved : NULL,
                             0,
                             mc.fsdp};
        rc = zs_iter_build(s, ctx->cost, &spec, e);
    }
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

/* Options, capacity, prices and the search: everything but the schedule. */
static int decide(const zs_plan_ctx *ctx, const zs_batch *batch, ap *A, zs_auto_plan **p,
                  int *which, double *mk, zs_err *e)
{
    memset(A, 0, sizeof *A);
    A->ctx = ctx;
    A->len = batch->len;
    A->ndocs = batch->ndocs;
    int span, layout;
    int rc = read_opts(ctx, A, &span, &layout, e);
    if (rc)
        return rc;
    zs_mem_cfg mc = ctx->mem;
    mc.tp = A->dims.tp;
    mc.pp = 1;
    mc.dp = A->S;
    long cap;
    if ((rc = zs_mem_token_capacity(
             ctx->model, &ctx->cluster->gpu, &mc,
             "use more GPUs for ZeRO sharding, recomputation, or a larger GPU", &cap, e)))
        return rc;
    A->cap = cap;
    double lin_tok = 0;
    if ((rc = prices(A, batch, &lin_tok, e)))
        return rc;
    a2a_table(A);
    if (A->remap_opt && A->G > 1 && (rc = split_table(A, batch, e)))
        return rc;
    return search(A, batch, lin_tok, span, layout, p, which, mk, e);
}

/* The search alone (the planner's decide hook): options, capacity, prices
 * and the placement, not lowered. */
static int decide_only(const zs_plan_ctx *ctx, const zs_batch *batch, int *classes, zs_err *e)
{
    ap A;
    zs_auto_plan *p = NULL;
    double mk[NVAR];
    int which = 0;
    int rc = decide(ctx, batch, &A, &p, &which, mk, e);
    zs_auto_plan_free(p);
    ap_free(&A);
    return rc;
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    ap A;
    zs_auto_plan *p = NULL;
    double mk[NVAR];
    int which = 0;
    int rc = decide(ctx, batch, &A, &p, &which, mk, e);
    if (!rc) {
        A.plan = p;
        rc = lower(&A, batch, out, e);
    }
    if (!rc)
        notes(&A, p, which, mk, rep);
    zs_auto_plan_free(p);
    ap_free(&A);
    return rc;
}

static const zs_opt_spec *const options[] = {&zs_opt_tp, &opt_ulysses, &opt_span, &opt_layout,
                                             &opt_remap, &opt_routing, NULL};

const zs_planner_ops zs_planner_auto = {
    .name = "auto",
    .summary = "per document: whole on a GPU, head-parallel in a node, or head x ring across "
               "nodes, chosen by predicted time on the cost model",
    .options = options,
    .plan = plan,
    .decide = decide_only};
