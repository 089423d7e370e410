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
    free(q->srt);
    free(q->tmp);
    free(q->cnt);
    zs_evq_init(q);
}

/* A capacity for `need` events grown from cap: from 64, doubled. */
static int64_t doubled(int64_t cap, int64_t need)
{
    int64_t nc = cap ? cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    return nc;
}

static int grow(zs_ev **v, int64_t *cap, int64_t need)
{
    if (need <= *cap)
        return ZS_OK;
    int64_t nc = doubled(*cap, need);
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

/* Room for `need` events in the batch, its scratch and the heap (refill
 * moves every far event into one of them, and must not fail). */
static int grow_batch(zs_evq *q, int64_t need)
{
    int64_t nc = doubled(q->capb, need);
    if (grow(&q->heap, &q->cap, nc))
        return ZS_ENOMEM;
    zs_ev *s = realloc(q->srt, sizeof(zs_ev) * (size_t)nc);
    if (!s)
        return ZS_ENOMEM;
    q->srt = s;
    zs_ev *t = realloc(q->tmp, sizeof(zs_ev) * (size_t)nc);
    if (!t)
        return ZS_ENOMEM;
    q->tmp = t;
    int64_t *c = realloc(q->cnt, sizeof(int64_t) * (size_t)(nc + 1));
    if (!c)
        return ZS_ENOMEM;
    q->cnt = c;
    q->capb = nc;
    return ZS_OK;
}

PUSH_PATH int back_push(zs_evq *q, const zs_ev *v)
{
    if (v->t < q->split) {
        if (grow(&q->heap, &q->cap, q->n + 1))
            return ZS_ENOMEM;
        heap_up(q->heap, q->n++, *v);
        return ZS_OK;
    }
    if ((q->nfar + 1 > q->capb && grow_batch(q, q->nfar + 1)) ||
        grow(&q->far, &q->capfar, q->nfar + 1))
        return ZS_ENOMEM;
    q->far[q->nfar++] = *v; /* far: unordered */
    return ZS_OK;
}

/* The time below which about an eighth of the far events lie, from a
 * sample (the order never depends on it, only the work): the sample's
 * (ns / 8)-th least, kept among the least ns / 8 + 1 seen (sorting the
 * whole sample was 3% of the WLB point's small runs). */
static double pick_split(const zs_evq *q)
{
    double s[64 / 8 + 1];
    int64_t ns = q->nfar < 64 ? q->nfar : 64, k = ns / 8, m = 0;
    for (int64_t i = 0; i < ns; i++) {
        double t = q->far[i * q->nfar / ns].t;
        if (m > k && !(t < s[k]))
            continue;
        int64_t j = m > k ? k : m++; /* full: the largest kept drops out */
        for (; j > 0 && s[j - 1] > t; j--)
            s[j] = s[j - 1];
        s[j] = t;
    }
    return s[k];
}

/* Moves the far events below `split` (all of them with `all`) to
 * to[*n ..); returns the least far time seen (NaN aside). */
static double take_below(zs_evq *q, double split, int all, zs_ev *to, int64_t *n)
{
    double tmin = INFINITY;
    int64_t keep = 0;
    for (int64_t k = 0; k < q->nfar; k++) {
        const zs_ev *e = &q->far[k];
        tmin = e->t < tmin ? e->t : tmin;
        if (all || e->t < split)
            to[(*n)++] = *e;
        else
            q->far[keep++] = *e;
    }
    q->nfar = keep;
    return tmin;
}

/* Insertion sort of a[0 .. n); 0 when it gave up after `budget` moves
 * (a is then some order of the same events). */
static int insertion_sort(zs_ev *a, int64_t n, int64_t budget)
{
    for (int64_t i = 1; i < n; i++) {
        if (!ev_less(&a[i], &a[i - 1]))
            continue;
        zs_ev v = a[i];
        int64_t j = i;
        do {
            a[j] = a[j - 1];
            j--;
        } while (j > 0 && ev_less(&v, &a[j - 1]) && --budget > 0);
        a[j] = v;
        if (budget <= 0)
            return 0;
    }
    return 1;
}

/* Merge sort of a[0 .. n) with scratch b; returns the array that holds
 * the result (a or b). */
static zs_ev *merge_sort(zs_ev *a, zs_ev *b, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                b[k++] = ev_less(&a[j], &a[i]) ? a[j++] : a[i++];
            while (i < mid)
                b[k++] = a[i++];
            while (j < hi)
                b[k++] = a[j++];
        }
        zs_ev *t = a;
        a = b;
        b = t;
    }
    return a;
}

