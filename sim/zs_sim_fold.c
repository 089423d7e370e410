/* Folding in the SimGrid executor (see exec/zs_fold.h and zs_sim_internal.h).
 *
 * When a stream enters the next iteration of a repeated segment,
 * zs_fold_cross says whether to skip iterations. A skipping stream sleeps
 * (the actor's next due date covers its wake), posts nothing, and has the
 * skipped work accounted at once: op counts, the bytes of its receives
 * (each transfer counted at its receiver, as zs_sim_links does) and of its
 * collectives (counted by the group's first member), the channels' message
 * numbers (so the timeline's flows still pair) and, on the rank's
 * reference stream, the rank's compute / exposed / idle shares of one
 * period. At the wake, every op of the stream in the segment counts the
 * skipped completions. */
#include "zs_sim_internal.h"

#include <string.h>

static int replay_flow(sim *x, int src, int dst, int dst_idx, double bytes, double moved, void *arg)
{
    (void)dst_idx;
    (void)moved;
    zs__sim_flow_replay(x, src, dst, bytes * *(const int32_t *)arg);
    return 0;
}

/* The bytes and message numbers of n skipped iterations of stream s. */
static void replay_ops(rank_st *R, int s, int32_t g, int32_t n)
{
    sim *x = R->x;
    const zs_segment *sg = &R->p->segs[g];
    for (int64_t i = sg->op0; i < sg->op0 + sg->nops; i++) {
        const zs_op *op = &R->p->ops[i];
        if (op->stream != s)
            continue;
        if (op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV) {
            chan *ch = R->chan_of[i];
            if (ch)
                *(op->kind == ZS_OP_RECV ? &ch->nrecv : &ch->nsend) += n;
            if (op->kind == ZS_OP_RECV)
                zs__sim_flow_replay(x, op->u.p2p.peer, R->rank, op->u.p2p.bytes * n);
        } else if (op->kind == ZS_OP_COLL) {
            int gi = op->u.coll.group;
            const zs_group *gr = &x->s->groups[gi];
            if (gr->n < 2 || gr->ranks[0] != R->rank)
                continue;
            double b = op->u.coll.bytes;
            if (R->cmax && R->cmax[i] > b)
                b = R->cmax[i]; /* all-to-all(v): the largest buffer, as last time */
            zs__sim_coll_flows(x, op, b, replay_flow, &n);
        }
    }
}

void zs__sim_fold_cross(rank_st *R, int s)
{
    sim *x = R->x;
    stream_st *t = &R->st[s];
    zs_rank_result *rr = &x->r->ranks[R->rank];
    double now = R->now;
    zs_foldacct_boundary(&R->acct, rr, s, now); /* the split up to now, the stream's period */
    zs_fold_step st;
    zs_fold_cross(x->fold, R->rank, t->seg, s, t->iter, now, &st);
    if (st.ref) { /* the link shares at its last boundaries, as for the rank's shares */
        memmove(R->lsnap[0], R->lsnap[1], sizeof R->lsnap[0] * (ZS_FACCT_NB - 1));
        zs__sim_links_share(x, R->rank, now, R->lsnap[ZS_FACCT_NB - 1]);
    }
    if (st.skip <= 0)
        return;
    t->asleep = 1;
    R->nasleep++;
    t->wake_at = now + st.sleep;
    t->wseg = t->seg;
    t->witer = t->iter;
    t->wskip = st.skip;
    rr->ops += st.skip * zs_fold_ops_per_iter(x->fold, R->rank, t->seg, s);
    zs_foldacct_sleep(&R->acct, rr, s, now, st.period, st.back);
    if (st.ref) { /* the GPU's share of its links' busy time over the period replayed */
        int back = st.back < ZS_FACCT_NB - 2 ? st.back : ZS_FACCT_NB - 2;
        const double *s1 = R->lsnap[ZS_FACCT_NB - 1 - back], *s0 = R->lsnap[ZS_FACCT_NB - 2 - back];
        for (int c = 0; c < ZS_LINK_NCLASSES; c++)
            x->r->link_busy[c] += st.skip * (s1[c] - s0[c]);
        int k = zs_cluster_node_of(x->c, R->rank) * x->c->nics_per_node +
                zs_cluster_nic_of(x->c, R->rank);
        x->r->nic_busy[k] += st.skip * (s1[ZS_LINK_NCLASSES] - s0[ZS_LINK_NCLASSES]);
    }
    replay_ops(R, s, t->seg, st.skip);
    t->iter += st.skip;
    if (t->iter >= R->p->segs[t->seg].repeat)
        zs__sim_stream_seek(R, s, t->seg + 1);
    else
        t->cur = R->first[(int64_t)t->seg * ZS_MAX_STREAMS + s];
}

void zs__sim_fold_wake(rank_st *R, int s)
{
    stream_st *t = &R->st[s];
    const zs_segment *g = &R->p->segs[t->wseg];
    for (int64_t i = g->op0; i < g->op0 + g->nops; i++) {
        if (R->p->ops[i].stream != s)
            continue;
        if (R->done[i] >= t->witer)
            R->done[i] += t->wskip;
        else if (R->skip_add[i])
            R->skip_add[i] += t->wskip;
        else {
            R->skip_at[i] = t->witer;
            R->skip_add[i] = t->wskip;
        }
    }
    t->asleep = 0;
    R->nasleep--;
    zs_foldacct_wake(&R->acct, &R->x->r->ranks[R->rank], s, R->now);
    if (R->now > R->end)
        R->end = R->now; /* the skipped iterations end here */
}
