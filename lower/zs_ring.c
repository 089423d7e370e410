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

int zs_ring_member_blocks(int32_t doc, int32_t len, int g, zs_ring_chunking ch, int k, int j,
                          zs_attn_block out[4])
{
    int src = ((k - j) % g + g) % g, n = 0;
    int qc[2] = {k, 2 * g - 1 - k}, kc[2] = {src, 2 * g - 1 - src};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            if (kc[b] > qc[a])
                continue;
            int32_t q0, q1, k0, k1;
            zs_ring_chunk(len, g, ch, qc[a], &q0, &q1);
            zs_ring_chunk(len, g, ch, kc[b], &k0, &k1);
            if (q1 > q0 && k1 > k0)
                out[n++] = (zs_attn_block){doc, q0, q1, k0, k1};
        }
    return n;
}

int zs_ring_add_pieces(zs_schedule *s, const zs_layout_dims *dims, const zs_ring_spec *rs,
                       int micro, zs_err *e)
{
    int g = rs->g, n = zs_cpl_nchunks(rs->layout, g), pad = rs->chunking == ZS_RING_PAD;
    for (int k = 0; k < g; k++) {
        int rank = zs_slot_rank(dims, 0, rs->slots[k]);
        for (int i = 0; i < rs->ndocs; i++) {
            int d = rs->docs[i];
            for (int c = 0; c < zs_cpl_nowned(rs->layout); c++) {
                int32_t t0, t1;
                zs_cpl_chunk(s->doc_len[d], n, pad, zs_cpl_owned(rs->layout, g, k, c), &t0, &t1);
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
    for (int i = 0; i < rs->ndocs; i++)
        tokens += (double)zs_cpl_member_tokens(rs->layout, s->doc_len[rs->docs[i]], rs->g,
                                               rs->chunking == ZS_RING_PAD, k);
    return tokens * 2.0 * kv_heads * m->head_dim * m->dtype_bytes;
}

static int direct_xfer(void *arg, zs_iter *it, const zs_xfer *x, int64_t *src_op, int64_t *dst_op,
                       zs_err *e)
{
    (void)e; /* a failed append is the schedule's to report */
    zs_sched_xfer(zs_iter_schedule(it), x, arg, src_op, dst_op);
    return ZS_OK;
}

typedef struct ring_ws {
    zs_attn_block *blk, *cblk;
    int cap;
} ring_ws;

/* Blocks slot k computes in step j (its queries against the KV first held
 * by slot src): real geometry into blk, priced into cblk (zs_cplayout.h). */
static int step_blocks(const zs_schedule *s, const zs_ring_spec *rs, int k, int src, ring_ws *w,
                       int *nreal, int *ncost)
{
    int g = rs->g;
    int need = rs->ndocs * ZS_CPL_MAXBLK;
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
    int j = ((k - src) % g + g) % g;
    *nreal = *ncost = 0;
    for (int i = 0; i < rs->ndocs; i++) {
        int d = rs->docs[i], nr, nc;
        zs_cpl_step_blocks(rs->layout, d, s->doc_len[d], g, rs->chunking == ZS_RING_PAD, k, j,
                           w->blk + *nreal, &nr, w->cblk + *ncost, &nc);
        *nreal += nr;
        *ncost += nc;
    }
    return ZS_OK;
}

/* Arrivals a member has received but not yet used, oldest first: the op of
 * step `first`, then first+1, ... (a member can fall several steps behind
 * its predecessor when a planner interleaves other work). */
typedef struct arrivals {
    int64_t *op;
    int first, n, cap;
} arrivals;

static int arr_push(arrivals *a, int step, int64_t op)
{
    if (a->n == 0)
        a->first = step;
    if (step != a->first + a->n)
        return ZS_EINVALID;
    if (a->n == a->cap) {
        int nc = a->cap ? 2 * a->cap : 4;
        int64_t *p = realloc(a->op, sizeof(int64_t) * (size_t)nc);
        if (!p)
            return ZS_ENOMEM;
        a->op = p;
        a->cap = nc;
    }
    a->op[a->n++] = op;
    return ZS_OK;
}

/* The arrival of step `step`, or -2 when it has not been emitted. */
static int64_t arr_get(const arrivals *a, int step)
{
    int i = step - a->first;
    return a->n > 0 && i >= 0 && i < a->n ? a->op[i] : -2;
}

/* Forgets arrivals before `step` (no longer needed). */
static void arr_drop(arrivals *a, int step)
{
    int i = step - a->first;
    if (a->n == 0 || i <= 0)
        return;
    if (i > a->n)
        i = a->n;
    memmove(a->op, a->op + i, sizeof(int64_t) * (size_t)(a->n - i));
    a->n -= i;
    a->first += i;
}

struct zs_ring_run {
    zs_iter *it;
    zs_schedule *s;
    zs_ring_spec rs;
    int g, heads, kv_heads, backward, tag_kv, tag_dkv;
    zs_ring_xfer_fn xfer;
    char lab_attn[64], lab_kv[64], lab_dkv[64], lab_acc[64];
    int *rank, *slots;
    int32_t *docs;
    int64_t *entry, *last, *exit; /* per member: first dependency, last attention, exit */
    int *next_kv, *next_attn, *next_dkv;
    arrivals *kv_in, *dkv_in; /* per member: KV for its step j, dK/dV for its step j */
    int *kv_open, *dkv_open;  /* per member: the step begun and not ended (-1: none) */
    double *bytes;            /* per holder: KV bytes of its shard */
    int64_t *carry0;          /* per holder: its shard's carry list in the pool */
    int *ncarry;
    ring_ws w;
};

void zs_ring_run_free(zs_ring_run *r)
{
    if (!r)
        return;
    for (int k = 0; r->kv_in && r->dkv_in && k < r->g; k++) {
        free(r->kv_in[k].op);
        free(r->dkv_in[k].op);
    }
    free(r->kv_in);
    free(r->dkv_in);
    free(r->rank);
    free(r->slots);
    free(r->docs);
    free(r->entry);
    free(r->last);
    free(r->exit);
    free(r->next_kv);
    free(r->next_attn);
    free(r->next_dkv);
    free(r->bytes);
    free(r->carry0);
    free(r->ncarry);
    free(r->kv_open);
    free(r->dkv_open);
    free(r->w.blk);
    free(r->w.cblk);
    free(r);
}

/* Each holder's carry list: the ring's documents with their part of its
 * shard's bytes (the same geometry as zs_ring_step_bytes, so the parts add
 * up exactly). None when the documents are not the schedule's. */
static int carry_lists(zs_ring_run *r, const zs_model *m)
{
    const zs_schedule *s = r->s;
    int g = r->g, nd = r->rs.ndocs;
    for (int i = 0; i < nd; i++)
        if (r->docs[i] < 0 || r->docs[i] >= s->ndocs)
            return ZS_OK;
    zs_carry *c = malloc(sizeof(zs_carry) * (size_t)nd);
    if (!c)
        return ZS_ENOMEM;
    double per_token = 2.0 * r->kv_heads * m->head_dim * m->dtype_bytes;
    for (int k = 0; k < g; k++) {
        int n = 0;
        for (int i = 0; i < nd; i++) {
            double tok = (double)zs_cpl_member_tokens(r->rs.layout, s->doc_len[r->docs[i]], g,
                                                      r->rs.chunking == ZS_RING_PAD, k);
            if (tok > 0)
                c[n++] = (zs_carry){r->docs[i], tok * per_token};
        }
        int64_t c0 = n > 0 ? zs_schedule_carry(r->s, c, n) : -1;
        r->carry0[k] = c0 >= 0 ? c0 : 0;
        r->ncarry[k] = c0 >= 0 ? n : 0;
    }
    free(c);
    return ZS_OK;
}

int zs_ring_run_new(zs_iter *it, int stage, const zs_ring_spec *rs, int heads, int kv_heads,
                    int backward, const int64_t *dep, zs_ring_run **out, zs_err *e)
{
    int g = rs->g;
    if (g < 1 || rs->ndocs < 1)
        return zs_err_set(e, ZS_EINVALID, "ring", NULL, "a ring needs >= 1 slot and document");
    zs_ring_run *r = calloc(1, sizeof *r);
    if (!r)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    size_t n = (size_t)g;
    r->rank = malloc(sizeof(int) * n);
    r->slots = malloc(sizeof(int) * n);
    r->docs = malloc(sizeof(int32_t) * (size_t)rs->ndocs);
    r->entry = malloc(sizeof(int64_t) * n);
    r->last = malloc(sizeof(int64_t) * n);
    r->exit = malloc(sizeof(int64_t) * n);
    r->next_kv = calloc(n, sizeof(int));
    r->next_attn = calloc(n, sizeof(int));
    r->next_dkv = calloc(n, sizeof(int));
    r->kv_in = calloc(n, sizeof(arrivals));
    r->dkv_in = calloc(n, sizeof(arrivals));
    r->bytes = malloc(sizeof(double) * n);
    r->carry0 = calloc(n, sizeof(int64_t));
    r->ncarry = calloc(n, sizeof(int));
    r->kv_open = malloc(sizeof(int) * n);
    r->dkv_open = malloc(sizeof(int) * n);
    if (!r->rank || !r->slots || !r->docs || !r->entry || !r->last || !r->exit || !r->next_kv ||
        !r->next_attn || !r->next_dkv || !r->kv_in || !r->dkv_in || !r->bytes || !r->carry0 ||
        !r->ncarry || !r->kv_open || !r->dkv_open) {
        zs_ring_run_free(r);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    r->it = it;
    r->s = zs_iter_schedule(it);
    r->g = g;
    r->heads = heads > 0 ? heads : zs_iter_heads(it);
    r->kv_heads = kv_heads > 0 ? kv_heads : zs_iter_kv_heads(it);
    r->backward = backward;
    memcpy(r->slots, rs->slots, sizeof(int) * n);
    memcpy(r->docs, rs->docs, sizeof(int32_t) * (size_t)rs->ndocs);
    r->rs = *rs;
    r->rs.slots = r->slots;
    r->rs.docs = r->docs;
    r->xfer = rs->xfer ? rs->xfer : direct_xfer;
    snprintf(r->lab_attn, sizeof r->lab_attn, "%s-attn-%s", rs->label, backward ? "bwd" : "fwd");
    snprintf(r->lab_kv, sizeof r->lab_kv, "%s-kv", rs->label);
    snprintf(r->lab_dkv, sizeof r->lab_dkv, "%s-dkv", rs->label);
    snprintf(r->lab_acc, sizeof r->lab_acc, "%s-dkv-acc", rs->label);
    r->tag_kv = zs_iter_tag(it);
    r->tag_dkv = zs_iter_tag(it);
    const zs_model *m = &zs_iter_cost(it)->model;
    for (int k = 0; k < g; k++) {
        r->rank[k] = zs_iter_rank(it, stage, rs->slots[k]);
        r->entry[k] = r->last[k] = r->exit[k] = dep[k];
        r->bytes[k] = zs_ring_step_bytes(r->s, m, r->kv_heads, &r->rs, k);
        r->kv_open[k] = r->dkv_open[k] = -1;
    }
    if (g > 1 && carry_lists(r, m) == ZS_ENOMEM) {
        zs_ring_run_free(r);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    *out = r;
    return ZS_OK;
}

static int order_err(zs_ring_run *r, const char *what, int j, int k, zs_err *e)
{
    return zs_err_set(e, ZS_EINVALID, "ring", "emit a ring's steps in dependency order",
                      "%s of step %d of member %d of a ring of %d emitted out of order", what, j, k,
                      r->g);
}

int zs_ring_run_set_dep(zs_ring_run *r, int k, int64_t op, zs_err *e)
{
    if (r->next_kv[k] > 0 || r->next_attn[k] > 0)
        return order_err(r, "first dependency", 0, k, e);
    r->entry[k] = r->last[k] = r->exit[k] = op;
    return ZS_OK;
}

int64_t zs_ring_run_last_attn(const zs_ring_run *r, int k)
{
    return r->last[k];
}

int zs_ring_run_tag(const zs_ring_run *r, int dkv)
{
    return dkv ? r->tag_dkv : r->tag_kv;
}

int zs_ring_run_rank(const zs_ring_run *r, int k)
{
    return r->rank[k];
}

double zs_ring_run_bytes(const zs_ring_run *r, int j, int k)
{
    return r->bytes[(k - j % r->g + r->g) % r->g];
}

int64_t zs_ring_run_exit(const zs_ring_run *r, int k)
{
    return r->exit[k];
}

/* Drops the arrivals both users of member k's KV are done with. */
static void kv_done(zs_ring_run *r, int k)
{
    int a = r->next_attn[k], b = r->next_kv[k];
    arr_drop(&r->kv_in[k], a < b ? a : b);
}

void zs_ring_run_carry(const zs_ring_run *r, int j, int k, int64_t *c0, int *n)
{
    int h = (k - j % r->g + r->g) % r->g;
    *c0 = r->carry0[h];
    *n = r->ncarry[h];
}

static int oom(zs_err *e)
{
    return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
}

int zs_ring_run_kv_begin(zs_ring_run *r, int j, int k, int64_t *dep, zs_err *e)
{
    if (j >= r->g - 1 || j != r->next_kv[k] || r->kv_open[k] >= 0)
        return order_err(r, "KV send", j, k, e);
    int64_t sd = j == 0 ? r->entry[k] : arr_get(&r->kv_in[k], j);
    if (sd == -2)
        return order_err(r, "KV send", j, k, e);
    *dep = sd;
    r->kv_open[k] = j;
    r->next_kv[k]++;
    kv_done(r, k);
    return ZS_OK;
}

int zs_ring_run_kv_end(zs_ring_run *r, int j, int k, int64_t dst_op, zs_err *e)
{
    if (r->kv_open[k] != j)
        return order_err(r, "KV arrival", j, k, e);
    r->kv_open[k] = -1;
    int rc = arr_push(&r->kv_in[(k + 1) % r->g], j + 1, dst_op);
    return rc == ZS_ENOMEM ? oom(e) : rc ? order_err(r, "KV arrival", j, k, e) : ZS_OK;
}

/* The transfer of member k's step j: its bytes, its carry list, after dep. */
static int run_xfer(zs_ring_run *r, int j, int k, int tag, const char *label, int64_t dep,
                    int64_t *dst_op, zs_err *e)
{
    zs_xfer x = {r->rank[k],
                 r->rank[(k + 1) % r->g],
                 r->rs.comm_stream,
                 tag,
                 zs_ring_run_bytes(r, j, k),
                 &dep,
                 dep >= 0,
                 -1,
                 0,
                 0};
    zs_ring_run_carry(r, j, k, &x.carry0, &x.ncarry);
    void *arg = r->rs.xfer ? r->rs.xfer_arg : (void *)label;
    int64_t so;
    return r->xfer(arg, r->it, &x, &so, dst_op, e);
}

int zs_ring_run_kv(zs_ring_run *r, int j, int k, zs_err *e)
{
    int64_t sd = -1, dd = -1;
    int rc = zs_ring_run_kv_begin(r, j, k, &sd, e);
    if (!rc)
        rc = run_xfer(r, j, k, r->tag_kv, r->lab_kv, sd, &dd, e);
    return rc ? rc : zs_ring_run_kv_end(r, j, k, dd, e);
}

/* One attention op (or, when padding leaves no real block, a compute op that
 * carries the padded cost). */
static int64_t attn_op(zs_iter *it, int heads, int rank, const char *label, int backward,
                       ring_ws *w, int nreal, int ncost, double t, const int64_t *deps, int ndeps)
{
    zs_schedule *s = zs_iter_schedule(it);
    if (nreal > 0)
        return zs_sched_attn(s, rank, ZS_STREAM_COMPUTE, label, backward, w->blk, nreal, heads, t,
                             deps, ndeps);
    char l[80];
    snprintf(l, sizeof l, "%s-padding", label);
    return zs_sched_elementwise(s, rank, ZS_STREAM_COMPUTE, l, 0, t, deps, ndeps);
}

double zs_ring_run_attn_time(zs_ring_run *r, int j, int k)
{
    int nreal, ncost, src = (k - j % r->g + r->g) % r->g;
    if (step_blocks(r->s, &r->rs, k, src, &r->w, &nreal, &ncost))
        return 0;
    return ncost > 0 ? zs_cost_attn(zs_iter_cost(r->it), r->w.cblk, ncost, r->heads, r->backward)
                     : 0;
}

int zs_ring_run_attn(zs_ring_run *r, int j, int k, zs_err *e)
{
    if (j != r->next_attn[k])
        return order_err(r, "attention", j, k, e);
    int64_t kv = j > 0 ? arr_get(&r->kv_in[k], j) : -1;
    if (kv == -2)
        return order_err(r, "attention", j, k, e);
    int src = (k - j + r->g) % r->g, nreal, ncost;
    if (step_blocks(r->s, &r->rs, k, src, &r->w, &nreal, &ncost))
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    double t =
        ncost > 0 ? zs_cost_attn(zs_iter_cost(r->it), r->w.cblk, ncost, r->heads, r->backward) : 0;
    int64_t deps[2];
    int nd = 0;
    if (r->last[k] >= 0)
        deps[nd++] = r->last[k];
    if (kv >= 0)
        deps[nd++] = kv;
    r->last[k] = attn_op(r->it, r->heads, r->rank[k], r->lab_attn, r->backward, &r->w, nreal, ncost,
                         t, deps, nd);
    r->next_attn[k]++;
    kv_done(r, k);
    if (!r->backward || r->g == 1)
        r->exit[k] = r->last[k];
    return ZS_OK;
}

double zs_ring_run_acc_time(const zs_ring_run *r, int j, int k)
{
    if (j == 0 || !r->backward)
        return 0;
    /* Read both dK/dV buffers, write the sum. */
    return zs_cost_elementwise(zs_iter_cost(r->it), 3 * zs_ring_run_bytes(r, j, k));
}

int zs_ring_run_dkv_begin(zs_ring_run *r, int j, int k, int64_t *dep, zs_err *e)
{
    if (!r->backward || r->g == 1 || j != r->next_dkv[k] || j >= r->next_attn[k] ||
        r->dkv_open[k] >= 0)
        return order_err(r, "dK/dV send", j, k, e);
    int64_t sd = r->last[k];
    if (j > 0) {
        int64_t in = arr_get(&r->dkv_in[k], j);
        if (in == -2)
            return order_err(r, "dK/dV send", j, k, e);
        /* The accumulation waits for this step's compute and the dK/dV that
         * came in, whichever ends later; the send follows it. */
        int64_t deps[2] = {r->last[k], in};
        sd = zs_sched_elementwise(r->s, r->rank[k], ZS_STREAM_COMPUTE, r->lab_acc,
                                  3 * zs_ring_run_bytes(r, j, k), zs_ring_run_acc_time(r, j, k),
                                  deps, 2);
        arr_drop(&r->dkv_in[k], j + 1);
    }
    *dep = sd;
    r->dkv_open[k] = j;
    r->next_dkv[k]++;
    return ZS_OK;
}

int zs_ring_run_dkv_end(zs_ring_run *r, int j, int k, int64_t dst_op, zs_err *e)
{
    if (r->dkv_open[k] != j)
        return order_err(r, "dK/dV arrival", j, k, e);
    r->dkv_open[k] = -1;
    int to = (k + 1) % r->g;
    if (j == r->g - 1) {
        /* The last send returns the dK/dV of `to`'s own KV to it. */
        r->exit[to] = dst_op;
        return ZS_OK;
    }
    int rc = arr_push(&r->dkv_in[to], j + 1, dst_op);
    return rc == ZS_ENOMEM ? oom(e) : rc ? order_err(r, "dK/dV arrival", j, k, e) : ZS_OK;
}

int zs_ring_run_dkv(zs_ring_run *r, int j, int k, zs_err *e)
{
    int64_t sd = -1, dd = -1;
    int rc = zs_ring_run_dkv_begin(r, j, k, &sd, e);
    if (!rc)
        rc = run_xfer(r, j, k, r->tag_dkv, r->lab_dkv, sd, &dd, e);
    return rc ? rc : zs_ring_run_dkv_end(r, j, k, dd, e);
}

int zs_ring_emit(zs_iter *it, int stage, const zs_ring_spec *rs, int backward, int64_t *dep,
                 zs_err *e)
{
    return zs_ring_emit_heads(it, stage, rs, 0, 0, backward, dep, e);
}

int zs_ring_emit_heads(zs_iter *it, int stage, const zs_ring_spec *rs, int heads, int kv_heads,
                       int backward, int64_t *dep, zs_err *e)
{
    zs_ring_run *r = NULL;
    int rc = zs_ring_run_new(it, stage, rs, heads, kv_heads, backward, dep, &r, e);
    int g = rs->g;
    /* Step by step: the transfers of step j (the KV needed in step j+1,
     * overlapping step j's compute), the compute, then backward the dK/dV
     * of the KV just used, one step behind the KV. */
    for (int j = 0; j < g && !rc; j++) {
        for (int k = 0; k < g && !rc && j < g - 1; k++)
            rc = zs_ring_run_kv(r, j, k, e);
        for (int k = 0; k < g && !rc; k++)
            rc = zs_ring_run_attn(r, j, k, e);
        for (int k = 0; k < g && !rc && backward && g > 1; k++)
            rc = zs_ring_run_dkv(r, j, k, e);
    }
    for (int k = 0; k < g && !rc; k++)
        dep[k] = zs_ring_run_exit(r, k);
    zs_ring_run_free(r);
    return rc ? rc : zs_schedule_check(zs_iter_schedule(it), e);
}
