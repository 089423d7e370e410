/* The plan validator: see zs_validate.h. */
#include "zs_validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_analytic.h"

int zs_rank_stage(const zs_schedule *s, int rank)
{
    return (rank / (s->dims.tp * s->dims.cp)) % s->dims.pp;
}

int zs_stage_layers(const zs_schedule *s, int stage)
{
    return s->layers / s->dims.pp + (stage < s->layers % s->dims.pp ? 1 : 0);
}

/* Messages carry up to three integers; unused ones are ignored by printf. */
static int fail(zs_err *e, const char *where, const char *fmt, long long a, long long b,
                long long c)
{
    return zs_err_set(e, ZS_EINVALID, where, "this is a planner bug: report it with the plan dump",
                      fmt, a, b, c);
}

/* ---- token placement -------------------------------------------------------- */

static const zs_piece *g_pieces; /* qsort has no context argument */

static int cmp_piece(const void *a, const void *b)
{
    const zs_piece *x = &g_pieces[*(const int64_t *)a], *y = &g_pieces[*(const int64_t *)b];
    if (x->layout != y->layout)
        return x->layout - y->layout;
    if (x->doc != y->doc)
        return x->doc < y->doc ? -1 : 1;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return *(const int64_t *)a < *(const int64_t *)b ? -1 : 1;
}

static int check_pieces(const zs_schedule *s, zs_err *e)
{
    static const char *lname[] = {"attention", "linear modules"};
    int64_t n = s->npieces;
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!idx)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        const zs_piece *p = &s->pieces[i];
        if (p->doc < 0 || p->doc >= s->ndocs || p->t0 < 0 || p->t1 <= p->t0 ||
            p->t1 > s->doc_len[p->doc] || p->rank < 0 || p->rank >= s->nranks || p->layout > 1) {
            free(idx);
            char w[128];
            snprintf(w, sizeof w, "piece %lld (rank %d)", (long long)i, p->rank);
            return fail(e, w, "document %lld: bad token range [%lld, %lld) in the plan", p->doc,
                        p->t0, p->t1);
        }
        idx[i] = i;
    }
    g_pieces = s->pieces;
    qsort(idx, (size_t)n, sizeof *idx, cmp_piece);
    int64_t k = 0;
    int rc = ZS_OK;
    for (int layout = 0; layout < 2 && rc == ZS_OK; layout++) {
        for (int32_t d = 0; d < s->ndocs && rc == ZS_OK; d++) {
            int32_t next = 0;
            char w[160];
            while (k < n && s->pieces[idx[k]].layout == layout && s->pieces[idx[k]].doc == d) {
                const zs_piece *p = &s->pieces[idx[k]];
                snprintf(w, sizeof w, "rank %d, document %d (%s)", p->rank, d, lname[layout]);
                if (p->t0 > next) {
                    rc = fail(e, w, "tokens [%lld, %lld) of document %lld are not placed", next,
                              p->t0, d);
                    break;
                }
                if (p->t0 < next) {
                    rc = fail(e, w, "tokens [%lld, %lld) of document %lld are placed twice", p->t0,
                              next < p->t1 ? next : p->t1, d);
                    break;
                }
                next = p->t1;
                k++;
            }
            if (rc == ZS_OK && next != s->doc_len[d]) {
                snprintf(w, sizeof w, "document %d (%s)", d, lname[layout]);
                rc = fail(e, w, "tokens [%lld, %lld) of document %lld are not placed", next,
                          s->doc_len[d], d);
            }
        }
    }
    free(idx);
    return rc;
}

/* ---- attention coverage ------------------------------------------------------- */

typedef struct cov {
    zs_attn_block b;
    int64_t w; /* heads x repeat */
    int32_t rank;
    int64_t op;
} cov;

typedef struct kev {
    int32_t k;
    int64_t dw;
} kev;

