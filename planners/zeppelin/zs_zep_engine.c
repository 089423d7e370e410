/* Zeppelin's attention engine: see zs_zep_engine_internal.h.
 *
 * One pass is a discrete-event simulation on predicted times whose events
 * write the ops:
 *   entry     a slot reaches its attention entry: its rings' first KV sends;
 *   moved     a linear holder's moved tokens are ready: their remap sends;
 *   flow-in   a remap transfer arrived at its attention holder (the last
 *             one: a join, then the work on imported tokens may start);
 *   kv / dkv  a ring transfer arrived: the KV goes on at once, a step or an
 *             accumulation may become ready;
 *   free      a GPU finished its compute op: it picks the next one;
 *   flow-out  a remapped output arrived at its linear holder (the last one:
 *             a join, which the moved tokens' part of the linear ops waits for).
 * A GPU picks, among work that is ready now: a dK/dV accumulation, a ring
 * step (inter-node rings before intra-node ones, then ring order), work on
 * imported tokens, then local documents that fit before its next ring step
 * is predicted ready (all of them when no ring work is left). */
#include "zs_zep_engine_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int nomem(zs_err *e)
{
    return zs_err_set(e, ZS_ENOMEM, "zeppelin engine", NULL, "out of memory");
}

/* ---- init ------------------------------------------------------------------- */

typedef struct lord {
    int32_t len, id;
} lord;

