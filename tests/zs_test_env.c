/* Planning environment for tests: see zs_test_env.h. */
#include "zs_test_env.h"

#include "zs_test.h"

void zs_test_env_init(zs_test_env *v, const char *model, int nodes, const char *opts)
{
    zs_err e;
    ZS_ASSERT_OK(zs_model_load(model, &v->m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", nodes, &v->c, &e), &e);
    v->cost = zs_cost_analytic_new(&v->m, &v->c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v->cost);
    zs_opts_init(&v->opts);
    if (opts && *opts)
        ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, &e), &e);
    v->ctx = (zs_plan_ctx){&v->m, &v->c, v->cost, zs_mem_cfg_default(), &v->opts, 1};
}

void zs_test_plan_random(const zs_test_random_plans *r)
{
    uint64_t x = r->seed;
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 2, NULL);
    for (int trial = 0; trial < r->trials; trial++) {
        const char *o = r->opts[trial % r->nopts];
        int ndocs = 1 + (int)(zs_test_rng(&x) % 40);
        zs_batch *b = zs_batch_new(ndocs);
        for (int i = 0; i < ndocs; i++) {
            int32_t top = r->long_every && i % r->long_every == 0 ? r->long_len : r->maxlen;
            zs_batch_push(b, 1 + (int32_t)(zs_test_rng(&x) % (uint64_t)top), i);
        }
        zs_err e;
        zs_opts_init(&v.opts);
        if (*o)
            ZS_ASSERT_OK(zs_opts_parse(&v.opts, o, &e), &e);
        zs_schedule *s = NULL;
        zs_plan_report rep;
        int rc = zs_plan_batch(zs_planner_find(r->method), &v.ctx, b, 1, &s, &rep, &e);
        if (rc)
            fprintf(stderr, "%s %s: %s (%s)\n", r->method, o, e.what, e.where);
        ZS_ASSERT_OK(rc, &e);
        zs_schedule_free(s);
        zs_batch_free(b);
    }
    zs_cost_free(v.cost);
}

int zs_test_emit_local(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    zs_schedule *s = zs_iter_schedule(it);
    (void)arg;
    (void)micro;
    for (int sl = 0; sl < zs_iter_nslots(it); sl++) {
        zs_attn_block blk = {0, 0, s->doc_len[0], 0, s->doc_len[0]};
        int64_t dep[1] = {zs_iter_entry(it, sl)};
        zs_iter_set_exit(it, sl,
                         zs_sched_attn(s, zs_iter_rank(it, stage, sl), ZS_STREAM_COMPUTE, "attn",
                                       backward, &blk, 1, zs_iter_heads(it), 1e-6, dep, 1));
    }
    return zs_schedule_check(s, e);
}