static int cmp_cov(const void *a, const void *b)
{
    const cov *x = a, *y = b;
    if (x->b.doc != y->b.doc)
        return x->b.doc < y->b.doc ? -1 : 1;
    if (x->b.q0 != y->b.q0)
        return x->b.q0 < y->b.q0 ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->op < y->op ? -1 : (x->op > y->op);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_kev(const void *a, const void *b)
{
    const kev *x = a, *y = b;
    return (x->k > y->k) - (x->k < y->k);
}

static int where_op(char *w, size_t n, const cov *c, const char *what)
{
    return snprintf(w, n, "rank %d op %lld, document %d (%s)", c->rank, (long long)c->op, c->b.doc,
                    what);
}

/* Checks one document's blocks [c, c+n) against multiplicity m. */
static int check_doc(const cov *c, int64_t n, int64_t m, int32_t len, const char *what, zs_err *e)
{
    char w[200];
    int32_t *qb = malloc(sizeof(int32_t) * (size_t)(2 * n + 2));
    kev *ev = malloc(sizeof(kev) * (size_t)(2 * n + 1));
    if (!qb || !ev) {
        free(qb);
        free(ev);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    int rc = ZS_OK;
    int64_t nq = 0;
    qb[nq++] = 0;
    qb[nq++] = len;
    for (int64_t i = 0; i < n && rc == ZS_OK; i++) {
        const zs_attn_block *b = &c[i].b;
        where_op(w, sizeof w, &c[i], what);
        if (b->q0 < 0 || b->q1 <= b->q0 || b->q1 > len || b->k0 < 0 || b->k1 <= b->k0 ||
            b->k1 > len)
            rc = fail(e, w, "block q[%lld,%lld) k[.., %lld) is outside the document", b->q0, b->q1,
                      b->k1);
        else if (b->k0 > b->q1 - 1)
            rc = fail(e, w, "block q[%lld,%lld) k[%lld,..) lies above the causal diagonal", b->q0,
                      b->q1, b->k0);
        qb[nq++] = b->q0;
        qb[nq++] = b->q1;
    }
    if (rc == ZS_OK) {
        qsort(qb, (size_t)nq, sizeof *qb, cmp_i32);
        int64_t u = 0;
        for (int64_t i = 0; i < nq; i++)
            if (u == 0 || qb[i] != qb[u - 1])
                qb[u++] = qb[i];
        nq = u;
    }
    /* Blocks are sorted by q0: those covering [a, b) start at or before a. */
    for (int64_t iv = 0; rc == ZS_OK && iv + 1 < nq; iv++) {
        int32_t a = qb[iv], bq = qb[iv + 1];
        int64_t ne = 0;
        const cov *first = NULL;
        for (int64_t i = 0; i < n && c[i].b.q0 <= a; i++)
            if (c[i].b.q1 >= bq) {
                ev[ne++] = (kev){c[i].b.k0, c[i].w};
                ev[ne++] = (kev){c[i].b.k1, -c[i].w};
                if (!first)
                    first = &c[i];
            }
        /* Query bq-1 needs keys [0, bq) each exactly m times. */
        qsort(ev, (size_t)ne, sizeof *ev, cmp_kev);
        int64_t cover = 0;
        int32_t pos = 0;
        int64_t j = 0;
        while (pos < bq) {
            while (j < ne && ev[j].k <= pos)
                cover += ev[j++].dw;
            int32_t until = j < ne && ev[j].k < bq ? ev[j].k : bq;
            if (cover != m) {
                if (first)
                    where_op(w, sizeof w, first, what);
                else
                    snprintf(w, sizeof w, "document %d (%s)", c[0].b.doc, what);
                rc = zs_err_set(e, ZS_EINVALID, w,
                                "this is a planner bug: report it with the plan dump",
                                "queries [%d, %d) x keys [%d, %d) are computed %lld times, "
                                "expected %lld (heads x layers)",
                                a, bq, pos, until, (long long)cover, (long long)m);
                break;
            }
            pos = until;
        }
    }
    free(qb);
    free(ev);
    return rc;
}

static int check_coverage(const zs_schedule *s, int stage, int backward, zs_err *e)
{
    const char *what = backward ? "attention backward" : "attention forward";
    int64_t n = 0, cap = 1024;
    cov *c = malloc(sizeof(cov) * (size_t)cap);
    if (!c)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int ck = backward ? ZS_CK_ATTN_BWD : ZS_CK_ATTN_FWD;
    for (int r = 0; r < s->nranks; r++) {
        if (zs_rank_stage(s, r) != stage)
            continue;
        const zs_rank_prog *p = &s->ranks[r];
        for (int32_t g = 0; g < p->nsegs; g++) {
            for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
                const zs_op *op = &p->ops[i];
                if (op->kind != ZS_OP_COMPUTE || op->u.compute.ck != ck ||
                    (op->flags & ZS_OPF_RECOMPUTE))
                    continue;
                for (int j = 0; j < op->u.compute.nblocks; j++) {
                    if (n == cap) {
                        cov *nc = realloc(c, sizeof(cov) * (size_t)(cap *= 2));
                        if (!nc) {
                            free(c);
                            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
                        }
                        c = nc;
                    }
                    c[n].b = s->blocks[op->u.compute.block0 + j];
                    c[n].w = (int64_t)op->u.compute.heads * p->segs[g].repeat;
                    c[n].rank = r;
                    c[n].op = i;
                    if (c[n].b.doc < 0 || c[n].b.doc >= s->ndocs) {
                        char w[200];
                        where_op(w, sizeof w, &c[n], what);
                        long long bad_doc = c[n].b.doc;
                        free(c);
                        return fail(e, w, "block names document %lld of %lld", bad_doc, s->ndocs,
                                    0);
                    }
                    n++;
                }
            }
        }
    }
    qsort(c, (size_t)n, sizeof *c, cmp_cov);
    int64_t m = (int64_t)s->heads * zs_stage_layers(s, stage);
    int rc = ZS_OK;
    int64_t i = 0;
    for (int32_t d = 0; d < s->ndocs && rc == ZS_OK; d++) {
        int64_t j = i;
        while (j < n && c[j].b.doc == d)
            j++;
        if (j == i) {
            char w[128];
            snprintf(w, sizeof w, "document %d, pipeline stage %d (%s)", d, stage, what);
            rc = fail(e, w, "document %lld has no attention blocks (%lld tokens)", d, s->doc_len[d],
                      0);
        } else {
            rc = check_doc(c + i, j - i, m, s->doc_len[d], what, e);
        }
        i = j;
    }
    free(c);
    return rc;
}

/* ---- messages and collectives -------------------------------------------------- */

typedef struct msg {
    int32_t a, b, tag; /* src, dst, tag for p2p; group, rank, kind for collectives */
    int64_t order;
    double bytes;
    int32_t rank;
    int64_t op;
} msg;

static int cmp_msg(const void *x, const void *y)
{
    const msg *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    if (p->tag != q->tag)
        return p->tag < q->tag ? -1 : 1;
    return (p->order > q->order) - (p->order < q->order);
}

typedef struct msgs {
    msg *v;
    int64_t n, cap;
} msgs;

static int msgs_push(msgs *m, msg x)
{
    if (m->n == m->cap) {
        int64_t nc = m->cap ? m->cap * 2 : 1024;
        msg *v = realloc(m->v, sizeof(msg) * (size_t)nc);
        if (!v)
            return ZS_ENOMEM;
        m->v = v;
        m->cap = nc;
    }
    m->v[m->n++] = x;
    return ZS_OK;
}

static int op_where(char *w, size_t n, int rank, int64_t op)
{
    return snprintf(w, n, "rank %d op %lld", rank, (long long)op);
}

/* Every send, receive and collective of the unrolled programs, with its
 * position in its rank's order. */
static int collect_messages(const zs_schedule *s, msgs *sends, msgs *recvs, msgs *colls)
{
    int rc = ZS_OK;
    for (int r = 0; r < s->nranks && rc == ZS_OK; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        int64_t order = 0;
        for (int32_t g = 0; g < p->nsegs && rc == ZS_OK; g++)
            for (int32_t it = 0; it < p->segs[g].repeat && rc == ZS_OK; it++)
                for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
                    const zs_op *op = &p->ops[i];
                    order++;
                    if (op->kind == ZS_OP_SEND)
                        rc = msgs_push(sends, (msg){r, op->u.p2p.peer, op->u.p2p.tag, order,
                                                    op->u.p2p.bytes, r, i});
                    else if (op->kind == ZS_OP_RECV)
                        rc = msgs_push(recvs, (msg){op->u.p2p.peer, r, op->u.p2p.tag, order,
                                                    op->u.p2p.bytes, r, i});
                    else if (op->kind == ZS_OP_COLL)
                        rc = msgs_push(colls, (msg){op->u.coll.group, r, op->u.coll.ck, order,
                                                    op->u.coll.bytes, r, i});
                    if (rc)
                        break;
                }
    }
    return rc;
}

