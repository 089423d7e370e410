/* Collectives of the SimGrid executor (see zs_sim_internal.h).
 *
 * A collective starts when every member has reached it: each member posts
 * its receives on its own inbox of the group and waits; the last to arrive
 * builds the flows, posts its own and sends every other member a go, on
 * which that member posts its own flows out, at the same date. Flows are
 * aggregated, never message by message: one flow per edge of NCCL's
 * channel rings carrying what the algorithm NCCL runs moves over it, for
 * all-to-all one flow per ordered pair, all stretched to end at the cost
 * model's time when alone (zs__sim_coll_flows). A member whose own flows
 * are in waits for a wake-up until every flow of the collective is in, as
 * in a real ring where every step waits for the previous one everywhere.
 *
 * Why a go rather than the last member posting every flow itself, as this
 * file did before: SimGrid routes a mailbox transfer between the hosts of
 * its two actors, so the flows into the last member ran over its own
 * private link; and those flows had to be detached (nobody waits on the
 * sending side), and SimGrid 3.32 searches a list of every detached comm
 * in flight at each completion: O(flows in flight) per flow. Now a flow's
 * source sends it and collects it (coll_leave); only the go and the
 * wake-ups, in flight for no time, are detached. */
#include "zs_sim_internal.h"
#include "zs_platform_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static sg_mailbox_t coll_mailbox(sim *x, int gi, int idx)
{
    group_st *gs = &x->groups[gi];
    if (!gs->mb_in[idx]) {
        char name[64];
        snprintf(name, sizeof name, "c%d.%d", gi, idx);
        gs->mb_in[idx] = sg_mailbox_by_name(name);
    }
    return gs->mb_in[idx];
}

/* NCCL runs a ring collective as several channels whose rings leave each
 * node through different GPUs, so across nodes they use different NICs:
 * as many channels as the fewest distinct NICs the members of one node
 * reach (1 inside a node). The same figure the analytic cost model uses. */
static int coll_channels(const zs_cluster *c, const zs_group *g)
{
    int k = c->nics_per_node, nodes = 0;
    for (int i = 0; i < g->n;) {
        int node = zs_cluster_node_of(c, g->ranks[i]);
        unsigned long long seen = 0;
        int nics = 0;
        for (; i < g->n && zs_cluster_node_of(c, g->ranks[i]) == node; i++) {
            int nic = zs_cluster_nic_of(c, g->ranks[i]) % 64;
            if (!(seen & (1ULL << nic))) {
                seen |= 1ULL << nic;
                nics++;
            }
        }
        k = nics < k ? nics : k;
        nodes++;
    }
    return nodes > 1 && k > 1 ? k : 1;
}

/* Member index (in g->ranks) at position pos of channel ch's ring. Nodes
 * come in rank order; inside a node channel ch enters through a member on
 * the node's ch-th NIC and leaves through one on the NIC before it, so
 * every channel's network edges use different NICs at both ends. */
static int channel_member(const zs_cluster *c, const zs_group *g, int ch, int pos)
{
    int start = 0;
    for (;;) {
        int node = zs_cluster_node_of(c, g->ranks[start]), end = start;
        while (end < g->n && zs_cluster_node_of(c, g->ranks[end]) == node)
            end++;
        int len = end - start;
        if (pos >= len) {
            pos -= len;
            start = end;
            continue;
        }
        /* The node's distinct NICs, in order (members are sorted by rank,
         * and NICs grow with the rank inside a node). */
        int nics[64], nn = 0;
        for (int i = start; i < end; i++) {
            int nic = zs_cluster_nic_of(c, g->ranks[i]);
            if (nn == 0 || nics[nn - 1] != nic)
                nics[nn < 63 ? nn++ : nn] = nic;
        }
        int first = ch % nn;
        /* pos-th member in the order: NICs first, first+1, ..., wrapping. */
        for (int k = 0; k < nn; k++) {
            int nic = nics[(first + k) % nn];
            for (int i = start; i < end; i++)
                if (zs_cluster_nic_of(c, g->ranks[i]) == nic && pos-- == 0)
                    return i;
        }
        return start; /* not reached */
    }
}

/* The group's channels and their rings, computed once per group (both take
 * O(members) per call: per flow and per arrival they made a collective
 * cost O(members^2)). */
