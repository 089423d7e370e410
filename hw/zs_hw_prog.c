/* The executor's CPU-side preparation of a schedule: see zs_hw_prog.h.
 *
 * NCCL matches point-to-point messages between two ranks of one
 * communicator in issue order and has no tags, while the schedule matches
 * the k-th send a->b with tag t to the k-th receive on b from a with tag t.
 * The executor therefore gives every sender stream its own communicator (a
 * "lane"), and checks here that on every lane the two orders agree; a
 * schedule where they do not would deadlock or pair the wrong buffers on
 * real hardware, so it is refused before any device work. */
#include "zs_hw_prog.h"

#include <stdlib.h>
#include <string.h>

#include "zs_timeline.h"

void zs_hw_progs_free(zs_hw_prog *progs, int nranks)
{
    if (!progs)
        return;
    for (int r = 0; r < nranks; r++) {
        free(progs[r].items);
        free(progs[r].deps);
    }
    free(progs);
}

static int op_where(char *buf, size_t n, int rank, int64_t op, int iter)
{
    return snprintf(buf, n, "rank %d op #%lld (iteration %d of its segment)", rank, (long long)op,
                    iter);
}

/* Unrolls one rank: items in program order, dependencies resolved. */
static int unroll(const zs_schedule *s, int rank, zs_hw_prog *p, zs_err *e)
{
    const zs_rank_prog *rp = &s->ranks[rank];
    char where[128];
    int64_t expect = 0, n = 0, nd = 0;
    for (int32_t i = 0; i < rp->nsegs; i++) {
        const zs_segment *g = &rp->segs[i];
        if (g->op0 != expect || g->nops < 0 || g->repeat < 1) {
            snprintf(where, sizeof where, "rank %d segment %d", rank, i);
            return zs_err_set(e, ZS_EINVALID, where, "rebuild the schedule with the builder",
                              "segments do not cover the rank's ops contiguously");
        }
        expect += g->nops;
        n += (int64_t)g->nops * g->repeat;
        for (int32_t j = 0; j < g->nops; j++)
            nd += (int64_t)rp->ops[g->op0 + j].ndeps * g->repeat;
    }
    if (expect != rp->nops) {
        snprintf(where, sizeof where, "rank %d", rank);
        return zs_err_set(e, ZS_EINVALID, where, "rebuild the schedule with the builder",
                          "%lld ops but segments cover %lld", (long long)rp->nops,
                          (long long)expect);
    }
    p->rank = rank;
    p->items = calloc((size_t)(n > 0 ? n : 1), sizeof *p->items);
    p->deps = calloc((size_t)(nd > 0 ? nd : 1), sizeof *p->deps);
    int64_t *base = calloc((size_t)(rp->nsegs > 0 ? rp->nsegs : 1), sizeof *base);
    if (!p->items || !p->deps || !base) {
        free(base);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory unrolling the schedule");
    }
    for (int32_t i = 1; i < rp->nsegs; i++)
        base[i] = base[i - 1] + (int64_t)rp->segs[i - 1].nops * rp->segs[i - 1].repeat;
    int64_t k = 0;
    int32_t sd = 0; /* segment of a dependency: found by scanning back (few segments) */
    for (int32_t i = 0; i < rp->nsegs; i++) {
        const zs_segment *g = &rp->segs[i];
        for (int32_t it = 0; it < g->repeat; it++) {
            for (int32_t j = 0; j < g->nops; j++, k++) {
                int64_t opi = g->op0 + j;
                const zs_op *op = &rp->ops[opi];
                zs_hw_item *x = &p->items[k];
                x->op = opi;
                x->iter = it;
                x->group = -1;
                x->comm = -1;
                x->nth = -1;
                x->dep0 = p->ndeps;
                x->ndeps = op->ndeps;
                if (op->stream >= s->nstreams || op->kind >= ZS_OP_NKINDS) {
                    op_where(where, sizeof where, rank, opi, it);
                    return zs_err_set(e, ZS_EINVALID, where, "rebuild the schedule",
                                      "bad stream %d or op kind %d", op->stream, op->kind);
                }
                for (int32_t di = 0; di < op->ndeps; di++) {
                    int64_t d = rp->deps[op->dep0 + di], u;
                    if (d >= g->op0 && d < opi) {
                        u = base[i] + (int64_t)it * g->nops + (d - g->op0);
                    } else if (d >= 0 && d < g->op0) {
                        for (sd = i - 1; sd > 0 && rp->segs[sd].op0 > d; sd--)
                            ;
                        const zs_segment *gs = &rp->segs[sd];
                        u = base[sd] + (int64_t)(gs->repeat - 1) * gs->nops + (d - gs->op0);
                    } else {
                        op_where(where, sizeof where, rank, opi, it);
                        return zs_err_set(e, ZS_EINVALID, where,
                                          "a dependency must name an earlier op of the rank",
                                          "dependency on op #%lld", (long long)d);
                    }
                    p->deps[p->ndeps++] = u;
                }
            }
        }
    }
    free(base);
    p->n = n;
    return ZS_OK;
}

