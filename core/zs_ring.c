/* Ring attention over a group of slots: see zs_ring.h. */
#include "zs_ring.h"

#include <stdlib.h>
#include <string.h>

void zs_ring_chunk(int32_t len, int g, zs_ring_chunking ch, int c, int32_t *t0, int32_t *t1)
{
    int64_t n = 2 * (int64_t)g;
    if (ch == ZS_RING_PAD) {
        int64_t cs = (len + n - 1) / n;
        int64_t a = c * cs, b = (c + 1) * cs;
        *t0 = (int32_t)(a < len ? a : len);
        *t1 = (int32_t)(b < len ? b : len);
        return;
    }
    int64_t base = len / n, rem = len % n;
    int64_t a = c * base + (c < rem ? c : rem);
    *t0 = (int32_t)a;
    *t1 = (int32_t)(a + base + (c < rem ? 1 : 0));
}

/* Padded chunk geometry (what TE computes and moves) for cost and bytes. */
static void chunk_cost(int32_t len, int g, zs_ring_chunking ch, int c, int32_t *t0, int32_t *t1)
{
    if (ch == ZS_RING_EXACT) {
        zs_ring_chunk(len, g, ch, c, t0, t1);
        return;
    }
    int64_t n = 2 * (int64_t)g, cs = (len + n - 1) / n;
    *t0 = (int32_t)(c * cs);
    *t1 = (int32_t)((c + 1) * cs);
}

int zs_ring_add_pieces(zs_schedule *s, const zs_layout_dims *dims, const zs_ring_spec *rs,
                       int micro, zs_err *e)
{
    int g = rs->g;
    for (int k = 0; k < g; k++) {
        int rank = zs_slot_rank(dims, 0, rs->slots[k]);
        for (int i = 0; i < rs->ndocs; i++) {
            int d = rs->docs[i];
            int chunks[2] = {k, 2 * g - 1 - k};
            for (int c = 0; c < 2; c++) {
                int32_t t0, t1;
                zs_ring_chunk(s->doc_len[d], g, rs->chunking, chunks[c], &t0, &t1);
                if (t1 > t0)
                    zs_schedule_add_piece(s, d, t0, t1, rank, ZS_LAYOUT_ATTN, micro);
            }
        }
    }
    return zs_schedule_check(s, e);
}

double zs_ring_step_bytes(const zs_schedule *s, const zs_model *m, int kv_heads,
                          const zs_ring_spec *rs, int k)
{
    double tokens = 0;
    int g = rs->g;
    for (int i = 0; i < rs->ndocs; i++) {
        int32_t len = s->doc_len[rs->docs[i]], t0, t1;
        chunk_cost(len, g, rs->chunking, k, &t0, &t1);
        tokens += t1 - t0;
        chunk_cost(len, g, rs->chunking, 2 * g - 1 - k, &t0, &t1);
        tokens += t1 - t0;
    }
    return tokens * 2.0 * kv_heads * m->head_dim * m->dtype_bytes;
}

static int direct_xfer(void *arg, zs_iter *it, int src, int dst, int stream, int tag, double bytes,
                       int64_t src_dep, int64_t dst_dep, int64_t *src_op, int64_t *dst_op,
                       zs_err *e)
{
    zs_schedule *s = zs_iter_schedule(it);
    const char *label = arg;
    int64_t d1[1] = {src_dep}, d2[1] = {dst_dep};
    (void)e; /* a failed append is the schedule's to report */
    *src_op = zs_sched_send(s, src, stream, label, dst, tag, bytes, d1, src_dep >= 0);
    *dst_op = zs_sched_recv(s, dst, stream, label, src, tag, bytes, d2, dst_dep >= 0);
    return ZS_OK;
}

typedef struct ring_ws {
    zs_attn_block *blk, *cblk;
    int cap;
} ring_ws;

/* Blocks slot k computes in step j: its query chunks against the KV chunks
 * first held by slot src. Real geometry into blk, padded into cblk. */
