/* Folding (exec/zs_fold.h, exec/zs_foldacct.h): which segments may fold
 * (components, misshapen channels and groups, repeats too short, timeline
 * layers), where a component folds (exact repeats, steady repeats, a
 * stream that does not repeat), the accounting replay of sleeping streams
 * against an unfolded rank, and the analytic backend folded against
 * unrolled on every planner's plan. */
#include <math.h>
#include <stdlib.h>

#include "zs_analytic.h"
#include "zs_foldacct.h"
#include "zs_fold.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

/* Four ranks, segments [prologue x1][body x8][epilogue x1]: in the body
 * rank 0 computes then sends to rank 1 (stream 1), rank 1 receives then
 * computes, ranks 2 and 3 compute then all-reduce. With `bad`, rank 1's
 * body repeats 16 times and receives once, rank 0 sends twice per
 * iteration: the same 16 messages, cut differently. */
static zs_schedule *toy(int bad)
{
    zs_schedule *s = zs_schedule_new(4);
    int g = zs_schedule_group(s, (int[]){2, 3}, 2);
    for (int r = 0; r < 4; r++) {
        zs_schedule_begin_segment(s, r, 1);
        zs_sched_elementwise(s, r, 0, "pro", 8, 1e-3, NULL, 0);
        zs_schedule_begin_segment(s, r, r == 1 && bad ? 16 : 8);
        zs_sched_marker(s, r, ZS_MARK_LAYER, 0);
        if (r == 0) {
            int64_t c = zs_sched_gemm(s, r, 0, "work", 1, 1, 1, 1e-3, NULL, 0);
            for (int k = 0; k < (bad ? 2 : 1); k++)
                zs_sched_send(s, r, 1, "x", 1, 5, 1e6, &c, 1);
        } else if (r == 1) {
            int64_t v = zs_sched_recv(s, r, 1, "x", 0, 5, 1e6, NULL, 0);
            zs_sched_gemm(s, r, 0, "work", 1, 1, 1, 1e-3, &v, 1);
        } else {
            int64_t c = zs_sched_gemm(s, r, 0, "work", 1, 1, 1, 1e-3, NULL, 0);
            zs_sched_coll(s, r, 0, "ar", g, ZS_COLL_ALLREDUCE, 1e6, &c, 1);
        }
        zs_schedule_begin_segment(s, r, 1);
        zs_sched_elementwise(s, r, 0, "epi", 8, 1e-3, NULL, 0);
    }
    zs_err e;
    ZS_ASSERT_OK(zs_schedule_check(s, &e), &e);
    return s;
}

static zs_fold *fold_of(const zs_schedule *s, const zs_fold_cfg *cfg)
{
    zs_fold *f = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_fold_new(s, cfg, &f, &e), &e);
    return f;
}

static void test_components(void)
{
    zs_schedule *s = toy(0);
    zs_fold *f = fold_of(s, NULL);
    zs_fold_stats st;
    zs_fold_get_stats(f, &st);
    ZS_ASSERT_INT_EQ(st.segments, 4);
    ZS_ASSERT_INT_EQ(st.candidates, 4);
    ZS_ASSERT_INT_EQ(st.shape, 0);
    for (int r = 0; r < 4; r++) {
        CU_ASSERT(!zs_fold_candidate(f, r, 0));
        CU_ASSERT(zs_fold_candidate(f, r, 1));
        CU_ASSERT(!zs_fold_candidate(f, r, 2));
    }
    /* markers count: rank 0's stream 0 runs the marker and the gemm */
    ZS_ASSERT_INT_EQ(zs_fold_ops_per_iter(f, 0, 1, 0), 2);
    ZS_ASSERT_INT_EQ(zs_fold_ops_per_iter(f, 0, 1, 1), 1);
    ZS_ASSERT_INT_EQ(zs_fold_ops_per_iter(f, 0, 0, 0), 0);
    zs_fold_free(f);
    /* off: nothing folds */
    zs_fold_cfg c;
    zs_fold_cfg_init(&c);
    c.on = 0;
    f = fold_of(s, &c);
    zs_fold_get_stats(f, &st);
    ZS_ASSERT_INT_EQ(st.candidates, 0);
    zs_fold_free(f);
    zs_schedule_free(s);
}