/* Send/receive runs per stream (markers are transparent). A run is issued
 * as one NCCL group when its first op is reached, so an op whose
 * dependencies are not all issued by then (a ring step forwarding what the
 * previous step received) starts a new group; on the stream it then runs
 * after the previous group, as the schedule's "a transfer starts once its
 * dependencies are done" asks. */
static void group_p2p(const zs_schedule *s, zs_hw_prog *p)
{
    int64_t cur[ZS_MAX_STREAMS];
    for (int i = 0; i < ZS_MAX_STREAMS; i++)
        cur[i] = -1;
    for (int64_t k = 0; k < p->n; k++) {
        zs_hw_item *x = &p->items[k];
        const zs_op *op = zs_schedule_op(s, p->rank, x->op);
        if (op->kind == ZS_OP_MARKER)
            continue;
        if (op->kind != ZS_OP_SEND && op->kind != ZS_OP_RECV) {
            cur[op->stream] = -1;
            continue;
        }
        for (int32_t d = 0; d < x->ndeps && cur[op->stream] >= 0; d++)
            if (p->deps[x->dep0 + d] >= cur[op->stream])
                cur[op->stream] = -1;
        if (cur[op->stream] < 0)
            cur[op->stream] = k;
        x->group = cur[op->stream];
    }
}

typedef struct msg {
    int32_t a, b, tag, k; /* sender, receiver, tag, k-th of (a, b, tag) */
    int64_t item;         /* unrolled index on its own rank */
    int32_t lane;
    double bytes;
    int64_t peer_item; /* matched item on the other rank */
    int64_t seq;
} msg;

static int cmp_key(const void *x, const void *y)
{
    const msg *m = x, *n = y;
    if (m->a != n->a)
        return m->a < n->a ? -1 : 1;
    if (m->b != n->b)
        return m->b < n->b ? -1 : 1;
    if (m->tag != n->tag)
        return m->tag < n->tag ? -1 : 1;
    if (m->k != n->k)
        return m->k < n->k ? -1 : 1;
    return 0;
}

/* Lane, pair, then issue order on the sender (peer_item = recv side when
 * `recv_order`); item indices are unique per rank so ties cannot occur. */
static int g_recv_order;
static int cmp_lane(const void *x, const void *y)
{
    const msg *m = x, *n = y;
    if (m->lane != n->lane)
        return m->lane < n->lane ? -1 : 1;
    if (m->a != n->a)
        return m->a < n->a ? -1 : 1;
    if (m->b != n->b)
        return m->b < n->b ? -1 : 1;
    int64_t u = g_recv_order ? m->peer_item : m->item, v = g_recv_order ? n->peer_item : n->item;
    return u < v ? -1 : u > v;
}

