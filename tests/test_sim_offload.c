/* Host copies (activation offloading) on the SimGrid backend: a copy runs
 * on a copy engine beside the GPU's compute instead of sharing the SMs
 * with it (two compute ops on two streams share them), counts as
 * communication, and a bytescale offload=on plan takes the same time on
 * SimGrid as on the analytic backend. */
#include <stdlib.h>

#include "zs_analytic.h"
#include "zs_planner.h"
#include "zs_sim.h"
#include "zs_test.h"
#include "zs_test_env.h"

static zs_result *simulate(const zs_schedule *s, const zs_cluster *c)
{
    zs_result *r = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_sim_run_forked(s, c, NULL, &r, &e), &e);
    return r;
}

/* One rank: a 1 s compute op and, on a second stream, a 1 s host copy or
 * (copy = 0) a second 1 s compute op. */
static zs_schedule *pair(int copy)
{
    zs_schedule *s = zs_schedule_new(8);
    int st = zs_schedule_add_stream(s, "offload");
    CU_ASSERT(zs_sched_elementwise(s, 0, ZS_STREAM_COMPUTE, "x", 1e9, 1.0, NULL, 0) >= 0);
    int64_t i = copy ? zs_sched_host_copy(s, 0, st, "offload-d2h", 1, 25.1e9, 1.0, NULL, 0)
                     : zs_sched_elementwise(s, 0, st, "y", 1e9, 1.0, NULL, 0);
    CU_ASSERT(i >= 0);
    return s;
}

static void test_copy_beside_compute(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, NULL);
    zs_schedule *s = pair(1);
    zs_result *r = simulate(s, &v.c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    ZS_ASSERT_REL(r->iter_time, 1.0, 1e-9);
    ZS_ASSERT_REL(r->ranks[0].compute, 1.0, 1e-9);
    ZS_ASSERT_REL(r->ranks[0].comm, 1.0, 1e-9);
    zs_result_free(r);
    zs_schedule_free(s);
    s = pair(0); /* two kernels share the SMs: 2 s */
    r = simulate(s, &v.c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    ZS_ASSERT_REL(r->iter_time, 2.0, 1e-9);
    zs_result_free(r);
    zs_schedule_free(s);
    zs_cost_free(v.cost);
}

/* Eight 150,000-token documents on 8 A800s with max_seqlen=100000 and
 * offloading: each whole on one GPU with copies; both backends agree. */
static void test_backends_agree(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-7b", 1, "max_seqlen=100000,offload=on");
    v.ctx.mem.recompute = ZS_RECOMPUTE_FULL;
    int32_t len[8] = {150000, 150000, 150000, 150000, 150000, 150000, 150000, 150000};
    zs_batch *b = zs_batch_from_lengths(len, 8);
    zs_plan_report rep;
    zs_schedule *s = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_plan_batch(zs_planner_find("bytescale"), &v.ctx, b, 1, &s, &rep, &e), &e);
    CU_ASSERT_FATAL(s && zs_schedule_has_host_copies(s));
    zs_result *ra = NULL;
    ZS_ASSERT_OK(zs_analytic_run(s, v.cost, NULL, &ra, &e), &e);
    zs_result *rs = simulate(s, &v.c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rs);
    printf("\n  simgrid %.3f ms, analytic %.3f ms\n", rs->iter_time * 1e3, ra->iter_time * 1e3);
    ZS_ASSERT_REL(rs->iter_time, ra->iter_time, 1e-3);
    ZS_ASSERT_REL(rs->ranks[0].compute, ra->ranks[0].compute, 1e-6);
    zs_result_free(ra);
    zs_result_free(rs);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"copy_beside_compute", test_copy_beside_compute},
                                         {"backends_agree", test_backends_agree},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"sim_offload", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
