/* The analytic backend's queued accounting (exec/zs_acctq.h): calls on
 * many ranks, interleaved, queued and applied in batches (the queue fills
 * and applies several times) give every rank the same figures to the bit
 * as the same calls made directly, rank by rank in their order. */
#include <stdint.h>
#include <string.h>

#include "zs_acctq.h"
#include "zs_test.h"

#define NRANKS 37
#define NST    3

static uint64_t rng = 0x2545f4914f6cdd1du;

static uint64_t next_rand(void)
{
    return zs_test_rng(&rng);
}

/* A rank as the backend keeps it: accounting and figures in one record. */
typedef struct rank_rec {
    zs_foldacct acct;
    zs_rank_result res;
} rank_rec;

/* What a rank's streams are doing, to make only calls the backend makes:
 * ends of ops that started, a sleep right after a boundary, a wake only
 * of a sleeping stream. */
typedef struct driver {
    double t[NRANKS];
    int comp[NRANKS][NST], comm[NRANKS][NST], asleep[NRANKS][NST];
} driver;

static void init_ranks(rank_rec *r)
{
    for (int k = 0; k < NRANKS; k++) {
        memset(&r[k], 0, sizeof r[k]);
        zs_foldacct_init(&r[k].acct);
        r[k].acct.nst = NST;
    }
}

/* One call on a random rank, made directly on `direct` and queued on q. */
static void step(driver *d, rank_rec *direct, zs_acctq *q)
{
    int k = (int)(next_rand() % NRANKS), s = (int)(next_rand() % NST);
    if (next_rand() % 3) /* some calls at the time of the last: they merge */
        d->t[k] += (double)(next_rand() % 1000) * 1e-4;
    double t = d->t[k];
    zs_foldacct *a = &direct[k].acct;
    zs_rank_result *r = &direct[k].res;
    uint64_t what = next_rand() % 16;
    if (d->asleep[k][s]) {
        if (what < 4) {
            zs_foldacct_wake(a, r, s, t);
            zs_acctq_wake(q, k, s, t);
            d->asleep[k][s] = 0;
        }
        return;
    }
    if (what == 0) {
        zs_foldacct_boundary(a, r, s, t);
        zs_acctq_boundary(q, k, s, t);
        if (next_rand() % 3 == 0) {
            double period = (double)(1 + next_rand() % 100) * 1e-3;
            int back = (int)(next_rand() % 3);
            zs_foldacct_sleep(a, r, s, t, period, back);
            zs_acctq_sleep(q, k, s, t, period, back);
            d->asleep[k][s] = 1;
        }
        return;
    }
    int comp = what & 1;
    int *n = comp ? &d->comp[k][s] : &d->comm[k][s];
    int delta = *n > 0 && next_rand() % 2 ? -1 : 1;
    *n += delta;
    zs_foldacct_change(a, r, s, t, comp ? delta : 0, comp ? 0 : delta);
    zs_acctq_change(q, k, s, t, comp ? delta : 0, comp ? 0 : delta);
}

static void test_same_figures(void)
{
    static rank_rec direct[NRANKS], queued[NRANKS];
    static driver d;
    memset(&d, 0, sizeof d);
    init_ranks(direct);
    init_ranks(queued);
    zs_acctq q;
    ZS_ASSERT_INT_EQ(
        zs_acctq_init(&q, NRANKS, 1, &queued[0].acct, &queued[0].res, sizeof(rank_rec)), ZS_OK);
    int64_t calls = 5 * q.cap + 7; /* several batches, one left to apply at the end */
    for (int64_t i = 0; i < calls; i++)
        step(&d, direct, &q);
    zs_acctq_flush(&q);
    int differ = 0;
    for (int k = 0; k < NRANKS; k++) {
        double end = d.t[k] + 1.0;
        zs_foldacct_close(&direct[k].acct, &direct[k].res, end);
        zs_foldacct_close(&queued[k].acct, &queued[k].res, end);
        differ += memcmp(&direct[k].res, &queued[k].res, sizeof(zs_rank_result)) != 0;
        differ += direct[k].acct.failed != queued[k].acct.failed;
        CU_ASSERT(direct[k].res.compute + direct[k].res.idle > 0);
        zs_foldacct_free(&direct[k].acct);
        zs_foldacct_free(&queued[k].acct);
    }
    ZS_ASSERT_INT_EQ(differ, 0);
    zs_acctq_free(&q);
}

static const zs_test_case cases[] = {{"same_figures", test_same_figures}, {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"acctq", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