static void test_misshapen(void)
{
    zs_schedule *s = toy(1);
    zs_fold *f = fold_of(s, NULL);
    zs_fold_stats st;
    zs_fold_get_stats(f, &st);
    ZS_ASSERT_INT_EQ(st.segments, 4);
    ZS_ASSERT_INT_EQ(st.shape, 2); /* ranks 0 and 1 */
    ZS_ASSERT_INT_EQ(st.candidates, 2);
    CU_ASSERT(!zs_fold_candidate(f, 0, 1));
    CU_ASSERT(!zs_fold_candidate(f, 1, 1));
    CU_ASSERT(zs_fold_candidate(f, 2, 1));
    zs_fold_free(f);
    zs_schedule_free(s);
}

static void test_timeline_layers(void)
{
    zs_schedule *s = toy(0);
    zs_fold_cfg c;
    zs_fold_cfg_init(&c);
    c.keep_all = 1; /* a timeline of every layer */
    zs_fold *f = fold_of(s, &c);
    zs_fold_stats st;
    zs_fold_get_stats(f, &st);
    ZS_ASSERT_INT_EQ(st.candidates, 0);
    ZS_ASSERT_INT_EQ(st.timeline, 4);
    zs_fold_free(f);
    /* layer 6 of rank 2 shown, three equal periods asked (min_iters 4):
     * ranks 2 and 3 (one component) fold at 5 (rank 2 leads at 4, before
     * rank 3 has them), skip to 6, run 6, and 7, the last, runs anyway */
    zs_fold_cfg_init(&c);
    c.min_iters = 4;
    const uint8_t only2[4] = {0, 0, 1, 0};
    c.rank_on = only2;
    c.layer0 = c.layer1 = 6;
    f = fold_of(s, &c);
    zs_fold_step st5, st7;
    for (int it = 1; it <= 5; it++)
        for (int r = 2; r < 4; r++)
            zs_fold_cross(f, r, 1, 0, it, it * 1.0, &st5);
    ZS_ASSERT_INT_EQ(st5.skip, 1); /* 5, up to the shown layer 6 */
    for (int it = 6; it <= 7; it++)
        for (int r = 2; r < 4; r++)
            zs_fold_cross(f, r, 1, 0, it, it * 1.0, &st7);
    ZS_ASSERT_INT_EQ(st7.skip, 0); /* 7 is the last iteration: it runs */
    zs_fold_free(f);
    zs_schedule_free(s);
}

/* Boundary times k * period (+ wobble on odd k) for every stream of ranks
 * 0 and 1 (stream 1 first, as a stream that issues transfers runs ahead)
 * over iterations it0..it1; returns rank 0 stream 0's step at the last. */
static zs_fold_step drive(zs_fold *f, int it0, int it1, double period, double wobble)
{
    zs_fold_step st = {0};
    for (int it = it0; it <= it1; it++)
        for (int r = 0; r < 2; r++)
            for (int q = 1; q >= 0; q--) {
                zs_fold_step x;
                double t = it * period + (it % 2 ? wobble : 0) + 0.01 * q;
                zs_fold_cross(f, r, 1, q, it, t, &x);
                if (r == 0 && q == 0)
                    st = x;
            }
    return st;
}

