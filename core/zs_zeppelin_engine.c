/* Zeppelin's attention engine: see zs_zeppelin_engine.h. */
#include "zs_zeppelin_engine.h"

#include <stdlib.h>
#include <string.h>

int zs_zep_engine_init(zs_zep_engine *en, zs_err *e)
{
    const zs_zep_part *p = en->part;
    en->local_off = calloc((size_t)p->nslots + 1, sizeof(int32_t));
    en->local_docs = malloc(sizeof(int32_t) * (size_t)(p->ndocs > 0 ? p->ndocs : 1));
    if (!en->local_off || !en->local_docs) {
        zs_zep_engine_fini(en);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int32_t d = 0; d < p->ndocs; d++)
        if (p->cls[d] == ZS_ZEP_LOCAL)
            en->local_off[p->slot_of[d] + 1]++;
    for (int sl = 0; sl < p->nslots; sl++)
        en->local_off[sl + 1] += en->local_off[sl];
    int32_t *fill = calloc((size_t)p->nslots, sizeof(int32_t));
    if (!fill) {
        zs_zep_engine_fini(en);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int32_t d = 0; d < p->ndocs; d++)
        if (p->cls[d] == ZS_ZEP_LOCAL) {
            int sl = p->slot_of[d];
            en->local_docs[en->local_off[sl] + fill[sl]++] = d;
        }
    free(fill);
    return ZS_OK;
}

void zs_zep_engine_fini(zs_zep_engine *en)
{
    free(en->local_off);
    free(en->local_docs);
    en->local_off = en->local_docs = NULL;
}

typedef struct ws {
    int64_t *ready, *exit, *ex_c, *ex_m, *ex_i, *dep;
    int8_t *touched;
    zs_attn_block *blk;
    int nblk;
} ws;

static void ws_free(ws *w)
{
    free(w->ready);
    free(w->exit);
    free(w->ex_c);
    free(w->ex_m);
    free(w->ex_i);
    free(w->dep);
    free(w->touched);
    free(w->blk);
}

static int nomem(zs_err *e)
{
    return zs_err_set(e, ZS_ENOMEM, "zeppelin engine", NULL, "out of memory");
}

/* One direction of the remap all-to-all-v: `in` moves tokens from their
 * linear holder to their attention holder. after[sl]: what the slot's ops
 * wait for; on return after[sl] is the sync that follows its group. */
static int remap_pass(const zs_zep_engine *en, zs_iter *it, int stage, int in, double per_token,
                      int64_t *after, ws *w, zs_err *e)
{
    const zs_zep_remap *m = en->remap;
    zs_schedule *s = zs_iter_schedule(it);
    int S = en->part->nslots, tag = zs_iter_tag(it);
    memset(w->touched, 0, (size_t)S);
    for (int i = 0; i < m->nflows; i++)
        w->touched[m->flows[i].from] = w->touched[m->flows[i].to] = 1;
    const char *label = in ? "remap-in" : "remap-out";
    const zs_cluster *cl = &zs_iter_cost(it)->cluster;
    for (int sl = 0; sl < S; sl++)
        w->dep[sl] = -1; /* last routed-arrival sync per slot */
    for (int i = 0; i < m->nflows; i++) {
        const zs_zep_flow *f = &m->flows[i];
        int from = in ? f->to : f->from, to = in ? f->from : f->to;
        int rf = zs_iter_rank(it, stage, from), rt = zs_iter_rank(it, stage, to);
        double b = (double)f->tokens * per_token;
        int64_t d[1] = {after[from]};
        if (zs_cluster_node_of(cl, rf) != zs_cluster_node_of(cl, rt)) {
            /* Across nodes the flow goes through the routing layer, like
             * the rings' transfers (and counted in the same NIC balance). */
            int64_t so, dd;
            int rc = zs_zep_route_xfer(en->route, it, rf, rt, en->intra_stream, tag, b, d[0], -1,
                                       &so, &dd, e);
            if (rc)
                return rc;
            if (s->ranks[rt].ops[dd].stream != en->intra_stream && dd > w->dep[to])
                w->dep[to] = dd;
            continue;
        }
        zs_sched_send(s, rf, en->intra_stream, label, rt, tag, b, d, d[0] >= 0);
        zs_sched_recv(s, rt, en->intra_stream, label, rf, tag, b, NULL, 0);
    }
    /* A sync waits for every earlier transfer of its stream: it marks the
     * slot's part of the all-to-all-v as done (with the routed arrivals,
     * which end in a sync on the route stream). */
    for (int sl = 0; sl < S; sl++) {
        if (!w->touched[sl])
            continue;
        int64_t d[2];
        int nd = 0;
        if (after[sl] >= 0)
            d[nd++] = after[sl];
        if (w->dep[sl] >= 0)
            d[nd++] = w->dep[sl];
        after[sl] = zs_zep_sync(s, zs_iter_rank(it, stage, sl), en->intra_stream, d, nd);
    }
    return ZS_OK;
}

