/* The analytic backend's event queue: see zs_evq.h. */
#include "zs_evq.h"

#include <stdlib.h>
#include <string.h>

_Static_assert((ZS_EVQ_WCAP & (ZS_EVQ_WCAP - 1)) == 0 && ZS_EVQ_WCAP > ZS_EVQ_AHEAD,
               "the window is a ring of a power of two with room to spare");

static int ev_less(const zs_ev *a, const zs_ev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/* A time's bits as an unsigned key in the order of the times (-0 as +0,
 * negative times below the positive ones). */
static uint64_t tkey(double t)
{
    uint64_t u;
    if (t == 0)
        t = 0; /* -0 == +0: one key */
    memcpy(&u, &t, sizeof u);
    return u >> 63 ? ~u : u | (uint64_t)1 << 63;
}

/* Keys compare as (tkey(t), seq), the order ev_less gives (times compare
 * as their keys do, NaN aside, which no run produces). */
static int key_less(uint64_t at, uint64_t as, uint64_t bt, uint64_t bs)
{
    return at < bt || (at == bt && as < bs);
}

static int lsb(uint64_t d) /* d > 0: the index of its lowest set bit */
{
#if defined(__GNUC__)
    return __builtin_ctzll(d);
#else
    int i = 0;
    while (!(d & 1)) {
        d >>= 1;
        i++;
    }
    return i;
#endif
}

static int msb(uint64_t d) /* d > 0: the index of its highest set bit */
{
#if defined(__GNUC__)
    return 63 - __builtin_clzll(d);
#else
    int i = 0;
    while (d >>= 1)
        i++;
    return i;
#endif
}

/* The bucket of key (t, s) against the last key taken: 0 equal, 1..64 the
 * first difference in the sequence, 65..128 in the time. */
static int bucket_of(const zs_evq *q, uint64_t t, uint64_t s)
{
    uint64_t d = t ^ q->last_t;
    if (d)
        return 65 + msb(d);
    d = s ^ q->last_s;
    return d ? 1 + msb(d) : 0;
}

void zs_evq_free(zs_evq *q)
{
    for (int i = 0; i < ZS_EVQ_NB; i++)
        free(q->b[i].v);
    free(q->early);
    memset(q, 0, sizeof *q);
}

static int grow(zs_ev **v, int64_t *cap, int64_t need)
{
    if (need <= *cap)
        return ZS_OK;
    int64_t nc = *cap ? *cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    zs_ev *p = realloc(*v, sizeof(zs_ev) * (size_t)nc);
    if (!p)
        return ZS_ENOMEM;
    *v = p;
    *cap = nc;
    return ZS_OK;
}

static int bucket_add(zs_evq *q, int i, zs_ev v)
{
    zs_evq_bucket *b = &q->b[i];
    if (grow(&b->v, &b->cap, b->n + 1))
        return ZS_ENOMEM;
    b->v[b->n++] = v;
    q->nonempty[i / 64] |= (uint64_t)1 << (i % 64);
    return ZS_OK;
}

/* ---- the binary heap of events before the buckets' last key ------------- */

static int early_push(zs_evq *q, zs_ev v)
{
    if (grow(&q->early, &q->capearly, q->nearly + 1))
        return ZS_ENOMEM;
    int64_t i = q->nearly++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!ev_less(&v, &q->early[p]))
            break;
        q->early[i] = q->early[p];
        i = p;
    }
    q->early[i] = v;
    return ZS_OK;
}

static zs_ev early_pop(zs_evq *q)
{
    zs_ev top = q->early[0], last = q->early[--q->nearly];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= q->nearly)
            break;
        if (c + 1 < q->nearly && ev_less(&q->early[c + 1], &q->early[c]))
            c++;
        if (!ev_less(&q->early[c], &last))
            break;
        q->early[i] = q->early[c];
        i = c;
    }
    if (q->nearly > 0)
        q->early[i] = last;
    return top;
}

/* ---- behind the window ------------------------------------------------------ */