/* Sends and receives pair up in order per (sender, receiver, tag), with
 * equal sizes. */
static int same_carry(const zs_schedule *s, const msg *a, const msg *b)
{
    const zs_op *x = &s->ranks[a->rank].ops[a->op], *y = &s->ranks[b->rank].ops[b->op];
    if (x->u.p2p.ncarry != y->u.p2p.ncarry)
        return 0;
    for (int32_t i = 0; i < x->u.p2p.ncarry; i++) {
        const zs_carry *p = &s->carry[x->u.p2p.carry0 + i], *q = &s->carry[y->u.p2p.carry0 + i];
        if (p->doc != q->doc || p->bytes != q->bytes)
            return 0;
    }
    return 1;
}

static int match_p2p(const zs_schedule *s, msgs *sends, msgs *recvs, zs_err *e)
{
    /* qsort must not see a NULL array, even empty (UBSan). */
    if (sends->n)
        qsort(sends->v, (size_t)sends->n, sizeof(msg), cmp_msg);
    if (recvs->n)
        qsort(recvs->v, (size_t)recvs->n, sizeof(msg), cmp_msg);
    char w[128];
    int64_t i = 0, j = 0;
    while (i < sends->n || j < recvs->n) {
        const msg *a = i < sends->n ? &sends->v[i] : NULL, *b = j < recvs->n ? &recvs->v[j] : NULL;
        int c = !a   ? 1
                : !b ? -1
                     : (a->a != b->a       ? (a->a < b->a ? -1 : 1)
                        : a->b != b->b     ? (a->b < b->b ? -1 : 1)
                        : a->tag != b->tag ? (a->tag < b->tag ? -1 : 1)
                                           : 0);
        if (c < 0) {
            op_where(w, sizeof w, a->rank, a->op);
            return fail(e, w, "send to rank %lld (tag %lld) has no matching receive", a->b, a->tag,
                        0);
        }
        if (c > 0) {
            op_where(w, sizeof w, b->rank, b->op);
            return fail(e, w, "receive from rank %lld (tag %lld) has no matching send", b->a,
                        b->tag, 0);
        }
        if (a->bytes != b->bytes) {
            op_where(w, sizeof w, b->rank, b->op);
            return zs_err_set(e, ZS_EINVALID, w, "this is a planner bug: report it with the dump",
                              "receive of %.0f bytes from rank %d matches a send of %.0f bytes",
                              b->bytes, b->a, a->bytes);
        }
        if (!same_carry(s, a, b)) {
            op_where(w, sizeof w, b->rank, b->op);
            return fail(e, w,
                        "receive from rank %lld (tag %lld) carries other documents than its "
                        "send (rank %lld's)",
                        b->a, b->tag, a->rank);
        }
        i++;
        j++;
    }
    return ZS_OK;
}