static void test_decision(void)
{
    zs_schedule *s = toy(0);
    /* exact repeats (default: four equal periods): every stream has them at
     * boundary 5, but the leader reaches it before the others have: the
     * component folds at 6; iteration 6 replayed, the last (7) runs again */
    zs_fold *f = fold_of(s, NULL);
    zs_fold_step st = drive(f, 1, 5, 0.5, 0);
    ZS_ASSERT_INT_EQ(st.skip, 0);
    st = drive(f, 6, 6, 0.5, 0);
    ZS_ASSERT_INT_EQ(st.skip, 1);
    ZS_ASSERT_REL(st.sleep, 0.5, 1e-12);
    CU_ASSERT(st.ref);
    zs_fold_stats fs;
    zs_fold_get_stats(f, &fs);
    ZS_ASSERT_INT_EQ(fs.folded, 2);
    ZS_ASSERT_INT_EQ(fs.first_fold, 6);
    /* replayed: 1 iteration x (2 + 1 ops on rank 0, 1 + 2 on rank 1) */
    ZS_ASSERT_INT_EQ(fs.ops_replayed, 6);
    zs_fold_free(f);
    /* three equal periods when asked (min_iters 4): folds at 5, skips 5-6 */
    zs_fold_cfg c3;
    zs_fold_cfg_init(&c3);
    c3.min_iters = 4;
    f = fold_of(s, &c3);
    st = drive(f, 1, 4, 0.5, 0);
    ZS_ASSERT_INT_EQ(st.skip, 0);
    st = drive(f, 5, 5, 0.5, 0);
    ZS_ASSERT_INT_EQ(st.skip, 2);
    ZS_ASSERT_REL(st.sleep, 2 * 0.5, 1e-12);
    zs_fold_free(f);
    /* periods that alternate by 10%: never exact, steady only in steady mode */
    f = fold_of(s, NULL);
    for (int it = 1; it <= 7; it++) {
        st = drive(f, it, it, 0.5, 0.05);
        ZS_ASSERT_INT_EQ(st.skip, 0);
    }
    zs_fold_get_stats(f, &fs);
    ZS_ASSERT_INT_EQ(fs.folded, 0);
    ZS_ASSERT_INT_EQ(fs.unsteady, 4); /* ranks 2 and 3 were never driven */
    zs_fold_free(f);
    zs_fold_cfg c;
    zs_fold_cfg_init(&c);
    zs_fold_cfg_steady(&c);
    c.spread = 0.2;
    f = fold_of(s, &c);
    st = drive(f, 1, 5, 0.5, 0.05);
    ZS_ASSERT_INT_EQ(st.skip, 0); /* four periods seen by every stream only after 5 */
    st = drive(f, 6, 6, 0.5, 0.05);
    ZS_ASSERT_INT_EQ(st.skip, 1);
    ZS_ASSERT_REL(st.period, 0.5, 1e-9); /* the mean period */
    /* it sleeps until boundary 7 as its steady phase puts it, counted from
     * its boundary at the decision (5, odd: 2.55): 2.55 + 2 x 0.5 - 3.0 */
    ZS_ASSERT_REL(st.sleep, 0.55, 1e-9);
    zs_fold_free(f);
    zs_schedule_free(s);
}

/* One stream computes [0.1, 0.5) and a second communicates [0.4, 0.8) of
 * every 1-second period. Unfolded: zs_rank_acct over ten periods. Folded:
 * both sleep through periods 3-8 (the communicating stream from 0.05 s
 * later, as a lagging stream would) and the replay must give the same
 * split. */