/* Counts of (peer, tag) occurrences per rank: a small open table would be
 * faster; messages are sorted instead, which is O(n log n) and simple. */
static int match_p2p(const zs_schedule *s, zs_hw_prog *progs, zs_hw_needs *nd, zs_err *e)
{
    int64_t ns = 0, nr = 0;
    for (int r = 0; r < s->nranks; r++)
        for (int64_t k = 0; k < progs[r].n; k++) {
            int kind = zs_schedule_op(s, r, progs[r].items[k].op)->kind;
            ns += kind == ZS_OP_SEND;
            nr += kind == ZS_OP_RECV;
        }
    char where[128];
    if (ns != nr)
        return zs_err_set(e, ZS_EINVALID, "point-to-point ops",
                          "every send needs exactly one receive", "%lld sends but %lld receives",
                          (long long)ns, (long long)nr);
    msg *snd = calloc((size_t)(ns + 1), sizeof *snd), *rcv = calloc((size_t)(nr + 1), sizeof *rcv);
    if (!snd || !rcv) {
        free(snd);
        free(rcv);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory matching messages");
    }
    int64_t is = 0, ir = 0;
    int rc = ZS_OK;
    for (int r = 0; r < s->nranks && rc == ZS_OK; r++) {
        for (int64_t k = 0; k < progs[r].n; k++) {
            const zs_op *op = zs_schedule_op(s, r, progs[r].items[k].op);
            if (op->kind != ZS_OP_SEND && op->kind != ZS_OP_RECV)
                continue;
            if (op->u.p2p.peer < 0 || op->u.p2p.peer >= s->nranks || op->u.p2p.peer == r ||
                !(op->u.p2p.bytes >= 0)) {
                op_where(where, sizeof where, r, progs[r].items[k].op, progs[r].items[k].iter);
                rc = zs_err_set(e, ZS_EINVALID, where, "fix the planner",
                                "bad peer %d or byte count", op->u.p2p.peer);
                break;
            }
            msg *m = op->kind == ZS_OP_SEND ? &snd[is++] : &rcv[ir++];
            m->a = op->kind == ZS_OP_SEND ? r : op->u.p2p.peer;
            m->b = op->kind == ZS_OP_SEND ? op->u.p2p.peer : r;
            m->tag = op->u.p2p.tag;
            m->item = k;
            m->lane = op->stream;
            m->bytes = op->u.p2p.bytes;
            if (op->u.p2p.bytes > nd->p2p_bytes)
                nd->p2p_bytes = op->u.p2p.bytes;
        }
    }
    /* k-th of each (a, b, tag): items are visited in program order, so a
     * sort on (a, b, tag, item) numbers them; ties are impossible. */
    for (int pass = 0; pass < 2 && rc == ZS_OK; pass++) {
        msg *v = pass ? rcv : snd;
        for (int64_t i = 0; i < ns; i++)
            v[i].k = (int32_t)v[i].item; /* provisional: sort by item inside the key */
        qsort(v, (size_t)ns, sizeof *v, cmp_key);
        for (int64_t i = 0; i < ns; i++)
            v[i].k =
                (i > 0 && v[i - 1].a == v[i].a && v[i - 1].b == v[i].b && v[i - 1].tag == v[i].tag)
                    ? v[i - 1].k + 1
                    : 0;
    }
    for (int64_t i = 0; i < ns && rc == ZS_OK; i++) {
        msg *m = &snd[i], *n = &rcv[i];
        if (cmp_key(m, n) != 0 || m->bytes != n->bytes) {
            msg *bad = cmp_key(m, n) <= 0 ? m : n;
            int who = bad == m ? m->a : n->b;
            const zs_hw_item *x = &progs[who].items[bad->item];
            op_where(where, sizeof where, who, x->op, x->iter);
            rc = zs_err_set(e, ZS_EINVALID, where,
                            "every send a->b with tag t needs a receive on b from a with tag t "
                            "and the same byte count",
                            "%s %d->%d tag %d has no matching %s", bad == m ? "send" : "receive",
                            bad->a, bad->b, bad->tag, bad == m ? "receive" : "send");
            break;
        }
        m->peer_item = n->item;
        progs[m->a].items[m->item].comm = m->lane;
        progs[m->b].items[n->item].comm = m->lane;
        if (!(nd->p2p_lane_mask & (1u << m->lane))) {
            nd->p2p_lane_mask |= 1u << m->lane;
            nd->p2p_lanes++;
        }
    }
    /* NCCL's in-order matching per lane and pair. */
    if (rc == ZS_OK && ns > 0) {
        g_recv_order = 0;
        qsort(snd, (size_t)ns, sizeof *snd, cmp_lane);
        for (int64_t i = 0; i < ns; i++)
            snd[i].seq = i;
        g_recv_order = 1;
        qsort(snd, (size_t)ns, sizeof *snd, cmp_lane);
        for (int64_t i = 1; i < ns; i++) {
            msg *m = &snd[i - 1], *n = &snd[i];
            if (m->lane == n->lane && m->a == n->a && m->b == n->b && m->seq > n->seq) {
                const zs_hw_item *x = &progs[n->b].items[n->peer_item];
                op_where(where, sizeof where, n->b, x->op, x->iter);
                rc = zs_err_set(e, ZS_EUNSUPPORTED, where,
                                "issue the receives from a peer in the order that peer sends",
                                "messages %d->%d are received in a different order than sent "
                                "(NCCL matches in order)",
                                n->a, n->b);
                break;
            }
        }
    }
    free(snd);
    free(rcv);
    return rc;
}