static int step_blocks(const zs_schedule *s, const zs_ring_spec *rs, int k, int src, ring_ws *w,
                       int *nreal, int *ncost)
{
    int g = rs->g;
    int need = rs->ndocs * 4;
    if (need > w->cap) {
        zs_attn_block *a = realloc(w->blk, sizeof(zs_attn_block) * (size_t)need);
        if (!a)
            return ZS_ENOMEM;
        w->blk = a;
        zs_attn_block *b = realloc(w->cblk, sizeof(zs_attn_block) * (size_t)need);
        if (!b)
            return ZS_ENOMEM;
        w->cblk = b;
        w->cap = need;
    }
    int qc[2] = {k, 2 * g - 1 - k}, kc[2] = {src, 2 * g - 1 - src};
    *nreal = *ncost = 0;
    for (int i = 0; i < rs->ndocs; i++) {
        int d = rs->docs[i];
        int32_t len = s->doc_len[d];
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                if (kc[b] > qc[a])
                    continue; /* above the diagonal */
                int32_t q0, q1, k0, k1;
                chunk_cost(len, g, rs->chunking, qc[a], &q0, &q1);
                chunk_cost(len, g, rs->chunking, kc[b], &k0, &k1);
                if (q1 > q0 && k1 > k0)
                    w->cblk[(*ncost)++] = (zs_attn_block){d, q0, q1, k0, k1};
                zs_ring_chunk(len, g, rs->chunking, qc[a], &q0, &q1);
                zs_ring_chunk(len, g, rs->chunking, kc[b], &k0, &k1);
                if (q1 > q0 && k1 > k0)
                    w->blk[(*nreal)++] = (zs_attn_block){d, q0, q1, k0, k1};
            }
    }
    return ZS_OK;
}

/* One attention op (or, when padding leaves no real block, a compute op that
 * carries the padded cost). */
static int64_t attn_op(zs_iter *it, int heads, int rank, const char *label, int backward,
                       ring_ws *w, int nreal, int ncost, const int64_t *deps, int ndeps)
{
    zs_schedule *s = zs_iter_schedule(it);
    double t = ncost > 0 ? zs_cost_attn(zs_iter_cost(it), w->cblk, ncost, heads, backward) : 0;
    if (nreal > 0)
        return zs_sched_attn(s, rank, ZS_STREAM_COMPUTE, label, backward, w->blk, nreal, heads, t,
                             deps, ndeps);
    char l[80];
    snprintf(l, sizeof l, "%s-padding", label);
    return zs_sched_elementwise(s, rank, ZS_STREAM_COMPUTE, l, 0, t, deps, ndeps);
}

int zs_ring_emit(zs_iter *it, int stage, const zs_ring_spec *rs, int backward, int64_t *dep,
                 zs_err *e)
{
    return zs_ring_emit_heads(it, stage, rs, 0, 0, backward, dep, e);
}