static int local_attn(const zs_zep_engine *en, zs_iter *it, int stage, int sl, int backward, ws *w,
                      zs_err *e)
{
    int n = en->local_off[sl + 1] - en->local_off[sl];
    if (n == 0)
        return ZS_OK;
    if (n > w->nblk) {
        zs_attn_block *b = realloc(w->blk, sizeof *b * (size_t)n);
        if (!b)
            return nomem(e);
        w->blk = b;
        w->nblk = n;
    }
    for (int i = 0; i < n; i++) {
        int32_t d = en->local_docs[en->local_off[sl] + i];
        w->blk[i] = (zs_attn_block){d, 0, en->len[d], 0, en->len[d]};
    }
    int heads = zs_iter_heads(it);
    double t = zs_cost_attn(zs_iter_cost(it), w->blk, n, heads, backward);
    int64_t d[1] = {w->ready[sl]};
    w->ex_c[sl] = zs_sched_attn(zs_iter_schedule(it), zs_iter_rank(it, stage, sl),
                                ZS_STREAM_COMPUTE, backward ? "local-attn-bwd" : "local-attn-fwd",
                                backward, w->blk, n, heads, t, d, d[0] >= 0);
    return ZS_OK;
}

static int rings(const zs_zep_engine *en, zs_iter *it, int stage, int backward, ws *w, zs_err *e)
{
    zs_schedule *s = zs_iter_schedule(it);
    const zs_zep_part *p = en->part;
    static const char *labels[] = {"local", "zep-intra", "zep-inter", "zep-global"};
    for (int i = 0; i < p->nrings; i++) {
        const zs_zep_ring *r = &p->rings[i];
        int stream = r->cls == ZS_ZEP_INTRA ? en->intra_stream : en->inter_stream;
        zs_ring_spec rs = {r->g,   r->slots,           r->ndocs,          r->docs,  ZS_RING_EXACT,
                           stream, labels[r->cls & 3], zs_zep_route_xfer, en->route};
        for (int k = 0; k < r->g; k++) {
            w->dep[k] = w->ready[r->slots[k]];
        }
        int rc = zs_ring_emit(it, stage, &rs, backward, w->dep, e);
        if (rc)
            return rc;
        for (int k = 0; k < r->g; k++) {
            int sl = r->slots[k];
            int64_t op = w->dep[k];
            if (op < 0)
                continue;
            int st = s->ranks[zs_iter_rank(it, stage, sl)].ops[op].stream;
            int64_t *slot_ex = st == ZS_STREAM_COMPUTE  ? w->ex_c
                               : st == en->intra_stream ? w->ex_m
                                                        : w->ex_i;
            if (op > slot_ex[sl])
                slot_ex[sl] = op;
        }
    }
    return ZS_OK;
}

int zs_zep_engine_emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    zs_zep_engine *en = arg;
    zs_schedule *s = zs_iter_schedule(it);
    const zs_model *m = &zs_iter_cost(it)->model;
    int S = en->part->nslots, rc = ZS_OK;
    size_t n = (size_t)S;
    ws w = {0};
    w.ready = malloc(sizeof(int64_t) * n);
    w.exit = malloc(sizeof(int64_t) * n);
    w.ex_c = malloc(sizeof(int64_t) * n);
    w.ex_m = malloc(sizeof(int64_t) * n);
    w.ex_i = malloc(sizeof(int64_t) * n);
    w.dep = malloc(sizeof(int64_t) * n);
    w.touched = malloc(n);
    if (!w.ready || !w.exit || !w.ex_c || !w.ex_m || !w.ex_i || !w.dep || !w.touched) {
        ws_free(&w);
        return nomem(e);
    }
    (void)micro;
    zs_zep_route_phase(en->route);
    for (int sl = 0; sl < S; sl++) {
        w.ready[sl] = zs_iter_entry(it, sl);
        w.ex_c[sl] = w.ex_m[sl] = w.ex_i[sl] = -1;
    }
    double dh = (double)m->head_dim * m->dtype_bytes;
    double qkv = (zs_iter_heads(it) + 2.0 * zs_iter_kv_heads(it)) * dh;
    double o = zs_iter_heads(it) * dh;
    int remap = en->remap && en->remap->nflows > 0;
    if (remap)
        rc = remap_pass(en, it, stage, 1, backward ? o : qkv, w.ready, &w, e);
    for (int sl = 0; sl < S && !rc && !backward; sl++)
        rc = local_attn(en, it, stage, sl, backward, &w, e);
    if (!rc)
        rc = rings(en, it, stage, backward, &w, e);
    for (int sl = 0; sl < S && !rc && backward; sl++)
        rc = local_attn(en, it, stage, sl, backward, &w, e);
    /* Join each slot's queues into one exit op. */
    for (int sl = 0; sl < S && !rc; sl++) {
        int64_t d[3];
        int nd = 0;
        if (w.ex_c[sl] >= 0)
            d[nd++] = w.ex_c[sl];
        if (w.ex_m[sl] >= 0)
            d[nd++] = w.ex_m[sl];
        if (w.ex_i[sl] >= 0)
            d[nd++] = w.ex_i[sl];
        if (nd == 0) {
            w.exit[sl] = w.ready[sl];
        } else if (nd == 1) {
            w.exit[sl] = d[0];
        } else {
            w.exit[sl] = zs_sched_elementwise(s, zs_iter_rank(it, stage, sl), ZS_STREAM_COMPUTE,
                                              "attn-join", 0, 0, d, nd);
        }
    }
    if (!rc && remap)
        rc = remap_pass(en, it, stage, 0, backward ? qkv : o, w.exit, &w, e);
    for (int sl = 0; sl < S && !rc; sl++)
        zs_iter_set_exit(it, sl, w.exit[sl]);
    ws_free(&w);
    return rc ? rc : zs_schedule_check(s, e);
}

