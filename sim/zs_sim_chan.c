/* Point-to-point transfers of the SimGrid executor (see zs_sim_internal.h).
 *
 * A channel is one (src, dst, tag) triple with its SimGrid mailbox; the
 * k-th send posted on it meets the k-th receive (mailboxes match in
 * order), which is also the message number given to the timeline's flow.
 * As in the analytic backend, sends and receives are issued in program
 * order without holding their stream (consecutive ones run together, as
 * an NCCL group); the side that posts first waits on its peer (idle), and
 * communication runs on both sides from the match on. */
#include "zs_sim_internal.h"

#include <stdio.h>
#include <stdlib.h>

static chan *chan_get(sim *x, int src, int dst, int tag)
{
    uint64_t h = ((uint64_t)(uint32_t)src * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)(uint32_t)dst * 0xC2B2AE3D27D4EB4Full) ^
                 ((uint64_t)(uint32_t)tag * 0x165667B19E3779F9ull);
    size_t b = (size_t)(h % x->nchash);
    for (chan *c = x->chash[b]; c; c = c->next)
        if (c->src == src && c->dst == dst && c->tag == tag)
            return c;
    char name[64];
    snprintf(name, sizeof name, "p%d.%d.%d", src, dst, tag);
    /* Looking a mailbox up is a simcall: another actor may run meanwhile and
     * create this very channel, so look again before inserting (two
     * channel records for one mailbox would split its match counters). */
    sg_mailbox_t mb = sg_mailbox_by_name(name);
    for (chan *c = x->chash[b]; c; c = c->next)
        if (c->src == src && c->dst == dst && c->tag == tag)
            return c;
    chan *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->src = src;
    c->dst = dst;
    c->tag = tag;
    c->mb = mb;
    c->next = x->chash[b];
    x->chash[b] = c;
    return c;
}

/* The streams of waiting posts, per side, in post order (matching is FIFO):
 * a match charges communication to the stream that posted its peer. */
static int sq_push(chan *c, int side, int32_t n, int s)
{
    if (n == c->sq_cap[side]) {
        int32_t nc = c->sq_cap[side] ? c->sq_cap[side] * 2 : 4;
        uint8_t *v = malloc((size_t)nc);
        if (!v)
            return ZS_ENOMEM;
        for (int32_t k = 0; k < n; k++)
            v[k] = c->sq[side][(c->sq_head[side] + k) % c->sq_cap[side]];
        free(c->sq[side]);
        c->sq[side] = v;
        c->sq_head[side] = 0;
        c->sq_cap[side] = nc;
    }
    c->sq[side][(c->sq_head[side] + n) % c->sq_cap[side]] = (uint8_t)s;
    return ZS_OK;
}

static int sq_pop(chan *c, int side)
{
    int s = c->sq[side][c->sq_head[side]];
    c->sq_head[side] = (c->sq_head[side] + 1) % c->sq_cap[side];
    return s;
}

int zs__sim_start_p2p(rank_st *R, int s, int64_t i, double now)
{
    sim *x = R->x;
    stream_st *t = &R->st[s];
    const zs_op *op = &R->p->ops[i];
    zs_rank_result *rr = &x->r->ranks[R->rank];
    int recv = op->kind == ZS_OP_RECV;
    if (op->u.p2p.peer == R->rank || op->u.p2p.peer < 0 || op->u.p2p.peer >= x->s->nranks) {
        zs__sim_fail(R, ZS_EINVALID, "a transfer needs a peer that is another rank of the schedule",
                     "%s has an invalid peer", i, zs_op_kind_name(op->kind));
        return 0;
    }
    chan *ch = R->chan_of[i];
    if (!ch) {
        ch = recv ? chan_get(x, op->u.p2p.peer, R->rank, op->u.p2p.tag)
                  : chan_get(x, R->rank, op->u.p2p.peer, op->u.p2p.tag);
        R->chan_of[i] = ch;
    }
    went *w = ch ? zs__sim_went_new(R, W_P2P, s) : NULL;
    if (!w) {
        zs__sim_fail(R, ZS_ENOMEM, NULL, "%s", i, "out of memory");
        return 0;
    }
    w->ch = ch;
    w->is_recv = (uint8_t)recv;
    w->bytes = op->u.p2p.bytes;
    w->op = i;
    w->seg = t->seg;
    w->iter = t->iter;
    w->seq = recv ? ch->nrecv++ : ch->nsend++;
    w->t0 = now;
    int32_t *mine = recv ? &ch->pend_recv : &ch->pend_send;
    int32_t *other = recv ? &ch->pend_send : &ch->pend_recv;
    if (*other > 0) { /* this post matches: the transfer starts now */
        (*other)--;
        zs__sim_flow_start(x, ch->src, ch->dst, now);
        rank_st *P = &x->ranks[recv ? ch->src : ch->dst];
        zs__sim_catch_up(P, now);
        zs_foldacct_change(&R->acct, rr, s, now, 0, 1);
        zs_foldacct_change(&P->acct, &x->r->ranks[P->rank], sq_pop(ch, !recv), now, 0, 1);
    } else {
        if (sq_push(ch, recv, *mine, s)) {
            zs__sim_fail(R, ZS_ENOMEM, NULL, "%s", i, "out of memory");
            return 0;
        }
        (*mine)++;
    }
    w->comm = recv ? sg_mailbox_get_async(ch->mb, &w->data)
                   : sg_mailbox_put_async(ch->mb, &x->dummy, zs__sim_bytes(op->u.p2p.bytes));
    zs__sim_fin_watch(R, w);
    if (!recv)
        zs__sim_count(x, ch->src, ch->dst, &x->stats.p2p, &x->stats.p2p_across);
    t->p2p_pending++;
    zs__sim_stream_next(R, s, i);
    return 1;
}

void zs__sim_p2p_done(rank_st *R, went *w, double now)
{
    sim *x = R->x;
    if (w->is_recv)
        zs__sim_flow_end(x, w->ch->src, w->ch->dst, w->bytes, now);
    R->st[w->stream].p2p_pending--;
    zs_foldacct_change(&R->acct, &x->r->ranks[R->rank], w->stream, now, 0, -1);
    zs_timeline_op(x->tl, R->rank, w->op, w->iter, w->t0, now, w->seq);
    zs__sim_op_done(R, w->op, now);
}