static int group_rings(sim *x, int gi, int *nch, const int32_t **ring)
{
    group_st *gs = &x->groups[gi];
    if (!gs->ring) {
        const zs_group *g = &x->s->groups[gi];
        int k = coll_channels(x->c, g), n = g->n;
        int32_t *r = malloc(sizeof(int32_t) * (size_t)k * (size_t)(n > 0 ? n : 1));
        if (!r)
            return ZS_ENOMEM;
        for (int c = 0; c < k; c++)
            for (int pos = 0; pos < n; pos++)
                r[(size_t)c * (size_t)n + (size_t)pos] = channel_member(x->c, g, c, pos);
        gs->nch = k;
        gs->ring = r;
    }
    *nch = gs->nch;
    *ring = gs->ring;
    return ZS_OK;
}

/* Adds a flow's payload to the links of its route (x->c_load), noting the
 * links touched and, per link, the longest path latency of its flows
 * (x->c_lat). */
static int add_route(sim *x, int src, int dst, double bytes, int *nt)
{
    if (!x->c_load) {
        x->c_load = calloc((size_t)x->nlinks, sizeof *x->c_load);
        x->c_lat = calloc((size_t)x->nlinks, sizeof *x->c_lat);
        x->c_touched = malloc(sizeof *x->c_touched * (size_t)x->nlinks);
        if (!x->c_load || !x->c_lat || !x->c_touched)
            return ZS_ENOMEM;
    }
    double pl, bw;
    zs_cluster_path(x->c, src, dst, &pl, &bw);
    int l[ZS_ROUTE_MAX];
    int n = zs__plat_route(x->c, src, dst, l);
    for (int i = 0; i < n; i++) {
        if (x->c_load[l[i]] == 0 && bytes > 0)
            x->c_touched[(*nt)++] = l[i];
        x->c_load[l[i]] += bytes;
        x->c_lat[l[i]] = pl > x->c_lat[l[i]] ? pl : x->c_lat[l[i]];
    }
    return ZS_OK;
}

/* The stretch that makes the last link to finish its flows (after their
 * path latency) do so at t: flows move stretch x payload bytes (clearing
 * the scratch). */
static double stretch_to(sim *x, int nt, double t)
{
    double s = INFINITY;
    for (int i = 0; i < nt; i++) {
        int l = x->c_touched[i];
        double u = x->c_load[l] / zs__plat_link_bw(x->c, l);
        if (u > 0) {
            double sl = (t - x->c_lat[l]) / u;
            s = sl < s ? sl : s;
        }
        x->c_load[l] = 0;
        x->c_lat[l] = 0;
    }
    return isfinite(s) && s > 1e-9 ? s : 1e-9;
}

/* The flows of a collective. They keep NCCL's channel rings (all-to-all:
 * every pair); what each carries follows the algorithm NCCL runs, from the
 * same plan the cost model and the analytic backend use
 * (zs_nccl_group_plan): the bytes a GPU sends inside its node spread over
 * the ring edges inside nodes, the bytes a node sends into the network over
 * the edges between nodes. Then every flow is stretched by one factor so
 * that, alone on the platform, the last link to finish its flows (the
 * busiest, after their path latency) does so at the cost model's time:
 * latency, protocol and algorithm efficiency become equivalent bytes, and
 * contention with other traffic slows them as it would slow the real
 * transfers. The same flows start a collective (coll_trigger) and account
 * the ones folding replays (zs_sim_fold.c). */