typedef struct coll {
    int32_t g, nth, rank;
    uint8_t ck;
    double bytes;
    int64_t item;
} coll;

static int cmp_coll(const void *x, const void *y)
{
    const coll *a = x, *b = y;
    if (a->g != b->g)
        return a->g < b->g ? -1 : 1;
    if (a->nth != b->nth)
        return a->nth < b->nth ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static int match_coll(const zs_schedule *s, zs_hw_prog *progs, zs_hw_needs *nd, zs_err *e)
{
    int64_t n = 0;
    for (int r = 0; r < s->nranks; r++)
        for (int64_t k = 0; k < progs[r].n; k++)
            n += zs_schedule_op(s, r, progs[r].items[k].op)->kind == ZS_OP_COLL;
    if (n == 0)
        return ZS_OK;
    coll *v = calloc((size_t)n, sizeof *v);
    int32_t *count = calloc((size_t)(s->ngroups > 0 ? s->ngroups : 1), sizeof *count);
    if (!v || !count) {
        free(v);
        free(count);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory matching collectives");
    }
    char where[128];
    int rc = ZS_OK;
    int64_t i = 0;
    for (int r = 0; r < s->nranks && rc == ZS_OK; r++) {
        memset(count, 0, sizeof *count * (size_t)(s->ngroups > 0 ? s->ngroups : 1));
        for (int64_t k = 0; k < progs[r].n; k++) {
            zs_hw_item *x = &progs[r].items[k];
            const zs_op *op = zs_schedule_op(s, r, x->op);
            if (op->kind != ZS_OP_COLL)
                continue;
            int g = op->u.coll.group, member = 0;
            if (g >= 0 && g < s->ngroups)
                for (int j = 0; j < s->groups[g].n; j++)
                    member |= s->groups[g].ranks[j] == r;
            if (!member || op->u.coll.ck >= ZS_COLL_NKINDS) {
                op_where(where, sizeof where, r, x->op, x->iter);
                rc = zs_err_set(e, ZS_EINVALID, where, "fix the planner",
                                "collective on group %d that does not hold this rank", g);
                break;
            }
            x->nth = count[g]++;
            v[i++] = (coll){g, x->nth, r, op->u.coll.ck, op->u.coll.bytes, k};
            double buf = op->u.coll.bytes *
                         (op->u.coll.ck == ZS_COLL_ALLREDUCE || op->u.coll.ck == ZS_COLL_ALLTOALL
                              ? 1
                              : s->groups[g].n);
            if (buf > nd->coll_bytes)
                nd->coll_bytes = buf;
        }
    }
    if (rc == ZS_OK) {
        qsort(v, (size_t)n, sizeof *v, cmp_coll);
        for (int64_t a = 0; a < n && rc == ZS_OK;) {
            int64_t b = a;
            while (b < n && v[b].g == v[a].g && v[b].nth == v[a].nth)
                b++;
            int ok = b - a == s->groups[v[a].g].n;
            for (int64_t j = a; j < b; j++)
                ok = ok && v[j].ck == v[a].ck && v[j].bytes == v[a].bytes;
            if (!ok) {
                const zs_hw_item *x = &progs[v[a].rank].items[v[a].item];
                op_where(where, sizeof where, v[a].rank, x->op, x->iter);
                rc = zs_err_set(e, ZS_EINVALID, where,
                                "every member must issue the same collectives in the same order",
                                "collective #%d of group %d: %lld of %d members agree on kind "
                                "and size",
                                v[a].nth, v[a].g, (long long)(b - a), s->groups[v[a].g].n);
            }
            a = b;
        }
    }
    free(v);
    free(count);
    return rc;
}

static void compute_needs(const zs_schedule *s, zs_hw_needs *nd)
{
    for (int r = 0; r < s->nranks; r++) {
        const zs_rank_prog *rp = &s->ranks[r];
        for (int64_t i = 0; i < rp->nops; i++) {
            const zs_op *op = &rp->ops[i];
            if (op->kind != ZS_OP_COMPUTE)
                continue;
            switch (op->u.compute.ck) {
            case ZS_CK_ATTN_FWD:
            case ZS_CK_ATTN_BWD: {
                int64_t q = 0, k = 0;
                for (int32_t b = 0; b < op->u.compute.nblocks; b++) {
                    const zs_attn_block *blk = &s->blocks[op->u.compute.block0 + b];
                    q += blk->q1 - blk->q0;
                    k += blk->k1 - blk->k0;
                }
                nd->attn_q_rows = q > nd->attn_q_rows ? q : nd->attn_q_rows;
                nd->attn_k_rows = k > nd->attn_k_rows ? k : nd->attn_k_rows;
                if (op->u.compute.heads > nd->attn_heads)
                    nd->attn_heads = op->u.compute.heads;
                if (op->u.compute.nblocks > nd->attn_blocks)
                    nd->attn_blocks = op->u.compute.nblocks;
                break;
            }
            case ZS_CK_GEMM: {
                double m = op->u.compute.m, n = op->u.compute.n, k = op->u.compute.k;
                nd->gemm_a = m * k > nd->gemm_a ? m * k : nd->gemm_a;
                nd->gemm_b = k * n > nd->gemm_b ? k * n : nd->gemm_b;
                nd->gemm_c = m * n > nd->gemm_c ? m * n : nd->gemm_c;
                break;
            }
            case ZS_CK_D2H:
            case ZS_CK_H2D:
                /* A copy engine moves these between a device buffer and a
                 * pinned host buffer; the elementwise kernel's operands
                 * need not grow for them. */
                if (op->u.compute.bytes > nd->host_copy_bytes)
                    nd->host_copy_bytes = op->u.compute.bytes;
                break;
            default:
                if (op->u.compute.bytes > nd->elem_bytes)
                    nd->elem_bytes = op->u.compute.bytes;
            }
        }
    }
}

int zs_hw_progs_build(const zs_schedule *s, zs_hw_prog **out, zs_hw_needs *needs, zs_err *e)
{
    if (!s || s->nranks < 1)
        return zs_err_set(e, ZS_EINVALID, "schedule", "give a schedule with ranks",
                          "empty schedule");
    zs_hw_prog *progs = calloc((size_t)s->nranks, sizeof *progs);
    if (!progs)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    zs_hw_needs nd;
    memset(&nd, 0, sizeof nd);
    int rc = ZS_OK;
    for (int r = 0; r < s->nranks && rc == ZS_OK; r++)
        rc = unroll(s, r, &progs[r], e);
    for (int r = 0; r < s->nranks && rc == ZS_OK; r++)
        group_p2p(s, &progs[r]);
    if (rc == ZS_OK)
        rc = match_p2p(s, progs, &nd, e);
    if (rc == ZS_OK)
        rc = match_coll(s, progs, &nd, e);
    if (rc) {
        zs_hw_progs_free(progs, s->nranks);
        return rc;
    }
    compute_needs(s, &nd);
    *out = progs;
    *needs = nd;
    return ZS_OK;
}

typedef struct tev {
    double t;
    int64_t item;
    int8_t start; /* 1 start, 0 end: ends first at equal times */
    int8_t compute;
} tev;

static int cmp_tev(const void *x, const void *y)
{
    const tev *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->start != b->start)
        return a->start - b->start;
    return a->item < b->item ? -1 : a->item > b->item;
}

