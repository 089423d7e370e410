/* Shared NICs in the analytic backend: the sharing module by hand
 * (speeds, rescheduling, generations), then whole schedules: two GPUs
 * behind one NIC sending across nodes take twice as long as two behind
 * different NICs, and an all-to-all across nodes is priced by its busiest
 * NIC. */
#include <stdlib.h>

#include "zs_analytic.h"
#include "zs_linkshare_internal.h"
#include "zs_test.h"

static void test_share_hand(void)
{
    double cap[2] = {10, 10};
    zs_linkshare *s = zs_linkshare_new(2, cap);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int r0 = 0, r1 = 1;
    double full = 10; /* bytes a 1 s item puts on a 10 B/s resource */
    int32_t a, b, c;
    const int32_t *ch;
    /* Alone: as fast as its own time says. */
    ZS_ASSERT_OK(zs_linkshare_add(s, 0, 1, &r0, &full, 1, &a), NULL);
    ZS_ASSERT_NEAR(zs_linkshare_finish(s, a), 1, 1e-12);
    ZS_ASSERT_INT_EQ(zs_linkshare_changed(s, &ch), 1);
    uint32_t ga = zs_linkshare_gen(s, a);
    /* A second full-rate item at 0.5 s: both run at half speed. A has 0.5 s
     * of work left, so it ends at 1.5 s; B then has 0.5 s left at full
     * speed: it ends at 2 s. */
    ZS_ASSERT_OK(zs_linkshare_add(s, 0.5, 1, &r0, &full, 1, &b), NULL);
    ZS_ASSERT_INT_EQ(zs_linkshare_changed(s, &ch), 2);
    ZS_ASSERT_NEAR(zs_linkshare_speed(s, a), 0.5, 1e-12);
    ZS_ASSERT_NEAR(zs_linkshare_finish(s, a), 1.5, 1e-12);
    CU_ASSERT(zs_linkshare_gen(s, a) != ga); /* the completion at 1 s is stale */
    zs_linkshare_remove(s, 1.5, a);
    ZS_ASSERT_INT_EQ(zs_linkshare_changed(s, &ch), 1);
    ZS_ASSERT_INT_EQ(ch[0], b);
    ZS_ASSERT_NEAR(zs_linkshare_finish(s, b), 2.0, 1e-12);
    /* An item that asks for half the resource does not slow B down (the
     * demand stays within the capacity); its id is A's, its generation new. */
    double half = 5;
    ZS_ASSERT_OK(zs_linkshare_add(s, 1.5, 1, &r0, &half, 1, &c), NULL);
    ZS_ASSERT_INT_EQ(c, a);
    CU_ASSERT(zs_linkshare_gen(s, c) > ga);
    ZS_ASSERT_NEAR(zs_linkshare_speed(s, b), 1.0 / 1.5, 1e-12); /* 15 B/s asked of 10 */
    /* Two resources: the slowest share wins. */
    int both[2] = {r0, r1};
    double ld[2] = {10, 40}; /* r1 asked 4x its capacity */
    int32_t d;
    ZS_ASSERT_OK(zs_linkshare_add(s, 1.5, 1, both, ld, 2, &d), NULL);
    ZS_ASSERT_NEAR(zs_linkshare_speed(s, d), 0.25, 1e-12);
    zs_linkshare_free(s);
    zs_linkshare_free(NULL);
}

/* Ranks 0 and 1 (one NIC on cluster-a) or 0 and 2 (two NICs) send 1 GB
 * each to node 1 at the same time. */
static double two_senders(const zs_cost *c, int second)
{
    zs_schedule *s = zs_schedule_new(16);
    int src[2] = {0, second}, dst[2] = {8, 8 + second};
    for (int i = 0; i < 2; i++) {
        zs_sched_send(s, src[i], 1, "x", dst[i], 0, 1e9, NULL, 0);
        zs_sched_recv(s, dst[i], 1, "x", src[i], 0, 1e9, NULL, 0);
    }
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, c, NULL, &r, &e), &e);
    double t = r->iter_time;
    zs_result_free(r);
    zs_schedule_free(s);
    return t;
}

