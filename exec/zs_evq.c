/* The analytic backend's event queue: see zs_evq_internal.h. */
#include "zs_evq_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((ZS_EVQ_WCAP & (ZS_EVQ_WCAP - 1)) == 0 && ZS_EVQ_WCAP > ZS_EVQ_AHEAD,
               "the window is a ring of a power of two with room to spare");

/* What a new event goes through on its way in, inlined into zs_evq_add so
 * that the event stays in registers until it is stored in place (see
 * zs_evq_add in zs_evq_internal.h). */
#if defined(__GNUC__)
#define PUSH_PATH static inline __attribute__((always_inline))
#else
#define PUSH_PATH static inline
#endif

static int ev_less(const zs_ev *a, const zs_ev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/* ev_less without a branch: which of a node's four children is earliest
 * is a coin toss, so as branches those compares are often mispredicted
 * (heap_down is an eighth of the backend's time at 8192 GPUs); a
 * tournament of masked selects has no branch to miss. */
static inline int64_t ev_less_nb(const zs_ev *a, const zs_ev *b)
{
    return (int64_t)(a->t < b->t) | ((int64_t)(a->t == b->t) & (int64_t)(a->seq < b->seq));
}

/* The earlier of events i and j of h, by index, without a branch (a mask,
 * not ?:, which GCC turned back into a branch). */
static inline int64_t ev_min_at(const zs_ev *h, int64_t i, int64_t j)
{
    return i ^ ((i ^ j) & -ev_less_nb(&h[j], &h[i]));
}

void zs_evq_init(zs_evq *q)
{
    memset(q, 0, sizeof *q);
    q->split = -INFINITY; /* every event far until the first pop */
}

void zs_evq_free(zs_evq *q)
{
    free(q->heap);
    free(q->far);
    free(q->run);
    zs_evq_init(q);
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

/* ---- behind the window -------------------------------------------------------- */

/* The near events (time below q->split) in a 4-ary heap: four children per
 * node halve the levels a pop walks down against a binary heap, for three
 * compares per level among children that sit side by side. */
PUSH_PATH void heap_up(zs_ev *h, int64_t i, zs_ev v)
{
    while (i > 0) {
        int64_t p = (i - 1) / 4;
        if (!ev_less(&v, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

/* Puts v at hole i of the heap of n events, down to where it belongs. */
static void heap_down(zs_ev *h, int64_t n, int64_t i, zs_ev v)
{
    for (;;) {
        int64_t c = 4 * i + 1;
        if (c >= n)
            break;
        int64_t m = c;
        if (c + 4 <= n) { /* a tournament: two independent compares, then one */
            m = ev_min_at(h, ev_min_at(h, c, c + 1), ev_min_at(h, c + 2, c + 3));
        } else {
            for (int64_t k = c + 1; k < n; k++)
                if (ev_less(&h[k], &h[m]))
                    m = k;
        }
        if (!ev_less(&h[m], &v))
            break;
        h[i] = h[m];
        i = m;
    }
    h[i] = v;
}

PUSH_PATH int back_push(zs_evq *q, const zs_ev *v)
{
    /* The heap has room for every event behind the window, so that moving
     * the far ones in (refill) cannot fail. */
    if (grow(&q->heap, &q->cap, q->n + q->nfar + 1))
        return ZS_ENOMEM;
    if (v->t < q->split) {
        heap_up(q->heap, q->n++, *v);
        return ZS_OK;
    }
    if (grow(&q->far, &q->capfar, q->nfar + 1))
        return ZS_ENOMEM;
    q->far[q->nfar++] = *v; /* far: unordered */
    return ZS_OK;
}

/* The time below which about an eighth of the far events lie, from a
 * sample (the order never depends on it, only the work). */
static double pick_split(const zs_evq *q)
{
    double s[64];
    int64_t ns = q->nfar < 64 ? q->nfar : 64;
    for (int64_t i = 0; i < ns; i++) {
        double t = q->far[i * q->nfar / ns].t;
        int64_t j = i;
        for (; j > 0 && s[j - 1] > t; j--)
            s[j] = s[j - 1];
        s[j] = t;
    }
    return s[ns / 8];
}

/* Moves the far events below `split` (all of them with `all`) into the
 * heap's array; returns the least far time seen (NaN aside). */
static double take_below(zs_evq *q, double split, int all)
{
    double tmin = INFINITY;
    int64_t keep = 0;
    for (int64_t k = 0; k < q->nfar; k++) {
        const zs_ev *e = &q->far[k];
        tmin = e->t < tmin ? e->t : tmin;
        if (all || e->t < split)
            q->heap[q->n++] = *e;
        else
            q->far[keep++] = *e;
    }
    q->nfar = keep;
    return tmin;
}

/* The heap is empty and far events wait: those below a new split become
 * near. When none is below the sampled time (it was the least), the ones
 * at the least time; when no time is finite, all of them. */
static void refill(zs_evq *q)
{
    double split = pick_split(q);
    double tmin = take_below(q, split, 0);
    if (q->n == 0) {
        split = tmin < INFINITY ? nextafter(tmin, INFINITY) : INFINITY;
        take_below(q, split, !(tmin < INFINITY));
    }
    q->split = split;
    for (int64_t i = (q->n - 2) / 4; q->n > 1 && i >= 0; i--)
        heap_down(q->heap, q->n, i, q->heap[i]);
}

/* ---- the run in order ---------------------------------------------------------- */

/* Appends v to the run when it comes after the run's last: 1 when it did,
 * 0 when v must go into the heap or the far events, ZS_ENOMEM (negative)
 * when the run cannot grow. A NaN time stays out (no time is before it,
 * so the events after it would join the run and wait behind it). */
PUSH_PATH int run_push(zs_evq *q, const zs_ev *v)
{
    if (v->t != v->t || (q->rn > q->rh && ev_less(v, &q->run[q->rn - 1])))
        return 0;
    if (q->rh > 0 && q->rh == q->rn)
        q->rh = q->rn = 0; /* drained: reuse from the start */
    if (q->rn == q->caprun && q->rh > 0) {
        memmove(q->run, q->run + q->rh, sizeof(zs_ev) * (size_t)(q->rn - q->rh));
        q->rn -= q->rh;
        q->rh = 0;
    }
    if (grow(&q->run, &q->caprun, q->rn + 1))
        return -ZS_ENOMEM;
    q->run[q->rn++] = *v;
    return 1;
}

/* Any event behind the window: the run, else the heap or the far events. */
PUSH_PATH int back_add(zs_evq *q, const zs_ev *v)
{
    int r = run_push(q, v);
    if (r != 0)
        return r < 0 ? ZS_ENOMEM : ZS_OK;
    return back_push(q, v);
}

/* The earliest event behind the window (one waits there). */
static zs_ev back_pop(zs_evq *q)
{
    if (q->rn > q->rh) { /* the run's first, or the heap's if earlier */
        if (q->n + q->nfar == 0)
            return q->run[q->rh++];
        if (q->n == 0)
            refill(q);
        if (ev_less(&q->run[q->rh], &q->heap[0]))
            return q->run[q->rh++];
    } else if (q->n == 0) {
        refill(q);
    }
    zs_ev top = q->heap[0];
    if (--q->n > 0)
        heap_down(q->heap, q->n, 0, q->heap[q->n]);
    return top;
}

/* ---- the window ------------------------------------------------------------- */

static zs_ev *win_at(zs_evq *q, int32_t i)
{
    return &q->win[(q->wh + i) & (ZS_EVQ_WCAP - 1)];
}

int zs_evq_add(zs_evq *q, double t, int64_t seq, int64_t op, int32_t rank, int8_t stream,
               int8_t comm)
{
    const zs_ev ev = {t, seq, op, rank, stream, comm}, *v = &ev;
    if (q->wn > 0 && ev_less(v, win_at(q, q->wn - 1))) {
        /* Before the window's last: in the window, in its place. */
        if (q->wn == ZS_EVQ_WCAP) {
            if (back_add(q, win_at(q, q->wn - 1)))
                return ZS_ENOMEM;
            q->wn--;
        }
        int32_t i = q->wn;
        for (; i > 0 && ev_less(v, win_at(q, i - 1)); i--)
            *win_at(q, i) = *win_at(q, i - 1);
        *win_at(q, i) = *v;
        q->wn++;
        return ZS_OK;
    }
    if (q->wn < ZS_EVQ_AHEAD && zs_evq_size(q) == q->wn) { /* after everything pending */
        *win_at(q, q->wn++) = *v;
        return ZS_OK;
    }
    return back_add(q, v);
}

zs_ev zs_evq_pop(zs_evq *q)
{
    if (q->wn == 0) /* not reached while the window is kept full */
        return back_pop(q);
    zs_ev v = q->win[q->wh];
    q->wh = (q->wh + 1) & (ZS_EVQ_WCAP - 1);
    q->wn--;
    while (q->wn < ZS_EVQ_AHEAD && zs_evq_size(q) > q->wn)
        *win_at(q, q->wn++) = back_pop(q);
    return v;
}
