/* A toy backend, for tests/test_extend.c: what adding a backend takes. One
 * zs_backend row (name, what its numbers mean, run functions). It runs the
 * schedule on the analytic evaluator with every repeated segment executed
 * (folding off, whatever was asked), so its figures must equal the
 * analytic row's with --fold off: a check the test can make. */
#include "toy.h"
#include "zs_analytic.h"

static int run(const zs_schedule *s, const zs_backend_in *in, zs_result **out, zs_err *e)
{
    zs_analytic_opts o;
    zs_analytic_opts_init(&o);
    o.exec = in->exec;
    o.exec.fold = ZS_FOLD_OFF;
    int rc = zs_analytic_run(s, in->cost, &o, out, e);
    if (rc == ZS_OK && (rc = zs_result_check(*out, e))) { /* what every row promises */
        zs_result_free(*out);
        *out = NULL;
    }
    return rc;
}

const zs_backend zs_toy_backend = {
    .name = "toy-unfolded",
    .summary = "the analytic evaluator with folding always off (a test)",
    .caveat = "a toy backend registered by tests/test_extend.c",
    .run = run,
    .run_here = run,
    .rel_cost = 0.1,
};