static void test_analytic_shares_nics(void)
{
    zs_model m;
    zs_cluster cl;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 2, &cl, &e), &e);
    zs_cost *c = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    /* Alone: 6 us + 1 GB / 25 GB/s = 40.006 ms. Behind one NIC the two
     * share 25 GB/s: both end after 2 GB at 25 GB/s (the latency, a share
     * of each transfer's time, is stretched too: within 0.1%). */
    double alone = 6e-6 + 1e9 / 25e9;
    ZS_ASSERT_REL(two_senders(c, 2), alone, 1e-9);
    ZS_ASSERT_REL(two_senders(c, 1), 2e9 / 25e9, 1e-3);

    /* An all-to-all over the 16 GPUs, 64 MB per rank: each GPU sends half
     * its buffer to the other node and two GPUs share each NIC, so a NIC
     * carries 64 MB each way. NCCL's model (grouped sends): one step of 8.4
     * + 3.4 + 14 us, and each GPU half a NIC at NCCL's figure for it (25
     * GB/s capped by PCIe Gen4's 24). The cost model prices that, and the
     * backend (which shares the NICs of its flows) runs it in that time. */
    int all[16];
    for (int i = 0; i < 16; i++)
        all[i] = i;
    double B = 64e6, want = 25.8e-6 + B / 2 / (4 * 24e9 / 8);
    ZS_ASSERT_REL(zs_cost_collective(c, ZS_COLL_ALLTOALL, all, 16, B), want, 1e-9);
    zs_schedule *s = zs_schedule_new(16);
    int g = zs_schedule_group(s, all, 16);
    for (int r = 0; r < 16; r++)
        zs_sched_coll(s, r, 1, "a2a", g, ZS_COLL_ALLTOALL, B, NULL, 0);
    zs_result *r = NULL;
    ZS_ASSERT_OK(zs_analytic_run(s, c, NULL, &r, &e), &e);
    ZS_ASSERT_REL(r->iter_time, want, 1e-9);
    /* The NICs are busy for what they carried, never more than the run. */
    for (int k = 0; k < 8; k++)
        CU_ASSERT(r->nic_busy[k] <= r->iter_time * (1 + 1e-9));
    zs_result_free(r);
    zs_schedule_free(s);
    zs_cost_free(c);
}

/* Items on many resources keep their smallest share as others come and
 * go (zs_linkshare.c): random starts and ends against the minimum computed
 * from scratch (demands summed here). */
static void test_share_big_items(void)
{
    enum { NRES = 40, NIT = 200 };
    double cap[NRES];
    for (int r = 0; r < NRES; r++)
        cap[r] = 5 + r % 7;
    zs_linkshare *s = zs_linkshare_new(NRES, cap);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int res[NIT][NRES], nres[NIT], on[NIT] = {0};
    double load[NIT][NRES], T[NIT];
    int32_t id[NIT];
    unsigned seed = 12345;
    int bad = 0;
    for (int step = 0; step < 4000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)(seed >> 8) % NIT;
        double now = step * 0.001;
        if (on[i]) {
            zs_linkshare_remove(s, now, id[i]);
            on[i] = 0;
        } else {
            /* One in eight spans 20-39 resources (a collective), the
             * rest one or two (a transfer). */
            int big = (seed >> 20) % 8 == 0;
            nres[i] = big ? 20 + (int)(seed >> 3) % 20 : 1 + (int)(seed >> 5) % 2;
            int first = (int)(seed >> 11) % NRES;
            for (int k = 0; k < nres[i]; k++) {
                res[i][k] = (first + k * 3) % NRES;
                load[i][k] = 1 + (k + step) % 5;
            }
            if (nres[i] == 2 && res[i][0] == res[i][1])
                nres[i] = 1;
            T[i] = 0.5 + (step % 3);
            ZS_ASSERT_OK(zs_linkshare_add(s, now, T[i], res[i], load[i], nres[i], &id[i]), NULL);
            on[i] = 1;
        }
        double demand[NRES] = {0};
        for (int j = 0; j < NIT; j++)
            for (int k = 0; on[j] && k < nres[j]; k++)
                demand[res[j][k]] += load[j][k] / T[j];
        for (int j = 0; j < NIT; j++) {
            if (!on[j])
                continue;
            double u = 1;
            for (int k = 0; k < nres[j]; k++) {
                double d = demand[res[j][k]], c = cap[res[j][k]];
                if (d > c && c / d < u)
                    u = c / d;
            }
            double got = zs_linkshare_speed(s, id[j]);
            bad += got < u * (1 - 1e-9) || got > u * (1 + 1e-9);
        }
    }
    ZS_ASSERT_INT_EQ(bad, 0);
    zs_linkshare_free(s);
}

static const zs_test_case cases[] = {{"share_hand", test_share_hand},
                                     {"share_big_items", test_share_big_items},
                                     {"analytic_shares_nics", test_analytic_shares_nics},
                                     {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"share", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