static int cmp_lord(const void *a, const void *b)
{
    const lord *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

typedef struct rshape {
    const zs_zep_ring *r;
    int32_t id;
} rshape;

static int cmp_rshape(const void *a, const void *b)
{
    const rshape *x = a, *y = b;
    if (x->r->cls != y->r->cls)
        return x->r->cls < y->r->cls ? -1 : 1;
    if (x->r->g != y->r->g)
        return x->r->g < y->r->g ? -1 : 1;
    int c = memcmp(x->r->slots, y->r->slots, sizeof(int) * (size_t)x->r->g);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* en->shape: per ring, the first ring of the same class over the same slots
 * in the same order. */
static int ring_shapes(zs_zep_engine *en)
{
    const zs_zep_part *p = en->part;
    int n = p->nrings;
    rshape *v = malloc(sizeof(rshape) * (size_t)(n > 0 ? n : 1));
    en->shape = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (!v || !en->shape) {
        free(v);
        return ZS_ENOMEM;
    }
    for (int r = 0; r < n; r++)
        v[r] = (rshape){&p->rings[r], r};
    qsort(v, (size_t)n, sizeof *v, cmp_rshape);
    for (int i = 0; i < n; i++) {
        int same = i > 0 && v[i].r->cls == v[i - 1].r->cls && v[i].r->g == v[i - 1].r->g &&
                   !memcmp(v[i].r->slots, v[i - 1].r->slots, sizeof(int) * (size_t)v[i].r->g);
        en->shape[v[i].id] = same ? en->shape[v[i - 1].id] : v[i].id;
    }
    free(v);
    return ZS_OK;
}

int zs_zep_engine_init(zs_zep_engine *en, zs_err *e)
{
    const zs_zep_part *p = en->part;
    int S = p->nslots;
    size_t nd = (size_t)(p->ndocs > 0 ? p->ndocs : 1);
    int nm = 0;
    for (int r = 0; r < p->nrings; r++)
        nm += p->rings[r].g;
    en->local_off = calloc((size_t)S + 1, sizeof(int32_t));
    en->local_docs = malloc(sizeof(int32_t) * nd);
    en->local_imp = calloc(nd, 1);
    en->mem_off = calloc((size_t)p->nrings + 1, sizeof(int32_t));
    en->mem_imp = calloc((size_t)(nm > 0 ? nm : 1), 1);
    en->moved = calloc((size_t)S, sizeof(int64_t));
    en->lin = calloc((size_t)S, sizeof(zs_iter_lin));
    en->clock = zs_zep_clock_new(en->cost);
    lord *o = malloc(sizeof(lord) * nd);
    int32_t *fill = calloc((size_t)S, sizeof(int32_t));
    int rc = ZS_OK;
    if (ring_shapes(en) || !en->local_off || !en->local_docs || !en->local_imp || !en->mem_off ||
        !en->mem_imp || !en->moved || !en->lin || !en->clock || !o || !fill) {
        rc = nomem(e);
        goto out;
    }
    for (int32_t d = 0; d < p->ndocs; d++)
        if (p->cls[d] == ZS_ZEP_LOCAL)
            en->local_off[p->slot_of[d] + 1]++;
    for (int sl = 0; sl < S; sl++)
        en->local_off[sl + 1] += en->local_off[sl];
    int32_t n = 0;
    for (int32_t d = 0; d < p->ndocs; d++)
        if (p->cls[d] == ZS_ZEP_LOCAL)
            o[n++] = (lord){en->len[d], d};
    qsort(o, (size_t)n, sizeof *o, cmp_lord);
    for (int32_t i = 0; i < n; i++) {
        int sl = p->slot_of[o[i].id];
        en->local_docs[en->local_off[sl] + fill[sl]++] = o[i].id;
    }
    for (int r = 0; r < p->nrings; r++)
        en->mem_off[r + 1] = en->mem_off[r] + p->rings[r].g;
    /* Exported tokens: beyond a slot's linear share, in piece order (rings,
     * then local documents longest first). */
    if (en->remap) {
        int64_t *seen = calloc((size_t)S, sizeof(int64_t));
        if (!seen) {
            rc = nomem(e);
            goto out;
        }
        for (int r = 0; r < p->nrings; r++) {
            const zs_zep_ring *R = &p->rings[r];
            for (int k = 0; k < R->g; k++) {
                int sl = R->slots[k];
                int64_t t = 0;
                for (int i = 0; i < R->ndocs; i++)
                    t += zs_zep_ring_share(en->len[R->docs[i]], R->g, k);
                if (seen[sl] + t > en->remap->target[sl])
                    en->mem_imp[en->mem_off[r] + k] = 1;
                seen[sl] += t;
            }
        }
        for (int sl = 0; sl < S; sl++)
            for (int32_t i = en->local_off[sl]; i < en->local_off[sl + 1]; i++) {
                int32_t d = en->local_docs[i];
                if (seen[sl] + en->len[d] > en->remap->target[sl])
                    en->local_imp[i] = 1;
                seen[sl] += en->len[d];
            }
        free(seen);
        for (int i = 0; i < en->remap->nflows; i++)
            en->moved[en->remap->flows[i].to] += en->remap->flows[i].tokens;
    }
    for (int sl = 0; sl < S && !rc; sl++) {
        double lt = en->remap ? (double)en->remap->target[sl] : (double)p->tokens[sl];
        rc = zs_iter_linear_time(en->cost, en->tp, p->slots_per_node, lt, (double)en->moved[sl],
                                 &en->lin[sl], e);
    }
out:
    free(o);
    free(fill);
    return rc;
}

void zs_zep_engine_fini(zs_zep_engine *en)
{
    free(en->local_off);
    free(en->local_docs);
    free(en->local_imp);
    free(en->mem_off);
    free(en->mem_imp);
    free(en->moved);
    free(en->lin);
    zs_zep_clock_free(en->clock);
    free(en->shape);
    en->shape = NULL;
    en->local_off = en->local_docs = en->mem_off = NULL;
    en->local_imp = en->mem_imp = NULL;
    en->moved = NULL;
    en->lin = NULL;
    en->clock = NULL;
}

/* ---- pass state ----------------------------------------------------------------- */

enum { EV_ENTRY, EV_MOVED, EV_FLOW_IN, EV_FLOW_OUT, EV_KV, EV_DKV, EV_FREE, EV_WAKE };
enum { RUN_NONE, RUN_ATTN, RUN_ACC, RUN_LOCAL };

/* Arrival times of a member's transfers by step (-1: not issued yet). */
typedef struct tq {
    double *t;
    int first, n, cap;
} tq;

static int tq_push(tq *q, int step, double t)
{
    if (q->n == 0)
        q->first = step;
    if (q->n == q->cap) {
        int nc = q->cap ? 2 * q->cap : 4;
        double *v = realloc(q->t, sizeof(double) * (size_t)nc);
        if (!v)
            return ZS_ENOMEM;
        q->t = v;
        q->cap = nc;
    }
    q->t[q->n++] = t;
    return ZS_OK;
}

static double tq_get(const tq *q, int step)
{
    int i = step - q->first;
    return q->n > 0 && i >= 0 && i < q->n ? q->t[i] : -1;
}

static void tq_drop(tq *q, int step)
{
    int i = step - q->first;
    if (q->n == 0 || i <= 0)
        return;
    if (i > q->n)
        i = q->n;
    memmove(q->t, q->t + i, sizeof(double) * (size_t)(q->n - i));
    q->n -= i;
    q->first += i;
}

typedef struct member {
    int ring, k, slot;
    int na, nk, nd;              /* next attention, KV send, dK/dV step */
    int started, imp, done, ret; /* ret: its own dK/dV came back (backward) */
    double t_start;              /* when it started */
    tq kv, dkv;                  /* arrivals: KV for step j, dK/dV for step j (g: the return) */
    int kv_open, dkv_open;       /* its send of step nk (nd - 1) waits in its link */
    int64_t kv_dep, dkv_dep;     /* what that send waits for */
} member;

/* One transfer of a pass: the sends of step j of one kind (KV or dK/dV) of
 * the members on one edge, appended once every one of them is ready. */
typedef struct xlink {
    int pending; /* members whose part is not ready yet */
    double t;    /* when it may start: the latest part's ready time */
} xlink;

typedef struct deps {
    int64_t *v;
    int n, cap;
} deps;

static int deps_add(deps *d, int64_t op)
{
    if (op < 0)
        return ZS_OK;
    if (d->n == d->cap) {
        int nc = d->cap ? 2 * d->cap : 4;
        int64_t *v = realloc(d->v, sizeof(int64_t) * (size_t)nc);
        if (!v)
            return ZS_ENOMEM;
        d->v = v;
        d->cap = nc;
    }
    d->v[d->n++] = op;
    return ZS_OK;
}

typedef struct slot {
    double free_t;
    int busy, entered, imported;
    int run, run_a, run_b; /* what is running: kind, member or first local index, step */
    int64_t entry, imp_join, last_c, last_imp_c;
    int imp_need, out_need, exp_left, local_left;
    deps imp_deps, out_deps, exp_deps;
    int32_t *mem; /* its memberships (indices into the member array) */
    int nmem;
} slot;

typedef struct pass {
    zs_zep_engine *en;
    zs_iter *it;
    zs_schedule *s;
    int stage, backward, S, tag_in, tag_out;
    double per_in, per_out; /* remap bytes per token, into and out of attention */
    zs_zep_events q;
    slot *sl;
    member *m;
    int nm;
    zs_ring_run **run;
    double *step_est; /* per ring: predicted seconds per step (compute or transfer) */
    uint8_t *ldone;   /* per local_docs entry */
    zs_attn_block *blk;
    int nblk;
    int32_t *mem_all;
    /* Edges: members whose sends share a stream, a source slot and a
     * destination slot (merged transfers; per document, one member each). */
    int32_t *edge_of;     /* per member */
    int32_t *eoff, *emem; /* CSR: an edge's members, most steps first */
    int32_t *loff;        /* per edge + 1: its links' first index */
    xlink *lk[2];         /* per kind (KV, dK/dV): [loff[edge] + step] */
    int tag[2][2];    /* merged transfers' tags per kind and stream (intra, inter; -1: none yet):
                       * a channel's messages on one stream keep their order */
    int64_t *xdeps;   /* scratch: a transfer's dependencies */
    zs_carry *xcarry; /* scratch: a merged transfer's carry list */
    int nxdeps, nxcarry;
    int32_t *wl; /* members whose KV may go on (kv_try's work list) */
    int nwl, capwl, draining;
    zs_err *e;
} pass;

static int slot_rank(const pass *P, int sl)
{
    return zs_iter_rank(P->it, P->stage, sl);
}

static void pass_free(pass *P)
{
    for (int i = 0; P->m && i < P->nm; i++) {
        free(P->m[i].kv.t);
        free(P->m[i].dkv.t);
    }
    for (int r = 0; P->run && r < P->en->part->nrings; r++)
        zs_ring_run_free(P->run[r]);
    for (int s = 0; P->sl && s < P->S; s++) {
        free(P->sl[s].imp_deps.v);
        free(P->sl[s].out_deps.v);
        free(P->sl[s].exp_deps.v);
    }
    free(P->sl);
    free(P->m);
    free(P->run);
    free(P->step_est);
    free(P->ldone);
    free(P->blk);
    free(P->mem_all);
    free(P->edge_of);
    free(P->eoff);
    free(P->emem);
    free(P->loff);
    free(P->lk[0]);
    free(P->lk[1]);
    free(P->xdeps);
    free(P->xcarry);
    free(P->wl);
    zs_zep_events_free(&P->q);
}

static int push(pass *P, double t, int kind, int a, int b)
{
    if (zs_zep_events_push(&P->q, t, kind, a, b, 0))
        return nomem(P->e);
    return ZS_OK;
}

/* Sends `bytes` from slot a to slot b through the routing hook (or a
 * direct pair on `stream` inside a node when `label` is given), issued at
 * time t; returns the receiver's completing op and the arrival time. */
static int xfer(pass *P, int a, int b, int stream, int tag, const char *label, double bytes,
                int64_t dep, double t, int64_t *dst_op, double *arrive)
{
    zs_zep_engine *en = P->en;
    int ra = slot_rank(P, a), rb = slot_rank(P, b);
    const zs_cluster *cl = &en->cost->cluster;
    zs_xfer x = {ra, rb, stream, tag, bytes, &dep, dep >= 0, -1, 0, 0};
    int64_t so;
    if (label && zs_cluster_node_of(cl, ra) == zs_cluster_node_of(cl, rb)) {
        zs_sched_xfer(P->s, &x, label, &so, dst_op);
        zs_route_path path;
        memset(&path, 0, sizeof path);
        path.k = 1;
        path.direct = 1;
        *arrive = zs_zep_clock_xfer(en->clock, &path, ra, rb, bytes, t);
        return zs_schedule_check(P->s, P->e);
    }
    int rc = zs_route_xfer(en->route, P->it, &x, &so, dst_op, P->e);
    if (rc)
        return rc;
    *arrive = zs_zep_clock_xfer(en->clock, zs_route_last(en->route), ra, rb, bytes, t);
    return ZS_OK;
}

/* ---- rings ------------------------------------------------------------------------ */

static int member_done(pass *P, int mi, double t);

static const zs_zep_ring *ring_of(const pass *P, const member *m)
{
    return &P->en->part->rings[m->ring];
}

/* ---- ring transfers: one per peer per step ---------------------------------------- *
 *
 * A member's KV send of step j (and, backward, its dK/dV send) is a part of
 * the transfer of its edge and step (xlink): once the last member of the
 * edge that has a step j is ready, one transfer of their summed bytes goes
 * (after all their dependencies; its carry list names their documents) and
 * each member's next step waits for its arrival. Per document, every member
 * is its own edge: one transfer per part, as each part is ready. A member's
 * sends of one kind go in step order, so a part waits for its previous one. */

/* Steps of kind (0: KV, 1: dK/dV) a member of a ring of g sends. */
static int kind_steps(int kind, int g)
{
    return kind == 0 ? g - 1 : g;
}

static int wl_push(pass *P, int mi)
{
    if (P->nwl == P->capwl) {
        int nc = P->capwl ? 2 * P->capwl : 64;
        int32_t *v = realloc(P->wl, sizeof(int32_t) * (size_t)nc);
        if (!v)
            return nomem(P->e);
        P->wl = v;
        P->capwl = nc;
    }
    P->wl[P->nwl++] = mi;
    return ZS_OK;
}

/* The dependencies (distinct, >= 0) and carry list of the transfer of edge
 * e's first n members in step j; *c0 / *nc its carry list (nc 0: none). */
static int link_gather(pass *P, int kind, int e, int n, int j, int *nd, int64_t *c0, int *nc)
{
    const zs_schedule *s = P->s;
    int need = 0, ok = 1;
    *nd = 0;
    if (n > P->nxdeps) {
        int64_t *v = realloc(P->xdeps, sizeof(int64_t) * (size_t)n);
        if (!v)
            return nomem(P->e);
        P->xdeps = v;
        P->nxdeps = n;
    }
    for (int i = 0; i < n; i++) {
        const member *m = &P->m[P->emem[P->eoff[e] + i]];
        int64_t d = kind ? m->dkv_dep : m->kv_dep, cc;
        int x = 0, cn;
        while (x < *nd && P->xdeps[x] != d)
            x++;
        if (d >= 0 && x == *nd)
            P->xdeps[(*nd)++] = d;
        zs_ring_run_carry(P->run[m->ring], j, m->k, &cc, &cn);
        ok &= cn > 0;
        need += cn;
    }
    *nc = 0;
    if (!ok || n == 1) {
        if (ok)
            zs_ring_run_carry(P->run[P->m[P->emem[P->eoff[e]]].ring], j,
                              P->m[P->emem[P->eoff[e]]].k, c0, nc);
        return ZS_OK;
    }
    if (need > P->nxcarry) {
        zs_carry *v = realloc(P->xcarry, sizeof(zs_carry) * (size_t)need);
        if (!v)
            return nomem(P->e);
        P->xcarry = v;
        P->nxcarry = need;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        const member *m = &P->m[P->emem[P->eoff[e] + i]];
        int64_t cc;
        int cn;
        zs_ring_run_carry(P->run[m->ring], j, m->k, &cc, &cn);
        memcpy(P->xcarry + k, s->carry + cc, sizeof(zs_carry) * (size_t)cn);
        k += cn;
    }
    *c0 = zs_schedule_carry(P->s, P->xcarry, k);
    *nc = *c0 >= 0 ? k : 0;
    return ZS_OK;
}

/* What a member does once its part of a transfer has gone: its ring learns
 * the arrival op, its successor the arrival (time and event). */
static int part_sent(pass *P, int kind, int mi, int j, int64_t dd, double arr, double t)
{
    member *m = &P->m[mi];
    const zs_zep_ring *R = ring_of(P, m);
    zs_ring_run *run = P->run[m->ring];
    int to = mi - m->k + (m->k + 1) % R->g, rc;
    if (kind == 0) {
        if ((rc = zs_ring_run_kv_end(run, j, m->k, dd, P->e)))
            return rc;
        m->kv_open = 0;
        m->nk++;
        if (tq_push(&P->m[to].kv, j + 1, arr) || wl_push(P, mi))
            return nomem(P->e);
        return push(P, arr, EV_KV, to, j + 1);
    }
    if ((rc = zs_ring_run_dkv_end(run, j, m->k, dd, P->e)))
        return rc;
    m->dkv_open = 0;
    if (tq_push(&P->m[to].dkv, j + 1, arr))
        return nomem(P->e);
    rc = push(P, arr, EV_DKV, to, j + 1);
    if (!rc && m->nd == R->g && m->ret)
        rc = member_done(P, mi, t);
    return rc;
}

/* Appends the transfer of edge e's step j of `kind` (every part is ready). */
static int link_emit(pass *P, int kind, int e, int j)
{
    zs_zep_engine *en = P->en;
    const xlink *L = &P->lk[kind][P->loff[e] + j];
    int n = 0;
    while (P->eoff[e] + n < P->eoff[e + 1] &&
           kind_steps(kind, ring_of(P, &P->m[P->emem[P->eoff[e] + n]])->g) > j)
        n++;
    const member *m0 = &P->m[P->emem[P->eoff[e]]];
    zs_ring_run *run0 = P->run[m0->ring];
    int nd, nc, rc;
    int64_t c0 = 0, so, dd;
    if ((rc = link_gather(P, kind, e, n, j, &nd, &c0, &nc)))
        return rc;
    double bytes = 0;
    for (int i = 0; i < n; i++) {
        const member *m = &P->m[P->emem[P->eoff[e] + i]];
        bytes += zs_ring_run_bytes(P->run[m->ring], j, m->k);
    }
    int intra = ring_of(P, m0)->cls == ZS_ZEP_INTRA;
    if (n > 1 && P->tag[kind][intra] < 0)
        P->tag[kind][intra] = zs_iter_tag(P->it);
    const zs_zep_ring *R0 = ring_of(P, m0);
    int ra = zs_ring_run_rank(run0, m0->k), rb = zs_ring_run_rank(run0, (m0->k + 1) % R0->g);
    int stream = R0->cls == ZS_ZEP_INTRA ? en->intra_stream : en->inter_stream;
    int tag = n > 1 ? P->tag[kind][intra] : zs_ring_run_tag(run0, kind);
    zs_xfer x = {ra, rb, stream, tag, bytes, P->xdeps, nd, -1, c0, nc};
    if ((rc = zs_route_xfer(en->route, P->it, &x, &so, &dd, P->e)))
        return rc;
    double arr = zs_zep_clock_xfer(en->clock, zs_route_last(en->route), ra, rb, bytes, L->t);
    for (int i = 0; i < n && !rc; i++) {
        int mi = P->emem[P->eoff[e] + i];
        rc = part_sent(P, kind, mi, j, dd, arr, L->t);
        /* A member waiting for this transfer may accumulate its next dK/dV. */
        if (!rc && kind == 1 && n > 1)
            rc = push(P, L->t, EV_WAKE, P->m[mi].slot, 0);
    }
    return rc;
}

/* Member mi's part of its step-j transfer of `kind` is ready at time t. */
static int part_ready(pass *P, int kind, int mi, int j, double t)
{
    int e = P->edge_of[mi];
    xlink *L = &P->lk[kind][P->loff[e] + j];
    L->t = L->t > t ? L->t : t;
    return --L->pending == 0 ? link_emit(P, kind, e, j) : ZS_OK;
}

/* Member mi's KV sends that are ready at time t (its KV arrived, or it
 * started), in step order; then those of the members its transfers freed. */
static int kv_try(pass *P, int mi, double t)
{
    int rc = wl_push(P, mi);
    if (rc || P->draining)
        return rc;
    P->draining = 1;
    while (!rc && P->nwl > 0) {
        member *m = &P->m[P->wl[--P->nwl]];
        int g = ring_of(P, m)->g;
        if (!m->started || m->kv_open || m->nk >= g - 1)
            continue;
        double a = m->nk > 0 ? tq_get(&m->kv, m->nk) : t;
        if (a < 0 || a > t)
            continue;
        if ((rc = zs_ring_run_kv_begin(P->run[m->ring], m->nk, m->k, &m->kv_dep, P->e)))
            break;
        m->kv_open = 1;
        if ((rc = wl_push(P, (int)(m - P->m)))) /* its next step, once this one went */
            break;
        rc = part_ready(P, 0, (int)(m - P->m), m->nk, t);
    }
    P->draining = 0;
    return rc;
}

/* dK/dV send of member mi's step nd (the accumulation, when nd > 0, is a
 * compute op written now and running from t for acc seconds). */
static int dkv_ready(pass *P, int mi, double t, double acc)
{
    member *m = &P->m[mi];
    int j = m->nd;
    int rc = zs_ring_run_dkv_begin(P->run[m->ring], j, m->k, &m->dkv_dep, P->e);
    if (rc)
        return rc;
    m->dkv_open = 1;
    m->nd++;
    tq_drop(&m->dkv, j + 1);
    return part_ready(P, 1, mi, j, t + acc);
}

/* A member may begin: its slot entered and, when it holds exported tokens,
 * its imported inputs arrived. */
static int member_start(pass *P, int mi, double t)
{
    member *m = &P->m[mi];
    slot *S = &P->sl[m->slot];
    if (m->started || !S->entered || (m->imp && !S->imported))
        return ZS_OK;
    m->started = 1;
    m->t_start = t;
    int rc = ZS_OK;
    if (m->imp)
        rc = zs_ring_run_set_dep(P->run[m->ring], m->k, S->imp_join, P->e);
    /* Its first KV send, and KV that arrived while it waited. */
    return rc ? rc : kv_try(P, mi, t);
}

/* Predicted seconds of one of ring r's steps: the slower of a step's
 * compute and its slowest hop's transfer (routed hops over k NICs). */
static double ring_step_est(pass *P, int r)
{
    const zs_zep_ring *R = &P->en->part->rings[r];
    zs_ring_run *run = P->run[r];
    if (R->g < 2)
        return 0;
    double c = zs_ring_run_attn_time(run, 1, 0), x = 0, b = zs_ring_run_bytes(run, 0, 0);
    for (int k = 0; k < R->g; k++) {
        int a = zs_ring_run_rank(run, k), d = zs_ring_run_rank(run, (k + 1) % R->g);
        int routed = zs_route_routed(P->en->route, a, d);
        double t = zs_cost_p2p(P->en->cost, a, d, routed ? b / 4 : b);
        x = t > x ? t : x;
    }
    return c > x ? c : x;
}

/* ---- remapping -------------------------------------------------------------------- */

/* The remap sends of linear holder l (its moved tokens' inputs) at time t. */
static int remap_in(pass *P, int l, double t)
{
    const zs_remap *rm = P->en->remap;
    int64_t dep = zs_iter_entry_moved(P->it, l);
    for (int i = 0; i < rm->nflows; i++) {
        const zs_remap_flow *f = &rm->flows[i];
        if (f->to != l)
            continue;
        int64_t dd;
        double arr;
        int rc = xfer(P, l, f->from, P->en->remap_stream, P->tag_in, "remap-in",
                      (double)f->tokens * P->per_in, dep, t, &dd, &arr);
        if (rc)
            return rc;
        if (deps_add(&P->sl[f->from].imp_deps, dd))
            return nomem(P->e);
        if ((rc = push(P, arr, EV_FLOW_IN, i, 0)))
            return rc;
    }
    return ZS_OK;
}

/* Attention holder a finished the work on its exported tokens at time t:
 * their outputs go back. */
static int remap_out(pass *P, int a, double t)
{
    const zs_remap *rm = P->en->remap;
    slot *S = &P->sl[a];
    if (deps_add(&S->exp_deps, S->last_imp_c))
        return nomem(P->e);
    int64_t sync =
        zs_route_sync(P->s, slot_rank(P, a), P->en->remap_stream, S->exp_deps.v, S->exp_deps.n);
    for (int i = 0; i < rm->nflows; i++) {
        const zs_remap_flow *f = &rm->flows[i];
        if (f->from != a)
            continue;
        int64_t dd;
        double arr;
        int rc = xfer(P, a, f->to, P->en->remap_stream, P->tag_out, "remap-out",
                      (double)f->tokens * P->per_out, sync, t, &dd, &arr);
        if (rc)
            return rc;
        if (deps_add(&P->sl[f->to].out_deps, dd))
            return nomem(P->e);
        if ((rc = push(P, arr, EV_FLOW_OUT, i, 0)))
            return rc;
    }
    return zs_schedule_check(P->s, P->e);
}

/* One exported item of slot a is done at time t. */
static int export_done(pass *P, int a, double t)
{
    slot *S = &P->sl[a];
    if (--S->exp_left == 0)
        return remap_out(P, a, t);
    return ZS_OK;
}

/* Member mi's part of its ring ended at time t. */
static int member_done(pass *P, int mi, double t)
{
    member *m = &P->m[mi];
    m->done = 1;
    return m->imp ? export_done(P, m->slot, t) : ZS_OK;
}

/* ---- picking work ------------------------------------------------------------------- */

static double local_time(pass *P, int32_t d, int backward)
{
    zs_attn_block b = {d, 0, P->en->len[d], 0, P->en->len[d]};
    return zs_cost_attn(P->en->cost, &b, 1, zs_iter_heads(P->it), backward);
}

/* When the slot's next ring work is predicted ready (HUGE_VAL: none left);
 * an arrival not issued yet counts as one uncontended transfer from now. */
static double next_ring_ready(pass *P, int s, double now)
{
    slot *S = &P->sl[s];
    double best = HUGE_VAL;
    for (int i = 0; i < S->nmem; i++) {
        member *m = &P->m[S->mem[i]];
        const zs_zep_ring *R = ring_of(P, m);
        if (m->done)
            continue;
        zs_ring_run *run = P->run[m->ring];
        int prev = (m->k + R->g - 1) % R->g;
        double est =
            now + zs_cost_p2p(P->en->cost, zs_ring_run_rank(run, prev), zs_ring_run_rank(run, m->k),
                              zs_ring_run_bytes(run, m->na, m->k));
        if (!m->started) {
            best = fmin(best, est);
            continue;
        }
        if (m->na < R->g) {
            double a = m->na == 0 ? now : tq_get(&m->kv, m->na);
            best = fmin(best, a >= 0 ? a : est);
        }
        if (P->backward && m->nd > 0 && m->nd < m->na) {
            double a = tq_get(&m->dkv, m->nd);
            best = fmin(best, a >= 0 ? a : est);
        }
    }
    return best;
}

static int start_compute(pass *P, int s, double now, double dur, int kind, int a, int b)
{
    slot *S = &P->sl[s];
    S->busy = 1;
    S->run = kind;
    S->run_a = a;
    S->run_b = b;
    S->free_t = now + dur;
    return push(P, now + dur, EV_FREE, s, 0);
}

/* A batch of ready local documents, longest first, that fits in `gap`
 * (all of them when gap is infinite), as one kernel; imported-token work
 * (imp = 1) is not held back by the gap. Returns ZS_OK with *started 0
 * when nothing fits. */
static int start_local(pass *P, int s, double now, double gap, int imp, int *started)
{
    zs_zep_engine *en = P->en;
    slot *S = &P->sl[s];
    int n = 0, first = -1;
    double total = 0;
    *started = 0;
    for (int32_t i = en->local_off[s]; i < en->local_off[s + 1]; i++) {
        if (P->ldone[i] || en->local_imp[i] != imp)
            continue;
        double t = local_time(P, en->local_docs[i], P->backward);
        if (!imp && total + t > gap)
            continue;
        if (n == P->nblk) {
            int nc = P->nblk ? 2 * P->nblk : 16;
            zs_attn_block *b = realloc(P->blk, sizeof *b * (size_t)nc);
            if (!b)
                return nomem(P->e);
            P->blk = b;
            P->nblk = nc;
        }
        int32_t d = en->local_docs[i];
        P->blk[n++] = (zs_attn_block){d, 0, en->len[d], 0, en->len[d]};
        total += t;
        P->ldone[i] = 2; /* in this batch */
        if (first < 0)
            first = i;
    }
    if (n == 0)
        return ZS_OK;
    int heads = zs_iter_heads(P->it);
    double dur = zs_cost_attn(en->cost, P->blk, n, heads, P->backward);
    int64_t d[2];
    int nd = 0;
    if (S->entry >= 0)
        d[nd++] = S->entry;
    if (imp && S->imp_join >= 0)
        d[nd++] = S->imp_join;
    int64_t op = zs_sched_attn(P->s, slot_rank(P, s), ZS_STREAM_COMPUTE,
                               P->backward ? "local-attn-bwd" : "local-attn-fwd", P->backward,
                               P->blk, n, heads, dur, d, nd);
    S->last_c = op;
    if (imp)
        S->last_imp_c = op;
    *started = 1;
    return start_compute(P, s, now, dur, RUN_LOCAL, first, imp);
}

/* The slot is free at `now`: start the most urgent ready work, if any. */
static int pick(pass *P, int s, double now)
{
    slot *S = &P->sl[s];
    if (S->busy || !S->entered)
        return ZS_OK;
    /* 1. a dK/dV accumulation whose input arrived */
    for (int i = 0; P->backward && i < S->nmem; i++) {
        member *m = &P->m[S->mem[i]];
        if (m->nd == 0 || m->nd >= m->na || m->done || m->dkv_open)
            continue;
        double a = tq_get(&m->dkv, m->nd);
        if (a < 0 || a > now)
            continue;
        double acc = zs_ring_run_acc_time(P->run[m->ring], m->nd, m->k);
        int rc = dkv_ready(P, S->mem[i], now, acc);
        if (rc)
            return rc;
        return start_compute(P, s, now, acc, RUN_ACC, S->mem[i], 0);
    }
    /* 2. a ring step whose KV arrived: the ring with the longest predicted
     * remaining span first (its steps are the critical path: the slowest
     * communication goes on first), then the one ready first (so the GPU's
     * rings advance together and none holds its partners behind another
     * ring's steps) */
    int best = -1;
    double bt = 0, brem = 0;
    for (int i = 0; i < S->nmem; i++) {
        member *m = &P->m[S->mem[i]];
        const zs_zep_ring *R = ring_of(P, m);
        if (!m->started || m->na >= R->g)
            continue;
        double a = m->na > 0 ? tq_get(&m->kv, m->na) : m->t_start;
        if (a < 0 || a > now)
            continue;
        double rem = (R->g - m->na) * P->step_est[m->ring];
        if (best < 0 || rem > brem ||
            (rem == brem && (a < bt || (a == bt && m->ring < P->m[best].ring)))) {
            best = S->mem[i];
            brem = rem;
            bt = a;
        }
    }
    if (best >= 0) {
        member *m = &P->m[best];
        zs_ring_run *run = P->run[m->ring];
        double dur = zs_ring_run_attn_time(run, m->na, m->k);
        int rc = zs_ring_run_attn(run, m->na, m->k, P->e);
        if (rc)
            return rc;
        S->last_c = zs_ring_run_last_attn(run, m->k);
        if (m->imp)
            S->last_imp_c = S->last_c;
        m->na++;
        tq_drop(&m->kv, m->na < m->nk ? m->na : m->nk); /* kept until sent on too */
        return start_compute(P, s, now, dur, RUN_ATTN, best, m->na - 1);
    }
    /* 3. work on imported tokens, 4. local documents in the gap */
    int started = 0, rc = ZS_OK;
    if (S->imported && (rc = start_local(P, s, now, HUGE_VAL, 1, &started)))
        return rc;
    if (started || S->local_left == 0)
        return ZS_OK;
    double gap = next_ring_ready(P, s, now) - now;
    return start_local(P, s, now, gap, 0, &started);
}

/* ---- events ------------------------------------------------------------------------- */

static int on_free(pass *P, int s, double now)
{
    slot *S = &P->sl[s];
    zs_zep_engine *en = P->en;
    int rc = ZS_OK, kind = S->run;
    S->busy = 0;
    S->run = RUN_NONE;
    if (kind == RUN_ATTN) {
        member *m = &P->m[S->run_a];
        const zs_zep_ring *R = ring_of(P, m);
        if (P->backward && R->g > 1 && S->run_b == 0)
            rc = dkv_ready(P, S->run_a, now, 0); /* step 0: no accumulation */
        if (!rc && !P->backward && m->na == R->g)
            rc = member_done(P, S->run_a, now);
    } else if (kind == RUN_LOCAL) {
        for (int32_t i = en->local_off[s]; i < en->local_off[s + 1]; i++)
            if (P->ldone[i] == 2) {
                P->ldone[i] = 1;
                S->local_left--;
                if (en->local_imp[i] && !rc)
                    rc = export_done(P, s, now);
            }
    }
    return rc ? rc : pick(P, s, now);
}

static int on_event(pass *P, const zs_zep_event *ev)
{
    int rc = ZS_OK;
    double now = ev->t;
    switch (ev->kind) {
    case EV_ENTRY: {
        slot *S = &P->sl[ev->a];
        S->entered = 1;
        for (int i = 0; i < S->nmem && !rc; i++)
            rc = member_start(P, S->mem[i], now);
        return rc ? rc : pick(P, ev->a, now);
    }
    case EV_MOVED:
        return remap_in(P, ev->a, now);
    case EV_FLOW_IN: {
        int a = P->en->remap->flows[ev->a].from;
        slot *S = &P->sl[a];
        if (--S->imp_need > 0)
            return ZS_OK;
        if (deps_add(&S->imp_deps, S->entry))
            return nomem(P->e);
        S->imp_join =
            zs_route_sync(P->s, slot_rank(P, a), P->en->remap_stream, S->imp_deps.v, S->imp_deps.n);
        S->imported = 1;
        if (!S->entered) /* the join waits for the entry too; start then */
            return zs_schedule_check(P->s, P->e);
        for (int i = 0; i < S->nmem && !rc; i++)
            rc = member_start(P, S->mem[i], now);
        return rc ? rc : pick(P, a, now);
    }
    case EV_FLOW_OUT: {
        int l = P->en->remap->flows[ev->a].to;
        slot *S = &P->sl[l];
        if (--S->out_need > 0)
            return ZS_OK;
        int64_t op =
            zs_route_sync(P->s, slot_rank(P, l), P->en->remap_stream, S->out_deps.v, S->out_deps.n);
        zs_iter_set_exit_moved(P->it, l, op);
        return zs_schedule_check(P->s, P->e);
    }
    case EV_KV: {
        member *m = &P->m[ev->a];
        /* The KV goes on at once (forwarding does not wait for compute),
         * merged: once every part of its transfer is ready. */
        rc = kv_try(P, ev->a, now);
        return rc ? rc : pick(P, m->slot, now);
    }
    case EV_DKV: {
        member *m = &P->m[ev->a];
        const zs_zep_ring *R = ring_of(P, m);
        if (ev->b == R->g) {
            /* Its own dK/dV are back; its part ends once its sends are out. */
            m->ret = 1;
            if (m->nd == R->g && !m->dkv_open)
                rc = member_done(P, ev->a, now);
            return rc;
        }
        return pick(P, m->slot, now);
    }
    case EV_FREE:
        return on_free(P, ev->a, now);
    case EV_WAKE:
        return pick(P, ev->a, now);
    }
    return ZS_OK;
}

/* ---- the pass ----------------------------------------------------------------------- */

typedef struct ekey {
    int stream, src, dst, g;
    int32_t mi;
} ekey;

static int cmp_ekey(const void *a, const void *b)
{
    const ekey *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->g != y->g)
        return x->g > y->g ? -1 : 1; /* most steps first */
    return (x->mi > y->mi) - (x->mi < y->mi);
}

/* The edges of the pass (members of rings of g >= 2 grouped by stream,
 * source and destination slot; per document, one member each) and their
 * links, each expecting one part per member with that step. */
static int edges_init(pass *P)
{
    zs_zep_engine *en = P->en;
    ekey *k = malloc(sizeof(ekey) * (size_t)(P->nm > 0 ? P->nm : 1));
    P->edge_of = malloc(sizeof(int32_t) * (size_t)(P->nm > 0 ? P->nm : 1));
    P->eoff = calloc((size_t)P->nm + 1, sizeof(int32_t));
    P->emem = malloc(sizeof(int32_t) * (size_t)(P->nm > 0 ? P->nm : 1));
    P->loff = calloc((size_t)P->nm + 1, sizeof(int32_t));
    if (!k || !P->edge_of || !P->eoff || !P->emem || !P->loff) {
        free(k);
        return nomem(P->e);
    }
    int n = 0;
    for (int mi = 0; mi < P->nm; mi++) {
        const member *m = &P->m[mi];
        const zs_zep_ring *R = ring_of(P, m);
        P->edge_of[mi] = -1;
        if (R->g < 2)
            continue;
        int st = R->cls == ZS_ZEP_INTRA ? en->intra_stream : en->inter_stream;
        if (en->xfer == ZS_ZEP_XFER_PER_DOC)
            k[n++] = (ekey){0, mi, 0, R->g, mi};
        else /* the ring's shape as a second stream key: rings apart */
            k[n++] = (ekey){en->xfer == ZS_ZEP_XFER_RING ? st + 16 * en->shape[m->ring] : st,
                            R->slots[m->k], R->slots[(m->k + 1) % R->g], R->g, mi};
    }
    qsort(k, (size_t)n, sizeof *k, cmp_ekey);
    int e = -1;
    for (int i = 0; i < n; i++) {
        if (i == 0 || k[i].stream != k[i - 1].stream || k[i].src != k[i - 1].src ||
            k[i].dst != k[i - 1].dst) {
            P->eoff[++e] = i;
            P->loff[e + 1] = P->loff[e] + k[i].g; /* the most steps there: dK/dV's g */
        }
        P->emem[i] = k[i].mi;
        P->edge_of[k[i].mi] = e;
    }
    int ne = e + 1;
    P->eoff[ne] = n;
    for (int kind = 0; kind < 2; kind++)
        if (!(P->lk[kind] = calloc((size_t)(P->loff[ne] > 0 ? P->loff[ne] : 1), sizeof(xlink)))) {
            free(k);
            return nomem(P->e);
        }
    /* A link expects the edge's members that have its step. */
    for (e = 0; e < ne; e++)
        for (int kind = 0; kind < 2; kind++) {
            int c = P->eoff[e + 1] - P->eoff[e];
            for (int j = 0; j < P->loff[e + 1] - P->loff[e]; j++) {
                while (c > 0 &&
                       kind_steps(kind, ring_of(P, &P->m[P->emem[P->eoff[e] + c - 1]])->g) <= j)
                    c--;
                P->lk[kind][P->loff[e] + j].pending = c;
            }
        }
    free(k);
    return ZS_OK;
}

static int pass_init(pass *P)
{
    zs_zep_engine *en = P->en;
    const zs_zep_part *p = en->part;
    int S = P->S;
    P->sl = calloc((size_t)S, sizeof(slot));
    P->nm = en->mem_off[p->nrings];
    P->m = calloc((size_t)(P->nm > 0 ? P->nm : 1), sizeof(member));
    P->run = calloc((size_t)(p->nrings > 0 ? p->nrings : 1), sizeof(zs_ring_run *));
    P->step_est = calloc((size_t)(p->nrings > 0 ? p->nrings : 1), sizeof(double));
    P->ldone = calloc((size_t)(en->local_off[S] > 0 ? en->local_off[S] : 1), 1);
    P->mem_all = malloc(sizeof(int32_t) * (size_t)(P->nm > 0 ? P->nm : 1));
    int64_t *dep = malloc(sizeof(int64_t) * (size_t)(S > 0 ? S : 1));
    if (!P->sl || !P->m || !P->run || !P->step_est || !P->ldone || !P->mem_all || !dep) {
        free(dep);
        return nomem(P->e);
    }
    for (int s = 0; s < S; s++) {
        slot *X = &P->sl[s];
        X->entry = zs_iter_entry(P->it, s);
        X->imp_join = X->last_c = X->last_imp_c = -1;
        X->local_left = en->local_off[s + 1] - en->local_off[s];
        for (int32_t i = en->local_off[s]; i < en->local_off[s + 1]; i++)
            X->exp_left += en->local_imp[i];
    }
    /* Memberships per slot (CSR into mem_all, in ring order). */
    for (int r = 0; r < p->nrings; r++)
        for (int k = 0; k < p->rings[r].g; k++)
            P->sl[p->rings[r].slots[k]].nmem++;
    int off = 0;
    for (int s = 0; s < S; s++) {
        P->sl[s].mem = P->mem_all + off;
        off += P->sl[s].nmem;
        P->sl[s].nmem = 0;
    }
    int rc = ZS_OK;
    static const char *labels[] = {"local", "zep-intra", "zep-inter", "zep-global"};
    for (int r = 0; r < p->nrings && !rc; r++) {
        const zs_zep_ring *R = &p->rings[r];
        for (int k = 0; k < R->g; k++) {
            int mi = en->mem_off[r] + k, s = R->slots[k];
            P->m[mi] =
                (member){r, k, s, 0, 0, 0, 0, en->mem_imp[mi], 0, 0, 0, {0}, {0}, 0, 0, -1, -1};
            P->sl[s].mem[P->sl[s].nmem++] = mi;
            P->sl[s].exp_left += en->mem_imp[mi];
            dep[k] = zs_iter_entry(P->it, s);
        }
        int stream = R->cls == ZS_ZEP_INTRA ? en->intra_stream : en->inter_stream;
        zs_ring_spec rs = {R->g,   R->slots,           R->ndocs,      R->docs,   ZS_RING_EXACT,
                           stream, labels[R->cls & 3], zs_route_xfer, en->route, ZS_CPL_ZIGZAG};
        rc = zs_ring_run_new(P->it, P->stage, &rs, 0, 0, P->backward, dep, &P->run[r], P->e);
        if (!rc)
            P->step_est[r] = ring_step_est(P, r);
    }
    free(dep);
    return rc ? rc : edges_init(P);
}

int zs_zep_engine_emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    zs_zep_engine *en = arg;
    const zs_model *m = &zs_iter_cost(it)->model;
    pass P;
    memset(&P, 0, sizeof P);
    P.en = en;
    P.it = it;
    P.s = zs_iter_schedule(it);
    P.stage = stage;
    P.backward = backward;
    P.S = en->part->nslots;
    P.e = e;
    P.tag[0][0] = P.tag[0][1] = P.tag[1][0] = P.tag[1][1] = -1;
    (void)micro;
    double dh = (double)m->head_dim * m->dtype_bytes;
    double qkv = (zs_iter_heads(it) + 2.0 * zs_iter_kv_heads(it)) * dh;
    double o = zs_iter_heads(it) * dh;
    P.per_in = backward ? o : qkv;
    P.per_out = backward ? qkv : o;
    int remap = en->remap && en->remap->nflows > 0;
    if (remap) {
        P.tag_in = zs_iter_tag(it);
        P.tag_out = zs_iter_tag(it);
    }
    zs_route_phase(en->route);
    zs_zep_clock_reset(en->clock);
    int rc = pass_init(&P);
    for (int i = 0; remap && !rc && i < en->remap->nflows; i++) {
        P.sl[en->remap->flows[i].from].imp_need++;
        P.sl[en->remap->flows[i].to].out_need++;
    }
    for (int s = 0; s < P.S && !rc; s++) {
        const zs_iter_lin *l = &en->lin[s];
        if (P.sl[s].imp_need == 0)
            P.sl[s].imported = 1;
        rc = push(&P, backward ? l->bwd_entry : l->fwd_entry, EV_ENTRY, s, 0);
        if (!rc && remap && en->moved[s] > 0)
            rc = push(&P, backward ? l->bwd_moved : l->fwd_moved, EV_MOVED, s, 0);
    }
    zs_zep_event ev;
    while (!rc && zs_zep_events_pop(&P.q, &ev))
        rc = on_event(&P, &ev);
    if (!rc)
        rc = zs_schedule_check(P.s, e);
    /* Every piece of work must have run: the simulation cannot stall. */
    for (int i = 0; i < P.nm && !rc; i++) {
        const member *x = &P.m[i];
        int g = ring_of(&P, x)->g;
        if (x->na < g || (backward && g > 1 && x->nd < g) || x->kv_open || x->dkv_open)
            rc = zs_err_set(e, ZS_EINVALID, "zeppelin engine", NULL,
                            "ring %d member %d stopped at step %d of %d", x->ring, x->k,
                            x->na < g ? x->na : x->nd, g);
    }
    for (int s = 0; s < P.S && !rc; s++)
        if (P.sl[s].local_left > 0 || (remap && en->moved[s] > 0 && P.sl[s].out_need > 0))
            rc = zs_err_set(e, ZS_EINVALID, "zeppelin engine", NULL,
                            "slot %d has work left after the pass", s);
    /* Each slot's exit joins its last compute op and, backward, the
     * arrival of its own dK/dV from every ring. */
    for (int s = 0; s < P.S && !rc; s++) {
        slot *X = &P.sl[s];
        deps d = {0};
        rc = deps_add(&d, X->last_c) ? nomem(e) : ZS_OK;
        for (int i = 0; i < X->nmem && !rc && backward; i++) {
            member *x = &P.m[X->mem[i]];
            if (deps_add(&d, zs_ring_run_exit(P.run[x->ring], x->k)))
                rc = nomem(e);
        }
        int64_t exit = X->entry;
        if (!rc && d.n == 1)
            exit = d.v[0];
        else if (!rc && d.n > 1)
            exit = zs_sched_elementwise(P.s, slot_rank(&P, s), ZS_STREAM_COMPUTE, "attn-join", 0, 0,
                                        d.v, d.n);
        free(d.v);
        zs_iter_set_exit(it, s, exit);
    }
    pass_free(&P);
    return rc ? rc : zs_schedule_check(zs_iter_schedule(it), e);
}

