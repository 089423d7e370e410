/* Validation scoring (models/zs_calib_score.h) on small hand-checked sets:
 * hold-out terms and which points they keep out of the fit, and the
 * summary rows (per class, held-out first, then the accuracy targets). */
#include <stdlib.h>

#include "zs_calib_score.h"
#include "zs_test.h"

static zs_meas coll(const char *op, int gpus, double bytes)
{
    zs_meas m;
    memset(&m, 0, sizeof m);
    snprintf(m.op, sizeof m.op, "%s", op);
    m.gpus = gpus;
    m.bytes = bytes;
    m.seconds = 1e-3;
    return m;
}

static void test_holdout(void)
{
    zs_holdout h;
    memset(&h, 0, sizeof h);
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_holdout_add(&h, "gpus=2+4", &e), &e);
    ZS_ASSERT_OK(zs_holdout_add(&h, "bytes<=8M", &e), &e);
    ZS_ASSERT_INT_EQ(h.nterms, 2);
    ZS_ASSERT_INT_EQ(h.t[0].ngpus, 2);
    ZS_ASSERT_REL(h.t[1].limit, 8.0 * 1048576, 0);
    ZS_ASSERT_INT_EQ(zs_holdout_add(&h, "gpus=x", &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.where, "--holdout");
    ZS_ASSERT_INT_EQ(zs_holdout_add(&h, "bytes<=0", &e), ZS_EUSAGE);
    ZS_ASSERT_INT_EQ(zs_holdout_add(&h, "tokens<=5", &e), ZS_EUSAGE);
    ZS_ASSERT_INT_EQ(h.nterms, 2); /* unchanged by the bad ones */
    zs_meas in = coll("all-reduce", 4, 1e6), gpus8 = coll("all-reduce", 8, 1e6),
            big = coll("all-gather", 2, 64e6), attn = coll("attn_fwd", 1, 0);
    attn.seq_len = 100000;
    ZS_ASSERT_INT_EQ(zs_holdout_held(&in, &h), 0);
    ZS_ASSERT_INT_EQ(zs_holdout_held(&gpus8, &h), 1);
    ZS_ASSERT_INT_EQ(zs_holdout_held(&big, &h), 1);
    ZS_ASSERT_INT_EQ(zs_holdout_held(&attn, &h), 0); /* no attention term */
    /* Node counts: fit on one node, hold the two-node points out. */
    zs_holdout hn;
    memset(&hn, 0, sizeof hn);
    ZS_ASSERT_OK(zs_holdout_add(&hn, "nodes=1", &e), &e);
    zs_meas two = coll("all-reduce", 16, 1e6);
    two.nodes = 2;
    ZS_ASSERT_INT_EQ(zs_holdout_held(&in, &hn), 0);
    ZS_ASSERT_INT_EQ(zs_holdout_held(&two, &hn), 1);
    ZS_ASSERT_INT_EQ(zs_holdout_add(&hn, "nodes=", &e), ZS_EUSAGE);
}

/* Errors 10 %, -20 %, 30 % on all-reduce (held: the last two) and 5 % on
 * attention: per class the held-out rows, then all; then the targets. */
static void test_summary(void)
{
    zs_meas m[4] = {coll("all-reduce", 2, 100e6), coll("all-reduce", 8, 100e6),
                    coll("all-reduce", 8, 10e6), coll("attn_fwd", 1, 0)};
    m[3].seq_len = 2048;
    const zs_score_point p[4] = {{&m[0], 0, 0.10, 0, "ring/Simple"},
                                 {&m[1], 0, -0.20, 1, "nvls/Simple"},
                                 {&m[2], 0, 0.30, 1, "nvls/Simple"},
                                 {&m[3], 0, 0.05, 0, "-"}};
    zs_score_row *r = NULL;
    int n = 0;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_score_summary(p, 4, 1, &r, &n, &e), &e);
    /* all-reduce held, all-reduce all, attn_fwd all (no held point),
     * all-reduce >= 64 MB and >= 8 MB held, all collectives >= 64 MB and
     * >= 8 MB held (attention >= 1K: none held) */
    ZS_ASSERT_INT_EQ(n, 7);
    CU_ASSERT_STRING_EQUAL(r[0].cls, "all-reduce");
    ZS_ASSERT_INT_EQ(r[0].held, 1);
    ZS_ASSERT_INT_EQ(r[0].points, 2);
    ZS_ASSERT_REL(r[0].median, 0.25, 1e-12);
    ZS_ASSERT_REL(r[0].max, 0.30, 1e-12);
    ZS_ASSERT_INT_EQ(r[1].points, 3);
    ZS_ASSERT_REL(r[1].median, 0.20, 1e-12);
    CU_ASSERT_STRING_EQUAL(r[2].cls, "attn_fwd");
    ZS_ASSERT_INT_EQ(r[2].held, 0);
    CU_ASSERT_STRING_EQUAL(r[3].cls, "all-reduce >= 64 MB");
    ZS_ASSERT_INT_EQ(r[3].points, 1);
    ZS_ASSERT_REL(r[3].target, 0.05, 0);
    CU_ASSERT_STRING_EQUAL(r[4].cls, "all-reduce >= 8 MB");
    ZS_ASSERT_INT_EQ(r[4].points, 2);
    ZS_ASSERT_REL(r[4].median, 0.25, 1e-12);
    ZS_ASSERT_REL(r[4].target, 0.10, 0);
    CU_ASSERT_STRING_EQUAL(r[5].cls, "collectives >= 64 MB");
    ZS_ASSERT_INT_EQ(r[5].points, 1);
    ZS_ASSERT_REL(r[5].median, 0.20, 1e-12);
    ZS_ASSERT_REL(r[5].target, 0.05, 0);
    CU_ASSERT_STRING_EQUAL(r[6].cls, "collectives >= 8 MB");
    ZS_ASSERT_INT_EQ(r[6].points, 2);
    free(r);
    /* without a hold-out: no held rows, targets over all points */
    ZS_ASSERT_OK(zs_score_summary(p, 4, 0, &r, &n, &e), &e);
    ZS_ASSERT_INT_EQ(n, 7);
    ZS_ASSERT_INT_EQ(r[0].held, 0);
    CU_ASSERT_STRING_EQUAL(r[6].cls, "attn_fwd >= 1K tokens");
    ZS_ASSERT_REL(r[6].median, 0.05, 1e-12);
    free(r);
}

static void test_shape(void)
{
    zs_meas m = coll("all-gather", 8, 1048576);
    char buf[64];
    zs_meas_shape(&m, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "8 GPUs, 1048576 B");
    m.gpus = 16;
    m.nodes = 2;
    zs_meas_shape(&m, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "2 x 8 GPUs, 1048576 B");
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"holdout", test_holdout}, {"summary", test_summary}, {"shape", test_shape}, {NULL, NULL}};
    static const zs_test_suite suites[] = {{"calib_score", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