int zs__sim_coll_flows(sim *x, const zs_op *op, double bytes, zs__coll_flow_fn fn, void *arg)
{
    const zs_group *g = &x->s->groups[op->u.coll.group];
    int n = g->n, a2a = op->u.coll.ck == ZS_COLL_ALLTOALL;
    zs_coll_kind kind = (zs_coll_kind)op->u.coll.ck;
    int *ranks = malloc(sizeof(int) * (size_t)n);
    if (!ranks)
        return ZS_ENOMEM;
    for (int i = 0; i < n; i++)
        ranks[i] = g->ranks[i];
    zs_nccl_choice ch;
    zs_nccl_traffic tr;
    zs_err pe;
    int rc = zs_nccl_group_plan(x->c, ranks, n, kind, bytes, x->o.nccl, &ch, &tr, &pe);
    free(ranks);
    if (rc)
        return rc;
    int nch = 1;
    const int32_t *ring = NULL;
    if (!a2a && (rc = group_rings(x, op->u.coll.group, &nch, &ring)))
        return rc;
    int nflows = a2a ? n * (n - 1) : n * nch;
    /* The flows and their payloads: first count the ring edges inside and
     * between nodes. */
    int *src = malloc(sizeof(int) * (size_t)nflows), *dst = malloc(sizeof(int) * (size_t)nflows);
    double *pay = malloc(sizeof(double) * (size_t)nflows);
    if (!src || !dst || !pay) {
        free(src);
        free(dst);
        free(pay);
        return ZS_ENOMEM;
    }
    int k = 0, e_in = 0, e_out = 0, nodes = 0;
    if (a2a) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (i != j) {
                    src[k] = i;
                    dst[k] = j;
                    pay[k++] = bytes / n;
                }
    } else {
        for (int i = 0; i < n; i++)
            nodes += i == 0 || zs_cluster_node_of(x->c, g->ranks[i]) !=
                                   zs_cluster_node_of(x->c, g->ranks[i - 1]);
        for (int c = 0; c < nch; c++)
            for (int pos = 0; pos < n; pos++, k++) {
                src[k] = ring[(size_t)c * (size_t)n + (size_t)pos];
                dst[k] = ring[(size_t)c * (size_t)n + (size_t)((pos + 1) % n)];
                int same = zs_cluster_node_of(x->c, g->ranks[src[k]]) ==
                           zs_cluster_node_of(x->c, g->ranks[dst[k]]);
                e_in += same;
                e_out += !same;
                pay[k] = same; /* 1 inside a node, 0 between nodes: set below */
            }
        double b_in = e_in ? n * tr.gpu_intra / e_in : 0;
        double b_out = e_out ? nodes * tr.node_net / e_out : 0;
        for (int f = 0; f < nflows; f++)
            pay[f] = pay[f] > 0 ? b_in : b_out;
    }
    int nt = 0;
    for (int f = 0; f < nflows && rc == ZS_OK; f++)
        rc = add_route(x, g->ranks[src[f]], g->ranks[dst[f]], pay[f], &nt);
    double stretch = rc == ZS_OK ? stretch_to(x, nt, ch.seconds) : 1;
    for (int f = 0; f < nflows && rc == ZS_OK; f++)
        rc = fn(x, g->ranks[src[f]], g->ranks[dst[f]], dst[f], pay[f], pay[f] * stretch, arg);
    free(src);
    free(dst);
    free(pay);
    return rc;
}

typedef struct rec {
    flow *v;
    int n, cap;
    coll_inst *inst;
} rec;

/* Records one flow of a starting collective (its source posts it). */
static int record_flow(sim *x, int src, int dst, int dst_idx, double bytes, double moved, void *arg)
{
    (void)x;
    rec *r = arg;
    if (r->n == r->cap)
        return ZS_EINVALID;
    r->v[r->n++] = (flow){src, dst, dst_idx, bytes, moved, r->inst};
    return ZS_OK;
}

static void inst_free(coll_inst *inst)
{
    if (!inst)
        return;
    free(inst->wait_rank);
    free(inst->wait_stream);
    free(inst->out0);
    free(inst->flows);
    free(inst->sends);
    free(inst);
}

/* Member idx of the collective posts its flows out, from its own host:
 * every destination has posted its receives already, so they start now.
 * The last member to arrive posts its own flows the same way, so every
 * flow, into that member too, runs between its source's and its
 * destination's hosts over the links between them. */
static void post_out_flows(rank_st *R, coll_inst *inst, int gi, int idx)
{
    sim *x = R->x;
    double now = simgrid_get_clock();
    for (int32_t k = inst->out0[idx]; k < inst->out0[idx + 1]; k++) {
        flow *f = &inst->flows[k];
        zs__sim_flow_start(x, f->src, f->dst, now);
        inst->sends[k] =
            sg_mailbox_put_async(coll_mailbox(x, gi, f->dst_idx), f, zs__sim_bytes(f->moved));
        zs__sim_count(x, f->src, f->dst, &x->stats.flows, &x->stats.flows_across);
    }
}

/* A zero-byte message to stream s of rank r over its own zero-latency
 * compute link (sent from its host), so it arrives at the same date: the
 * go and the wake-up. Detached, which costs nothing here: it is in flight
 * for no time (see coll_inst). */
static void signal_rank(rank_st *R, int r, int s, void *payload)
{
    sim *x = R->x;
    sg_actor_set_host(sg_actor_self(), x->hosts[r]);
    sg_comm_t c = sg_mailbox_put_init(x->ranks[r].wake_mb[s], payload, 0);
    sg_comm_detach(c, NULL);
    x->stats.signals++;
}

/* The last member to arrive builds the collective's flows, grouped by
 * source member, posts its own and sends the others their go. */