/* The collectives of one group: colls->v[k ..) while the group is g; on
 * return *next is the first entry of the next group. Each member's
 * sequence must equal the first member's. */
static int check_group(const zs_schedule *s, const msgs *colls, int64_t k, int64_t *next, zs_err *e)
{
    char w[128];
    int32_t g = colls->v[k].a;
    const zs_group *grp = &s->groups[g];
    int64_t start = k, first_len = -1;
    int members = 0;
    while (k < colls->n && colls->v[k].a == g) {
        int32_t r = colls->v[k].b;
        int64_t rs = k;
        while (k < colls->n && colls->v[k].a == g && colls->v[k].b == r)
            k++;
        int member = 0;
        for (int x = 0; x < grp->n; x++)
            member |= grp->ranks[x] == r;
        op_where(w, sizeof w, r, colls->v[rs].op);
        if (!member)
            return fail(e, w, "rank %lld runs a collective on group %lld it is not in", r, g, 0);
        members++;
        int64_t len = k - rs;
        /* A group is one communicator: its collectives on a rank must
         * come from one stream, or their order across ranks is undefined. */
        for (int64_t x = rs + 1; x < k; x++)
            if (s->ranks[r].ops[colls->v[x].op].stream != s->ranks[r].ops[colls->v[rs].op].stream) {
                op_where(w, sizeof w, r, colls->v[x].op);
                return fail(e, w,
                            "group %lld is used from two streams on rank %lld (give each "
                            "stream its own group)",
                            g, r, 0);
            }
        if (first_len < 0) {
            first_len = len;
            continue;
        }
        if (len != first_len)
            return fail(e, w,
                        "rank %lld runs %lld collectives on group %lld, other members a "
                        "different number",
                        r, len, g);
        for (int64_t x = 0; x < len; x++) {
            const msg *p = &colls->v[start + x], *q = &colls->v[rs + x];
            /* All-to-all is all-to-all-v: members' buffers may differ. */
            if (p->tag != q->tag || (p->tag != ZS_COLL_ALLTOALL && p->bytes != q->bytes)) {
                op_where(w, sizeof w, r, q->op);
                return fail(e, w,
                            "collective %lld on group %lld differs in kind or size from "
                            "rank %lld's",
                            x, g, p->b);
            }
        }
    }
    if (members != grp->n) {
        snprintf(w, sizeof w, "group %d", g);
        return fail(e, w, "only %lld of the %lld members of group %lld run its collectives",
                    members, grp->n, g);
    }
    *next = k;
    return ZS_OK;
}

