/* The analytic backend's event queue (zs_evq): events come out in the order
 * (time, sequence) whatever the mix of pushes and pops: equal times, times
 * far apart, pushes before the window's last event (also back in time),
 * zero and negative times, pushes in order with some out of it, times that
 * bunch in a sorted batch; peek shows the events pop returns next. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zs_evq_internal.h"
#include "zs_test.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The reference: the pending events in an array, the least found by a scan. */
typedef struct ref {
    zs_ev v[4096];
    int n;
} ref;

static int ref_min(const ref *r)
{
    int m = 0;
    for (int i = 1; i < r->n; i++)
        if (r->v[i].t < r->v[m].t || (r->v[i].t == r->v[m].t && r->v[i].seq < r->v[m].seq))
            m = i;
    return m;
}

/* A time for the next push, `now` the last popped: mostly later, some equal,
 * some (when back is set) earlier. */
static double pick_time(double now, int back)
{
    uint64_t k = next_rand() % 16;
    if (k < 3)
        return now; /* ties with the present */
    if (k < 5)
        return now + (double)(next_rand() % 4); /* small integers: many equal times */
    if (back && k == 5)
        return now - (double)(next_rand() % 1000) * 1e-3; /* back in time */
    if (k == 6)
        return now + (double)(next_rand() % 1000) * 1e6; /* far ahead */
    return now + (double)(next_rand() % 100000) * 1e-6;
}

static void run_mix(int back, int npush)
{
    zs_evq q;
    zs_evq_init(&q);
    static ref r;
    r.n = 0;
    int64_t seq = 0;
    double now = back ? -5 : 0;
    int bad = 0, badpeek = 0, pushed = 0;
    int64_t maxheap = 0, maxfar = 0;
    while (pushed < npush || r.n > 0) {
        int burst = (int)(next_rand() % 3);
        for (int i = 0; i < burst && pushed < npush && r.n < 4096; i++, pushed++) {
            zs_ev v = {pick_time(now, back), seq++, pushed, 0, 0, 0};
            CU_ASSERT_EQUAL_FATAL(zs_evq_push(&q, &v), ZS_OK);
            r.v[r.n++] = v;
        }
        ZS_ASSERT_INT_EQ((int)zs_evq_size(&q), r.n);
        if (r.n == 0)
            continue;
        int64_t near = q.n + (q.sn - q.sh); /* the heap and the sorted batch */
        maxheap = near > maxheap ? near : maxheap;
        maxfar = q.nfar > maxfar ? q.nfar : maxfar;
        const zs_ev *pk = zs_evq_peek(&q, 0);
        zs_ev got = zs_evq_pop(&q);
        int m = ref_min(&r);
        bad += got.seq != r.v[m].seq || got.t != r.v[m].t || got.op != r.v[m].op;
        badpeek += !pk || pk->seq != got.seq;
        now = got.t;
        r.v[m] = r.v[--r.n];
    }
    ZS_ASSERT_INT_EQ(bad, 0);
    ZS_ASSERT_INT_EQ(badpeek, 0);
    CU_ASSERT(maxheap > 10); /* the mix reached the near events behind the window */
    CU_ASSERT(maxfar > 100); /* and the far events */
    ZS_ASSERT_INT_EQ((int)zs_evq_size(&q), 0);
    zs_evq_free(&q);
}

static void test_forward(void)
{
    run_mix(0, 200000);
}

static void test_back_in_time(void)
{
    run_mix(1, 200000);
}

/* Many events at one time, pushed before any pop: they leave in sequence
 * order; peek shows the first ZS_EVQ_AHEAD - 1 in order. */