int zs_hw_account_rank(const zs_schedule *s, const zs_hw_prog *p, const zs_hw_times *t,
                       double end_all, zs_rank_result *row)
{
    tev *ev = malloc(sizeof *ev * (size_t)(2 * p->n + 1));
    if (!ev)
        return ZS_ENOMEM;
    zs_rank_acct a = {0, 0, 0};
    zs_rank_result rr;
    memset(&rr, 0, sizeof rr);
    int64_t n = 0;
    for (int64_t i = 0; i < p->n; i++) {
        const zs_op *op = zs_schedule_op(s, p->rank, p->items[i].op);
        if (t->end[i] > rr.end)
            rr.end = t->end[i];
        if (op->kind == ZS_OP_MARKER)
            continue;
        /* A host copy is moved by a copy engine, not the SMs: it counts as
         * communication, as on the other backends (zs_schedule.h). */
        int8_t c = op->kind == ZS_OP_COMPUTE && !zs_ck_is_host_copy(op->u.compute.ck);
        ev[n++] = (tev){t->start[i], i, 1, c};
        ev[n++] = (tev){t->end[i], i, 0, c};
    }
    qsort(ev, (size_t)n, sizeof *ev, cmp_tev);
    for (int64_t i = 0; i < n; i++) {
        int d = ev[i].start ? 1 : -1;
        zs_rank_acct_change(&a, &rr, ev[i].t, ev[i].compute ? d : 0, ev[i].compute ? 0 : d);
    }
    zs_rank_acct_close(&a, &rr, end_all > rr.end ? end_all : rr.end);
    rr.ops = p->n;
    free(ev);
    *row = rr;
    return ZS_OK;
}