static int coll_trigger(rank_st *R, int s, const zs_op *op, int idx)
{
    sim *x = R->x;
    int gi = op->u.coll.group;
    const zs_group *g = &x->s->groups[gi];
    int n = g->n, a2a = op->u.coll.ck == ZS_COLL_ALLTOALL;
    int nch = 1;
    const int32_t *ring;
    if (!a2a && group_rings(x, gi, &nch, &ring))
        return ZS_ENOMEM;
    int nflows = a2a ? n * (n - 1) : n * nch;
    coll_inst *inst = calloc(1, sizeof *inst);
    flow *tmp = malloc(sizeof *tmp * (size_t)nflows);
    if (!inst || !tmp || !(inst->wait_rank = malloc(sizeof(int32_t) * (size_t)n)) ||
        !(inst->wait_stream = malloc((size_t)n)) ||
        !(inst->out0 = calloc((size_t)n + 1, sizeof(int32_t))) ||
        !(inst->flows = malloc(sizeof *inst->flows * (size_t)nflows)) ||
        !(inst->sends = calloc((size_t)nflows, sizeof *inst->sends))) {
        inst_free(inst);
        free(tmp);
        return ZS_ENOMEM;
    }
    rec r = {tmp, 0, nflows, inst};
    int rc = zs__sim_coll_flows(x, op, op->u.coll.bytes, record_flow, &r);
    if (rc || r.n != nflows) {
        free(tmp);
        inst_free(inst);
        return rc ? rc : ZS_EINVALID;
    }
    /* Group by source member (a stable counting sort: each source's flows
     * keep zs__sim_coll_flows's order). */
    int32_t *src_idx = malloc(sizeof(int32_t) * (size_t)nflows);
    if (!src_idx) {
        free(tmp);
        inst_free(inst);
        return ZS_ENOMEM;
    }
    for (int k = 0; k < nflows; k++) {
        src_idx[k] = zs_group_index(g, tmp[k].src);
        inst->out0[src_idx[k] + 1]++;
    }
    for (int i = 0; i < n; i++)
        inst->out0[i + 1] += inst->out0[i];
    int32_t *fill = inst->wait_rank; /* scratch: the next slot per source */
    for (int i = 0; i < n; i++)
        fill[i] = inst->out0[i];
    for (int k = 0; k < nflows; k++)
        inst->flows[fill[src_idx[k]]++] = tmp[k];
    free(src_idx);
    free(tmp);
    inst->flows_left = nflows;
    inst->nref = n;
    R->st[s].ci = inst;
    post_out_flows(R, inst, gi, idx);
    for (int k = 0; k < n; k++)
        if (k != idx)
            signal_rank(R, g->ranks[k], x->groups[gi].mstream[k], inst);
    sg_actor_set_host(sg_actor_self(), R->host);
    return ZS_OK;
}

/* Every member arrived: communication starts for all of them (until now
 * they waited on peers: idle), and the flows start. */
static int coll_all_arrived(rank_st *R, int s, const zs_op *op, const zs_group *g, int idx,
                            double now)
{
    sim *x = R->x;
    int gi = op->u.coll.group;
    for (int k = 0; k < g->n; k++) {
        rank_st *M = &x->ranks[g->ranks[k]];
        if (M != R)
            zs__sim_catch_up(M, now);
        zs_foldacct_change(&M->acct, &x->r->ranks[M->rank], x->groups[gi].mstream[k], now, 0, 1);
    }
    x->groups[gi].arrived = 0;
    if (x->fold) { /* for folding's replays */
        rank_st *R0 = &x->ranks[g->ranks[0]];
        size_t n0 = (size_t)R0->p->nops;
        if (!R0->cmax && !(R0->cmax = calloc(n0 ? n0 : 1, sizeof(double))))
            return ZS_ENOMEM;
        R0->cmax[x->groups[gi].op0] = x->groups[gi].max_bytes;
    }
    zs_op big = *op;
    big.u.coll.bytes = x->groups[gi].max_bytes;
    return coll_trigger(R, s, &big, idx);
}