int zs_ring_emit_heads(zs_iter *it, int stage, const zs_ring_spec *rs, int heads, int kv_heads,
                       int backward, int64_t *dep, zs_err *e)
{
    if (heads <= 0)
        heads = zs_iter_heads(it);
    if (kv_heads <= 0)
        kv_heads = zs_iter_kv_heads(it);
    zs_schedule *s = zs_iter_schedule(it);
    const zs_model *m = &zs_iter_cost(it)->model;
    int g = rs->g;
    if (g < 1 || rs->ndocs < 1)
        return zs_err_set(e, ZS_EINVALID, "ring", NULL, "a ring needs >= 1 slot and document");
    zs_ring_xfer_fn xfer = rs->xfer ? rs->xfer : direct_xfer;
    char lab_attn[64], lab_kv[64], lab_dkv[64];
    snprintf(lab_attn, sizeof lab_attn, "%s-attn-%s", rs->label, backward ? "bwd" : "fwd");
    snprintf(lab_kv, sizeof lab_kv, "%s-kv", rs->label);
    snprintf(lab_dkv, sizeof lab_dkv, "%s-dkv", rs->label);
    void *xarg = rs->xfer ? rs->xfer_arg : (void *)lab_kv;
    int *rank = malloc(sizeof(int) * (size_t)g);
    int64_t *kv_in = malloc(sizeof(int64_t) * (size_t)g);  /* recv of the KV for this step */
    int64_t *dkv_in = malloc(sizeof(int64_t) * (size_t)g); /* recv of the dKV, backward */
    int64_t *last = malloc(sizeof(int64_t) * (size_t)g);   /* last attention op */
    double *bytes = malloc(sizeof(double) * (size_t)g);
    ring_ws w = {0};
    int rc = ZS_OK;
    if (!rank || !kv_in || !dkv_in || !last || !bytes) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    int tag_kv = zs_iter_tag(it), tag_dkv = zs_iter_tag(it);
    for (int k = 0; k < g; k++) {
        rank[k] = zs_iter_rank(it, stage, rs->slots[k]);
        kv_in[k] = dkv_in[k] = -1;
        last[k] = dep[k];
        bytes[k] = zs_ring_step_bytes(s, m, kv_heads, rs, k);
    }
    for (int j = 0; j < g && rc == ZS_OK; j++) {
        /* Transfers of step j move the KV needed in step j+1 and overlap the
         * compute of step j. Slot k sends what it holds (first held by
         * slot k - j) to slot k + 1. */
        int64_t *kv_next = malloc(sizeof(int64_t) * (size_t)g);
        if (!kv_next) {
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
            break;
        }
        for (int k = 0; k < g; k++)
            kv_next[k] = -1;
        if (j < g - 1) {
            for (int k = 0; k < g && rc == ZS_OK; k++) {
                int to = (k + 1) % g, holder = (k - j + g) % g;
                int64_t sd = j == 0 ? dep[k] : kv_in[k], so, dd;
                rc = xfer(xarg, it, rank[k], rank[to], rs->comm_stream, tag_kv, bytes[holder], sd,
                          -1, &so, &dd, e);
                kv_next[to] = dd;
            }
        }
        for (int k = 0; k < g && rc == ZS_OK; k++) {
            int src = (k - j + g) % g, nreal, ncost;
            if (step_blocks(s, rs, k, src, &w, &nreal, &ncost)) {
                rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
                break;
            }
            int64_t deps[2];
            int nd = 0;
            if (last[k] >= 0)
                deps[nd++] = last[k];
            if (j > 0 && kv_in[k] >= 0)
                deps[nd++] = kv_in[k];
            last[k] = attn_op(it, heads, rank[k], lab_attn, backward, &w, nreal, ncost, deps, nd);
        }
        /* Backward: the dK/dV of the KV chunks just used travel on with
         * them, one step behind; after the last step they reach their owner. */
        if (backward && g > 1 && rc == ZS_OK) {
            int64_t *dkv_next = malloc(sizeof(int64_t) * (size_t)g);
            if (!dkv_next) {
                free(kv_next);
                rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
                break;
            }
            for (int k = 0; k < g && rc == ZS_OK; k++) {
                int to = (k + 1) % g, holder = (k - j + g) % g;
                int64_t sd = dkv_in[k] >= 0 ? dkv_in[k] : last[k], so, dd;
                /* The send waits for this step's compute and the dK/dV that
                 * came in: depend on both through the later of the two. */
                if (dkv_in[k] >= 0 && last[k] >= 0)
                    sd = dkv_in[k] > last[k] ? dkv_in[k] : last[k];
                rc = xfer(rs->xfer ? rs->xfer_arg : (void *)lab_dkv, it, rank[k], rank[to],
                          rs->comm_stream, tag_dkv, bytes[holder], sd, -1, &so, &dd, e);
                dkv_next[to] = dd;
            }
            memcpy(dkv_in, dkv_next, sizeof(int64_t) * (size_t)g);
            free(dkv_next);
        }
        memcpy(kv_in, kv_next, sizeof(int64_t) * (size_t)g);
        free(kv_next);
    }
    for (int k = 0; k < g && rc == ZS_OK; k++)
        dep[k] = backward && g > 1 && dkv_in[k] >= 0 ? dkv_in[k] : last[k];
    if (rc == ZS_OK)
        rc = zs_schedule_check(s, e);
out:
    free(rank);
    free(kv_in);
    free(dkv_in);
    free(last);
    free(bytes);
    free(w.blk);
    free(w.cblk);
    return rc;
}