/* ---- plan pieces ---------------------------------------------------------------------- */

int zs_zep_engine_pieces(const zs_zep_engine *en, zs_schedule *s, const zs_layout_dims *dims,
                         zs_err *e)
{
    const zs_zep_part *p = en->part;
    int S = p->nslots;
    int64_t a0 = s->npieces;
    /* Rings first, then local documents longest first: a slot's pieces in
     * the order its exported (last) tokens are chosen in. */
    for (int i = 0; i < p->nrings; i++) {
        const zs_zep_ring *r = &p->rings[i];
        zs_ring_spec rs = {r->g, r->slots, r->ndocs, r->docs, ZS_RING_EXACT,
                           0,    "",       NULL,     NULL,    ZS_CPL_ZIGZAG};
        int rc = zs_ring_add_pieces(s, dims, &rs, 0, e);
        if (rc)
            return rc;
    }
    for (int sl = 0; sl < S; sl++)
        for (int32_t i = en->local_off[sl]; i < en->local_off[sl + 1]; i++) {
            int32_t d = en->local_docs[i];
            zs_schedule_add_piece(s, d, 0, en->len[d], zs_slot_rank(dims, 0, sl), ZS_LAYOUT_ATTN,
                                  0);
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
    const zs_remap *m = en->remap;
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