int zs_zep_engine_pieces(const zs_zep_engine *en, zs_schedule *s, const zs_layout_dims *dims,
                         zs_err *e)
{
    const zs_zep_part *p = en->part;
    int S = p->nslots;
    int64_t a0 = s->npieces;
    for (int sl = 0; sl < S; sl++)
        for (int32_t i = en->local_off[sl]; i < en->local_off[sl + 1]; i++) {
            int32_t d = en->local_docs[i];
            zs_schedule_add_piece(s, d, 0, en->len[d], zs_slot_rank(dims, 0, sl), ZS_LAYOUT_ATTN,
                                  0);
        }
    for (int i = 0; i < p->nrings; i++) {
        const zs_zep_ring *r = &p->rings[i];
        zs_ring_spec rs = {r->g, r->slots, r->ndocs, r->docs, ZS_RING_EXACT, 0, "", NULL, NULL};
        int rc = zs_ring_add_pieces(s, dims, &rs, 0, e);
        if (rc)
            return rc;
    }
    int64_t a1 = s->npieces;
    if (!en->remap) {
        for (int64_t i = a0; i < a1; i++) {
            zs_piece pc = s->pieces[i];
            zs_schedule_add_piece(s, pc.doc, pc.t0, pc.t1, pc.rank, ZS_LAYOUT_LINEAR, 0);
        }
        return zs_schedule_check(s, e);
    }
    /* Attention pieces by slot (stable), then each slot keeps its first
     * target tokens and hands the rest to its flows in order. */
    const zs_zep_remap *m = en->remap;
    int tp = dims->tp;
    int64_t np = a1 - a0;
    int64_t *off = calloc((size_t)S + 1, sizeof(int64_t));
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(np > 0 ? np : 1));
    int64_t *fill = calloc((size_t)S, sizeof(int64_t));
    int32_t *fl0 = malloc(sizeof(int32_t) * ((size_t)S + 1));
    int rc = ZS_OK;
    if (!off || !idx || !fill || !fl0) {
        rc = nomem(e);
        goto out;
    }
    for (int64_t i = a0; i < a1; i++)
        off[s->pieces[i].rank / tp + 1]++;
    for (int sl = 0; sl < S; sl++)
        off[sl + 1] += off[sl];
    for (int64_t i = a0; i < a1; i++) {
        int sl = s->pieces[i].rank / tp;
        idx[off[sl] + fill[sl]++] = i;
    }
    for (int sl = 0, f = 0; sl <= S; sl++) {
        while (f < m->nflows && m->flows[f].from < sl)
            f++;
        fl0[sl] = f;
    }
    for (int sl = 0; sl < S && !rc; sl++) {
        int64_t keep = p->tokens[sl] < m->target[sl] ? p->tokens[sl] : m->target[sl];
        int f = fl0[sl];
        int64_t left = keep; /* tokens still going to the current holder */
        int holder = sl;
        for (int64_t j = off[sl]; j < off[sl + 1] && !rc; j++) {
            zs_piece pc = s->pieces[idx[j]];
            int32_t t = pc.t0;
            while (t < pc.t1 && !rc) {
                while (left == 0 && f < fl0[sl + 1]) {
                    holder = m->flows[f].to;
                    left = m->flows[f++].tokens;
                }
                if (left == 0) {
                    rc = zs_err_set(e, ZS_EINVALID, "zeppelin remap", NULL,
                                    "slot %d has more attention tokens than its remap plan", sl);
                    break;
                }
                int32_t u = pc.t1 - t < left ? pc.t1 : (int32_t)(t + left);
                zs_schedule_add_piece(s, pc.doc, t, u, zs_slot_rank(dims, 0, holder),
                                      ZS_LAYOUT_LINEAR, 0);
                left -= u - t;
                t = u;
            }
        }
    }
    if (!rc)
        rc = zs_schedule_check(s, e);
out:
    free(off);
    free(idx);
    free(fill);
    free(fl0);
    return rc;
}
