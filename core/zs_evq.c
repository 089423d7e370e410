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

void zs_evq_free(zs_evq *q)
{
    free(q->heap);
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

/* ---- behind the window: a 4-ary heap ------------------------------------------ */

/* Four children per node halve the levels a pop walks down (and the
 * unpredictable branches and cache misses with them) for three compares
 * per level among children that sit side by side. */
static int back_push(zs_evq *q, zs_ev v)
{
    if (grow(&q->heap, &q->cap, q->n + 1))
        return ZS_ENOMEM;
    int64_t i = q->n++;
    while (i > 0) {
        int64_t p = (i - 1) / 4;
        if (!ev_less(&v, &q->heap[p]))
            break;
        q->heap[i] = q->heap[p];
        i = p;
    }
    q->heap[i] = v;
    return ZS_OK;
}

static zs_ev back_pop(zs_evq *q)
{
    zs_ev top = q->heap[0], last = q->heap[--q->n];
    int64_t i = 0, n = q->n;
    for (;;) {
        int64_t c = 4 * i + 1;
        if (c >= n)
            break;
        int64_t m = c, end = c + 4 < n ? c + 4 : n;
        for (int64_t k = c + 1; k < end; k++)
            if (ev_less(&q->heap[k], &q->heap[m]))
                m = k;
        if (!ev_less(&q->heap[m], &last))
            break;
        q->heap[i] = q->heap[m];
        i = m;
    }
    if (n > 0)
        q->heap[i] = last;
    return top;
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
            if (back_push(q, *win_at(q, q->wn - 1)))
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
    if (q->wn < ZS_EVQ_AHEAD && q->n == 0) { /* after everything pending */
        *win_at(q, q->wn++) = v;
        return ZS_OK;
    }
    return back_push(q, v);
}

zs_ev zs_evq_pop(zs_evq *q)
{
    zs_ev v;
    if (q->wn == 0) /* not reached while the window is kept full */
        return back_pop(q);
    v = q->win[q->wh];
    q->wh = (q->wh + 1) & (ZS_EVQ_WCAP - 1);
    q->wn--;
    while (q->wn < ZS_EVQ_AHEAD && q->n > 0)
        *win_at(q, q->wn++) = back_pop(q);
    return v;
}