static void test_ties_and_peek(void)
{
    zs_evq q;
    zs_evq_init(&q);
    for (int i = 0; i < 1000; i++) {
        zs_ev v = {i % 2 ? 1.0 : -0.0, i, i, 0, 0, 0};
        CU_ASSERT_EQUAL_FATAL(zs_evq_push(&q, &v), ZS_OK);
    }
    int bad = 0;
    for (int i = 0; i < ZS_EVQ_AHEAD - 1; i++) {
        const zs_ev *p = zs_evq_peek(&q, i);
        bad += !p || p->seq != 2 * i; /* the zeros first (-0 counts as 0) */
    }
    zs_ev v;
    for (int i = 0; i < 1000; i++) {
        v = zs_evq_pop(&q);
        bad += v.seq != (i < 500 ? 2 * i : 2 * (i - 500) + 1);
    }
    ZS_ASSERT_INT_EQ(bad, 0);
    CU_ASSERT_PTR_NULL(zs_evq_peek(&q, 0));
    zs_evq_free(&q);
}

/* Pushes in order (a dry run's: mostly at the time of the last pop, some
 * later) wait in the run; now and then one comes before the last pushed
 * and goes into the heap or the far events beside the run: the order
 * holds throughout. */
static void test_in_order_run(void)
{
    zs_evq q;
    zs_evq_init(&q);
    static ref r;
    r.n = 0;
    int64_t seq = 0, maxrun = 0;
    double now = 0, last = 0;
    int bad = 0, pushed = 0;
    while (pushed < 100000 || r.n > 0) {
        int burst = (int)(next_rand() % 4);
        for (int i = 0; i < burst && pushed < 100000 && r.n < 4096; i++, pushed++) {
            uint64_t k = next_rand() % 200;
            double t = k == 0    ? now + (last - now) * 0.5 /* before the last pushed */
                       : k < 150 ? last
                                 : last + (double)(next_rand() % 8);
            last = t > last ? t : last;
            zs_ev v = {t, seq++, pushed, 0, 0, 0};
            CU_ASSERT_EQUAL_FATAL(zs_evq_push(&q, &v), ZS_OK);
            r.v[r.n++] = v;
        }
        maxrun = q.rn - q.rh > maxrun ? q.rn - q.rh : maxrun;
        ZS_ASSERT_INT_EQ((int)zs_evq_size(&q), r.n);
        if (r.n == 0)
            continue;
        zs_ev got = zs_evq_pop(&q);
        int m = ref_min(&r);
        bad += got.seq != r.v[m].seq || got.t != r.v[m].t;
        now = got.t;
        r.v[m] = r.v[--r.n];
    }
    ZS_ASSERT_INT_EQ(bad, 0);
    CU_ASSERT(maxrun > 100); /* the run held events */
    ZS_ASSERT_INT_EQ((int)zs_evq_size(&q), 0);
    zs_evq_free(&q);
}

/* A batch whose times bunch: a few hundred far before the rest, in
 * decreasing order (one bucket, each out of order: the insertion sort
 * gives up and a merge sort orders them), equal times among the rest. */
static void test_bunched_batch(void)
{
    zs_evq q;
    zs_evq_init(&q);
    static ref r;
    r.n = 0;
    for (int i = 0; i < 2000; i++) {
        double t = i < 300 ? -1e12 - (double)i : (double)(next_rand() % 1000);
        zs_ev v = {t, i, i, 0, 0, 0};
        CU_ASSERT_EQUAL_FATAL(zs_evq_push(&q, &v), ZS_OK);
        r.v[r.n++] = v;
    }
    int bad = 0;
    while (r.n > 0) {
        zs_ev got = zs_evq_pop(&q);
        int m = ref_min(&r);
        bad += got.seq != r.v[m].seq || got.t != r.v[m].t;
        r.v[m] = r.v[--r.n];
    }
    ZS_ASSERT_INT_EQ(bad, 0);
    ZS_ASSERT_INT_EQ((int)zs_evq_size(&q), 0);
    zs_evq_free(&q);
}

static const zs_test_case cases[] = {
    {"forward", test_forward},           {"bunched_batch", test_bunched_batch},
    {"back_in_time", test_back_in_time}, {"ties_and_peek", test_ties_and_peek},
    {"in_order_run", test_in_order_run}, {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"evq", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