int zs_hw_account(const zs_schedule *s, const zs_hw_prog *progs, const zs_hw_times *t, zs_result *r)
{
    double end_all = 0;
    for (int k = 0; k < s->nranks; k++)
        for (int64_t i = 0; i < progs[k].n; i++)
            end_all = t[k].end[i] > end_all ? t[k].end[i] : end_all;
    for (int k = 0; k < s->nranks; k++)
        if (zs_hw_account_rank(s, &progs[k], &t[k], end_all, &r->ranks[k]))
            return ZS_ENOMEM;
    zs_result_finish(r);
    return ZS_OK;
}

void zs_hw_blocks_pack(const zs_attn_block *in, int n, zs_hw_block *out, int64_t *q_rows,
                       int64_t *k_rows)
{
    int64_t q = 0, k = 0;
    for (int i = 0; i < n; i++) {
        out[i].q_off = q;
        out[i].k_off = k;
        out[i].nq = in[i].q1 - in[i].q0;
        out[i].nk = in[i].k1 - in[i].k0;
        out[i].q_pos = in[i].q0;
        out[i].k_pos = in[i].k0;
        q += out[i].nq;
        k += out[i].nk;
    }
    *q_rows = q;
    *k_rows = k;
}

typedef struct tile {
    int32_t block, row;
    int64_t pairs;
} tile;