static int check_messages(const zs_schedule *s, zs_err *e)
{
    msgs sends = {0}, recvs = {0}, colls = {0};
    int rc = collect_messages(s, &sends, &recvs, &colls);
    if (rc)
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    if (!rc)
        rc = match_p2p(s, &sends, &recvs, e);
    /* Collectives: sorted by (group, rank, order). */
    if (!rc && colls.n)
        qsort(colls.v, (size_t)colls.n, sizeof(msg), cmp_msg);
    for (int64_t k = 0; !rc && k < colls.n;)
        rc = check_group(s, &colls, k, &k, e);
    free(sends.v);
    free(recvs.v);
    free(colls.v);
    return rc;
}

/* ---- what transfers carry ---------------------------------------------------- */

/* A transfer's carry list: entries in the pool, documents of the plan named
 * once each, parts finite, >= 0 and adding up to the transfer's bytes.
 * stamp (per document) and mark (unique to this call) find repeats. */
static int check_carry_op(const zs_schedule *s, int r, int64_t i, int64_t *stamp, int64_t mark,
                          zs_err *e)
{
    const zs_op *op = &s->ranks[r].ops[i];
    char w[160];
    snprintf(w, sizeof w, "rank %d op %lld (%s %s)", r, (long long)i, zs_op_kind_name(op->kind),
             s->labels[op->label]);
    int64_t c0 = op->u.p2p.carry0, n = op->u.p2p.ncarry;
    if (n < 0 || (n > 0 && (c0 < 0 || c0 + n > s->ncarry)))
        return fail(e, w, "carry entries [%lld, %lld) outside the pool of %lld", c0, c0 + n,
                    s->ncarry);
    double sum = 0;
    for (int64_t j = 0; j < n; j++) {
        const zs_carry *c = &s->carry[c0 + j];
        if (c->doc < 0 || c->doc >= s->ndocs || !(c->bytes >= 0) || c->bytes > 1e300)
            return fail(e, w, "carry entry %lld names document %lld of %lld (or bad bytes)", j,
                        c->doc, s->ndocs);
        if (stamp[c->doc] == mark)
            return fail(e, w, "carries document %lld twice (entry %lld)", c->doc, j, 0);
        stamp[c->doc] = mark;
        sum += c->bytes;
    }
    double b = op->u.p2p.bytes;
    if (n > 0 && !(fabs(sum - b) <= 1e-9 * (b > 1 ? b : 1) + 1e-6))
        return zs_err_set(e, ZS_EINVALID, w, "this is a planner bug: report it with the plan dump",
                          "moves %.0f bytes but the documents it carries add up to %.0f", b, sum);
    return ZS_OK;
}

/* Marks (stamp = mark) the documents carried by receive dep of rank r, and,
 * when dep is a zero-time join (a routed transfer's, or a sync), by the
 * receives it waits for. Returns how many entries it marked. */