static void test_facct_replay(void)
{
    zs_rank_acct ref = {0, 0, 0};
    zs_rank_result rr = {0};
    for (int k = 0; k < 10; k++) {
        zs_rank_acct_change(&ref, &rr, k + 0.1, 1, 0);
        zs_rank_acct_change(&ref, &rr, k + 0.4, 0, 1);
        zs_rank_acct_change(&ref, &rr, k + 0.5, -1, 0);
        zs_rank_acct_change(&ref, &rr, k + 0.8, 0, -1);
    }
    zs_rank_acct_close(&ref, &rr, 10.0);
    zs_foldacct a;
    zs_foldacct_init(&a);
    zs_rank_result fr = {0};
    zs_fold_step sc = {.ref = 1, .skip = 6, .period = 1.0, .sleep = 6.0},
                 sm = {.skip = 6, .period = 1.0, .sleep = 6.0};
    for (int k = 0; k < 10; k++) {
        if (k >= 1 && k <= 2) {
            zs_foldacct_boundary(&a, &fr, 0, k + 0.0);
            zs_foldacct_boundary(&a, &fr, 1, k + 0.05);
        }
        if (k == 3) {
            zs_foldacct_boundary(&a, &fr, 0, 3.0);
            zs_foldacct_sleep(&a, &fr, 0, 3.0, sc.period, sc.back);
            zs_foldacct_boundary(&a, &fr, 1, 3.05);
            zs_foldacct_sleep(&a, &fr, 1, 3.05, sm.period, sm.back);
            zs_foldacct_wake(&a, &fr, 0, 9.0);
            zs_foldacct_wake(&a, &fr, 1, 9.05);
            k = 8;
            continue;
        }
        zs_foldacct_change(&a, &fr, 0, k + 0.1, 1, 0);
        zs_foldacct_change(&a, &fr, 1, k + 0.4, 0, 1);
        zs_foldacct_change(&a, &fr, 0, k + 0.5, -1, 0);
        zs_foldacct_change(&a, &fr, 1, k + 0.8, 0, -1);
    }
    zs_foldacct_close(&a, &fr, 10.0);
    ZS_ASSERT_NEAR(fr.compute, rr.compute, 1e-9);
    ZS_ASSERT_NEAR(fr.exposed_comm, rr.exposed_comm, 1e-9);
    ZS_ASSERT_NEAR(fr.idle, rr.idle, 1e-9);
    ZS_ASSERT_NEAR(fr.comm, rr.comm, 1e-9);
    CU_ASSERT(!a.failed);
    zs_foldacct_free(&a);
}

/* m pulses of compute in period k of 1 s, one stream: on at k + (j + 0.25)
 * / m, off at k + (j + 0.75) / m. */
static void pulses(zs_foldacct *a, zs_rank_acct *ref, zs_rank_result *r, int k, int m)
{
    for (int j = 0; j < m; j++) {
        double on = k + (j + 0.25) / m, off = k + (j + 0.75) / m;
        if (a) {
            zs_foldacct_change(a, r, 0, on, 1, 0);
            zs_foldacct_change(a, r, 0, off, -1, 0);
        } else {
            zs_rank_acct_change(ref, r, on, 1, 0);
            zs_rank_acct_change(ref, r, off, -1, 0);
        }
    }
}

/* The log is a ring that grows: periods of 20 changes move its start
 * round it, then periods of 80 fill it while its start is past 0, so it
 * grows with its changes wrapped (in periods 6 and 8). The replay of
 * period 8 must give the unfolded split. */
static void test_facct_log_grows(void)
{
    zs_rank_acct ref = {0, 0, 0};
    zs_rank_result rr = {0};
    for (int k = 0; k < 18; k++)
        pulses(NULL, &ref, &rr, k, k < 6 ? 10 : 40);
    zs_rank_acct_close(&ref, &rr, 18.0);
    zs_foldacct a;
    zs_foldacct_init(&a);
    zs_rank_result fr = {0};
    for (int k = 0; k < 18; k++) {
        if (k >= 1)
            zs_foldacct_boundary(&a, &fr, 0, k + 0.0);
        if (k == 9) { /* replays period 8, in which the log grew wrapped */
            zs_foldacct_sleep(&a, &fr, 0, 9.0, 1.0, 0);
            zs_foldacct_wake(&a, &fr, 0, 15.0);
            k = 14;
            continue;
        }
        pulses(&a, NULL, &fr, k, k < 6 ? 10 : 40);
    }
    zs_foldacct_close(&a, &fr, 18.0);
    CU_ASSERT(a.st[0].caplog > 2 * 16 * ZS_FACCT_PER_LINE); /* it grew twice */
    ZS_ASSERT_NEAR(fr.compute, rr.compute, 1e-9);
    ZS_ASSERT_NEAR(fr.idle, rr.idle, 1e-9);
    CU_ASSERT(!a.failed);
    zs_foldacct_free(&a);
}