static int cmp_tile(const void *x, const void *y)
{
    const tile *a = x, *b = y;
    if (a->pairs != b->pairs)
        return a->pairs > b->pairs ? -1 : 1;
    if (a->block != b->block)
        return a->block < b->block ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;
}

/* Visible pairs of queries [i0, i1) against keys [j0, j1) of block b. */
static int64_t pairs_in(const zs_hw_block *b, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
    int64_t n = 0;
    for (int64_t i = i0; i < i1; i++) {
        /* keys j with k_pos + j <= q_pos + i */
        int64_t hi = (int64_t)b->q_pos + i - b->k_pos + 1;
        hi = hi < j1 ? hi : j1;
        n += hi > j0 ? hi - j0 : 0;
    }
    return n;
}

int64_t zs_hw_attn_tiles(const zs_hw_block *b, int nb, int rows, int over_keys, int32_t *tiles,
                         int64_t cap)
{
    int64_t n = 0;
    for (int i = 0; i < nb; i++) {
        int32_t len = over_keys ? b[i].nk : b[i].nq;
        n += (len + rows - 1) / rows;
    }
    tile *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    if (!v)
        return -1;
    int64_t m = 0;
    for (int i = 0; i < nb; i++) {
        int32_t len = over_keys ? b[i].nk : b[i].nq;
        for (int32_t r = 0; r < len; r += rows) {
            int32_t e = r + rows < len ? r + rows : len;
            int64_t p =
                over_keys ? pairs_in(&b[i], 0, b[i].nq, r, e) : pairs_in(&b[i], r, e, 0, b[i].nk);
            /* A query tile that sees nothing still runs (it writes O = 0,
             * LSE = -inf); a key tile that nobody sees adds nothing. */
            if (p > 0 || !over_keys)
                v[m++] = (tile){i, r, p};
        }
    }
    qsort(v, (size_t)m, sizeof *v, cmp_tile);
    if (tiles)
        for (int64_t i = 0; i < m && i < cap; i++) {
            tiles[2 * i] = v[i].block;
            tiles[2 * i + 1] = v[i].row;
        }
    free(v);
    return tiles && m > cap ? cap : m;
}

int zs_hw_timeline_write(const zs_schedule *s, const zs_hw_prog *progs, const zs_hw_times *t,
                         int gpus_per_node, int only_rank, const char *path, double *bytes,
                         zs_err *e)
{
    zs_tl_cfg tc;
    zs_tl_cfg_init(&tc);
    tc.gpus_per_node = gpus_per_node;
    tc.measured = 1;
    /* Measured times are kept whole: every rank (no automatic subset), or
     * the process's own. */
    char one[16];
    snprintf(one, sizeof one, "%d", only_rank);
    tc.ranks = only_rank >= 0 ? one : "all";
    zs_timeline *tl = NULL;
    int rc = zs_timeline_open(path, s, &tc, &tl, e);
    if (rc)
        return rc;
    /* Each rank's items are in program order, so the writer can number
     * every channel's messages itself (ZS_TL_SEQ_ORDER), which is how the
     * schedule matches them (the k-th send a->b with tag t meets the k-th
     * receive). */
    for (int r = 0; r < s->nranks; r++) {
        if (!zs_timeline_rank_on(tl, r))
            continue;
        for (int64_t i = 0; i < progs[r].n; i++) {
            const zs_hw_item *it = &progs[r].items[i];
            if (zs_schedule_op(s, r, it->op)->kind == ZS_OP_MARKER)
                continue;
            zs_timeline_op(tl, r, it->op, it->iter, t[r].start[i], t[r].end[i], ZS_TL_SEQ_ORDER);
        }
    }
    return zs_timeline_close(tl, bytes, e);
}