static int64_t mark_carried(const zs_schedule *s, int r, int32_t dep, int64_t *stamp, int64_t mark)
{
    const zs_op *d = &s->ranks[r].ops[dep];
    int64_t n = 0;
    if (d->kind == ZS_OP_RECV) {
        for (int32_t j = 0; j < d->u.p2p.ncarry; j++, n++)
            stamp[s->carry[d->u.p2p.carry0 + j].doc] = mark;
        return n;
    }
    if (d->kind != ZS_OP_COMPUTE || d->u.compute.ck != ZS_CK_ELEMWISE || d->duration != 0)
        return 0;
    const int32_t *dd = zs_schedule_deps(s, r, d);
    for (int j = 0; j < d->ndeps; j++)
        if (s->ranks[r].ops[dd[j]].kind == ZS_OP_RECV)
            n += mark_carried(s, r, dd[j], stamp, mark);
    return n;
}

/* Attention pieces by representative rank, doc and t0 (CSR by rank), to
 * tell whether a rank holds the keys of a block. */
typedef struct held {
    int64_t *off; /* per rank + 1 */
    zs_piece *p;
} held;

static int cmp_held(const void *a, const void *b)
{
    const zs_piece *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->doc != y->doc)
        return x->doc < y->doc ? -1 : 1;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

static int held_init(const zs_schedule *s, held *h)
{
    h->off = calloc((size_t)s->nranks + 1, sizeof(int64_t));
    h->p = malloc(sizeof(zs_piece) * (size_t)(s->npieces > 0 ? s->npieces : 1));
    if (!h->off || !h->p)
        return ZS_ENOMEM;
    int64_t n = 0;
    for (int64_t i = 0; i < s->npieces; i++)
        if (s->pieces[i].layout == ZS_LAYOUT_ATTN && s->pieces[i].rank >= 0 &&
            s->pieces[i].rank < s->nranks)
            h->p[n++] = s->pieces[i];
    if (n)
        qsort(h->p, (size_t)n, sizeof(zs_piece), cmp_held);
    for (int64_t i = 0; i < n; i++)
        h->off[h->p[i].rank + 1]++;
    for (int r = 0; r < s->nranks; r++)
        h->off[r + 1] += h->off[r];
    return ZS_OK;
}

/* Whether rank r (through its representative: TP rank 0 of its group in
 * pipeline stage 0, where the plan places tokens) holds keys [k0, k1) of doc. */
static int holds_keys(const zs_schedule *s, const held *h, int r, int32_t doc, int32_t k0,
                      int32_t k1)
{
    const zs_layout_dims *d = &s->dims;
    int tp = d->tp > 0 ? d->tp : 1, cp = d->cp > 0 ? d->cp : 1, pp = d->pp > 0 ? d->pp : 1;
    int rest = r / tp, ci = rest % cp, dpi = rest / cp / pp;
    int rep = (dpi * pp * cp + ci) * tp;
    if (rep < 0 || rep >= s->nranks)
        return 0;
    int32_t at = k0;
    for (int64_t i = h->off[rep]; i < h->off[rep + 1] && at < k1; i++) {
        const zs_piece *p = &h->p[i];
        if (p->doc < doc)
            continue;
        if (p->doc > doc || p->t0 > at)
            break;
        at = p->t1 > at ? p->t1 : at;
    }
    return at >= k1;
}

/* An attention op that waits for transfers with carry lists (directly or
 * through a zero-time join): every block whose keys its rank does not hold
 * belongs to a document they carry. */
static int check_delivery(const zs_schedule *s, const held *h, int r, int64_t i, int64_t *stamp,
                          int64_t mark, zs_err *e)
{
    const zs_op *op = &s->ranks[r].ops[i];
    const int32_t *dd = zs_schedule_deps(s, r, op);
    int64_t n = 0;
    for (int j = 0; j < op->ndeps; j++)
        n += mark_carried(s, r, dd[j], stamp, mark);
    for (int j = 0; n > 0 && j < op->u.compute.nblocks; j++) {
        const zs_attn_block *b = &s->blocks[op->u.compute.block0 + j];
        if (b->doc < 0 || b->doc >= s->ndocs || stamp[b->doc] == mark ||
            holds_keys(s, h, r, b->doc, b->k0, b->k1))
            continue;
        char w[160];
        snprintf(w, sizeof w, "rank %d op %lld (%s), document %d", r, (long long)i,
                 s->labels[op->label], b->doc);
        return fail(e, w,
                    "attention on keys of document %lld the rank does not hold waits for "
                    "transfers that do not carry it (%lld documents carried)",
                    b->doc, n, 0);
    }
    return ZS_OK;
}

