/* core/zs_result: the sentence on why the slowest rank was slowest is
 * read from its whole breakdown (issue 35 item 4). Before, the largest of
 * three terms named it, so a rank that computed 62% of its time, less
 * than the mean rank, and idled 34% was "compute-bound". */
#include <string.h>

#include "zs_result.h"
#include "zs_test.h"

/* Two ranks: the first finishes last with this breakdown (ms); the other
 * computes other_c ms and ends earlier. */
static zs_result *two_ranks(double c, double x, double i, double other_c)
{
    zs_result *r = zs_result_new(2, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    r->ranks[0] = (zs_rank_result){0};
    r->ranks[0].compute = c * 1e-3;
    r->ranks[0].exposed_comm = x * 1e-3;
    r->ranks[0].idle = i * 1e-3;
    r->ranks[0].end = (c + x + i) * 1e-3;
    r->ranks[1] = (zs_rank_result){0};
    r->ranks[1].compute = other_c * 1e-3;
    r->ranks[1].end = other_c * 1e-3 * 0.99;
    zs_result_finish(r);
    ZS_ASSERT_INT_EQ(r->slowest_rank, 0);
    return r;
}

static void test_issue_case(void)
{
    /* the issue's hybrid-dp on dgx-h100 with fa3: mean compute 1689.695 ms */
    zs_result *r = two_ranks(1470.744, 81.477, 810.859, 2 * 1689.695 - 1470.744);
    ZS_ASSERT_STR_CONTAINS(r->slowest_why, "waiting on other ranks (idle 34% of its time; it "
                                           "computes less than the mean rank: imbalance)");
    ZS_ASSERT_STR_CONTAINS(r->slowest_why, "mean over ranks 1689.695 ms");
    CU_ASSERT(strstr(r->slowest_why, "compute-bound") == NULL);
    zs_result_free(r);
}

static void test_labels(void)
{
    /* compute 93%: compute-bound */
    zs_result *r = two_ranks(5791.136, 230.090, 22.708, 5500);
    ZS_ASSERT_STR_CONTAINS(r->slowest_why, "compute-bound (compute 96% of its time)");
    zs_result_free(r);
    /* compute 70%, exposed 29%: the old rule said compute-bound */
    r = two_ranks(5455.643, 2274.542, 49.307, 5300);
    ZS_ASSERT_STR_CONTAINS(r->slowest_why,
                           "communication-bound (exposed communication 29% of its time)");
    zs_result_free(r);
    /* exposed larger than compute */
    r = two_ranks(6647.971, 17766.083, 509.075, 6500);
    ZS_ASSERT_STR_CONTAINS(r->slowest_why,
                           "communication-bound (exposed communication 71% of its time)");
    zs_result_free(r);
    /* idle, computing more than the mean: no imbalance clause */
    r = two_ranks(600, 10, 390, 400);
    ZS_ASSERT_STR_CONTAINS(r->slowest_why, "waiting on other ranks (idle 39% of its time)");
    CU_ASSERT(strstr(r->slowest_why, "imbalance") == NULL);
    zs_result_free(r);
    /* exactly at the bound: compute-bound */
    r = two_ranks(750, 150, 100, 700);
    ZS_ASSERT_STR_CONTAINS(r->slowest_why, "compute-bound (compute 75% of its time)");
    zs_result_free(r);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"issue_case", test_issue_case}, {"labels", test_labels}, {NULL, NULL}};
    static const zs_test_suite suites[] = {{"result_why", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