/* Spreads the batch (finite times) over as many buckets as it has events,
 * by time: a bucket's events all come before the next bucket's (the
 * bucket of a time never decreases as the time grows), so what is left
 * out of order is inside buckets, a few events each unless times bunch. */
static void bucket_pass(zs_evq *q)
{
    int64_t n = q->sn;
    const zs_ev *a = q->srt;
    double lo = a[0].t, hi = a[0].t;
    for (int64_t i = 1; i < n; i++) {
        lo = a[i].t < lo ? a[i].t : lo;
        hi = a[i].t > hi ? a[i].t : hi;
    }
    double scale = (double)(n - 1) / (hi - lo);
    if (!(hi > lo) || !(scale > 0) || !(scale < INFINITY))
        return; /* one time, or a range past doubles: the sorts below */
    int64_t *cnt = q->cnt;
    memset(cnt, 0, sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (int64_t)((a[i].t - lo) * scale);
        cnt[(k < n - 1 ? k : n - 1) + 1]++;
    }
    for (int64_t k = 1; k < n; k++)
        cnt[k] += cnt[k - 1];
    zs_ev *b = q->tmp;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (int64_t)((a[i].t - lo) * scale);
        b[cnt[k < n - 1 ? k : n - 1]++] = a[i];
    }
    q->tmp = q->srt;
    q->srt = b;
}

/* Sorts the batch srt[0 .. sn): buckets, then an insertion sort that only
 * moves events inside them (a merge sort when that takes too long). */
static void sort_batch(zs_evq *q)
{
    int64_t n = q->sn;
    if (n < 2)
        return;
    if (n > 16)
        bucket_pass(q);
    if (insertion_sort(q->srt, n, 4 * n + 64))
        return;
    zs_ev *s = merge_sort(q->srt, q->tmp, n);
    if (s != q->srt) {
        q->tmp = q->srt;
        q->srt = s;
    }
}

/* Nothing near waits and far events do: those below a new split become
 * the batch. When none is below the sampled time (it was the least), the
 * ones at the least time; when no time is finite, all of them, into the
 * heap (NaN has no place in a sort by time). */
static void refill(zs_evq *q)
{
    double split = pick_split(q);
    q->sh = q->sn = 0;
    double tmin = take_below(q, split, 0, q->srt, &q->sn);
    if (q->sn == 0 && !(tmin < INFINITY)) {
        take_below(q, INFINITY, 1, q->heap, &q->n);
        q->split = INFINITY;
        for (int64_t i = (q->n - 2) / 4; q->n > 1 && i >= 0; i--)
            heap_down(q->heap, q->n, i, q->heap[i]);
        return;
    }
    if (q->sn == 0) {
        split = nextafter(tmin, INFINITY);
        take_below(q, split, 0, q->srt, &q->sn);
    }
    q->split = split;
    sort_batch(q);
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

/* The earliest event behind the window (one waits there): the earliest of
 * the batch's first, the heap's top and the run's first. */
static zs_ev back_pop(zs_evq *q)
{
    if (q->n == 0 && q->sh == q->sn && q->nfar > 0)
        refill(q);
    const zs_ev *m = q->sh < q->sn ? &q->srt[q->sh] : NULL;
    int heap = q->n > 0 && (!m || ev_less(&q->heap[0], m));
    if (heap)
        m = &q->heap[0];
    if (q->rn > q->rh && (!m || ev_less(&q->run[q->rh], m)))
        return q->run[q->rh++];
    if (!heap)
        return q->srt[q->sh++];
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