/* Every carry list is consistent, and remote keys arrive in a transfer that
 * carries their document (check_delivery). */
static int check_carry(const zs_schedule *s, zs_err *e)
{
    if (s->ncarry == 0)
        return ZS_OK;
    int64_t *stamp = calloc((size_t)(s->ndocs > 0 ? s->ndocs : 1), sizeof(int64_t));
    held h = {0};
    int rc = stamp && held_init(s, &h) == ZS_OK ? ZS_OK : ZS_ENOMEM;
    if (rc)
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int64_t mark = 0;
    for (int r = 0; r < s->nranks && rc == ZS_OK; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        for (int64_t i = 0; i < p->nops && rc == ZS_OK; i++) {
            const zs_op *op = &p->ops[i];
            if (op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV)
                rc = check_carry_op(s, r, i, stamp, ++mark, e);
            else if (op->kind == ZS_OP_COMPUTE && op->u.compute.ck <= ZS_CK_ATTN_BWD)
                rc = check_delivery(s, &h, r, i, stamp, ++mark, e);
        }
    }
    free(stamp);
    free(h.off);
    free(h.p);
    return rc;
}

/* ---- memory --------------------------------------------------------------------- */

static int check_memory(const zs_schedule *s, long max_tokens, zs_err *e)
{
    int micro = s->micro_batches > 0 ? s->micro_batches : 1;
    size_t n = (size_t)s->nranks * (size_t)micro * 2;
    int64_t *tok = calloc(n, sizeof(int64_t));
    if (!tok)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *p = &s->pieces[i];
        int mb = p->micro < micro ? p->micro : micro - 1;
        tok[((size_t)p->rank * micro + mb) * 2 + p->layout] += p->t1 - p->t0;
    }
    int rc = ZS_OK;
    for (size_t i = 0; i < n; i++)
        if (tok[i] > max_tokens) {
            char w[128];
            snprintf(w, sizeof w, "rank %zu", i / 2 / micro);
            rc = zs_err_set(e, ZS_EINVALID, w,
                            "use more GPUs, a smaller batch, recomputation or a method that "
                            "splits long documents",
                            "%lld tokens for the %s exceed the %ld that fit in GPU memory",
                            (long long)tok[i], i % 2 ? "linear modules" : "attention", max_tokens);
            break;
        }
    free(tok);
    return rc;
}

int zs_validate(const zs_schedule *s, const zs_validate_opts *o, zs_err *e)
{
    if (s->dims.tp * s->dims.cp * s->dims.pp * s->dims.dp != s->nranks)
        return fail(e, "schedule", "layout tp x cp x pp x dp = %lld does not match %lld ranks",
                    (long long)s->dims.tp * s->dims.cp * s->dims.pp * s->dims.dp, s->nranks, 0);
    int rc = check_pieces(s, e);
    for (int st = 0; rc == ZS_OK && st < s->dims.pp; st++)
        for (int bwd = 0; rc == ZS_OK && bwd < 2; bwd++)
            rc = check_coverage(s, st, bwd, e);
    if (rc == ZS_OK)
        rc = check_carry(s, e);
    if (rc == ZS_OK)
        rc = check_messages(s, e);
    if (rc == ZS_OK && o && o->max_tokens_per_rank > 0)
        rc = check_memory(s, o->max_tokens_per_rank, e);
    if (rc == ZS_OK && !(o && o->skip_dry_run)) {
        zs_analytic_opts ao;
        zs_analytic_opts_init(&ao);
        ao.dry = 1;
        zs_result *r = NULL;
        rc = zs_analytic_run(s, NULL, &ao, &r, e);
        zs_result_free(r);
    }
    return rc;
}