/* Every planner on 8 nodes: the analytic backend folded against unrolled.
 * Its transfers across nodes share NICs, so a pass repeats only as closely
 * as that sharing does: times within 0.5%, the mean shares within 3% of
 * the iteration (any rank's within 10%), compute and bytes exact. */
static void test_analytic_every_planner(void)
{
    for (int i = 0; i < zs_planner_count(); i++) {
        const zs_planner_ops *p = zs_planner_at(i);
        zs_test_env v;
        zs_test_env_init(&v, "llama-550m", 8, NULL);
        zs_batch *b = zs_batch_from_lengths(
            (int32_t[]){9000, 3000, 17000, 500, 1200, 30000, 6000, 800, 12000, 2500}, 10);
        zs_schedule *s = NULL;
        zs_plan_report rep;
        zs_err e;
        zs_err_clear(&e);
        int rc = zs_plan_batch(p, &v.ctx, b, 0, &s, &rep, &e);
        if (rc == ZS_EINPUT) { /* a layout this cluster cannot hold: not this test's */
            zs_batch_free(b);
            zs_cost_free(v.cost);
            continue;
        }
        ZS_ASSERT_OK(rc, &e);
        zs_result *u = NULL, *f = NULL;
        zs_analytic_opts uo, fo;
        zs_analytic_opts_init(&uo);
        zs_analytic_opts_init(&fo);
        uo.exec.fold = ZS_FOLD_OFF;
        ZS_ASSERT_OK(zs_analytic_run(s, v.cost, &uo, &u, &e), &e);
        ZS_ASSERT_OK(zs_analytic_run(s, v.cost, &fo, &f, &e), &e);
        fprintf(stderr, "  %-10s folded %lld of %lld ops, time %+.4f%%\n", p->name,
                (long long)f->ops_replayed, (long long)f->ops_executed,
                100 * (f->iter_time - u->iter_time) / u->iter_time);
        ZS_ASSERT_REL(f->iter_time, u->iter_time, 5e-3);
        ZS_ASSERT_INT_EQ(f->ops_executed, u->ops_executed);
        for (int c = 0; c < ZS_LINK_NCLASSES; c++)
            ZS_ASSERT_REL(f->link_bytes[c], u->link_bytes[c], 1e-9);
        double de = 0, di = 0, me = 0, mi = 0;
        for (int r = 0; r < s->nranks; r++) {
            ZS_ASSERT_REL(f->ranks[r].compute, u->ranks[r].compute, 1e-6);
            double dx = f->ranks[r].exposed_comm - u->ranks[r].exposed_comm;
            double dd = f->ranks[r].idle - u->ranks[r].idle;
            de = fmax(de, fabs(dx));
            di = fmax(di, fabs(dd));
            me += dx / s->nranks;
            mi += dd / s->nranks;
        }
        ZS_ASSERT_NEAR(me / u->iter_time, 0, 3e-2); /* the mean shares */
        ZS_ASSERT_NEAR(mi / u->iter_time, 0, 3e-2);
        ZS_ASSERT_NEAR(de / u->iter_time, 0, 1e-1); /* any rank */
        ZS_ASSERT_NEAR(di / u->iter_time, 0, 1e-1);
        zs_result_free(u);
        zs_result_free(f);
        zs_schedule_free(s);
        zs_batch_free(b);
        zs_cost_free(v.cost);
    }
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"components", test_components},
                                         {"misshapen", test_misshapen},
                                         {"timeline_layers", test_timeline_layers},
                                         {"decision", test_decision},
                                         {"facct_replay", test_facct_replay},
                                         {"facct_log_grows", test_facct_log_grows},
                                         {"analytic_every_planner", test_analytic_every_planner},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"fold", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