static int back_push(zs_evq *q, zs_ev v)
{
    uint64_t t = tkey(v.t), s = (uint64_t)v.seq;
    if (key_less(t, s, q->last_t, q->last_s))
        return early_push(q, v);
    if (bucket_add(q, bucket_of(q, t, s), v))
        return ZS_ENOMEM;
    q->nrad++;
    return ZS_OK;
}

/* Makes b[0] hold the buckets' least event (nrad > 0): the lowest
 * non-empty bucket's least event becomes the last key, and the bucket's
 * events move to the buckets they now belong to (all lower). */
static int settle(zs_evq *q)
{
    if (q->b[0].n > 0)
        return ZS_OK;
    int i = 0;
    for (int w = 0; w < 3; w++)
        if (q->nonempty[w]) {
            i = w * 64 + lsb(q->nonempty[w]);
            break;
        }
    zs_evq_bucket *b = &q->b[i];
    int64_t m = 0;
    uint64_t mt = tkey(b->v[0].t), ms = (uint64_t)b->v[0].seq;
    for (int64_t k = 1; k < b->n; k++) {
        uint64_t t = tkey(b->v[k].t), s = (uint64_t)b->v[k].seq;
        if (key_less(t, s, mt, ms)) {
            m = k;
            mt = t;
            ms = s;
        }
    }
    q->last_t = mt;
    q->last_s = ms;
    zs_ev *v = b->v;
    int64_t n = b->n;
    b->n = 0;
    q->nonempty[i / 64] &= ~((uint64_t)1 << (i % 64));
    for (int64_t k = 0; k < n; k++) {
        int j = k == m ? 0 : bucket_of(q, tkey(v[k].t), (uint64_t)v[k].seq);
        if (bucket_add(q, j, v[k]))
            return ZS_ENOMEM;
    }
    return ZS_OK;
}

/* Moves the earliest event behind the window to *out (one is pending). */
static int back_pop(zs_evq *q, zs_ev *out)
{
    if (q->nrad > 0) {
        int rc = settle(q);
        if (rc)
            return rc;
        if (q->nearly == 0 || !ev_less(&q->early[0], &q->b[0].v[0])) {
            *out = q->b[0].v[--q->b[0].n];
            if (q->b[0].n == 0)
                q->nonempty[0] &= ~(uint64_t)1;
            q->nrad--;
            return ZS_OK;
        }
    }
    *out = early_pop(q);
    return ZS_OK;
}

/* ---- the window ------------------------------------------------------------- */

static zs_ev *win_at(zs_evq *q, int32_t i)
{
    return &q->win[(q->wh + i) & (ZS_EVQ_WCAP - 1)];
}

int zs_evq_push(zs_evq *q, zs_ev v)
{
    if (q->wn > 0 && ev_less(&v, win_at(q, q->wn - 1))) {
        /* Before the window's last: in the window, in its place. */
        if (q->wn == ZS_EVQ_WCAP) {
            if (early_push(q, *win_at(q, q->wn - 1)))
                return ZS_ENOMEM;
            q->wn--;
        }
        int32_t i = q->wn;
        for (; i > 0 && ev_less(&v, win_at(q, i - 1)); i--)
            *win_at(q, i) = *win_at(q, i - 1);
        *win_at(q, i) = v;
        q->wn++;
        return ZS_OK;
    }
    if (q->wn < ZS_EVQ_AHEAD && q->nrad + q->nearly == 0) { /* after everything pending */
        *win_at(q, q->wn++) = v;
        return ZS_OK;
    }
    return back_push(q, v);
}

int zs_evq_pop(zs_evq *q, zs_ev *out)
{
    if (q->wn == 0) { /* not reached while the window is kept full */
        int rc = back_pop(q, out);
        if (rc)
            return rc;
    } else {
        *out = q->win[q->wh];
        q->wh = (q->wh + 1) & (ZS_EVQ_WCAP - 1);
        q->wn--;
    }
    while (q->wn < ZS_EVQ_AHEAD && q->nrad + q->nearly > 0) {
        int rc = back_pop(q, win_at(q, q->wn));
        if (rc)
            return rc;
        q->wn++;
    }
    return ZS_OK;
}