int zs__sim_start_coll(rank_st *R, int s, int64_t i, double now)
{
    sim *x = R->x;
    stream_st *t = &R->st[s];
    const zs_op *op = &R->p->ops[i];
    int gi = op->u.coll.group;
    const zs_group *g = gi >= 0 && gi < x->s->ngroups ? &x->s->groups[gi] : NULL;
    int idx = g ? zs_group_index(g, R->rank) : -1;
    if (idx < 0) {
        zs__sim_fail(R, ZS_EINVALID, "a rank may only join collectives of groups it belongs to",
                     "%s on a group that does not hold this rank", i, "collective");
        return 0;
    }
    if (g->n == 1) {
        zs_timeline_op(x->tl, R->rank, i, t->iter, now, now, ZS_TL_SEQ_NONE);
        zs__sim_op_done(R, i, now);
        zs__sim_stream_next(R, s, i);
        return 1;
    }
    /* The group's state first: posting is a simcall, during which other
     * members may arrive. */
    group_st *gs = &x->groups[gi];
    gs->mstream[idx] = (uint8_t)s;
    if (idx == 0)
        gs->op0 = i;
    /* All-to-all(v): members' buffers differ; the largest sets the pace. */
    if (gs->arrived == 0 || op->u.coll.bytes > gs->max_bytes)
        gs->max_bytes = op->u.coll.bytes;
    int last = ++gs->arrived == g->n;
    t->running = 1;
    t->t_start = now;
    t->ci = NULL;
    t->cidx = idx;
    int nin = g->n - 1;
    const int32_t *ring;
    if (op->u.coll.ck != ZS_COLL_ALLTOALL && group_rings(x, gi, &nin, &ring)) {
        zs__sim_fail(R, ZS_ENOMEM, NULL, "%s", i, "out of memory");
        return 0;
    }
    /* The flows in, and (all but the last to arrive) the go. */
    for (int k = 0; k < nin + !last; k++) {
        went *w = zs__sim_went_new(R, k < nin ? W_COLL : W_GO, s);
        if (!w) {
            zs__sim_fail(R, ZS_ENOMEM, NULL, "%s", i, "out of memory");
            return 0;
        }
        w->is_recv = 1;
        w->comm =
            sg_mailbox_get_async(k < nin ? coll_mailbox(x, gi, idx) : R->wake_mb[s], &w->data);
        zs__sim_fin_watch(R, w);
    }
    int rc;
    if (last && (rc = coll_all_arrived(R, s, op, g, idx, now))) {
        zs__sim_fail(R, rc, NULL, "%s", i,
                     rc == ZS_ENOMEM ? "out of memory" : "collective outside the cluster");
        return 0;
    }
    return 1;
}

/* The member is done with the collective: its sends (complete, since
 * every flow is in) are collected, and the last member frees it. A wait,
 * not a test: SimGrid 3.32 drops a comm from its actor's list of
 * activities only when the actor waits on it (a test leaves it there, and
 * the list, searched at every completion, grows). */
static void coll_leave(rank_st *R, int s)
{
    coll_inst *inst = R->st[s].ci;
    int idx = R->st[s].cidx;
    for (int32_t k = inst->out0[idx]; k < inst->out0[idx + 1]; k++) {
        if (inst->sends[k] && sg_comm_wait(inst->sends[k]) != SG_OK)
            zs__sim_fail(R, ZS_ERUNTIME, NULL, "%s", R->st[s].cur,
                         "SimGrid reported a failed communication");
    }
    R->st[s].ci = NULL;
    if (--inst->nref == 0)
        inst_free(inst);
}

/* All flows into this member are in. If others are still moving, wait for
 * a wake-up (returns 1); otherwise the collective is over: wake the waiting
 * members and return 0. */
static int flows_in(rank_st *R, int s, coll_inst *inst)
{
    if (inst->flows_left > 0) {
        went *w = zs__sim_went_new(R, W_WAKE, s);
        if (!w) {
            zs__sim_fail(R, ZS_ENOMEM, NULL, "%s", R->st[s].cur, "out of memory");
            return 1;
        }
        /* Registered first: posting is a simcall, during which the last
         * flow may come in. */
        inst->wait_rank[inst->nwait] = R->rank;
        inst->wait_stream[inst->nwait++] = (uint8_t)s;
        w->comm = sg_mailbox_get_async(R->wake_mb[s], &w->data);
        zs__sim_fin_watch(R, w);
        return 1;
    }
    for (int k = 0; k < inst->nwait; k++)
        signal_rank(R, inst->wait_rank[k], inst->wait_stream[k], &R->x->dummy);
    if (inst->nwait)
        sg_actor_set_host(sg_actor_self(), R->host);
    return 0;
}

int zs__sim_coll_retire(rank_st *R, went *w)
{
    int s = w->stream, kind = w->kind; /* w is free: flows_in may reuse it */
    stream_st *t = &R->st[s];
    if (kind == W_COLL) {
        flow *f = w->data;
        zs__sim_flow_end(R->x, f->src, f->dst, f->bytes, R->now);
        f->inst->flows_left--;
    } else if (kind == W_GO) {
        t->ci = w->data;
        post_out_flows(R, t->ci, R->p->ops[t->cur].u.coll.group, t->cidx);
    }
    if (--t->npend > 0)
        return 0;
    if (kind != W_WAKE && flows_in(R, s, t->ci))
        return 0; /* the rest of the collective is still moving */
    coll_leave(R, s);
    return 1;
}
